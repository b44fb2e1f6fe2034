//! A pluggable transport (W3): the host's own `submit(request, signal)` and
//! `query(request, signal)` functions replace `fetch`. Each returns (a Promise of) the protocol
//! answer object; whatever it throws, or an aborted signal, is `transport_unknown` (S8).

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Blob};

use crate::core::io::{AttemptStatus, SendOrder};
use crate::core::model::{Millis, RetryAction};
use crate::core::protocol::map_transport_answer;
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
    /// Sends one attempt through the host's function; an answer whose JSON is longer than
    /// `max_answer_bytes` is `answer_too_large`, as with `fetch`.
    ///
    /// The host builds its own URLs from `request.id`: it must encode it as one path segment
    /// (`encodeURIComponent`) and refuse to follow redirects, as the `fetch` transport does.
    pub async fn send(
        &self,
        order: &SendOrder,
        blob: Option<Blob>,
        signal: &AbortSignal,
        max_answer_bytes: usize,
        now: impl Fn() -> Millis,
    ) -> AttemptStatus {
        if signal.aborted() {
            return AttemptStatus::transport_unknown("aborted before sending");
        }
        let request = to_js(&order.request);
        let function = match order.action {
            RetryAction::Submit => &self.submit,
            RetryAction::Query => &self.query,
        };
        let blob = blob.map_or(JsValue::UNDEFINED, JsValue::from);
        let called = function.call3(&JsValue::NULL, &request, signal, &blob);
        let answer = match called {
            Ok(value) => match value.dyn_into::<Promise>() {
                Ok(promise) => JsFuture::from(promise).await,
                Err(value) => Ok(value),
            },
            Err(thrown) => Err(thrown),
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
            Ok(text) if text.text().len() > max_answer_bytes => AttemptStatus::answer_too_large(),
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
