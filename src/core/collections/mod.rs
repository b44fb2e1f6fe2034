//! The one container the core keeps instead of `std`'s: [`str_map::StrMap`], a string-keyed
//! map whose tree code is shared by every value type (ARCHITECTURE.md, "Hand-made pieces that
//! remain", gives its A/B against `BTreeMap<String, V>`). Everything else is `std`'s.

pub mod str_map;
