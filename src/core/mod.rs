//! The pure core: ledger model, transitions and the sans-IO scheduler state machine.
//! Nothing here touches `web_sys`, `js_sys` or wall-clock time.

pub mod backoff;
pub mod claims;
pub mod clock;
pub mod config;
pub mod digest;
pub mod endpoint;
pub mod error;
pub mod host;
pub mod intent;
pub mod io;
pub mod jitter;
pub mod json_text;
pub mod ledger;
pub mod loader;
pub mod model;
pub mod operation_pages;
pub mod packed;
pub mod partial;
pub mod payload;
pub mod poison;
pub mod protocol;
pub mod ready_queue;
pub mod retention;
pub mod retry_queue;
pub mod safe_error;
pub mod scheduler;
pub mod scrub;
pub mod seq_set;
pub mod timers;

pub use scheduler::{Explanation, FlushOutcome, HoldId, Scheduler, SchedulerStats};
