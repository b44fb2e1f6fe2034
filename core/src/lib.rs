//! The pure core of canvas-scheduler: the ledger model, its transitions and the sans-IO
//! scheduler state machine (events in, effects out). Nothing here touches `web_sys`, `js_sys`
//! or wall-clock time, so the crate has no wasm dependency: the wasm crate
//! (`canvas-scheduler`) carries its effects out in the browser, and the tests run it natively
//! and on 32-bit WASI.
//!
//! The modules are private. What the wasm crate, the simulated world and the tests use is
//! re-exported here: types at the crate root and, where a name reads better with its module,
//! a few public modules.

mod backoff;
mod claims;
mod clock;
mod config;
mod digest;
mod endpoint;
mod error;
mod host;
mod io;
mod jitter;
mod ledger;
mod loader;
mod model;
mod payload;
mod poison;
mod ready_queue;
mod retry_queue;
mod safe_error;
mod scheduler;
mod scrub;
mod seq_set;
mod timers;

// Modules whose functions and limits read better with their module's name.
pub mod intent;
pub mod json_text;
pub mod operation_pages;
pub mod packed;
pub mod partial;
pub mod protocol;
pub mod retention;

// The scheduler: the state machine and what it answers.
pub use scheduler::{
    storage_retry_delay, BatchEntry, BatchPayload, Compacted, Explanation, FlushOutcome, HoldId,
    Known, PendingEntry, Saved, Scheduler, SchedulerStats, ACTIVE_MS, RELEASE_ACTIONS,
    STORAGE_RETRY_MAX_MS,
};

// Its configuration and the application's hooks.
pub use config::{
    BatchLimits, RetryPolicy, SchedulerConfig, DEFAULT_BATCH_MAX_BYTES,
    DEFAULT_BATCH_MAX_OPERATIONS, DEFAULT_DEAD_LETTER_AFTER_MS, MAX_COALESCE_MS, MAX_TIME,
};
pub use host::{default_compile, Authorization, CompiledRequest, CountingHost, Host, WireBody};

// Events in, effects out: what the driver carries out and reports back.
pub use clock::{Clock, TimerHandle};
pub use endpoint::MAX_RUN;
pub use io::{
    AttemptId, AttemptOutcome, AttemptStatus, BatchNo, Effect, LeaseWrite, OperationVerdict,
    PersistBatch, PersistFailure, PersistResult, Report, SendOrder,
};
pub use timers::Timer;

// The ledger: its records, as stored and loaded.
pub use ledger::{Ledger, LedgerSnapshot};
pub use loader::{LedgerLoader, Quarantined, RecordStore};
pub use model::{
    BlobRef, EventKind, EventRecord, ExpectedVersions, FrozenRequest, Intent, Lease, LedgerMeta,
    Millis, Operation, OperationOutcome, OperationPhase, RequestPhase, RetryAction, Settlement,
    MAX_FENCE, UPLOAD_KIND,
};
pub use payload::Payload;

// Errors, and what of them may be shown.
pub use digest::body_digest;
pub use error::{ErrorCode, SchedulerError};
pub use safe_error::SafeError;
pub use scrub::Secrets;

#[cfg(test)]
mod test_support;
