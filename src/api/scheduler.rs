//! The `Scheduler` class of SPEC §6, a thin layer over the browser driver. Every failure is a
//! JS `Error` with a stable `code`; bad input changes nothing in the ledger.

use std::rc::Rc;

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;

use super::error::js_error;
use super::events;
use super::intent::{decode_intent, DecodedIntent};
use super::options::decode_options;
use crate::core::error::{ErrorCode, SchedulerError};
use crate::core::model::BlobRef;
use crate::web::driver::{Driver, DriverOptions, ReportSink, SendHooks, WebHost};
use crate::web::json::to_js;

fn to_js_error(error: SchedulerError) -> JsValue {
    js_error(error.code(), &error.message)
}

/// The offline-first operation scheduler for one ledger (one IndexedDB database).
#[wasm_bindgen]
pub struct Scheduler {
    driver: Driver,
    max_payload_bytes: usize,
}

#[wasm_bindgen]
impl Scheduler {
    /// Opens the ledger, takes the dispatcher lease and loads it. Rejects with `invalid_options`,
    /// `invalid_concurrency`, `storage_unavailable` or `not_leader` (another tab dispatches).
    #[wasm_bindgen(unchecked_return_type = "Scheduler")]
    pub async fn open(
        #[wasm_bindgen(unchecked_param_type = "SchedulerOptions")] options: JsValue,
    ) -> Result<Scheduler, JsValue> {
        let options = decode_options(&options).map_err(to_js_error)?;
        let max_payload_bytes = options.config.max_payload_bytes;
        let on_event = options.hooks.on_event.clone();
        let sink: Option<ReportSink> = on_event.clone().map(|handler| {
            Rc::new(move |report: &crate::core::io::Report| events::deliver(&handler, report))
                as ReportSink
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
        let (driver, quarantined) = Driver::open(driver_options, sink)
            .await
            .map_err(to_js_error)?;
        if let Some(handler) = &on_event {
            for record in &quarantined {
                events::quarantined(handler, record.store, &record.key, &record.reason);
            }
        }
        Ok(Scheduler {
            driver,
            max_payload_bytes,
        })
    }

    async fn admit(&self, intents: Vec<JsValue>) -> Result<(), JsValue> {
        // Decode everything first: one bad intent rejects the whole call and changes nothing.
        let decoded: Vec<DecodedIntent> = intents
            .iter()
            .map(|value| decode_intent(value, self.max_payload_bytes))
            .collect::<Result<_, _>>()
            .map_err(to_js_error)?;
        let store = self.driver.store();
        let mut inputs = Vec::with_capacity(decoded.len());
        for DecodedIntent { mut input, blob } in decoded {
            if let Some(blob) = blob {
                // The blob goes in first; an intent never points at a blob that is not stored.
                let id = format!("blob-{}", WebHost::fresh_id());
                let media_type = blob.type_();
                store
                    .put_blob(&id, &blob, &media_type)
                    .await
                    .map_err(|e| js_error("storage_unavailable", &e.message))?;
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
        self.driver.enqueue(inputs).await.map_err(to_js_error)
    }

    /// Adds one intent; resolves once it is durable.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub async fn enqueue(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OperationIntent")] intent: JsValue,
    ) -> Result<(), JsValue> {
        self.admit(vec![intent]).await
    }

    /// Adds several intents in one transaction; all or none.
    #[wasm_bindgen(js_name = enqueueMany, unchecked_return_type = "Promise<void>")]
    pub async fn enqueue_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "OperationIntent[]")] intents: JsValue,
    ) -> Result<(), JsValue> {
        if !Array::is_array(&intents) {
            return Err(js_error(
                "invalid_intent",
                "enqueueMany takes an array of intents",
            ));
        }
        self.admit(Array::from(&intents).iter().collect()).await
    }

    /// Starts dispatching (recovering interrupted work first).
    pub fn start(&self) -> Result<(), JsValue> {
        self.driver.start().map_err(to_js_error)
    }

    /// Holds new work; returns the release function (calling it twice is harmless).
    #[wasm_bindgen(unchecked_return_type = "() => void")]
    pub fn hold(&self) -> Result<Function, JsValue> {
        let hold = self.driver.hold().map_err(to_js_error)?;
        let driver = self.driver.clone();
        let release = Closure::<dyn FnMut()>::new(move || driver.release(hold));
        Ok(release.into_js_value().unchecked_into())
    }

    /// Writes again after a storage failure, then reschedules (S13).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub async fn resume(&self) -> Result<(), JsValue> {
        self.driver.resume().await.map_err(to_js_error)
    }

    /// Resolves once nothing is in flight.
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub async fn settle(&self) -> Result<(), JsValue> {
        self.driver.settle().await;
        Ok(())
    }

    /// Final: aborts in-flight fetches; later answers change nothing.
    pub fn stop(&self) {
        self.driver.stop();
    }

    /// Canvas id → the request holding it.
    #[wasm_bindgen(unchecked_return_type = "Record<string, string>")]
    pub fn claims(&self) -> JsValue {
        to_js(&self.driver.inspect(|s, _| s.claims()))
    }

    /// The operation record, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "OperationRecord | undefined")]
    pub fn operation(&self, id: &str) -> JsValue {
        self.driver
            .inspect(|s, _| s.ledger().operation(id).map(to_js))
            .unwrap_or(JsValue::UNDEFINED)
    }

    /// Why the operation is where it is; an unknown id throws `unknown_operation`.
    #[wasm_bindgen(unchecked_return_type = "Explanation")]
    pub fn explain(&self, id: &str) -> Result<JsValue, JsValue> {
        self.driver
            .inspect(|s, now| s.explain(now, id))
            .map(|e| to_js(&e))
            .map_err(to_js_error)
    }

    /// Counters and the idle reason.
    #[wasm_bindgen(unchecked_return_type = "SchedulerStats")]
    pub fn stats(&self) -> JsValue {
        to_js(&self.driver.inspect(|s, _| s.stats()))
    }

    /// Runs that operation now if claimable, otherwise says why (K7).
    #[wasm_bindgen(unchecked_return_type = "Promise<FlushResult>")]
    pub async fn flush(&self, id: String) -> Result<JsValue, JsValue> {
        let outcome = self
            .driver
            .act(|s, now| s.flush(now, &id))
            .map_err(to_js_error)?;
        Ok(to_js(&outcome))
    }

    /// Re-arms a dead-lettered or blocked operation with its same frozen request (K1).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub async fn retry(&self, id: String) -> Result<(), JsValue> {
        let barrier = self
            .driver
            .act(|s, now| s.retry(now, &id))
            .map_err(to_js_error)?;
        self.driver.wait_barrier(barrier).await.map_err(to_js_error)
    }

    /// Resolves the operation as discarded; its dependents are blocked (K1).
    #[wasm_bindgen(unchecked_return_type = "Promise<void>")]
    pub async fn discard(&self, id: String) -> Result<(), JsValue> {
        let barrier = self
            .driver
            .act(|s, now| s.discard(now, &id))
            .map_err(to_js_error)?;
        self.driver.wait_barrier(barrier).await.map_err(to_js_error)
    }

    /// The event log (K6): entries with `seq > after`, at most `limit` (default 100, max 1000).
    #[wasm_bindgen(unchecked_return_type = "Promise<LedgerEvent[]>")]
    pub async fn events(
        &self,
        #[wasm_bindgen(unchecked_param_type = "{ after?: number; limit?: number } | undefined")]
        options: JsValue,
    ) -> Result<JsValue, JsValue> {
        let number = |key: &str| -> Result<Option<u64>, JsValue> {
            if options.is_undefined() || options.is_null() {
                return Ok(None);
            }
            let value = js_sys::Reflect::get(&options, &key.into()).unwrap_or(JsValue::UNDEFINED);
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
        let limit = number("limit")?.unwrap_or(100).clamp(1, 1_000) as usize;
        Ok(to_js(
            &self
                .driver
                .inspect(|s, _| s.ledger().events_after(after, limit)),
        ))
    }
}
