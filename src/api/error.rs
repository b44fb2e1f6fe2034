//! Errors as JS values, mapped in one place: a real `Error` whose `name` is
//! [`ERROR_NAME`] and whose own `code` property is a stable string, never a thrown string.

use wasm_bindgen::prelude::*;

use crate::web::probe::ProbeError;

/// `name` of every error this package rejects or throws with.
pub const ERROR_NAME: &str = "CanvasSchedulerError";

/// Code for failures that indicate a bug in this package rather than in the caller's input
/// or the browser's storage.
pub const INTERNAL_ERROR: &str = "internal_error";

/// The TypeScript declarations of the error codes; every code produced in Rust is listed.
pub const ERROR_TYPES_TS: &str = r#"
/** Stable `code` of every error this package rejects or throws with. */
export type ErrorCode =
  | "invalid_intent"
  | "duplicate_operation"
  | "unknown_dependency"
  | "dependency_cycle"
  | "payload_too_large"
  | "invalid_concurrency"
  | "invalid_options"
  | "scheduler_closed"
  | "invalid_sequence"
  | "unknown_operation"
  | "invalid_state"
  | "recovery_claim_conflict"
  | "lease_lost"
  | "corrupt_record"
  | "not_leader"
  | "other_principal"
  | "owner_in_use"
  | "coalesce_failed"
  | "invalid_database_name"
  | "storage_unavailable"
  | "storage_write_failed"
  | "storage_read_failed"
  | "probe_mismatch"
  | "internal_error";

/** Every failure reaches JS as an `Error` with `name` "CanvasSchedulerError" and a stable `code`. */
export interface CanvasSchedulerError extends Error {
  readonly name: "CanvasSchedulerError";
  readonly code: ErrorCode;
  /** `enqueue`/`enqueueMany`: the index in the call of the intent refused (nothing of the call was stored). */
  readonly index?: number;
  /** `enqueue`/`enqueueMany`: the id of the intent refused, when it had one. */
  readonly operationId?: string;
}
"#;

#[wasm_bindgen(typescript_custom_section)]
const _: &str = ERROR_TYPES_TS;

/// Builds a JS `Error` with `name` [`ERROR_NAME`], the given `message` and a `code` property.
pub fn js_error(code: &str, message: &str) -> JsValue {
    let error = js_sys::Error::new(message);
    error.set_name(ERROR_NAME);
    // Defining an own property on a fresh, extensible Error object cannot fail; if it ever
    // did, the caller still gets a real Error rather than a thrown string.
    let _ = js_sys::Reflect::set(&error, &JsValue::from_str("code"), &JsValue::from_str(code));
    error.into()
}

impl From<ProbeError> for JsValue {
    fn from(error: ProbeError) -> Self {
        js_error(error.code(), &error.to_string())
    }
}
