//! The `fetch` transport of wire protocol v1 (docs/protocol.md): one attempt = one `fetch` with its
//! own `AbortController`, aborted by the caller's signal or by a per-attempt timeout.
//!
//! `fetch` and `setTimeout` are bound on the *global* object (as `gloo-net` and `gloo-timers`
//! do), so the transport works in a Window and in a Worker alike. Whatever goes wrong on the way
//! — a network error, an abort, a timeout, an unreadable body — is `transport_unknown`: the
//! server may or may not have the request, so the core asks before it resends. The answer itself
//! is interpreted by the pure [`map_answer`]. Header values are never logged nor put in errors
//! they carry credentials.
//!
//! Redirects are never followed (`redirect: "error"`; docs/protocol.md): a 3xx fails the fetch, so
//! it is a transport failure, retried, never an outcome, and nothing (no body, no `headers()`) goes
//! to an origin other than the endpoint's. The answer's body is read with a byte limit
//! (`maxAnswerBytes`); a longer one is `answer_too_large`, unresolved.

use canvas_scheduler_core::json_text::quoted;
use std::cell::Cell;
use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    AbortController, AbortSignal, Blob, FormData, Headers, ReadableStreamDefaultReader,
    RequestInit, RequestRedirect, Response,
};

use canvas_scheduler_core::{
    protocol::{map_answer, query_path},
    AttemptStatus, Millis, RetryAction, SendOrder, UPLOAD_KIND,
};

/// Default byte limit of one answer's body (`maxAnswerBytes`): 1 MiB.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 1 << 20;

#[wasm_bindgen]
extern "C" {
    /// The global `fetch` (Window or WorkerGlobalScope).
    #[wasm_bindgen(catch, js_name = fetch)]
    fn global_fetch(input: &str, init: &RequestInit) -> Result<Promise, JsValue>;

    /// The global `setTimeout`; returns the timer handle.
    #[wasm_bindgen(js_name = setTimeout)]
    fn global_set_timeout(handler: &Function, timeout_ms: i32) -> JsValue;

    /// The global `clearTimeout`.
    #[wasm_bindgen(js_name = clearTimeout)]
    fn global_clear_timeout(handle: &JsValue);
}

/// Sends frozen requests to a protocol v1 endpoint with `fetch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchTransport {
    endpoint: String,
    timeout_ms: u32,
    max_answer_bytes: usize,
}

impl FetchTransport {
    /// A transport for `endpoint` (the protocol base URL; a trailing `/` is ignored) whose
    /// attempts are aborted after `timeout_ms` (0: no timeout of its own), reading answers of
    /// up to [`DEFAULT_MAX_ANSWER_BYTES`].
    pub fn new(endpoint: &str, timeout_ms: u32) -> Self {
        Self {
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            timeout_ms,
            max_answer_bytes: DEFAULT_MAX_ANSWER_BYTES,
        }
    }

    /// The same transport, reading answers of up to `bytes` (at least 1).
    pub fn with_max_answer_bytes(mut self, bytes: usize) -> Self {
        self.max_answer_bytes = bytes.max(1);
        self
    }

    /// The protocol base URL.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The byte limit of one answer's body.
    pub fn max_answer_bytes(&self) -> usize {
        self.max_answer_bytes
    }

    /// The per-attempt timeout in milliseconds (0: none).
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    /// Sends one attempt: a submit (`POST {endpoint}/requests`, the frozen body byte for byte,
    /// multipart with `blob` for an upload) or a query (`GET {endpoint}/requests/{id}`).
    ///
    /// `headers` are the host's `headers()` (`content-type` and `idempotency-key` among them are
    /// ignored: the protocol sets those). `signal` aborts the attempt; `now` reads the clock
    /// when the answer arrives (for an HTTP-date `Retry-After`). Never fails: a lost answer is
    /// [`AttemptStatus::transport_unknown`]. `sent` runs once `fetch` has taken the request.
    pub async fn send(
        &self,
        order: &SendOrder,
        headers: &[(String, String)],
        blob: Option<Blob>,
        signal: &AbortSignal,
        now: impl Fn() -> Millis,
        sent: impl FnOnce(),
    ) -> AttemptStatus {
        if signal.aborted() {
            return AttemptStatus::transport_unknown("aborted before sending");
        }
        let (url, init) = match self.build(order, headers, blob) {
            Ok(built) => built,
            Err(reason) => return AttemptStatus::transport_unknown(&reason),
        };
        let mut link = match AttemptAbort::link(signal, self.timeout_ms) {
            Ok(link) => link,
            Err(reason) => return AttemptStatus::transport_unknown(&reason),
        };
        init.set_signal(Some(&link.controller.signal()));
        let answer = fetch_answer(&url, &init, self.max_answer_bytes, sent).await;
        let timed_out = link.timed_out.get();
        link.complete = answer.is_ok();
        // Clears the timer and unhooks the caller's signal before we look at the answer.
        drop(link);
        match answer {
            Ok((status, body, retry_after)) => map_answer(
                order.action,
                status,
                body.as_deref(),
                retry_after.as_deref(),
                now(),
            ),
            Err(_) if timed_out => AttemptStatus::transport_unknown(&format!(
                "no answer within {} ms: aborted",
                self.timeout_ms
            )),
            Err(_) if signal.aborted() => AttemptStatus::transport_unknown("aborted"),
            Err(Lost::TooLarge) => AttemptStatus::answer_too_large(self.max_answer_bytes),
            Err(Lost::Failed(reason)) => AttemptStatus::transport_unknown(&reason),
        }
    }

    /// The URL and the `fetch` options of one attempt (without its signal).
    fn build(
        &self,
        order: &SendOrder,
        headers: &[(String, String)],
        blob: Option<Blob>,
    ) -> Result<(String, RequestInit), String> {
        let request = &order.request;
        let init = RequestInit::new();
        // A redirect fails the fetch: nothing is sent on to another URL (docs/protocol.md).
        init.set_redirect(RequestRedirect::Error);
        let fetch_headers = Headers::new().map_err(|_| "cannot create Headers".to_owned())?;
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            if lower == "content-type" || lower == "idempotency-key" {
                continue;
            }
            // The name may be shown; the value never is.
            fetch_headers
                .append(name, value)
                .map_err(|_| format!("the browser refused the header named {}", quoted(name)))?;
        }
        let url = match order.action {
            RetryAction::Query => {
                init.set_method("GET");
                // A query must reach the server, never a cache. A submit is a POST, which no
                // cache answers; `no-store` there only cost time (about 1 ms a request in
                // Chromium, BENCHMARKS).
                init.set_cache(web_sys::RequestCache::NoStore);
                let path = query_path(&request.id)
                    .ok_or_else(|| "this request id cannot be queried in a URL".to_owned())?;
                format!("{}/{path}", self.endpoint)
            }
            RetryAction::Submit => {
                init.set_method("POST");
                set_header(&fetch_headers, "idempotency-key", &request.id)?;
                match blob.filter(|_| request.kind == UPLOAD_KIND) {
                    Some(blob) => {
                        // The browser writes the multipart content-type with its boundary.
                        let form =
                            FormData::new().map_err(|_| "cannot create FormData".to_owned())?;
                        form.append_with_str("request", &request.body)
                            .map_err(|_| "cannot add the request part".to_owned())?;
                        form.append_with_blob("blob", &blob)
                            .map_err(|_| "cannot add the blob part".to_owned())?;
                        init.set_body(&form);
                    }
                    None => {
                        set_header(&fetch_headers, "content-type", "application/json")?;
                        init.set_body(&JsValue::from_str(&request.body));
                    }
                }
                format!("{}/requests", self.endpoint)
            }
        };
        init.set_headers(&fetch_headers);
        Ok((url, init))
    }
}

fn set_header(headers: &Headers, name: &str, value: &str) -> Result<(), String> {
    headers
        .set(name, value)
        .map_err(|_| format!("the browser refused the {name} header"))
}

/// Why an answer was not read.
enum Lost {
    /// Network error, abort, timeout, body cut off.
    Failed(String),
    /// The body is longer than the limit.
    TooLarge,
}

impl From<String> for Lost {
    fn from(reason: String) -> Self {
        Lost::Failed(reason)
    }
}

/// Status, body text (`None` when empty) and `Retry-After` of a complete answer; `Err` when the
/// answer never fully arrived or is longer than `limit` bytes. `sent` runs when `fetch` has
/// taken the request.
async fn fetch_answer(
    url: &str,
    init: &RequestInit,
    limit: usize,
    sent: impl FnOnce(),
) -> Result<(u16, Option<String>, Option<String>), Lost> {
    let promise = global_fetch(url, init).map_err(|e| describe("fetch threw", &e))?;
    sent();
    let response: Response = JsFuture::from(promise)
        .await
        .map_err(|e| describe("fetch failed", &e))?
        .dyn_into()
        .map_err(|_| "fetch resolved to something other than a Response".to_owned())?;
    let retry_after = response.headers().get("retry-after").ok().flatten();
    // The stream is counted as it comes (a Content-Length may be absent or false).
    let text = read_body(&response, limit)
        .await?
        .filter(|text| !text.is_empty());
    Ok((response.status(), text, retry_after))
}

/// The body as text, read chunk by chunk and given up (the stream cancelled) past `limit`
/// bytes. The bytes are decoded as `Response.text()` decodes them (UTF-8, each maximal invalid
/// sequence replaced by U+FFFD, a byte order mark dropped), here: gathering them in a `Blob` to
/// decode cost a synchronous call to Chromium's blob registry per answer (0.7 ms of the main
/// thread, a ninth of a busy page's time, BENCHMARKS).
async fn read_body(response: &Response, limit: usize) -> Result<Option<String>, Lost> {
    let Some(body) = response.body() else {
        return Ok(None);
    };
    let reader: ReadableStreamDefaultReader = body
        .get_reader()
        .dyn_into()
        .map_err(|_| "cannot read the body".to_owned())?;
    let mut bytes: Vec<u8> = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| describe("the body was cut off", &e))?;
        let done = js_sys::Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true);
        if done {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &"value".into())
            .ok()
            .and_then(|v| v.dyn_into::<js_sys::Uint8Array>().ok())
            .ok_or_else(|| "the body was not bytes".to_owned())?;
        let at = bytes.len();
        let length = at.saturating_add(value.length() as usize);
        if length > limit {
            let _ = reader.cancel();
            return Err(Lost::TooLarge);
        }
        bytes.resize(length, 0);
        value.copy_to(&mut bytes[at..]);
    }
    let text = String::from_utf8_lossy(bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes));
    Ok(Some(text.into_owned()))
}

/// `context: <error name>` — a DOMException's or TypeError's name, never its whole text (which
/// could quote a URL); the request's headers are never part of it.
fn describe(context: &str, error: &JsValue) -> String {
    let name = error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.name()))
        .unwrap_or_else(|| "unknown error".to_owned());
    format!("{context}: {name}")
}

/// One attempt's `AbortController`, aborted by the caller's signal or by the timeout. Dropping
/// it clears the timer and removes the listener, so nothing fires into a dropped closure — also
/// when the attempt's future is dropped half-way.
struct AttemptAbort {
    controller: AbortController,
    timed_out: Rc<Cell<bool>>,
    caller: AbortSignal,
    on_caller_abort: Closure<dyn FnMut()>,
    timer: Option<(JsValue, Closure<dyn FnMut()>)>,
    /// The whole answer was read: there is nothing left to abort (an `abort()` then costs
    /// the page a dispatched event, about 1 % of its time while sending, for nothing).
    complete: bool,
}

impl AttemptAbort {
    fn link(caller: &AbortSignal, timeout_ms: u32) -> Result<Self, String> {
        let controller =
            AbortController::new().map_err(|_| "cannot create an AbortController".to_owned())?;
        let on_caller_abort = {
            let controller = controller.clone();
            Closure::<dyn FnMut()>::new(move || controller.abort())
        };
        caller
            .add_event_listener_with_callback("abort", on_caller_abort.as_ref().unchecked_ref())
            .map_err(|_| "cannot listen to the caller's AbortSignal".to_owned())?;
        let timed_out = Rc::new(Cell::new(false));
        let timer = (timeout_ms > 0).then(|| {
            let controller = controller.clone();
            let timed_out = timed_out.clone();
            let on_timeout = Closure::<dyn FnMut()>::new(move || {
                timed_out.set(true);
                controller.abort();
            });
            let delay = i32::try_from(timeout_ms).unwrap_or(i32::MAX);
            let handle = global_set_timeout(on_timeout.as_ref().unchecked_ref(), delay);
            (handle, on_timeout)
        });
        Ok(Self {
            controller,
            timed_out,
            caller: caller.clone(),
            on_caller_abort,
            timer,
            complete: false,
        })
    }
}

impl Drop for AttemptAbort {
    fn drop(&mut self) {
        // If the attempt's future is dropped mid-flight, or the answer was cut off, it cancels
        // the request whose answer nobody will read.
        if !self.complete {
            self.controller.abort();
        }
        if let Some((handle, _)) = &self.timer {
            global_clear_timeout(handle);
        }
        // Removing an unknown listener is a no-op; there is nothing to do if it throws.
        let _ = self.caller.remove_event_listener_with_callback(
            "abort",
            self.on_caller_abort.as_ref().unchecked_ref(),
        );
    }
}
