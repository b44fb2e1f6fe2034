//! The browser platform (wasm32 only): the driver side that carries the core's effects out
//! into IndexedDB, `fetch` and browser timers.
//!
//! Everything here works in a Window and in a dedicated Worker alike: it reaches IndexedDB
//! through the global `indexedDB` (via `indexed_db_futures`), never through `window`.

pub mod bounded;
pub mod clock;
pub mod driver;
pub mod host_code;
pub mod js_transport;
pub mod json;
pub mod listener;
pub mod page_lifecycle;
pub mod persist;
pub mod probe;
pub mod store;
pub mod tabs;
pub mod task;
pub mod thrown;
pub mod transport;
pub mod wake;
