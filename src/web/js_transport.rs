//! A pluggable transport: the host's own `submit(request, signal)` and
//! `query(request, signal)` functions replace `fetch`. Each returns (a Promise of) the protocol
//! answer object; whatever it throws, or an aborted signal, is `transport_unknown`. One
//! that has not settled within `attemptTimeoutMs` ends the attempt `unresolved` with
//! `hook_timeout` (the request may have arrived: it is queried before it is sent again).

use js_sys::{Function, Reflect};
use wasm_bindgen::JsValue;
use web_sys::{AbortSignal, Blob};

use crate::web::bounded::{self, Settled};

use canvas_scheduler_core::{
    protocol::map_transport_answer, AttemptStatus, Millis, RetryAction, SendOrder,
};

use crate::web::json::{to_js, to_json};

/// The host's transport functions.
#[derive(Clone)]
pub struct JsTransport {
    /// `submit(request, signal, blob?)`.
    pub submit: Function,
    /// `query(request, signal)`.
    pub query: Function,
}

impl JsTransport {
    /// Sends one attempt through the host's function, waiting at most `timeout_ms` for it; an
    /// answer whose JSON is longer than `max_answer_bytes` is `answer_too_large`, as with
    /// `fetch`.
    ///
    /// The host builds its own URLs from `request.id`: it must encode it as one path segment
    /// (`encodeURIComponent`) and refuse to follow redirects, as the `fetch` transport does.
    /// `sent` runs as the request is handed to the host's function.
    #[allow(clippy::too_many_arguments)]
    pub async fn send(
        &self,
        order: &SendOrder,
        blob: Option<Blob>,
        signal: &AbortSignal,
        timeout_ms: u32,
        max_answer_bytes: usize,
        now: impl Fn() -> Millis,
        sent: impl FnOnce(),
    ) -> AttemptStatus {
        if signal.aborted() {
            return AttemptStatus::transport_unknown("aborted before sending");
        }
        let request = to_js(&order.request);
        let (function, hook) = match order.action {
            RetryAction::Submit => (&self.submit, "transport.submit"),
            RetryAction::Query => (&self.query, "transport.query"),
        };
        let blob = blob.map_or(JsValue::UNDEFINED, JsValue::from);
        sent();
        let answer = match bounded::call(function, &[&request, signal, &blob], timeout_ms).await {
            Settled::Value(answer) => Ok(answer),
            Settled::Threw(thrown) => Err(thrown),
            Settled::TimedOut => return bounded::timed_out(hook, timeout_ms),
        };
        let answer = match answer {
            Ok(answer) if !signal.aborted() => answer,
            Ok(_) => return AttemptStatus::transport_unknown("aborted"),
            Err(thrown) => {
                let name = Reflect::get(&thrown, &"name".into())
                    .ok()
                    .and_then(|n| n.as_string());
                return AttemptStatus::transport_unknown(
                    name.as_deref().unwrap_or("the transport threw"),
                );
            }
        };
        match to_json(&answer, "transport answer") {
            Ok(text) if text.text().len() > max_answer_bytes => {
                AttemptStatus::answer_too_large(max_answer_bytes)
            }
            // Written by to_json from the JS value: an object's text starts with `{` (no need
            // to read it a third time to know).
            Ok(text) if text.text().starts_with('{') => {
                map_transport_answer(order.action, text.text(), now())
            }
            _ => AttemptStatus::transport_unknown(
                "the transport answered something other than a protocol answer object",
            ),
        }
    }
}
