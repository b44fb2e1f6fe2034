//! The small containers the core keeps instead of `std`'s, each for the size of the `.wasm`
//! (ARCHITECTURE.md, "Hand-made pieces that remain", says what each costs against the `std`
//! container it stands in for). Domain types elsewhere wrap them.

pub mod key_index;
pub mod seq_set;
pub mod small_map;
pub mod str_map;
pub mod str_set;
pub mod u64_set;
