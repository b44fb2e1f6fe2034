//! The `Scheduler` class (the JavaScript API), a thin layer over the browser driver. Every failure
//! is a JS `Error` with a stable `code`; bad input changes nothing in the ledger.

use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;

use canvas_scheduler_core::{intent::IntentInput, BlobRef, ErrorCode, SchedulerError};

use super::enqueue_many::{self, Mode};
use super::error::js_error;
use super::events;
use super::intent::{decode_intent, DecodedIntent};
use super::options::decode_options;
use super::promise::promise;
use crate::web::driver::{DriverOptions, SendHooks, WebHost};
use crate::web::host_code;
use crate::web::json::exact_text;
use crate::web::store::unavailable;
use crate::web::tabs::action::HostAction;
use crate::web::tabs::{EventSink, Tab};
use crate::web::task::spawn;

fn to_js_error(error: SchedulerError) -> JsValue {
    let value = js_error(error.code(), &error.message);
    // Which intent of the call it is about: setting an own property of a fresh Error cannot
    // fail (see js_error).
    if let Some(index) = error.intent() {
        let _ = js_sys::Reflect::set(&value, &"index".into(), &(index as u32).into());
    }
    value
}

/// An `enqueue`/`enqueueMany` error naming intent `index` gets that intent's id too, when
/// it is a string (`intents`: the call's array, or its one intent).
fn name_intent(error: JsValue, intents: &JsValue, many: bool) -> JsValue {
    let Some(index) = js_sys::Reflect::get(&error, &"index".into())
        .ok()
        .and_then(|i| i.as_f64())
    else {
        return error;
    };
    // Read where a throw is caught (a Proxy, a getter).
    let intent = match many {
        true => js_sys::Reflect::get_u32(intents, index as u32).unwrap_or_default(),
        false => intents.clone(),
    };
    if let Some(id) = js_sys::Reflect::get(&intent, &"id".into())
        .ok()
        .filter(JsValue::is_string)
    {
        let _ = js_sys::Reflect::set(&error, &"operationId".into(), &id);
    }
    error
}

/// The offline-first operation scheduler for one ledger (one IndexedDB database).
///
/// Its TypeScript declaration is written by hand in `types.rs` (a class generic over the
/// editor's operation kinds, with the documentation users hover), so no export here
/// generates one.
#[wasm_bindgen(skip_typescript)]
#[derive(Clone)]
pub struct Scheduler {
    tab: Tab,
    max_payload_bytes: usize,
    /// `coalesceMs` is set: an enqueue of keyed intents is held, and written later.
    holds_keyed: bool,
}

#[wasm_bindgen]
impl Scheduler {
    /// Opens the ledger and joins its tabs: this tab dispatches when no other does,
    /// and otherwise enqueues through the shared inbox until it is elected. Rejects with
    /// `invalid_options`, `invalid_concurrency`, `storage_unavailable`, or `owner_in_use`
    /// when another open tab of this ledger has the same `owner`.
    #[wasm_bindgen(js_name = open, skip_typescript)]
    pub fn open_js(options: JsValue) -> Promise {
        promise(async move { Self::open(options).await.map(JsValue::from) })
    }

    /// Stores a decoded intent's blob, if it carries one, and returns the intent pointing at
    /// it: an intent never points at a blob that is not stored.
    async fn with_blob(&self, decoded: DecodedIntent) -> Result<IntentInput, JsValue> {
        let DecodedIntent { mut input, blob } = decoded;
        if let Some(blob) = blob {
            let id = format!("blob-{}", WebHost::fresh_id());
            self.tab
                .store()
                .put_blob(&id, &blob.blob, &blob.media_type)
                .await
                .map_err(|e| to_js_error(unavailable(e)))?;
            input.blob = Some(BlobRef {
                id,
                size: blob.size,
                media_type: blob.media_type,
                name: blob.name,
            });
        }
        Ok(input)
    }

    /// Stores the decoded intents' blobs, then enqueues them. Everything is decoded first:
    /// one bad intent rejects the whole call and changes nothing.
    async fn admit(&self, decoded: Vec<DecodedIntent>) -> Result<JsValue, JsValue> {
        self.open_ahead_unless_held(decoded.iter().map(|d| &d.input));
        let mut inputs = Vec::with_capacity(decoded.len());
        for decoded in decoded {
            inputs.push(self.with_blob(decoded).await?);
        }
        self.tab.enqueue(inputs).await.map_err(to_js_error)?;
        Ok(JsValue::UNDEFINED)
    }

    /// Partial `enqueueMany`: stores the blobs of the decoded intents, then enqueues what the
    /// core accepts; resolves to a result per intent.
    async fn admit_partial(
        &self,
        decoded: Vec<Result<DecodedIntent, SchedulerError>>,
    ) -> Result<JsValue, JsValue> {
        self.open_ahead_unless_held(decoded.iter().flatten().map(|d| &d.input));
        let mut slots = Vec::with_capacity(decoded.len());
        for slot in decoded {
            slots.push(match slot {
                Ok(decoded) => Ok(self.with_blob(decoded).await?),
                Err(error) => Err(error),
            });
        }
        let verdicts = self.tab.enqueue_partial(slots).await.map_err(to_js_error)?;
        Ok(enqueue_many::results(&verdicts))
    }

    /// Adds one intent; resolves once it is durable. When the write fails (a full disk or
    /// quota) it rejects `storage_unavailable`: call `resume()`, then enqueue the same intent
    /// again, which resolves once it is durable (an unchanged intent is never added twice).
    #[wasm_bindgen(skip_typescript)]
    pub fn enqueue(&self, intent: JsValue) -> Promise {
        self.open_ahead();
        let this = self.clone();
        promise(async move {
            let admitted = match decode_intent(&intent, this.max_payload_bytes) {
                Ok(decoded) => this.admit(vec![decoded]).await,
                Err(error) => Err(to_js_error(error.of_intent(0))),
            };
            admitted.map_err(|error| name_intent(error, &intent, false))
        })
    }

    /// Adds several intents in one transaction. By default all or none: an intent refused is
    /// named by the error's `index` and `operationId`. With `{ atomic: false }`, every valid
    /// intent is stored (in one transaction) and the promise resolves to one result per
    /// intent. Bad options reject with `invalid_options`; a failed write
    /// rejects as in `enqueue`. Declared by hand, as two overloads (types.rs).
    #[wasm_bindgen(js_name = enqueueMany, skip_typescript)]
    pub fn enqueue_many_js(&self, intents: JsValue, options: JsValue) -> Promise {
        self.open_ahead();
        match enqueue_many::mode(&options) {
            Ok(Mode::Atomic) => self.enqueue_all(intents),
            Ok(Mode::Partial) => self.enqueue_valid(intents),
            Err(error) => Promise::reject(&to_js_error(error)),
        }
    }

    /// Starts dispatching (recovering interrupted work first) — now if this tab is the
    /// dispatching one, else as soon as it is elected. Inside `compile` or `participants` it
    /// throws `invalid_state` (it would change the ledger mid-step).
    #[wasm_bindgen(skip_typescript)]
    pub fn start(&self) -> Result<(), JsValue> {
        refuse_inside_host_code("start")?;
        self.tab.start().map_err(to_js_error)
    }

    /// Holds new work while this tab dispatches; returns the release function (calling it
    /// twice is harmless). Inside `compile` or `participants` it throws `invalid_state` (it
    /// would change the ledger mid-step); a release called there takes effect after the step.
    #[wasm_bindgen(skip_typescript)]
    pub fn hold(&self) -> Result<Function, JsValue> {
        refuse_inside_host_code("hold")?;
        let hold = self.tab.hold().map_err(to_js_error)?;
        let tab = self.tab.clone();
        let release = Closure::<dyn FnMut()>::new(move || {
            if host_code::running() {
                let tab = tab.clone();
                spawn(async move { tab.release(hold) }); // once the core's step is over
            } else {
                tab.release(hold);
            }
        });
        Ok(release.into_js_value().unchecked_into())
    }

    /// Runs `action` in the dispatching tab; resolves to its result, or to `undefined` when
    /// `to_undefined` (the methods declared `Promise<void>`).
    fn act(&self, action: HostAction, arg: JsValue, to_undefined: bool) -> Promise {
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

    /// Writes again after a storage failure, then reschedules.
    #[wasm_bindgen(skip_typescript)]
    pub fn resume(&self) -> Promise {
        self.act(HostAction::Resume, JsValue::NULL, true)
    }

    /// "Retry now": every backoff starts again and every scheduled retry is due now,
    /// waits the server asked for included (in the dispatching tab). Blocked requests stay
    /// blocked: `resume()` is for a renewed login, `retry(id)` for a dead letter.
    #[wasm_bindgen(js_name = retryAllNow, skip_typescript)]
    pub fn retry_all_now(&self) -> Promise {
        self.act(HostAction::RetryAllNow, JsValue::NULL, true)
    }

    /// Resolves once no attempt is in flight in the dispatching tab (each request on the wire
    /// has its answer recorded). Operations waiting for a retry, a canvas, a dependency, a
    /// hold, the network or a blocked request are not waited for: `stats().pending` and
    /// `idleReason` say whether anything is left to send.
    #[wasm_bindgen(skip_typescript)]
    pub fn settle(&self) -> Promise {
        let tab = self.tab.clone();
        promise(async move {
            match tab.act(HostAction::Settle, JsValue::NULL).await {
                Err(_) if tab.driver().is_none() => Ok(JsValue::UNDEFINED), // stopped meanwhile
                Err(error) => Err(to_js_error(error)),
                Ok(_) => Ok(JsValue::UNDEFINED),
            }
        })
    }

    /// Resolves once every operation enqueued before the call is settled (applied,
    /// rejected, discarded) or blocked (dead letters included), never while one of them may
    /// still be sent; `stop()` rejects it with `scheduler_closed`.
    #[wasm_bindgen(js_name = whenSaved, skip_typescript)]
    pub fn when_saved(&self) -> Promise {
        self.act(HostAction::WhenSaved, JsValue::NULL, false)
    }

    /// The unsettled operations in sequence order, for a badge: O(unsettled), no
    /// storage read. Answers inside `compile` and `participants` too.
    #[wasm_bindgen(js_name = pending, skip_typescript)]
    pub fn pending_js(&self) -> Result<JsValue, JsValue> {
        self.tab.pending().map_err(to_js_error)
    }

    /// Final: aborts in-flight fetches and hands the ledger to another tab; later answers
    /// change nothing.
    #[wasm_bindgen(skip_typescript)]
    pub fn stop(&self) {
        if host_code::running() {
            let tab = self.tab.clone();
            spawn(async move { tab.stop() }); // once the core's step is over
        } else {
            self.tab.stop();
        }
    }

    /// Canvas id → the request holding it (empty in a tab that does not dispatch). Answers
    /// inside `compile` and `participants` too.
    #[wasm_bindgen(js_name = claims, skip_typescript)]
    pub fn claims_js(&self) -> Result<JsValue, JsValue> {
        self.tab.claims().map_err(to_js_error)
    }

    /// The operation record, or `undefined`. Answers inside `compile` and `participants` too.
    ///
    /// A settled operation is compacted as it settles (`retain`). It is answered whole (from
    /// the archive) or with its tombstone, the `CompactedOperation`, as `known(ids)` gives it,
    /// only while the scheduler has it at hand: the 4,096 tombstones most recently compacted
    /// in this session, answered by `known(ids)` or looked up by an enqueue of their id (those
    /// of the last `known(ids)` of up to 4,096 ids stay until something else is compacted or
    /// asked for). Otherwise this answers `undefined`, though the
    /// ledger may know the id: settled history lives in IndexedDB, which this synchronous call
    /// cannot read, and opening a ledger reads none of it (docs/protocol.md). For a certain
    /// answer, `await known([id])`.
    #[wasm_bindgen(js_name = operation, skip_typescript)]
    pub fn operation_js(&self, id: JsValue) -> Result<JsValue, JsValue> {
        match exact_text(&id) {
            Some(Ok(id)) => Ok(self
                .tab
                .operation(&id)
                .map_err(to_js_error)?
                .unwrap_or(JsValue::UNDEFINED)),
            _ => Ok(JsValue::UNDEFINED), // no operation has that id
        }
    }

    /// Retention: what the ledger knows of each id, settled history included (looked up in
    /// IndexedDB): the record (an archived one while `retain` keeps it whole), a
    /// `CompactedOperation`, or `undefined` (never stored, or its tombstone is gone), in
    /// order. After a reload, a host asks this before queuing an edit again.
    #[wasm_bindgen(skip_typescript)]
    pub fn known(&self, ids: JsValue) -> Promise {
        let tab = self.tab.clone();
        promise(async move {
            // Read where a throw is caught (a Proxy, a getter): a coded error, never a trap.
            let ids = crate::web::json::string_items(&ids, MAX_KNOWN_IDS).map_err(|what| {
                to_js_error(SchedulerError::new(
                    ErrorCode::InvalidIntent,
                    format!("known(ids): ids {what} (operation ids, at most {MAX_KNOWN_IDS})"),
                ))
            })?;
            let known = tab.known(ids).await.map_err(to_js_error)?;
            Ok(known.into_iter().collect::<js_sys::Array>().into())
        })
    }

    /// Why the operation is where it is; an unknown id throws `unknown_operation`. Answers
    /// inside `compile` and `participants` too. Knows what `operation(id)` knows: a compacted
    /// operation at hand is `resolved`, its `reason` the outcome.
    #[wasm_bindgen(js_name = explain, skip_typescript)]
    pub fn explain_js(&self, id: JsValue) -> Result<JsValue, JsValue> {
        self.explain(&operation_id(&id)?)
    }

    /// Counters, the idle reason, and who dispatches (`leader`, `leaderOwner`). Answers inside
    /// `compile` and `participants` too (`idleReason` none: the scheduler is busy there).
    #[wasm_bindgen(js_name = stats, skip_typescript)]
    pub fn stats_js(&self) -> Result<JsValue, JsValue> {
        self.tab.stats().map_err(to_js_error)
    }

    /// Runs that operation now if claimable, otherwise says why.
    #[wasm_bindgen(js_name = flush, skip_typescript)]
    pub fn flush_js(&self, id: JsValue) -> Promise {
        self.act_on(HostAction::Flush, &id, false)
    }

    /// Re-arms a dead-lettered or blocked operation with its same frozen request. One
    /// blocked `dependency_discarded` is then sent without its dependency: the host decided.
    #[wasm_bindgen(js_name = retry, skip_typescript)]
    pub fn retry_js(&self, id: JsValue) -> Promise {
        self.act_on(HostAction::Retry, &id, true)
    }

    /// Resolves the operation as discarded; its dependents, and intents enqueued later that
    /// depend on it, are blocked `dependency_discarded` until discarded or retried.
    #[wasm_bindgen(js_name = discard, skip_typescript)]
    pub fn discard_js(&self, id: JsValue) -> Promise {
        self.act_on(HostAction::Discard, &id, true)
    }

    /// Worker mode only (not declared): the page's side of worker mode tells its worker's
    /// scheduler that the page left or froze (`"hidden"`) or came back (`"shown"`), as the
    /// page's own listeners tell a scheduler in a Window. Anything else is ignored.
    #[wasm_bindgen(js_name = pageLifecycle, skip_typescript)]
    pub fn page_lifecycle(&self, state: JsValue) {
        match state.as_string().as_deref() {
            Some("hidden") => self.tab.pause(),
            Some("shown") => self.tab.unpause(),
            _ => {}
        }
    }

    /// The event log: entries with `seq > after`, at most `limit` (default 100, max 1000),
    /// read from IndexedDB when asked (an open reads none of the log).
    #[wasm_bindgen(skip_typescript)]
    pub fn events(&self, options: JsValue) -> Promise {
        match Self::events_arg(&options) {
            Ok(arg) => self.act(HostAction::Events, arg, false),
            Err(error) => Promise::reject(&error),
        }
    }
}

/// Refuses a synchronous method that would change the ledger (`start`, `hold`) called from
/// inside `compile` or `participants` (see [`host_code`]); the reads answer there.
fn refuse_inside_host_code(method: &str) -> Result<(), JsValue> {
    if host_code::running() {
        return Err(to_js_error(SchedulerError::new(
            ErrorCode::InvalidState,
            format!("{method}() cannot run inside compile or participants; call it afterwards"),
        )));
    }
    Ok(())
}

/// An operation id given by the host: a string (without lone surrogates, which no id has).
/// The most ids one `known(ids)` looks up.
const MAX_KNOWN_IDS: usize = 100_000;

fn operation_id(id: &JsValue) -> Result<String, JsValue> {
    match exact_text(id) {
        Some(Ok(id)) => Ok(id),
        _ => Err(to_js_error(SchedulerError::new(
            ErrorCode::UnknownOperation,
            "an operation id is a string of A-Z a-z 0-9 . _ : -",
        ))),
    }
}

impl Scheduler {
    /// Opens the enqueue's transaction ahead, unless host code of a core step is running
    /// (the enqueue then starts once the step is over). With `coalesceMs` set it waits for
    /// the intents ([`Self::open_ahead_unless_held`]).
    fn open_ahead(&self) {
        if !self.holds_keyed && !host_code::running() {
            self.tab.open_ahead();
        }
    }

    /// With `coalesceMs` set, once the intents are decoded: opens the transaction ahead unless
    /// every intent has a `coalesceKey`. Those are held, and their write waits for the hold
    /// (a drag's updates share one), so a transaction opened now would commit empty.
    fn open_ahead_unless_held<'a>(&self, mut inputs: impl Iterator<Item = &'a IntentInput>) {
        if self.holds_keyed
            && !inputs.all(|input| input.coalesce_key.is_some())
            && !host_code::running()
        {
            self.tab.open_ahead();
        }
    }

    /// The intents of `enqueueMany`, read one at a time where a throw is caught (a Proxy, an
    /// index getter): the first bad one refuses the call.
    fn decode_many(&self, intents: &JsValue) -> Result<Vec<DecodedIntent>, SchedulerError> {
        let not_array = || {
            SchedulerError::new(
                ErrorCode::InvalidIntent,
                "enqueueMany takes an array of intents",
            )
        };
        if !crate::web::json::is_array(intents) {
            return Err(not_array());
        }
        let length = js_sys::Reflect::get(intents, &"length".into())
            .ok()
            .and_then(|n| n.as_f64())
            .ok_or_else(not_array)?;
        let mut decoded = Vec::new();
        for at in 0..length.max(0.0) as u32 {
            let intent = js_sys::Reflect::get_u32(intents, at).map_err(|_| {
                SchedulerError::new(
                    ErrorCode::InvalidIntent,
                    format!("intent {at} is unreadable"),
                )
                .of_intent(at as usize)
            })?;
            decoded.push(
                decode_intent(&intent, self.max_payload_bytes)
                    .map_err(|error| error.of_intent(at as usize))?,
            );
        }
        Ok(decoded)
    }

    /// Runs `action` on the operation `id` names, refusing an id that is not a string.
    fn act_on(&self, action: HostAction, id: &JsValue, to_undefined: bool) -> Promise {
        match operation_id(id) {
            Ok(id) => self.act(action, JsValue::from_str(&id), to_undefined),
            Err(error) => Promise::reject(&error),
        }
    }

    /// Canvas id → the request holding it (empty in a tab that does not dispatch), for Rust
    /// callers: the `Error` [`claims`](Scheduler::claims_js) would throw in its place.
    pub fn claims(&self) -> JsValue {
        self.tab.claims().unwrap_or_else(to_js_error)
    }

    /// The operation record, or `undefined`, for Rust callers: the `Error`
    /// [`operation`](Scheduler::operation_js) would throw in its place.
    pub fn operation(&self, id: &str) -> JsValue {
        match self.tab.operation(id) {
            Ok(found) => found.unwrap_or(JsValue::UNDEFINED),
            Err(error) => to_js_error(error),
        }
    }

    /// Why the operation is where it is; an unknown id is `unknown_operation`.
    ///
    /// # Errors
    ///
    /// `unknown_operation`.
    pub fn explain(&self, id: &str) -> Result<JsValue, JsValue> {
        self.tab.explain(id).map_err(to_js_error)
    }

    /// Counters, the idle reason, and who dispatches, for Rust callers: the `Error`
    /// [`stats`](Scheduler::stats_js) would throw in its place.
    pub fn stats(&self) -> JsValue {
        self.tab.stats().unwrap_or_else(to_js_error)
    }

    /// `enqueueMany(intents)` for Rust callers: all or none.
    pub fn enqueue_many(&self, intents: JsValue) -> Promise {
        self.enqueue_many_js(intents, JsValue::UNDEFINED)
    }

    /// `enqueueMany(intents)`: all or none.
    fn enqueue_all(&self, intents: JsValue) -> Promise {
        let this = self.clone();
        promise(async move {
            let admitted = match this.decode_many(&intents) {
                Ok(decoded) => this.admit(decoded).await,
                Err(error) => Err(to_js_error(error)),
            };
            admitted.map_err(|error| name_intent(error, &intents, true))
        })
    }

    /// `enqueueMany(intents, { atomic: false })`: every valid intent, a result each.
    fn enqueue_valid(&self, intents: JsValue) -> Promise {
        let this = self.clone();
        promise(async move {
            let decoded = enqueue_many::decode_slots(&intents, this.max_payload_bytes)
                .map_err(to_js_error)?;
            this.admit_partial(decoded).await
        })
    }

    /// `flush(id)` for Rust callers.
    pub fn flush(&self, id: String) -> Promise {
        self.act(HostAction::Flush, JsValue::from_str(&id), false)
    }

    /// `retry(id)` for Rust callers.
    pub fn retry(&self, id: String) -> Promise {
        self.act(HostAction::Retry, JsValue::from_str(&id), true)
    }

    /// `discard(id)` for Rust callers.
    pub fn discard(&self, id: String) -> Promise {
        self.act(HostAction::Discard, JsValue::from_str(&id), true)
    }

    /// The `{ after, limit }` the dispatching tab's `events` action takes, from the options;
    /// every read of them runs where a throw (a getter, a Proxy) becomes `invalid_options`.
    fn events_arg(options: &JsValue) -> Result<JsValue, JsValue> {
        let bad =
            |message: String| to_js_error(SchedulerError::new(ErrorCode::InvalidOptions, message));
        if !(options.is_undefined() || options.is_null() || options.is_object()) {
            return Err(bad("events takes { after, limit } or nothing".into()));
        }
        let number = |key: &str| -> Result<Option<u64>, JsValue> {
            if options.is_undefined() || options.is_null() {
                return Ok(None);
            }
            let value = js_sys::Reflect::get(options, &key.into())
                .map_err(|_| bad(format!("events: {key} is unreadable")))?;
            if value.is_undefined() {
                return Ok(None);
            }
            match value.as_f64() {
                Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 => Ok(Some(n as u64)),
                _ => Err(bad(format!("events: {key} must be a non-negative integer"))),
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
        let holds_keyed = options.config.coalesce_ms > 0;
        let persist = options.persist;
        let sink: Option<EventSink> = options.hooks.on_event.clone().map(|handler| {
            Rc::new(move |event: &JsValue| events::deliver(&handler, event)) as EventSink
        });
        let driver_options = DriverOptions {
            database: options.database,
            endpoint: options.endpoint,
            attempt_timeout_ms: options.attempt_timeout_ms,
            load_page_size: 500,
            max_answer_bytes: options.max_answer_bytes,
            send_hooks: SendHooks {
                headers: options.hooks.headers,
                authorize: options.hooks.authorize,
                classify_error: options.hooks.classify_error,
                principal: options.config.principal.clone(),
                timeout_ms: options.attempt_timeout_ms,
            },
            js_transport: options.transport,
            host: WebHost {
                compile: options.hooks.compile,
                participants: options.hooks.participants,
                coalesce: options.hooks.coalesce,
                key: 0, // set by the driver
            },
            config: options.config,
        };
        let tab = Tab::open(driver_options, sink).await.map_err(to_js_error)?;
        tab.ask_persistence(persist);
        Ok(Scheduler {
            tab,
            max_payload_bytes,
            holds_keyed,
        })
    }
}
