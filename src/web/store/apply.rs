//! [`IdbLedger::apply`]: one [`PersistBatch`] in one readwrite transaction (group commit),
//! fenced exactly like `MemoryStore::apply` (the test world, `canvas_scheduler_testing`): the
//! stored lease is read first (the writes are queued behind that read) and a stale or
//! missing fence aborts the whole transaction. The transaction and its requests go through
//! `indexed_db_futures`; the lease read's answer is handled by a task of the batch's own
//! (spawned as the batch begins, so it polls the read before the read can answer: the
//! library listens to a request only once it is polled, and a read answered unheard would let
//! the transaction commit its writes with no fence check).

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

use indexed_db_futures::cursor::CursorDirection;
use indexed_db_futures::database::Database;
use indexed_db_futures::error::Error;
use indexed_db_futures::future::BasicRequest;
use indexed_db_futures::internals::SystemRepr;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionDurability};
use indexed_db_futures::KeyRange;
use js_sys::Array;
use wasm_bindgen::{JsCast, JsValue};

use canvas_scheduler_core::{
    Lease, LeaseWrite, PersistBatch, PersistFailure, PersistResult, SafeError,
};

use super::codec::{decode, page_value, to_js};
use super::errors::{describe, js_error};
use super::open_batches::{OpenBatches, OpenEntry};
use super::requests::transaction;
use super::schema::{
    BLOBS, EVENTS, LEASE, LEASE_KEY, OPERATIONS, OPERATION_PAGES, REQUESTS, SETTLED, TOMBSTONES,
    TOMBSTONE_HASHES,
};
use super::tombstones::page_writes;
use super::{IdbLedger, StoreFault};
use crate::web::driver::promise::Signal;
use crate::web::task::spawn;

/// Every store a batch may write but tombstones, the archive and blobs: the scope of a
/// transaction opened ahead (an enqueue's batch is within it).
const BATCH_STORES: [&str; 5] = [LEASE, OPERATION_PAGES, OPERATIONS, REQUESTS, EVENTS];

/// One write of a batch, serialized before the transaction opens.
enum Write {
    Put(&'static str, JsValue, JsValue),
    Delete(&'static str, JsValue),
    /// Every key below `key` (exclusive).
    DeleteBelow(&'static str, JsValue),
    /// Every tombstone below `key`: single records keyed below it, and pages whose newest is.
    TombstonesBelow(JsValue),
}

/// A batch's writes: those issued at once, and the count trims, which walk a cursor once the
/// lease read has answered (how many tombstones, and how many archived operations, to keep).
struct Writes {
    list: Vec<Write>,
    keep_newest: Option<u32>,
    keep_newest_keys: Option<u32>,
}

impl Writes {
    fn is_empty(&self) -> bool {
        self.list.is_empty() && self.keep_newest.is_none() && self.keep_newest_keys.is_none()
    }
}

/// The batch's writes, serialized before the transaction opens (a record that cannot be
/// stored fails the batch before anything is written). Order: pages, operations, folded
/// records and dropped pages deleted, requests, events, the tombstone page, the archive, the
/// trims.
fn encode(batch: &PersistBatch) -> Result<Writes, SafeError> {
    let mut list = Vec::new();
    let mut keep_newest = None;
    let mut keep_newest_keys = None;
    if batch.fence.is_none() {
        return Ok(Writes {
            list,
            keep_newest,
            keep_newest_keys,
        });
    }
    for page in &batch.operation_pages {
        list.push(Write::Put(
            OPERATION_PAGES,
            number(page.no),
            page_value(page)?,
        ));
    }
    for op in &batch.operations {
        list.push(Write::Put(
            OPERATIONS,
            JsValue::from_str(&op.intent.id),
            to_js(op)?,
        ));
    }
    for id in &batch.drop_operations {
        list.push(Write::Delete(OPERATIONS, JsValue::from_str(id)));
    }
    for no in &batch.drop_operation_pages {
        list.push(Write::Delete(OPERATION_PAGES, number(*no)));
    }
    for request in &batch.requests {
        list.push(Write::Put(
            REQUESTS,
            JsValue::from_str(&request.id),
            to_js(request)?,
        ));
    }
    if let Some(last) = batch.events.last() {
        list.push(Write::Put(EVENTS, number(last.seq), to_js(&batch.events)?));
    }
    if let Some(below) = batch.trim_events_below {
        list.push(Write::DeleteBelow(EVENTS, number(below)));
    }
    if let Some(newest) = batch.tombstones.iter().map(|t| t.key).max() {
        let json = to_js(&batch.tombstones)?;
        for (store, key, value) in page_writes(newest, &batch.tombstones, json) {
            list.push(Write::Put(store, key, value));
        }
    }
    for tombstone in &batch.tombstones {
        if let Some(whole) = &tombstone.whole {
            list.push(Write::Put(
                SETTLED,
                number(tombstone.key),
                to_js(whole.as_ref())?,
            ));
        }
    }
    if let Some(trim) = &batch.trim_archive {
        list.push(Write::DeleteBelow(SETTLED, number(trim.below)));
        keep_newest_keys = Some(trim.keep.min(u32::MAX as usize) as u32);
    }
    for id in &batch.drop_requests {
        list.push(Write::Delete(REQUESTS, JsValue::from_str(id)));
    }
    for id in &batch.drop_blobs {
        list.push(Write::Delete(BLOBS, JsValue::from_str(id)));
    }
    if let Some(trim) = &batch.trim_tombstones {
        list.push(Write::TombstonesBelow(number(trim.below)));
        if trim.keep != usize::MAX {
            keep_newest = Some(trim.keep.min(u32::MAX as usize) as u32);
        }
    }
    Ok(Writes {
        list,
        keep_newest,
        keep_newest_keys,
    })
}

fn number(n: u64) -> JsValue {
    JsValue::from_f64(n as f64)
}

/// What the lease read decided.
#[derive(Default)]
struct LeaseCheck {
    /// The lease as stored after the batch (renewed if the batch renews it).
    lease: Option<Lease>,
    /// A renewal that could not be serialized (the batch was refused for it).
    error: Option<SafeError>,
}

/// A library error as a safe error: a `DOMException` by its name and message.
fn idb_error(error: Error) -> SafeError {
    match &error {
        Error::DomException(dom) => js_error(dom.as_sys().as_ref()),
        other => SafeError::new("storage_error", &describe(other)),
    }
}

/// A batch's readwrite transaction, on the connection's database handle (kept for the page's
/// life, `connection.rs`): it outlives the call that opened it.
struct OwnedTx {
    tx: Transaction<'static>,
    db: &'static Database,
    /// In the handle's open batches until the batch is over (`open_batches.rs`).
    _open: OpenEntry,
}

impl OwnedTx {
    fn begin(
        db: &'static Database,
        stores: &[&str],
        relaxed: bool,
        open: &OpenBatches,
    ) -> Result<Self, Error> {
        let durability = if relaxed {
            TransactionDurability::Relaxed
        } else {
            TransactionDurability::Strict
        };
        let tx = transaction(db, stores, true, durability)?;
        let raw: web_sys::IdbTransaction = tx.as_sys().clone().unchecked_into();
        Ok(Self {
            tx,
            db,
            _open: open.enter(raw),
        })
    }

    /// Issues the lease read.
    fn read_lease(&self) -> Result<BasicRequest<Option<JsValue>>, Error> {
        self.tx
            .object_store(LEASE)?
            .get::<JsValue, JsValue, _>(JsValue::from_str(LEASE_KEY))
            .primitive()
    }

    /// The raw database, to tell a transaction opened ahead on another connection.
    fn raw_db(&self) -> &JsValue {
        self.db.as_sys().as_ref()
    }

    /// Issues `writes` (not awaited: a failing one aborts the transaction, which the commit
    /// reports). Fails, having issued nothing that can land, when the transaction takes no
    /// requests (its turn is over, or it was aborted under us).
    fn issue(&self, writes: &Writes) -> Result<(), Error> {
        let tx = &self.tx;
        let below = |key: &JsValue| KeyRange::UpperBound(key.clone(), true);
        for write in &writes.list {
            match write {
                Write::Put(store, key, value) => drop(
                    tx.object_store(store)?
                        .put(value.clone())
                        .with_key(key.clone())
                        .without_key_type()
                        .primitive()?,
                ),
                Write::Delete(store, key) => drop(
                    tx.object_store(store)?
                        .delete::<JsValue, _>(key.clone())
                        .primitive()?,
                ),
                Write::DeleteBelow(store, key) => drop(
                    tx.object_store(store)?
                        .delete::<JsValue, KeyRange<JsValue>>(below(key))
                        .primitive()?,
                ),
                Write::TombstonesBelow(key) => {
                    let store = tx.object_store(TOMBSTONES)?;
                    drop(
                        store
                            .delete::<JsValue, KeyRange<JsValue>>(below(key))
                            .primitive()?,
                    );
                    let pages = KeyRange::Bound(
                        JsValue::from(Array::new()),
                        false,
                        JsValue::from(Array::of1(key)),
                        true,
                    );
                    drop(
                        store
                            .delete::<JsValue, KeyRange<JsValue>>(pages)
                            .primitive()?,
                    );
                    drop(
                        tx.object_store(TOMBSTONE_HASHES)?
                            .delete::<JsValue, KeyRange<JsValue>>(below(key))
                            .primitive()?,
                    );
                }
            }
        }
        Ok(())
    }
}

/// A transaction opened ahead of its batch ([`IdbLedger::open_ahead`]), its lease read issued:
/// usable only in the turn it was opened in (a transaction takes requests only until the
/// microtasks after its task are done); an answer to its read means that turn is over.
pub(super) struct Ahead {
    owned: OwnedTx,
    read: BasicRequest<Option<JsValue>>,
}

impl Ahead {
    /// Whether its lease read has answered (or failed): its turn is over.
    fn expired(&self) -> bool {
        self.read.as_sys().ready_state() == web_sys::IdbRequestReadyState::Done
    }
}

/// A begun batch: its transaction (lease read and writes issued), the read, the count trims,
/// and the injected fault it carries.
struct Begun {
    owned: OwnedTx,
    read: BasicRequest<Option<JsValue>>,
    keep_newest: Option<u32>,
    keep_newest_keys: Option<u32>,
    fault: Option<StoreFault>,
}

fn failed(error: SafeError) -> PersistResult {
    PersistResult::Failed(PersistFailure::Storage(error))
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
    /// The transaction opens (and its requests are issued) when this is called, not when the
    /// future is first polled: the driver calls it from the group commit.
    pub fn apply(&self, batch: &PersistBatch) -> impl Future<Output = PersistResult> + 'static {
        let begun = self.begin_batch(batch);
        let outcome: Rc<RefCell<Option<PersistResult>>> = Rc::default();
        let done = Signal::new();
        match begun {
            Ok(begun) => {
                // Driven by a task of its own, polled in this turn's microtasks: the lease
                // read's answer must be handled while the transaction is active.
                let (fence, renew) = (batch.fence, batch.lease.clone());
                let (outcome, done) = (outcome.clone(), done.clone());
                spawn(async move {
                    let result = drive(begun, fence, renew).await;
                    *outcome.borrow_mut() = Some(result);
                    done.resolve();
                });
            }
            Err(error) => {
                *outcome.borrow_mut() = Some(failed(error));
                done.resolve();
            }
        }
        async move {
            done.wait().await;
            let result = outcome.borrow_mut().take();
            result.unwrap_or_else(|| failed(SafeError::new("storage_error", "no outcome")))
        }
    }

    /// Opens the transaction the next batch will be written in, over every store a batch
    /// writes, and issues its lease read: the browser starts it while the scheduler reads and
    /// admits intents (most of an enqueue's wait is the transaction's start). The batch takes
    /// it if it is made in the same turn; otherwise it opens its own, and the one opened here
    /// commits having read the lease only. Call it only where a batch is about to follow
    /// (an enqueue in the dispatching tab): a readwrite transaction holds up other tabs'.
    pub fn open_ahead(&self) {
        let Ok(db) = self.shared_db() else { return };
        if let Some(entry) = self.ahead.borrow().as_ref() {
            let raw: &JsValue = db.as_sys().as_ref();
            if !entry.expired() && entry.owned.raw_db() == raw {
                return;
            }
        }
        let Ok(owned) = OwnedTx::begin(db, &BATCH_STORES, false, &self.open_batches) else {
            return;
        };
        let Ok(read) = owned.read_lease() else { return };
        *self.ahead.borrow_mut() = Some(Ahead { owned, read });
        self.transactions.set(self.transactions.get() + 1);
    }

    /// The transaction opened ahead on `db`, if there is one still open that covers `stores`;
    /// one that does not is dropped (aborted: it has written nothing).
    fn take_ahead(&self, db: &'static Database, stores: &[&str]) -> Option<Ahead> {
        let mut slot = self.ahead.borrow_mut();
        let raw: &JsValue = db.as_sys().as_ref();
        if slot.as_ref()?.owned.raw_db() != raw {
            return None;
        }
        let entry = slot.take()?;
        drop(slot);
        if entry.expired() || !stores.iter().all(|store| BATCH_STORES.contains(store)) {
            return None;
        }
        Some(entry)
    }

    /// Encodes `batch`, opens its transaction (or takes the one
    /// [`open_ahead`](Self::open_ahead) opened), and issues the lease read and the writes.
    fn begin_batch(&self, batch: &PersistBatch) -> Result<Begun, SafeError> {
        let writes = encode(batch)?;
        if let Some(newest) = batch.tombstones.iter().map(|t| t.key).max() {
            let ids = batch.tombstones.iter().map(|t| t.id.as_str());
            self.tombstone_index.borrow_mut().note_page(newest, ids);
        }
        let db = self.shared_db()?;
        let stores = scope(batch);
        let fault = self.faults.take();
        // Only a batch with writes takes it: the first write is what tells a transaction of an
        // earlier turn (no longer active) from one of this turn. A batch without (a refusal, a
        // bare renewal) riding an earlier turn's transaction would be ordered before
        // transactions opened since.
        if !writes.is_empty() {
            if let Some(ahead) = self.take_ahead(db, &stores) {
                if ahead.owned.issue(&writes).is_ok() {
                    self.written_ahead.set(self.written_ahead.get() + 1);
                    return Ok(Begun {
                        owned: ahead.owned,
                        read: ahead.read,
                        keep_newest: writes.keep_newest,
                        keep_newest_keys: writes.keep_newest_keys,
                        fault,
                    });
                }
            }
        }
        self.transactions.set(self.transactions.get() + 1);
        if batch.relaxed {
            self.relaxed.set(self.relaxed.get() + 1);
        }
        let failed = |error: Error| {
            fault
                .as_ref()
                .map_or_else(|| idb_error(error), |f| f.error())
        };
        let owned =
            OwnedTx::begin(db, &stores, batch.relaxed, &self.open_batches).map_err(failed)?;
        let read = owned.read_lease().map_err(failed)?;
        owned.issue(&writes).map_err(failed)?;
        Ok(Begun {
            owned,
            read,
            keep_newest: writes.keep_newest,
            keep_newest_keys: writes.keep_newest_keys,
            fault,
        })
    }
}

/// Drives a begun batch to its end: the lease read's verdict, the renewal, the count trims,
/// then commit (or abort).
async fn drive(begun: Begun, fence: Option<u64>, renew: Option<LeaseWrite>) -> PersistResult {
    let Begun {
        owned,
        read,
        keep_newest: keep,
        keep_newest_keys: keep_keys,
        fault,
    } = begun;
    let storage = |error: SafeError| failed(fault.as_ref().map_or(error, |f| f.error()));
    // Answers in the read's success event; this continuation runs in that event's microtask
    // checkpoint, while the transaction is still active.
    let stored = match read.await {
        Ok(stored) => stored.unwrap_or(JsValue::UNDEFINED),
        Err(error) => return storage(idb_error(error)),
    };
    let mut check = LeaseCheck::default();
    let Some(renewal) = decide(fence, renew.as_ref(), &stored, &mut check) else {
        let _ = owned.tx.abort().await;
        return match check.error {
            Some(error) => failed(error),
            None => PersistResult::Failed(PersistFailure::Fenced {
                current: check.lease,
            }),
        };
    };
    if let Some(value) = renewal {
        let put = owned.tx.object_store(LEASE).and_then(|store| {
            store
                .put(value)
                .with_key(JsValue::from_str(LEASE_KEY))
                .without_key_type()
                .primitive()
        });
        if let Err(error) = put {
            return storage(idb_error(error));
        }
    }
    if let Some(fault) = fault {
        let _ = owned.tx.abort().await;
        return failed(fault.error());
    }
    if let Some(keep) = keep {
        if let Err(error) = keep_newest(&owned.tx, keep).await {
            return storage(idb_error(error));
        }
    }
    if let Some(keep) = keep_keys {
        if let Err(error) = keep_newest_keys(&owned.tx, SETTLED, keep).await {
            return storage(idb_error(error));
        }
    }
    let raw: web_sys::IdbTransaction = owned.tx.as_sys().clone().unchecked_into();
    let committed = owned.tx.commit().await;
    match committed {
        Ok(()) => PersistResult::Done { lease: check.lease },
        Err(error) => storage(match (raw.error(), error) {
            (Some(dom), _) => js_error(&dom),
            (None, error @ Error::DomException(_)) => idb_error(error),
            (None, _) => SafeError::new("AbortError", "transaction aborted"),
        }),
    }
}

/// The lease read's verdict: refuse (`None`) unless the batch's fence is the stored one (an
/// unreadable lease record counts as none: nobody's fence matches it); else the renewed lease
/// to put when the batch renews it.
fn decide(
    fence: Option<u64>,
    renew: Option<&LeaseWrite>,
    stored: &JsValue,
    check: &mut LeaseCheck,
) -> Option<Option<JsValue>> {
    let mut lease: Option<Lease> = decode(stored).ok();
    if fence.is_none() || lease.as_ref().map(|l| l.fence) != fence {
        check.lease = lease;
        return None;
    }
    let mut answer = None;
    if let (Some(LeaseWrite::Renew { expires_at }), Some(current)) = (renew, &mut lease) {
        current.expires_at = *expires_at;
        match to_js(current) {
            Ok(value) => answer = Some(value),
            Err(error) => {
                check.error = Some(error);
                return None;
            }
        }
    }
    check.lease = lease;
    Some(answer)
}

/// Deletes every tombstone but the newest `keep` (pages are kept whole): a reverse cursor over
/// the pages' hashes adds up the ids each holds, and once `keep` are reached everything older
/// goes in one range delete of each store. When every page stays, single records of version 7
/// (number keys, below every page) are stepped over in one `advance` for what is left to keep.
async fn keep_newest(tx: &Transaction<'_>, keep: u32) -> Result<(), Error> {
    let store = tx.object_store(TOMBSTONES)?;
    let hashes = tx.object_store(TOMBSTONE_HASHES)?;
    if keep == 0 {
        drop(store.clear()?);
        drop(hashes.clear()?);
        return Ok(());
    }
    let mut left = f64::from(keep);
    let pages = hashes
        .open_cursor()
        .with_direction(CursorDirection::Prev)
        .primitive()?
        .await?;
    if let Some(mut pages) = pages {
        while let Some(value) = pages.next_record::<JsValue>().await? {
            left -= js_sys::Reflect::get(&value, &JsValue::from_str("length"))
                .ok()
                .and_then(|length| length.as_f64())
                .unwrap_or(0.0);
            if left > 0.0 {
                continue;
            }
            let time = pages.key::<JsValue>()?.unwrap_or(JsValue::UNDEFINED);
            let page_key: JsValue = Array::of1(&time).into();
            drop(
                hashes
                    .delete::<JsValue, KeyRange<JsValue>>(KeyRange::UpperBound(time, true))
                    .primitive()?,
            );
            drop(
                store
                    .delete::<JsValue, KeyRange<JsValue>>(KeyRange::UpperBound(page_key, true))
                    .primitive()?,
            );
            return Ok(());
        }
    }
    let singles = store
        .open_key_cursor()
        .with_query::<JsValue, KeyRange<JsValue>>(KeyRange::UpperBound(
            JsValue::from(Array::new()),
            true,
        ))
        .with_direction(CursorDirection::Prev)
        .primitive()?
        .await?;
    if let Some(single) = singles {
        trim_below(&store, single, left as u32).await?;
    }
    Ok(())
}

/// Deletes every record of `name` (number keys) but the newest `keep`.
async fn keep_newest_keys(tx: &Transaction<'_>, name: &str, keep: u32) -> Result<(), Error> {
    let store = tx.object_store(name)?;
    if keep == 0 {
        drop(store.clear()?);
        return Ok(());
    }
    let cursor = store
        .open_key_cursor()
        .with_direction(CursorDirection::Prev)
        .primitive()?
        .await?;
    if let Some(cursor) = cursor {
        trim_below(&store, cursor, keep).await?;
    }
    Ok(())
}

/// Steps the reverse `cursor` over `skip` records, then deletes from where it lands down, in
/// one range delete (nothing when it stepped past the last).
async fn trim_below<Qs>(
    store: &indexed_db_futures::object_store::ObjectStore<'_>,
    mut cursor: indexed_db_futures::cursor::KeyCursor<'_, Qs>,
    skip: u32,
) -> Result<(), Error> {
    cursor.advance_by(skip).await?;
    let raw: &web_sys::IdbCursor = cursor.as_sys().unchecked_ref();
    #[allow(deprecated)]
    let request = raw.request();
    // Past the last one the request's result is null (the cursor's key is not reliably
    // cleared in every engine).
    if !request.result().map_or(true, |at| at.is_null()) {
        let key = raw.key()?;
        drop(
            store
                .delete::<JsValue, KeyRange<JsValue>>(KeyRange::UpperBound(key, false))
                .primitive()?,
        );
    }
    Ok(())
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
