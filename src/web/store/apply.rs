//! [`IdbLedger::apply`]: one [`PersistBatch`] in one readwrite transaction (group commit),
//! fenced exactly like [`MemoryStore::apply`](crate::testing::MemoryStore::apply): the
//! stored lease is read first (the writes are queued behind that read) and a stale or
//! missing fence aborts the whole transaction. The transaction itself is driven by a small
//! JS function (`apply.js`): one call and one promise per batch instead of a closure,
//! listeners and a wake-up per request.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use indexed_db_futures::internals::SystemRepr;
use js_sys::{Array, Function, Promise};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::codec::{decode, page_value, to_js};
use super::errors::js_error;
use super::schema::{
    BLOBS, EVENTS, LEASE, LEASE_KEY, OPERATIONS, OPERATION_PAGES, REQUESTS, SETTLED, TOMBSTONES,
    TOMBSTONE_HASHES,
};
use super::tombstones::page_writes;
use super::{IdbLedger, StoreFault};
use crate::core::io::{LeaseWrite, PersistBatch, PersistFailure, PersistResult};
use crate::core::model::Lease;
use crate::core::safe_error::SafeError;

#[wasm_bindgen(module = "/src/web/store/apply.js")]
extern "C" {
    #[wasm_bindgen(js_name = applyBatch)]
    fn apply_batch(
        slot: &JsValue,
        db: &web_sys::IdbDatabase,
        stores: &Array,
        lease_store: &JsValue,
        lease_key: &JsValue,
        writes: &Array,
        decide: &Function,
        abort_instead: bool,
        relaxed: bool,
    ) -> Promise;

    /// Opens the transaction the next batch on `db` is written in and reads the lease in it,
    /// kept in `slot` (the ledger's [`IdbLedger::ahead`]); true when it opened one (none was
    /// open on `db`).
    #[wasm_bindgen(js_name = openAhead)]
    fn open_ahead(
        slot: &JsValue,
        db: &web_sys::IdbDatabase,
        stores: &Array,
        lease_store: &JsValue,
        lease_key: &JsValue,
    ) -> bool;

    /// Whether the last `applyBatch` with `slot` wrote its batch in the transaction opened
    /// ahead.
    #[wasm_bindgen(js_name = tookAhead)]
    fn took_ahead(slot: &JsValue) -> bool;
}

/// What one write of a batch does to its store (`apply.js`'s `Write`).
#[derive(Clone, Copy)]
enum Write {
    /// Put `value` under `key`.
    Put,
    /// Delete `key`.
    Delete,
    /// Delete every key below `key`.
    DeleteBelow,
    /// Delete every tombstone keyed below `key`: single records, and pages whose newest is.
    TombstonesBelow,
    /// Keep only the newest `key` tombstones (pages counted by their hashes).
    KeepNewestTombstones,
    /// Keep only the newest `key` records of a store with number keys (the archive).
    KeepNewestKeys,
}

impl Write {
    const ALL: [Write; 6] = [
        Write::Put,
        Write::Delete,
        Write::DeleteBelow,
        Write::TombstonesBelow,
        Write::KeepNewestTombstones,
        Write::KeepNewestKeys,
    ];

    /// Its name in `apply.js`.
    fn name(self) -> &'static str {
        match self {
            Write::Put => "put",
            Write::Delete => "delete",
            Write::DeleteBelow => "deleteBelow",
            Write::TombstonesBelow => "tombstonesBelow",
            Write::KeepNewestTombstones => "keepNewestTombstones",
            Write::KeepNewestKeys => "keepNewestKeys",
        }
    }

    /// Its name as a JS string, from the cache.
    fn js(self) -> JsValue {
        // `ALL` lists the variants in declaration order.
        JS_WRITES.with(|writes| writes[self as usize].clone())
    }
}

/// `apply.js`'s answers besides an error: committed, or refused at the lease read.
const DONE: f64 = 0.0;
const REFUSED: f64 = 1.0;

/// Every store a batch may write: the scope of a transaction opened ahead, which any batch's
/// [`scope`] is within.
const BATCH_STORES: [&str; 5] = [LEASE, OPERATION_PAGES, OPERATIONS, REQUESTS, EVENTS];

/// Every name `apply.js` is given, in one order.
const NAMES: [&str; 10] = [
    LEASE,
    LEASE_KEY,
    OPERATION_PAGES,
    OPERATIONS,
    REQUESTS,
    EVENTS,
    TOMBSTONES,
    TOMBSTONE_HASHES,
    BLOBS,
    SETTLED,
];

thread_local! {
    /// [`Write::ALL`]'s names as JS strings, made once.
    static JS_WRITES: Vec<JsValue> = Write::ALL.iter().map(|w| JsValue::from_str(w.name())).collect();

    /// [`NAMES`] as JS strings, made once: each `JsValue::from_str` is a copy through
    /// `TextDecoder`, and an enqueue's batch names five of them.
    static JS_NAMES: Vec<JsValue> = NAMES.iter().map(|name| JsValue::from_str(name)).collect();

    /// Every store a batch writes, as the array [`IdbLedger::open_ahead`] gives `apply.js`
    /// (which only reads it), made once.
    static AHEAD_STORES: Array = BATCH_STORES.into_iter().map(js_name).collect();
}

/// `name` (one of [`NAMES`]) as a JS string, from the cache.
fn js_name(name: &str) -> JsValue {
    JS_NAMES.with(|names| {
        match NAMES
            .iter()
            .position(|n| *n == name)
            .and_then(|at| names.get(at))
        {
            Some(value) => value.clone(),
            None => JsValue::from_str(name),
        }
    })
}

/// The batch's writes for `apply.js`, serialized before the transaction opens (a record that
/// cannot be stored fails the batch before anything is written). Order as before: pages,
/// operations, folded records and dropped pages deleted, requests, events, the trim.
fn encode(batch: &PersistBatch) -> Result<Array, SafeError> {
    let writes = Array::new();
    if batch.fence.is_none() {
        return Ok(writes); // refused at the lease read: nothing to issue
    }
    let push = |write: Write, store: &str, key: JsValue, value: JsValue| {
        writes.push(&write.js());
        writes.push(&js_name(store));
        writes.push(&key);
        writes.push(&value);
    };
    for page in &batch.operation_pages {
        push(
            Write::Put,
            OPERATION_PAGES,
            number(page.no),
            page_value(page)?,
        );
    }
    for op in &batch.operations {
        push(
            Write::Put,
            OPERATIONS,
            JsValue::from_str(&op.intent.id),
            to_js(op)?,
        );
    }
    // Folded into this batch's pages: the page copy is current once the record goes.
    for id in &batch.drop_operations {
        push(
            Write::Delete,
            OPERATIONS,
            JsValue::from_str(id),
            JsValue::UNDEFINED,
        );
    }
    for no in &batch.drop_operation_pages {
        push(
            Write::Delete,
            OPERATION_PAGES,
            number(*no),
            JsValue::UNDEFINED,
        );
    }
    for request in &batch.requests {
        push(
            Write::Put,
            REQUESTS,
            JsValue::from_str(&request.id),
            to_js(request)?,
        );
    }
    // The batch's events as one page keyed by its last seq: one record per transaction
    // instead of one per event (about three per operation). The trim's range delete then
    // drops only pages that end below it.
    if let Some(last) = batch.events.last() {
        push(Write::Put, EVENTS, number(last.seq), to_js(&batch.events)?);
    }
    if let Some(below) = batch.trim_events_below {
        push(
            Write::DeleteBelow,
            EVENTS,
            number(below),
            JsValue::UNDEFINED,
        );
    }
    // Retention: the compacted operations' tombstones (one page), then what they free.
    if let Some(newest) = batch.tombstones.iter().map(|t| t.key).max() {
        let json = to_js(&batch.tombstones)?;
        for (store, key, value) in page_writes(newest, &batch.tombstones, json) {
            push(Write::Put, store, key, value);
        }
    }
    // The archive: each compacted operation the policy keeps whole, under its tombstone's key.
    for tombstone in &batch.tombstones {
        if let Some(whole) = &tombstone.whole {
            push(
                Write::Put,
                SETTLED,
                number(tombstone.key),
                to_js(whole.as_ref())?,
            );
        }
    }
    if let Some(trim) = &batch.trim_archive {
        push(
            Write::DeleteBelow,
            SETTLED,
            number(trim.below),
            JsValue::UNDEFINED,
        );
        push(
            Write::KeepNewestKeys,
            SETTLED,
            number(trim.keep as u64),
            JsValue::UNDEFINED,
        );
    }
    for id in &batch.drop_requests {
        push(
            Write::Delete,
            REQUESTS,
            JsValue::from_str(id),
            JsValue::UNDEFINED,
        );
    }
    for id in &batch.drop_blobs {
        push(
            Write::Delete,
            BLOBS,
            JsValue::from_str(id),
            JsValue::UNDEFINED,
        );
    }
    if let Some(trim) = &batch.trim_tombstones {
        push(
            Write::TombstonesBelow,
            TOMBSTONES,
            number(trim.below),
            JsValue::UNDEFINED,
        );
        // `usize::MAX`: by age only (an open's trim, before the tombstones are counted).
        if trim.keep != usize::MAX {
            push(
                Write::KeepNewestTombstones,
                TOMBSTONES,
                number(trim.keep as u64),
                JsValue::UNDEFINED,
            );
        }
    }
    Ok(writes)
}

fn number(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// What the lease read decided, kept for after the transaction.
#[derive(Default)]
struct LeaseCheck {
    /// The lease as stored after the batch (renewed if the batch renews it).
    lease: Option<Lease>,
    /// A renewal that could not be serialized (the batch was refused for it).
    error: Option<SafeError>,
}

impl IdbLedger {
    /// Writes `batch` in one readwrite transaction, strict unless the batch may be relaxed
    /// (`PersistBatch::relaxed`; a transaction opened ahead is strict), after checking
    /// its fence against the stored lease in that same transaction.
    ///
    /// Returns `Done { lease }` with the lease as stored after the write; `Fenced` when the
    /// batch has no fence or the stored fence differs (nothing written); `Storage` for any
    /// storage failure — quota, abort, closed connection — with nothing written.
    ///
    /// The transaction opens when this is called, not when the future is first polled: the
    /// driver calls it from the group commit, and a spawned task would start it a microtask
    /// later with a task's bookkeeping on every enqueue.
    pub fn apply(&self, batch: &PersistBatch) -> impl Future<Output = PersistResult> + 'static {
        let failed = |error| PersistResult::Failed(PersistFailure::Storage(error));
        let begun = self.begin_batch(batch);
        async move {
            let (promise, check, decide, fault) = match begun {
                Ok(begun) => begun,
                Err(error) => return failed(error),
            };
            let outcome = JsFuture::from(promise).await.unwrap_or_else(|error| error);
            drop(decide);
            let check = check.take();
            match outcome.as_f64() {
                Some(n) if n == DONE => PersistResult::Done { lease: check.lease },
                Some(n) if n == REFUSED => match check.error {
                    Some(error) => failed(error),
                    None => PersistResult::Failed(PersistFailure::Fenced {
                        current: check.lease,
                    }),
                },
                // An injected fault aborts instead of committing: nothing was written.
                _ => failed(match fault {
                    Some(fault) => fault.error(),
                    None => js_error(&outcome),
                }),
            }
        }
    }

    /// Opens the transaction the next batch will be written in, over every store a batch
    /// writes, and issues its lease read: the browser starts it while the scheduler reads and
    /// admits intents (most of an enqueue's wait is the transaction's start). The batch takes
    /// it if it is made in the same turn; otherwise it opens its own, and the one opened here
    /// commits having read the lease only. Call it only where a batch is about to follow
    /// (an enqueue in the dispatching tab): a readwrite transaction holds up other tabs'.
    pub fn open_ahead(&self) {
        if let Ok(db) = self.db() {
            let raw: &web_sys::IdbDatabase = db.as_sys().unchecked_ref();
            let opened = AHEAD_STORES.with(|stores| {
                open_ahead(
                    &self.ahead,
                    raw,
                    stores,
                    &js_name(LEASE),
                    &js_name(LEASE_KEY),
                )
            });
            if opened {
                self.transactions.set(self.transactions.get() + 1);
            }
        }
    }

    /// Encodes `batch` and opens its transaction through `apply.js` (or takes the one
    /// [`open_ahead`](Self::open_ahead) opened).
    fn begin_batch(&self, batch: &PersistBatch) -> Result<Begun, SafeError> {
        let writes = encode(batch)?;
        // The page this batch writes, in the index enqueues consult (tombstones.rs).
        if let Some(newest) = batch.tombstones.iter().map(|t| t.key).max() {
            let ids = batch.tombstones.iter().map(|t| t.id.as_str());
            self.tombstone_index.borrow_mut().note_page(newest, ids);
        }
        let db = self.db()?;
        let stores: Array = scope(batch).into_iter().map(js_name).collect();
        let check = Rc::new(RefCell::new(LeaseCheck::default()));
        let decide = lease_decision(batch, check.clone());
        let fault = self.faults.take();
        let raw: &web_sys::IdbDatabase = db.as_sys().unchecked_ref();
        let promise = apply_batch(
            &self.ahead,
            raw,
            &stores,
            &js_name(LEASE),
            &js_name(LEASE_KEY),
            &writes,
            decide.as_ref().unchecked_ref(),
            fault.is_some(),
            batch.relaxed,
        );
        if took_ahead(&self.ahead) {
            self.written_ahead.set(self.written_ahead.get() + 1);
        } else {
            self.transactions.set(self.transactions.get() + 1);
            if batch.relaxed {
                self.relaxed.set(self.relaxed.get() + 1);
            }
        }
        Ok((promise, check, decide, fault))
    }
}

/// A begun transaction: its promise, what the lease read decides, the callback that decides
/// it (kept alive until the promise settles) and the injected fault it carries, if any.
type Begun = (
    Promise,
    Rc<RefCell<LeaseCheck>>,
    Closure<dyn FnMut(JsValue) -> JsValue>,
    Option<StoreFault>,
);

/// The callback `apply.js` runs when the lease read answers: refuse unless the batch's fence
/// is the stored one (an unreadable lease record counts as none: nobody's fence matches it),
/// and give the renewed lease to put when the batch renews it.
fn lease_decision(
    batch: &PersistBatch,
    check: Rc<RefCell<LeaseCheck>>,
) -> Closure<dyn FnMut(JsValue) -> JsValue> {
    let fence = batch.fence;
    let renew = batch.lease.clone();
    Closure::new(move |stored: JsValue| {
        let mut lease: Option<Lease> = decode(&stored).ok();
        let mut check = check.borrow_mut();
        if fence.is_none() || lease.as_ref().map(|l| l.fence) != fence {
            check.lease = lease;
            return JsValue::FALSE;
        }
        let mut answer = JsValue::UNDEFINED;
        if let (Some(LeaseWrite::Renew { expires_at }), Some(current)) = (&renew, &mut lease) {
            current.expires_at = *expires_at;
            match to_js(current) {
                Ok(value) => answer = value,
                Err(error) => {
                    check.error = Some(error);
                    return JsValue::FALSE;
                }
            }
        }
        check.lease = lease;
        answer
    })
}

/// The stores `batch` writes, and the lease: a transaction over fewer stores costs the
/// browser less to open and commit (an enqueue touches three of the five).
fn scope(batch: &PersistBatch) -> Vec<&'static str> {
    let mut stores = vec![LEASE];
    let tombstones = !batch.tombstones.is_empty() || batch.trim_tombstones.is_some();
    let writes = [
        (
            OPERATION_PAGES,
            !batch.operation_pages.is_empty() || !batch.drop_operation_pages.is_empty(),
        ),
        (
            OPERATIONS,
            !batch.operations.is_empty() || !batch.drop_operations.is_empty(),
        ),
        (
            REQUESTS,
            !batch.requests.is_empty() || !batch.drop_requests.is_empty(),
        ),
        (
            EVENTS,
            !batch.events.is_empty() || batch.trim_events_below.is_some(),
        ),
        (TOMBSTONES, tombstones),
        (TOMBSTONE_HASHES, tombstones),
        (
            SETTLED,
            batch.trim_archive.is_some() || batch.tombstones.iter().any(|t| t.whole.is_some()),
        ),
        (BLOBS, !batch.drop_blobs.is_empty()),
    ];
    stores.extend(
        writes
            .iter()
            .filter(|(_, used)| *used)
            .map(|(store, _)| *store),
    );
    stores
}
