//! Fault injection for tests: the next write transaction fails the way a real browser
//! fails it. Injected faults abort a *real* transaction after its writes were issued, so the
//! test sees exactly what a user would: nothing written, a storage error reported.

use std::cell::RefCell;
use std::collections::VecDeque;

use canvas_scheduler_core::SafeError;

/// A failure to inject into the next write transaction (or, for `CloseConnection`, now).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreFault {
    /// The next write transaction is aborted after its writes were issued: `AbortError`.
    AbortNextTransaction,
    /// The next write transaction is aborted and reported as `QuotaExceededError`, the way a
    /// full disk fails a commit.
    QuotaOnNextWrite,
    /// The connection is closed now, as when the browser closes it (the `close` event).
    CloseConnection,
    /// The next `Blob` put is aborted with `UnknownError`, the way WebKit's ephemeral sessions
    /// (Safari's private browsing) refuse every `Blob`: the store falls back to its bytes.
    RefuseBlob,
}

impl StoreFault {
    /// The error a faulted transaction reports.
    pub fn error(self) -> SafeError {
        match self {
            StoreFault::AbortNextTransaction => {
                SafeError::new("AbortError", "the transaction was aborted (injected fault)")
            }
            StoreFault::QuotaOnNextWrite => SafeError::new(
                "QuotaExceededError",
                "the quota has been exceeded (injected fault)",
            ),
            StoreFault::CloseConnection => {
                SafeError::new("storage_unavailable", "connection closed (injected fault)")
            }
            StoreFault::RefuseBlob => SafeError::new(
                "UnknownError",
                "Error preparing Blob/File data to be stored in object store (injected fault)",
            ),
        }
    }
}

/// Faults waiting for the next write transaction, oldest first.
#[derive(Debug, Default)]
pub(super) struct FaultQueue(RefCell<VecDeque<StoreFault>>);

impl FaultQueue {
    /// Queues a transaction fault.
    pub(super) fn push(&self, fault: StoreFault) {
        self.0.borrow_mut().push_back(fault);
    }

    /// The fault the current write transaction must suffer, if any.
    pub(super) fn take(&self) -> Option<StoreFault> {
        self.0.borrow_mut().pop_front()
    }
}
