//! The JavaScript surface (wasm32 only): thin `#[wasm_bindgen]` exports over `web` and the
//! core. Every failure reaches JS as an `Error` with a stable `code` (see [`error`]).

pub mod enqueue_many;
pub mod error;
pub mod events;
pub mod intent;
pub mod options;
pub mod probe;
pub mod promise;
pub mod scheduler;
pub mod types;
