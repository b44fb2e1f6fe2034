//! [`IdbLedger::apply`]: one [`PersistBatch`] in one readwrite transaction (group commit),
//! fenced exactly like [`MemoryStore::apply`](crate::testing::MemoryStore::apply): the
//! stored lease is read first (the writes are queued behind that read) and a stale or
//! missing fence aborts the whole transaction.

use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{Transaction, TransactionMode};
use indexed_db_futures::KeyRange;
use wasm_bindgen::JsValue;

use super::codec::{decode, page_value, to_js};
use super::errors::storage_error;
use super::schema::{EVENTS, LEASE, LEASE_KEY, OPERATIONS, OPERATION_PAGES, REQUESTS};
use super::IdbLedger;
use crate::core::io::{LeaseWrite, PersistBatch, PersistFailure, PersistResult};
use crate::core::model::Lease;
use crate::core::safe_error::SafeError;

/// The batch's records, serialized before the transaction opens (a record that cannot be
/// stored fails the batch before anything is written).
struct Encoded {
    operation_pages: Vec<(JsValue, JsValue)>,
    operations: Vec<(JsValue, JsValue)>,
    requests: Vec<(JsValue, JsValue)>,
    events: Vec<(JsValue, JsValue)>,
}

fn encode(batch: &PersistBatch) -> Result<Encoded, SafeError> {
    let operation_pages = batch
        .operation_pages
        .iter()
        .map(|page| Ok((JsValue::from_f64(page.no as f64), page_value(page)?)))
        .collect::<Result<_, SafeError>>()?;
    let operations = batch
        .operations
        .iter()
        .map(|op| Ok((JsValue::from_str(&op.intent.id), to_js(op)?)))
        .collect::<Result<_, SafeError>>()?;
    let requests = batch
        .requests
        .iter()
        .map(|r| Ok((JsValue::from_str(&r.id), to_js(r)?)))
        .collect::<Result<_, SafeError>>()?;
    // The batch's events as one page keyed by its last seq: one record per transaction
    // instead of one per event (about three per operation). The trim's range delete then
    // drops only pages that end below it.
    let events = match batch.events.last() {
        Some(last) => vec![(JsValue::from_f64(last.seq as f64), to_js(&batch.events)?)],
        None => Vec::new(),
    };
    Ok(Encoded {
        operation_pages,
        operations,
        requests,
        events,
    })
}

enum Refused {
    Fenced(Option<Lease>),
    Storage(SafeError),
}

impl From<indexed_db_futures::error::Error> for Refused {
    fn from(error: indexed_db_futures::error::Error) -> Self {
        Refused::Storage(storage_error(&error))
    }
}

impl IdbLedger {
    /// Writes `batch` in one readwrite transaction with strict durability, after checking
    /// its fence against the stored lease in that same transaction (K2).
    ///
    /// Returns `Done { lease }` with the lease as stored after the write; `Fenced` when the
    /// batch has no fence or the stored fence differs (nothing written); `Storage` for any
    /// storage failure — quota, abort, closed connection — with nothing written.
    pub async fn apply(&self, batch: &PersistBatch) -> PersistResult {
        let encoded = match encode(batch) {
            Ok(encoded) => encoded,
            Err(error) => return PersistResult::Failed(PersistFailure::Storage(error)),
        };
        let db = match self.db() {
            Ok(db) => db,
            Err(error) => return PersistResult::Failed(PersistFailure::Storage(error)),
        };
        let tx = match self.begin(&db, &scope(batch), TransactionMode::Readwrite) {
            Ok(tx) => tx,
            Err(error) => return PersistResult::Failed(PersistFailure::Storage(error)),
        };
        match write(&tx, batch, encoded).await {
            Ok(lease) => match self.finish(tx).await {
                Ok(()) => PersistResult::Done { lease },
                Err(error) => PersistResult::Failed(PersistFailure::Storage(error)),
            },
            Err(refused) => {
                let _ = tx.abort().await;
                PersistResult::Failed(match refused {
                    Refused::Fenced(current) => PersistFailure::Fenced { current },
                    Refused::Storage(error) => PersistFailure::Storage(error),
                })
            }
        }
    }
}

/// The stores `batch` writes, and the lease: a transaction over fewer stores costs the
/// browser less to open and commit (an enqueue touches three of the five).
fn scope(batch: &PersistBatch) -> Vec<&'static str> {
    let mut stores = vec![LEASE];
    let writes = [
        (
            OPERATION_PAGES,
            !batch.operation_pages.is_empty() || !batch.drop_operation_pages.is_empty(),
        ),
        (
            OPERATIONS,
            !batch.operations.is_empty() || !batch.drop_operations.is_empty(),
        ),
        (REQUESTS, !batch.requests.is_empty()),
        (
            EVENTS,
            !batch.events.is_empty() || batch.trim_events_below.is_some(),
        ),
    ];
    stores.extend(
        writes
            .iter()
            .filter(|(_, used)| *used)
            .map(|(store, _)| *store),
    );
    stores
}

/// Issues every request of the batch; the returned lease is the one stored after it.
///
/// The batch's writes are issued right behind the lease read, without waiting for it: the
/// requests of a transaction run in order, so the read sees the lease as it was, and a fence
/// that does not match aborts the transaction (the caller does), so none of those writes
/// lands. This saves a round trip to the storage backend per transaction.
async fn write(
    tx: &Transaction<'_>,
    batch: &PersistBatch,
    encoded: Encoded,
) -> Result<Option<Lease>, Refused> {
    let lease_store = tx.object_store(LEASE)?;
    let stored = lease_store.get(LEASE_KEY).primitive()?;
    if batch.fence.is_some() {
        put_all(tx, OPERATION_PAGES, encoded.operation_pages)?;
        put_all(tx, OPERATIONS, encoded.operations)?;
        // Folded into this batch's pages: the page copy is current once the record goes.
        let folded = batch.drop_operations.iter().map(|id| JsValue::from_str(id));
        delete_all(tx, OPERATIONS, folded)?;
        let dropped = batch
            .drop_operation_pages
            .iter()
            .map(|no| JsValue::from_f64(*no as f64));
        delete_all(tx, OPERATION_PAGES, dropped)?;
        put_all(tx, REQUESTS, encoded.requests)?;
        put_all(tx, EVENTS, encoded.events)?;
        if let Some(below) = batch.trim_events_below {
            let events = tx.object_store(EVENTS)?;
            let range = KeyRange::UpperBound(JsValue::from_f64(below as f64), true);
            drop(events.delete::<JsValue, _>(range).primitive()?);
        }
    }
    let stored: Option<JsValue> = stored.await?;
    // An unreadable lease record counts as no lease: nobody's fence matches it.
    let mut lease: Option<Lease> = stored.and_then(|value| decode(&value).ok());
    if batch.fence.is_none() || lease.as_ref().map(|l| l.fence) != batch.fence {
        return Err(Refused::Fenced(lease));
    }
    if let (Some(LeaseWrite::Renew { expires_at }), Some(current)) = (&batch.lease, &mut lease) {
        current.expires_at = *expires_at;
        let value = to_js(current).map_err(Refused::Storage)?;
        // Requests run in order; their results arrive with the commit.
        drop(
            lease_store
                .put(value)
                .with_key(LEASE_KEY)
                .without_key_type()
                .primitive()?,
        );
    }
    Ok(lease)
}

/// Deletes every key without waiting for each one (a failing delete aborts the transaction).
fn delete_all(
    tx: &Transaction<'_>,
    store: &str,
    keys: impl ExactSizeIterator<Item = JsValue>,
) -> Result<(), Refused> {
    if keys.len() == 0 {
        return Ok(());
    }
    let store = tx.object_store(store)?;
    for key in keys {
        drop(store.delete(key).primitive()?);
    }
    Ok(())
}

/// Puts every `(key, value)` without waiting for each one: a failing put aborts the whole
/// transaction, which the commit reports.
fn put_all(
    tx: &Transaction<'_>,
    store: &str,
    records: Vec<(JsValue, JsValue)>,
) -> Result<(), Refused> {
    if records.is_empty() {
        return Ok(());
    }
    let store = tx.object_store(store)?;
    for (key, value) in records {
        drop(
            store
                .put(value)
                .with_key(key)
                .without_key_type()
                .primitive()?,
        );
    }
    Ok(())
}
