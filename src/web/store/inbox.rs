//! The shared inbox: a tab that does not dispatch writes its intents here, durably, in
//! its own transaction; the dispatching tab adopts them into the ledger in inbox order and
//! then removes them. Only the dispatcher assigns sequences, so tabs never race on them.
//!
//! Entries are JSON strings (one per `enqueue`/`enqueueMany` call) under an auto-increment
//! key, so adoption order is append order. An entry the dispatcher refuses is moved to
//! `quarantine` (key `"inbox/{key}"`), never dropped.

use std::collections::BTreeSet;
use wasm_bindgen::JsValue;

use canvas_scheduler_core::{
    intent::IntentInput, packed::decode_page, Compacted, FrozenRequest, Known, Millis, Operation,
    SchedulerError,
};

use super::codec::{decode, page_text};
use super::errors::{js_error, unavailable};
use super::inbox_partial::check_and_add;
use super::requests::{get, index_get_all, PageRead, Tx};
use super::schema::{BY_OPERATION, INBOX, OPERATIONS, OPERATION_PAGES, QUARANTINE, REQUESTS};
use super::tombstones::{look_up_in, LOOK_UP_STORES};
use super::IdbLedger;

/// One `enqueue`/`enqueueMany` call of a tab that does not dispatch.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct InboxEntry {
    /// The enqueuing tab's owner id (its events are relayed to it).
    #[serde(rename = "origin")]
    pub origin: String,
    /// The principal of the enqueuing session (recorded on the operations).
    #[serde(rename = "principal", default)]
    pub principal: Option<String>,
    /// When it was written.
    #[serde(rename = "at")]
    pub at: Millis,
    /// The intents, validated by the enqueuing tab.
    #[serde(rename = "intents")]
    pub intents: Vec<IntentInput>,
}

/// An inbox record as read: its key and the entry, or why it cannot be one.
pub struct InboxRecord {
    /// The auto-increment key.
    pub key: f64,
    /// The entry, or the reason it is unreadable.
    pub entry: Result<InboxEntry, String>,
    raw: JsValue,
}

/// A request or transaction error thrown by the browser.
pub(super) fn js(error: JsValue) -> SchedulerError {
    unavailable(js_error(&error))
}

/// An inbox key as text: an auto-increment key is an integer, written as one (`7`, not `7.0`).
fn key_text(key: f64) -> String {
    key.to_string()
}

fn decode_entry(value: &JsValue) -> Result<InboxEntry, String> {
    let text = value
        .as_string()
        .ok_or_else(|| "inbox entry is not a JSON string".to_owned())?;
    serde_json::from_str(&text).map_err(|e| format!("undecodable inbox entry: {e}"))
}

/// Reads every inbox record in key order.
pub(super) async fn read_all(tx: &Tx<'_>) -> Result<Vec<InboxRecord>, SchedulerError> {
    let store = tx.store(INBOX).map_err(js)?;
    let (keys, values) = PageRead::issue(&store, None, 0)
        .keys_and_values()
        .await
        .map_err(js)?;
    Ok(keys
        .into_iter()
        .zip(values)
        .map(|(key, raw)| InboxRecord {
            key: key.as_f64().unwrap_or(f64::NAN),
            entry: decode_entry(&raw),
            raw,
        })
        .collect())
}

/// Whether operation `id` is stored: `None` when absent, `Some(None)` when stored but
/// unreadable (the dispatcher's loader quarantines it; the id is still taken).
pub(super) async fn stored_operation(
    tx: &Tx<'_>,
    id: &str,
) -> Result<Option<Option<Operation>>, SchedulerError> {
    let store = tx.store(OPERATIONS).map_err(js)?;
    let value = get(&store, &JsValue::from_str(id)).await.map_err(js)?;
    if let Some(value) = value {
        return Ok(Some(decode::<Operation>(&value).ok()));
    }
    // Not rewritten since its first write: its copy is in a page (the newest one holding it).
    let pages = tx.store(OPERATION_PAGES).map_err(js)?;
    let found = index_get_all(&pages, BY_OPERATION, &JsValue::from_str(id))
        .await
        .map_err(js)?;
    let Some(page) = found.last() else {
        return Ok(None);
    };
    let operations = page_text(page)
        .ok()
        .and_then(|json| decode_page(&json).ok());
    Ok(Some(operations.and_then(|ops| {
        ops.into_iter().find(|op| op.intent.id == id)
    })))
}

/// What [`IdbLedger::read_operations`] found for one id.
pub struct StoredOperation {
    /// The stored record, if any (and readable).
    pub operation: Option<Operation>,
    /// Why its unresolved request waits for the host, if it does.
    pub request_blocked: Option<String>,
    /// Whether the inbox still holds it.
    pub queued: bool,
    /// Settled and compacted (settled operations leave the working stores): its
    /// tombstone; `operation` is then its archived record while the archive keeps it.
    pub compacted: Option<Compacted>,
}

/// The stores an inbox append reads and writes: the durable operations, the inbox, and what a
/// tombstone look-up reads (settled and compacted ids).
pub(super) const APPEND_STORES: [&str; 6] = [
    OPERATIONS,
    OPERATION_PAGES,
    INBOX,
    LOOK_UP_STORES[0],
    LOOK_UP_STORES[1],
    LOOK_UP_STORES[2],
];

impl IdbLedger {
    /// Appends `entries` to the inbox in one strict readwrite transaction (a tab's
    /// enqueues that waited while its last append was written: group commit), each checked
    /// against the durable ledger and the inbox in that same transaction, the entries written
    /// before it included: an id already there with another intent is `duplicate_operation`
    /// (the same intent again is harmless and skipped); a dependency must be in the ledger,
    /// the inbox or the entry itself (`unknown_dependency`). An entry refused is not written,
    /// and the others are. Per entry, in order: whether it was written (not when every intent
    /// was already there) and the operations already in the ledger with the same intent (e.g.
    /// enqueued again after a reload), or its refusal.
    ///
    /// # Errors
    ///
    /// `storage_unavailable`: nothing was written.
    pub async fn append_inbox(
        &self,
        entries: Vec<InboxEntry>,
    ) -> Result<Vec<Result<(bool, Vec<Known>), SchedulerError>>, SchedulerError> {
        let db = self.db().map_err(unavailable)?;
        let tx = self.begin(&db, &APPEND_STORES, true).map_err(unavailable)?;
        let mut results = Vec::with_capacity(entries.len());
        for mut entry in entries {
            results.push(check_and_add(&tx, &mut entry, &self.tombstone_index).await);
        }
        self.finish(tx).await.map_err(unavailable)?;
        Ok(results)
    }

    /// The stored record of each of `ids` (`None`: not in the ledger, or unreadable), why its
    /// unresolved request is blocked if it is, and whether it is in the inbox still; one
    /// readonly transaction. A tab that does not dispatch reads what became of its operations
    /// here, not from the channel.
    ///
    /// # Errors
    ///
    /// `storage_unavailable`.
    pub async fn read_operations(
        &self,
        ids: &[String],
    ) -> Result<Vec<StoredOperation>, SchedulerError> {
        let db = self.db().map_err(unavailable)?;
        let tx = self
            .begin(
                &db,
                &[
                    OPERATIONS,
                    OPERATION_PAGES,
                    REQUESTS,
                    INBOX,
                    LOOK_UP_STORES[0],
                    LOOK_UP_STORES[1],
                    LOOK_UP_STORES[2],
                ],
                false,
            )
            .map_err(unavailable)?;
        let requests = tx.store(REQUESTS).map_err(js)?;
        let queued = BTreeSet::from_iter(
            read_all(&tx)
                .await?
                .into_iter()
                .filter_map(|r| r.entry.ok())
                .flat_map(|e| e.intents.into_iter().map(|i| i.id)),
        );
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            let operation = stored_operation(&tx, id).await?.flatten();
            let mut request_blocked = None;
            if let Some(request_id) = operation
                .as_ref()
                .filter(|op| op.outcome.is_none())
                .and_then(|op| op.request_id.as_deref())
            {
                let value = get(&requests, &JsValue::from_str(request_id))
                    .await
                    .map_err(js)?;
                request_blocked = value
                    .and_then(|v| decode::<FrozenRequest>(&v).ok())
                    .and_then(|r| r.blocked);
            }
            found.push(StoredOperation {
                operation,
                request_blocked,
                queued: queued.contains(id),
                compacted: None,
            });
        }
        // Not in the working stores: settled and compacted, if its tombstone says so.
        let missing: Vec<String> = ids
            .iter()
            .zip(&found)
            .filter(|(_, f)| f.operation.is_none() && !f.queued)
            .map(|(id, _)| id.clone())
            .collect();
        let tombstones = look_up_in(&tx, &self.tombstone_index, &missing)
            .await
            .map_err(js)?;
        for (id, slot) in ids.iter().zip(found.iter_mut()) {
            if let Some(t) = tombstones.iter().find(|t| t.id == *id) {
                slot.operation = t.whole.as_deref().cloned();
                slot.compacted = Some(Compacted::from(t));
            }
        }
        Ok(found)
    }

    /// Every inbox record, in append order (one readonly transaction).
    ///
    /// # Errors
    ///
    /// `storage_unavailable`.
    pub async fn read_inbox(&self) -> Result<Vec<InboxRecord>, SchedulerError> {
        let db = self.db().map_err(unavailable)?;
        let tx = self.begin(&db, &[INBOX], false).map_err(unavailable)?;
        read_all(&tx).await
    }

    /// Removes adopted records and moves refused ones, with their reason, to `quarantine`
    /// (one strict readwrite transaction).
    ///
    /// # Errors
    ///
    /// `storage_unavailable`; nothing changed.
    pub async fn clear_inbox(
        &self,
        now: Millis,
        adopted: &[f64],
        refused: &[(&InboxRecord, String)],
    ) -> Result<(), SchedulerError> {
        if adopted.is_empty() && refused.is_empty() {
            return Ok(());
        }
        let db = self.db().map_err(unavailable)?;
        let tx = self
            .begin(&db, &[INBOX, QUARANTINE], true)
            .map_err(unavailable)?;
        let result = (|| {
            let inbox = tx.store(INBOX).map_err(js)?;
            let quarantine = tx.store(QUARANTINE).map_err(js)?;
            for (record, reason) in refused {
                let aside = js_sys::Object::new();
                let fields: [(&str, JsValue); 5] = [
                    ("store", JsValue::from_str(INBOX)),
                    ("key", JsValue::from_str(&key_text(record.key))),
                    ("reason", JsValue::from_str(reason)),
                    ("at", JsValue::from_f64(now as f64)),
                    ("record", record.raw.clone()),
                ];
                for (name, value) in fields {
                    js_sys::Reflect::set(&aside, &JsValue::from_str(name), &value).map_err(js)?;
                }
                let key = format!("{INBOX}/{}", key_text(record.key));
                quarantine
                    .put(&aside, &JsValue::from_str(&key))
                    .map_err(js)?;
            }
            let keys = adopted
                .iter()
                .copied()
                .chain(refused.iter().map(|(r, _)| r.key));
            for key in keys.filter(|k| k.is_finite()) {
                inbox.delete(&JsValue::from_f64(key)).map_err(js)?;
            }
            Ok::<(), SchedulerError>(())
        })();
        match result {
            Ok(()) => self.finish(tx).await.map_err(unavailable),
            Err(error) => {
                tx.abort().await;
                Err(error)
            }
        }
    }
}

/// Every intent in the inbox, with the principal each was enqueued under.
pub(super) async fn read_queued(
    tx: &Tx<'_>,
) -> Result<Vec<(Option<String>, IntentInput)>, SchedulerError> {
    Ok(read_all(tx)
        .await?
        .into_iter()
        .filter_map(|r| r.entry.ok())
        .flat_map(|e| {
            let principal = e.principal;
            e.intents.into_iter().map(move |i| (principal.clone(), i))
        })
        .collect())
}
