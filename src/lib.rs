//! canvas-scheduler: an offline-first operation scheduler for browser canvas editors.
//!
//! - The core ([`canvas_scheduler_core`], its own crate in `core/`) is a sans-IO state
//!   machine: events in, effects out. It never touches `web_sys`, `js_sys` or the wall clock,
//!   so `cargo test` covers it natively.
//! - `web` (wasm32 only) carries effects out with IndexedDB, `fetch` and browser timers.
//! - `api` (wasm32 only) is the JavaScript surface (the `Scheduler` class).
//!
//! The simulated world of the tests and benches is the dev-only crate
//! `canvas_scheduler_testing` (`testing/`).

#[cfg(target_arch = "wasm32")]
pub mod web;

#[cfg(target_arch = "wasm32")]
pub mod api;
