//! The host's asynchronous hooks around each send: `headers()` (asked before every send),
//! `authorize` and `classifyError`. Each may return a value or a Promise; whatever
//! they throw or return malformed is turned into an attempt status, never into a panic, and
//! no header value ever reaches an error or event. Each is bounded by `attemptTimeoutMs`
//! (see [`bounded`](crate::web::bounded)): one that never settles ends the attempt
//! `unresolved` with `hook_timeout`.

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::JsValue;

use crate::web::bounded::{self, Settled};
use crate::web::thrown::Thrown;

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, Authorization, FrozenRequest, SafeError,
};

/// The hooks, when the host gave them.
#[derive(Clone, Default)]
pub struct SendHooks {
    /// `headers()`.
    pub headers: Option<Function>,
    /// `authorize({request, principal})`.
    pub authorize: Option<Function>,
    /// `classifyError(error)`.
    pub classify_error: Option<Function>,
    /// The principal passed to `authorize`.
    pub principal: Option<String>,
    /// How long each hook may take to settle (`attemptTimeoutMs`; 0: no limit).
    pub timeout_ms: u32,
}

/// What a failing hook is reported as: only the error's class (`TypeError`, ...). The message
/// of a hook that deals in credentials may carry one, so it is never stored or reported.
fn thrown_name(thrown: &JsValue) -> String {
    let name = Thrown::read(thrown)
        .name
        .filter(|n| !n.is_empty() && n.len() <= 64)
        .unwrap_or_else(|| "a non-Error value".into());
    format!("the hook threw {name}")
}

fn unresolved(code: &str, message: &str) -> AttemptStatus {
    AttemptStatus {
        error: Some(SafeError::new(code, message)),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

/// What `authorize` answered, as the core's verdict.
fn read_verdict(decision: &JsValue) -> Authorization {
    const SHAPE: &str = "authorize() must return {allowed: boolean}";
    if !decision.is_object() {
        return Authorization::Unavailable(SHAPE.into());
    }
    let allowed = match Reflect::get(decision, &"allowed".into()) {
        Ok(value) => value.as_bool(),
        Err(thrown) => return Authorization::Unavailable(thrown_name(&thrown)),
    };
    match allowed {
        Some(true) => Authorization::Allowed,
        Some(false) => Authorization::Denied(
            Reflect::get(decision, &"reason".into())
                .ok()
                .and_then(|v| v.as_string())
                .unwrap_or_else(|| "not_allowed".into()),
        ),
        None => Authorization::Unavailable(SHAPE.into()),
    }
}

impl SendHooks {
    /// `headers()` as name/value pairs; a failure means nothing is sent this attempt.
    pub async fn headers(&self) -> Result<Vec<(String, String)>, AttemptStatus> {
        let Some(hook) = &self.headers else {
            return Ok(Vec::new());
        };
        let value = match bounded::call(hook, &[], self.timeout_ms).await {
            Settled::Value(value) => value,
            Settled::Threw(thrown) => {
                return Err(unresolved("headers_unavailable", &thrown_name(&thrown)))
            }
            Settled::TimedOut => return Err(bounded::timed_out("headers", self.timeout_ms)),
        };
        if !value.is_object() {
            return Err(unresolved(
                "headers_unavailable",
                "headers() must return an object of strings",
            ));
        }
        // `Object.keys` of a Proxy runs its traps: read where a throw is caught.
        let Ok(keys) = crate::web::json::object_keys(&value) else {
            return Err(unresolved(
                "headers_unavailable",
                "headers() returned an unreadable object",
            ));
        };
        let mut pairs = Vec::new();
        for key in keys.iter() {
            let name = key.as_string().unwrap_or_default();
            let item = Reflect::get(&value, &key).unwrap_or(JsValue::UNDEFINED);
            match item.as_string() {
                Some(text) => pairs.push((name, text)),
                // The value itself is never echoed: it may be a credential.
                None => {
                    return Err(unresolved(
                        "headers_unavailable",
                        &format!("header {name} is not a string"),
                    ))
                }
            }
        }
        Ok(pairs)
    }

    /// The host's verdict, read strictly (the core decides what it means): only a
    /// boolean `allowed` decides; anything else — a throw, a rejection, `undefined`, a
    /// string, `{allowed: "yes"}`, a getter that throws — is a failed check.
    pub async fn authorize(&self, request: &FrozenRequest) -> Authorization {
        let Some(hook) = &self.authorize else {
            return Authorization::Allowed;
        };
        let context = Object::new();
        let _ = Reflect::set(
            &context,
            &"request".into(),
            &crate::web::json::to_js(request),
        );
        let principal = self
            .principal
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str);
        let _ = Reflect::set(&context, &"principal".into(), &principal);
        let decision = match bounded::call(hook, &[&context], self.timeout_ms).await {
            Settled::Value(decision) => decision,
            Settled::Threw(thrown) => return Authorization::Unavailable(thrown_name(&thrown)),
            Settled::TimedOut => return Authorization::TimedOut(self.timeout_ms),
        };
        read_verdict(&decision)
    }

    /// Lets the host decide whether an unresolved attempt's error is retryable and when.
    /// A failing policy is not retryable (`error_policy_failed`), as the kernel seed does.
    pub async fn classify(&self, status: &mut AttemptStatus) {
        let Some(hook) = &self.classify_error else {
            return;
        };
        let Some(error) = status.error.clone() else {
            return;
        };
        if status.outcome != AttemptOutcome::Unresolved {
            return;
        }
        let error_js = crate::web::json::to_js(&error);
        let verdict = match bounded::call(hook, &[&error_js], self.timeout_ms).await {
            Settled::TimedOut => {
                // No verdict in time: the attempt stays unresolved and is retried as usual.
                *status = bounded::timed_out("classifyError", self.timeout_ms);
                return;
            }
            Settled::Value(v) => Ok(v),
            Settled::Threw(thrown) => Err(thrown),
        };
        let verdict = match verdict {
            Ok(v) if v.is_object() => v,
            Ok(v) if v.is_undefined() || v.is_null() => return,
            Ok(_) | Err(_) => {
                status.retryable = Some(false);
                status.error = Some(SafeError::new(
                    "error_policy_failed",
                    "classifyError() failed or returned a non-object",
                ));
                return;
            }
        };
        if let Some(retryable) = Reflect::get(&verdict, &"retryable".into())
            .ok()
            .and_then(|v| v.as_bool())
        {
            status.retryable = Some(retryable);
        }
        if let Some(at) = Reflect::get(&verdict, &"retryAt".into())
            .ok()
            .and_then(|v| v.as_f64())
        {
            if at.is_finite() && at >= 0.0 {
                status.retry_at = Some(at as u64);
            }
        }
    }
}
