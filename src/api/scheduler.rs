//! The `Scheduler` class of SPEC §6, a thin layer over the browser driver. Every failure is a
//! JS `Error` with a stable `code`; bad input changes nothing in the ledger.

use std::rc::Rc;

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::*;

use super::error::js_error;
use super::events;
use super::intent::{decode_intent, DecodedIntent};
use super::options::decode_options;
use super::promise::promise;
use crate::core::error::{ErrorCode, SchedulerError};
use crate::core::model::BlobRef;
use crate::web::driver::{DriverOptions, SendHooks, WebHost};
use crate::web::store::unavailable;
use crate::web::tabs::{EventSink, Tab};

fn to_js_error(error: SchedulerError) -> JsValue {
    js_error(error.code(), &error.message)
}

/// The offline-first operation scheduler for one ledger (one IndexedDB database).
#[wasm_bindgen]
#[derive(Clone)]
pub struct Scheduler {
    tab: Tab,
    max_payload_bytes: usize,
}

#[wasm_bindgen]
impl Scheduler {
    /// Opens the ledger and joins its tabs (W4): this tab dispatches when no other does,
    /// and otherwise enqueues through the shared inbox until it is elected. Rejects with
    /// `invalid_options`, `invalid_concurrency` or `storage_unavailable`.
    #[wasm_bindgen(js_name = open, unchecked_return_type = "Promise<Scheduler>")]
    pub fn open_js(
        #[wasm_bindgen(unchecked_param_type = "SchedulerOptions")] options: JsValue,
    ) -> Promise {
        promise(async move { Self::open(options).await.map(JsValue::from) })
    }

    async fn admit(&self, intents: Vec<JsValue>) -> Result<JsValue, JsValue> {
        // Decode everything first: one bad intent rejects the whole call and changes nothing.
        let decoded: Vec<DecodedIntent> = intents
            .iter()
            .map(|value| decode_intent(value, self.max_payload_bytes))
            .collect::<Result<_, _>>()
            .map_err(to_js_error)?;
        let store = self.tab.store();
        let mut inputs = Vec::with_capacity(decoded.len());
        for DecodedIntent { mut input, blob } in decoded {
            if let Some(blob) = blob {
                // The blob goes in first; an intent never points at a blob that is not stored.
                let id = format!("blob-{}", WebHost::fresh_id());
                let media_type = blob.type_();
                store
                    .put_blob(&id, &blob, &media_type)
                    .await
                    .map_err(|e| to_js_error(unavailable(e)))?;
                let name = js_sys::Reflect::get(&blob, &"name".into())
                    .ok()
                    .and_then(|n| n.as_string());
                input.blob = Some(BlobRef {
                    id,
                    size: blob.size() as u64,
                    media_type,
                    name,
                });
            }
            inputs.push(input);
        }
        self.tab.enqueue(inputs).await.map_err(to_js_error)?;
        Ok(JsValue::UNDEFINED)
    }

    /// Adds one intent; resolves once it is durable. When the write fails (a full disk or
    /// quota) it rejects `storage_unavailable`: call `resume()`, then enqueue the same intent
    /// again, which resolves once it is durable (an unchanged intent is never added twice).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn enqueue(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OperationIntent")] intent: JsValue,
    ) -> Promise {
        self.tab.open_ahead();
        let this = self.clone();
        promise(async move { this.admit(vec![intent]).await })
    }

    /// Adds several intents in one transaction; all or none. A failed write rejects as in
    /// `enqueue`.
    #[wasm_bindgen(js_name = enqueueMany, unchecked_return_type = "Promise<void>")]
    pub fn enqueue_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OperationIntent[]")] intents: JsValue,
    ) -> Promise {
        self.tab.open_ahead();
        let this = self.clone();
        promise(async move {
            if !Array::is_array(&intents) {
                return Err(js_error(
                    "invalid_intent",
                    "enqueueMany takes an array of intents",
                ));
            }
            this.admit(Array::from(&intents).iter().collect()).await
        })
    }

    /// Starts dispatching (recovering interrupted work first) — now if this tab is the
    /// dispatching one, else as soon as it is elected.
    pub fn start(&self) -> Result<(), JsValue> {
        self.tab.start().map_err(to_js_error)
    }

    /// Holds new work while this tab dispatches; returns the release function (calling it
    /// twice is harmless).
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn hold(&self) -> Result<Function, JsValue> {
        let hold = self.tab.hold().map_err(to_js_error)?;
        let tab = self.tab.clone();
        let release = Closure::<dyn FnMut()>::new(move || tab.release(hold));
        Ok(release.into_js_value().unchecked_into())
    }

    /// Runs `action` in the dispatching tab; resolves to its result, or to `undefined` when
    /// `to_undefined` (the methods declared `Promise<void>`).
    fn act(&self, action: &'static str, arg: JsValue, to_undefined: bool) -> Promise {
        let tab = self.tab.clone();
        promise(async move {
            let result = tab.act(action, arg).await.map_err(to_js_error)?;
            Ok(if to_undefined {
                JsValue::UNDEFINED
            } else {
                result
            })
        })
    }

    /// Writes again after a storage failure, then reschedules (S13).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn resume(&self) -> Promise {
        self.act("resume", JsValue::NULL, true)
    }

    /// Resolves once nothing is in flight (in the dispatching tab).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn settle(&self) -> Promise {
        let tab = self.tab.clone();
        promise(async move {
            match tab.act("settle", JsValue::NULL).await {
                Err(_) if tab.driver().is_none() => Ok(JsValue::UNDEFINED), // stopped meanwhile
                Err(error) => Err(to_js_error(error)),
                Ok(_) => Ok(JsValue::UNDEFINED),
            }
        })
    }

    /// Final: aborts in-flight fetches and hands the ledger to another tab; later answers
    /// change nothing.
    pub fn stop(&self) {
        self.tab.stop();
    }

    /// Canvas id → the request holding it (empty in a tab that does not dispatch).
    #[wasm_bindgen(unchecked_return_type = "Record<string, string>")]
    pub fn claims(&self) -> JsValue {
        self.tab.claims()
    }

    /// The operation record, the tombstone of a compacted operation when the scheduler has it
    /// at hand (compacted in this session, or looked up by `known` or an enqueue), or
    /// `undefined`.
    #[wasm_bindgen(unchecked_return_type = "OperationRecord | CompactedOperation | undefined")]
    pub fn operation(&self, id: &str) -> JsValue {
        self.tab.operation(id).unwrap_or(JsValue::UNDEFINED)
    }

    /// Retention: what the ledger knows of each id, tombstones included (looked up in the
    /// ledger): the record, a `CompactedOperation`, or `undefined` (never stored, or its
    /// tombstone is gone), in order. After a reload, a host asks this before queuing an
    /// edit again.
    #[wasm_bindgen(
        unchecked_return_type = "Promise<(OperationRecord | CompactedOperation | undefined)[]>"
    )]
    pub fn known(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string[]")] ids: JsValue,
    ) -> Promise {
        let tab = self.tab.clone();
        promise(async move {
            let ids: Vec<String> = if Array::is_array(&ids) {
                Array::from(&ids)
                    .iter()
                    .map(|id| id.as_string())
                    .collect::<Option<_>>()
            } else {
                None
            }
            .ok_or_else(|| {
                to_js_error(SchedulerError::new(
                    ErrorCode::InvalidIntent,
                    "known(ids) takes an array of operation ids (strings)",
                ))
            })?;
            let known = tab.known(ids).await.map_err(to_js_error)?;
            Ok(known.into_iter().collect::<Array>().into())
        })
    }

    /// Why the operation is where it is; an unknown id throws `unknown_operation`.
    #[wasm_bindgen(unchecked_return_type = "Explanation")]
    pub fn explain(&self, id: &str) -> Result<JsValue, JsValue> {
        self.tab.explain(id).map_err(to_js_error)
    }

    /// Counters, the idle reason, and who dispatches (`leader`, `leaderOwner`).
    #[wasm_bindgen(unchecked_return_type = "SchedulerStats")]
    pub fn stats(&self) -> JsValue {
        self.tab.stats()
    }

    /// Runs that operation now if claimable, otherwise says why (K7).
    #[wasm_bindgen(unchecked_return_type = "Promise<FlushResult>")]
    pub fn flush(&self, id: String) -> Promise {
        self.act("flush", JsValue::from_str(&id), false)
    }

    /// Re-arms a dead-lettered or blocked operation with its same frozen request (K1). One
    /// blocked `dependency_discarded` is then sent without its dependency: the host decided.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn retry(&self, id: String) -> Promise {
        self.act("retry", JsValue::from_str(&id), true)
    }

    /// Resolves the operation as discarded; its dependents, and intents enqueued later that
    /// depend on it, are blocked `dependency_discarded` until discarded or retried (K1).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub fn discard(&self, id: String) -> Promise {
        self.act("discard", JsValue::from_str(&id), true)
    }

    /// The event log (K6): entries with `seq > after`, at most `limit` (default 100, max 1000).
    #[wasm_bindgen(unchecked_return_type = "Promise<LedgerEvent[]>")]
    pub fn events(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ after?: number; limit?: number } | undefined")]
        options: JsValue,
    ) -> Promise {
        match Self::events_arg(&options) {
            Ok(arg) => self.act("events", arg, false),
            Err(error) => Promise::reject(&error),
        }
    }
}

impl Scheduler {
    /// The `{ after, limit }` the dispatching tab's `events` action takes, from the options.
    fn events_arg(options: &JsValue) -> Result<JsValue, JsValue> {
        let number = |key: &str| -> Result<Option<u64>, JsValue> {
            if options.is_undefined() || options.is_null() {
                return Ok(None);
            }
            let value = js_sys::Reflect::get(options, &key.into()).unwrap_or(JsValue::UNDEFINED);
            if value.is_undefined() {
                return Ok(None);
            }
            match value.as_f64() {
                Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
                _ => Err(to_js_error(SchedulerError::new(
                    ErrorCode::InvalidOptions,
                    format!("events: {key} must be a non-negative integer"),
                ))),
            }
        };
        let after = number("after")?.unwrap_or(0);
        let limit = number("limit")?.unwrap_or(100).clamp(1, 1_000);
        let arg = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&arg, &"after".into(), &(after as f64).into());
        let _ = js_sys::Reflect::set(&arg, &"limit".into(), &(limit as f64).into());
        Ok(arg.into())
    }
}

impl Scheduler {
    /// [`Scheduler.open`](Scheduler::open_js) for Rust callers (the browser tests): the
    /// scheduler itself rather than a promise of it.
    ///
    /// # Errors
    ///
    /// The JS `Error` the promise would reject with.
    pub async fn open(options: JsValue) -> Result<Scheduler, JsValue> {
        let options = decode_options(&options).map_err(to_js_error)?;
        let max_payload_bytes = options.config.max_payload_bytes;
        let sink: Option<EventSink> = options.hooks.on_event.clone().map(|handler| {
            Rc::new(move |event: &JsValue| events::deliver(&handler, event)) as EventSink
        });
        let driver_options = DriverOptions {
            database: options.database,
            endpoint: options.endpoint,
            attempt_timeout_ms: options.attempt_timeout_ms,
            load_page_size: 500,
            send_hooks: SendHooks {
                headers: options.hooks.headers,
                authorize: options.hooks.authorize,
                classify_error: options.hooks.classify_error,
                principal: options.config.principal.clone(),
            },
            js_transport: options.transport,
            host: WebHost {
                compile: options.hooks.compile,
                participants: options.hooks.participants,
            },
            config: options.config,
        };
        let tab = Tab::open(driver_options, sink).await.map_err(to_js_error)?;
        Ok(Scheduler {
            tab,
            max_payload_bytes,
        })
    }
}
