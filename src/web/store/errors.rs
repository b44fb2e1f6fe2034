//! Storage errors as [`SafeError`]s with stable codes: the `DomException` name when there is
//! one (`QuotaExceededError`, `AbortError`, `InvalidStateError`, ...), else a code of ours.

use indexed_db_futures::error::{Error, OpenDbError};
use wasm_bindgen::JsCast;

use canvas_scheduler_core::{ErrorCode, Lease, SafeError, SchedulerError};

/// The connection was closed (another connection's `versionchange`, or the browser closed it).
pub(crate) const CLOSED: &str = "storage_unavailable";

/// A storage failure as the scheduler reports it: `storage_unavailable`, the storage error's
/// own code (a `DOMException` name) before its message unless it is that code already (alone
/// when there is no message).
pub fn unavailable(error: SafeError) -> SchedulerError {
    let message = if error.code == CLOSED {
        error.message
    } else if error.message.is_empty() {
        error.code
    } else {
        format!("{}: {}", error.code, error.message)
    };
    SchedulerError::new(ErrorCode::StorageUnavailable, message)
}

/// Why [`IdbLedger::acquire_and_load`](super::IdbLedger::acquire_and_load) did not load.
#[derive(Clone, Debug, PartialEq)]
pub enum AcquireError {
    /// Another owner holds an unexpired lease (the stored lease, `None` if unreadable).
    Held(Option<Lease>),
    /// Storage failed; nothing was written.
    Storage(SafeError),
}

/// A library error's message: its own `Display`.
pub(crate) fn describe(error: &Error) -> String {
    error.to_string()
}

/// An open failure's message (see [`describe`]).
pub(crate) fn describe_open(error: &OpenDbError) -> String {
    match error {
        OpenDbError::Base(base) => describe(base),
        OpenDbError::VersionZero => "version cannot be zero".to_owned(),
        OpenDbError::UnsupportedEnvironment => "unsupported environment".to_owned(),
        OpenDbError::NullFactory => "indexedDB is null or undefined".to_owned(),
    }
}

/// A `DomException` (or any thrown JS value) as a safe error. Chromium's `QuotaExceededError`
/// from IndexedDB has no message: one is given, so the host can tell people what happened.
pub(crate) fn dom_error(error: &web_sys::DomException) -> SafeError {
    let name = error.name();
    let message = error.message();
    let message = match (name.as_str(), message.trim().is_empty()) {
        ("QuotaExceededError", true) => {
            "the storage quota is used up (the disk or this site's share of it is full)"
        }
        _ => message.as_str(),
    };
    SafeError::with_fallback(&name, message, "storage_error")
}

/// A thrown JS value as a safe error: a `DOMException` by its name and message, another
/// `Error` (a `TypeError` from a missing or broken global) by its name and message — never its
/// stack, which `{:?}` of the value would have spelled out — and anything else as a string or
/// by what it is not.
pub(crate) fn js_error(value: &wasm_bindgen::JsValue) -> SafeError {
    if let Some(dom) = value.dyn_ref::<web_sys::DomException>() {
        return dom_error(dom);
    }
    let message = match value.dyn_ref::<js_sys::Error>() {
        Some(error) => format!(
            "{}: {}",
            String::from(error.name()),
            String::from(error.message())
        ),
        None => value
            .as_string()
            .unwrap_or_else(|| "a value that is not an Error".to_owned()),
    };
    SafeError::new("storage_error", &message)
}

/// The error of the connection being closed under us.
pub(crate) fn closed(reason: &str) -> SafeError {
    SafeError::new(
        CLOSED,
        &format!("the ledger database connection is closed ({reason}); call reopen()"),
    )
}
