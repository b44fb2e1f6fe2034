//! [`IdbLedger::acquire_and_load`]: take the lease and read the whole ledger in one readwrite
//! transaction, so no other tab can write between the lease check and the read.
//! Records are read in `getAll` pages, fed to [`LedgerLoader`] page by page; whatever it
//! rejects — and records whose key or value is not what a ledger holds — moves to the
//! `quarantine` store in the same transaction and is reported, never silently dropped.

use canvas_scheduler_core::json_text::JsonText;
use wasm_bindgen::JsValue;

use super::codec::{
    decode, describe_key, event_key, json_text, page_text, string_key, to_js, to_json,
};
use super::errors::{js_error, AcquireError};
use super::requests::{get, PageRead, Tx};
use super::schema::{
    EVENTS, LEASE, LEASE_KEY, OPERATIONS, OPERATION_PAGES, QUARANTINE, REQUESTS, TOMBSTONES,
};
use super::IdbLedger;
use canvas_scheduler_core::{
    Lease, LedgerLoader, LedgerSnapshot, Millis, Quarantined, RecordStore, SafeError, MAX_FENCE,
};

/// What a successful acquire read: the ledger (with the freshly taken lease) and what was
/// moved to the `quarantine` store.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedLedger {
    /// Every valid record; `lease` is the lease just taken.
    pub snapshot: LedgerSnapshot,
    /// Records set aside, reported to the host.
    pub quarantined: Vec<Quarantined>,
}

/// A record to move to `quarantine`, with its key as stored.
struct SetAside {
    report: Quarantined,
    raw_key: JsValue,
    raw_value: Option<JsValue>,
}

impl IdbLedger {
    /// Takes the lease for `owner` if it is absent, expired (`expires_at <= now`) or already
    /// `owner`'s — or in any case with `takeover` (the caller holds the Web Lock, so the
    /// old holder is gone or was judged frozen; the fence bump shuts it out) — bumping the
    /// fence, then loads every record in pages of `page_size`, all in one readwrite
    /// transaction. The snapshot's `lease` is the lease just taken.
    ///
    /// # Errors
    ///
    /// [`AcquireError::Held`] when another owner's lease is live (nothing written);
    /// [`AcquireError::Storage`] for storage failures and broken cursors (nothing written).
    pub async fn acquire_and_load(
        &self,
        owner: &str,
        now: Millis,
        lease_ms: Millis,
        page_size: usize,
        takeover: bool,
    ) -> Result<LoadedLedger, AcquireError> {
        let db = self.db().map_err(AcquireError::Storage)?;
        let stores = [
            LEASE,
            OPERATIONS,
            OPERATION_PAGES,
            REQUESTS,
            EVENTS,
            QUARANTINE,
            TOMBSTONES,
        ];
        let tx = self
            .begin(&db, &stores, true)
            .map_err(AcquireError::Storage)?;
        match load(&tx, owner, now, lease_ms, page_size.max(1), takeover).await {
            Ok(loaded) => {
                self.finish(tx).await.map_err(AcquireError::Storage)?;
                Ok(loaded)
            }
            Err(error) => {
                tx.abort().await;
                Err(error)
            }
        }
    }
}

async fn load(
    tx: &Tx<'_>,
    owner: &str,
    now: Millis,
    lease_ms: Millis,
    page_size: usize,
    takeover: bool,
) -> Result<LoadedLedger, AcquireError> {
    let mut aside = Vec::new();
    let lease = take_lease(tx, owner, now, lease_ms, takeover, &mut aside).await?;
    let mut loader = LedgerLoader::new();
    // The stored values of records the loader set aside, to move them unchanged.
    let mut raw_values = RawValues::new();
    // The event log is read whole (it is bounded by `eventLogLimit`) to set aside what is not
    // the log's, as every other store's records are; its events are not kept: `events()`
    // reads them when asked.
    for store in [
        RecordStore::Operations,
        RecordStore::OperationPages,
        RecordStore::Requests,
        RecordStore::Events,
    ] {
        read_store(
            tx,
            store,
            page_size,
            &mut loader,
            &mut aside,
            &mut raw_values,
        )
        .await?;
    }
    let lease_json = Some(canvas_scheduler_core::json_text::to_string(&lease));
    loader.set_singletons(lease_json, None::<String>);
    let (mut snapshot, rejected) = loader.finish();
    // Retention: no tombstone is read (an enqueue looks one up by id), only the highest key;
    // the driver counts them after the load.
    snapshot.last_tombstone_key = super::tombstones::last_tombstone_key(tx)
        .await
        .map_err(js)?;
    // The highest seq of the log's own records: new events follow it.
    let events = std::mem::take(&mut snapshot.events);
    snapshot.meta.last_event_seq = events.last().map_or(0, |event| event.seq);
    for report in rejected {
        let stored_at = raw_values
            .iter()
            .position(|(store, key, _)| *store == report.store && *key == report.key);
        if let Some((_, _, raw_value)) = stored_at.map(|at| raw_values.swap_remove(at)) {
            aside.push(SetAside {
                raw_key: key_of(&report),
                report,
                raw_value: Some(raw_value),
            });
            continue;
        }
        aside.push(SetAside {
            raw_key: key_of(&report),
            report,
            raw_value: None,
        });
    }
    quarantine(tx, now, &aside)?;
    Ok(LoadedLedger {
        snapshot,
        quarantined: aside.into_iter().map(|a| a.report).collect(),
    })
}

/// Stored values of the records the loader set aside: (store, key, value). Few, so a list.
type RawValues = Vec<(&'static str, String, JsValue)>;

/// The key as stored of a record the loader set aside (events are keyed by number).
fn key_of(report: &Quarantined) -> JsValue {
    match report.store {
        "events" | "operation_pages" => report.key.parse::<u64>().map_or_else(
            |_| JsValue::from_str(&report.key),
            |seq| JsValue::from_f64(seq as f64),
        ),
        _ => JsValue::from_str(&report.key),
    }
}

/// Reads the lease and takes it if free; an unreadable lease record is set aside and
/// replaced (its fence, if legible, still counts: the new fence is above it).
async fn take_lease(
    tx: &Tx<'_>,
    owner: &str,
    now: Millis,
    lease_ms: Millis,
    takeover: bool,
    aside: &mut Vec<SetAside>,
) -> Result<Lease, AcquireError> {
    let store = tx.store(LEASE).map_err(js)?;
    let stored = get(&store, &JsValue::from_str(LEASE_KEY))
        .await
        .map_err(js)?;
    let previous_fence = match stored {
        None => 0,
        Some(value) => match decode::<Lease>(&value) {
            Ok(lease) if lease.expires_at > now && lease.owner != owner && !takeover => {
                return Err(AcquireError::Held(Some(lease)));
            }
            Ok(lease) if Lease::fence_can_rise(lease.fence) => lease.fence,
            Ok(lease) => {
                let reason = format!("lease fence {} cannot rise", lease.fence);
                let record = to_json(&value).unwrap_or_default();
                aside.push(set_aside(LEASE, LEASE_KEY, reason, record, Some(value)));
                lease.fence
            }
            Err(reason) => {
                let record = to_json(&value).unwrap_or_default();
                // A number member read by JS (no float parser in the module for this).
                let fence = match record.members().and_then(|m| m.get("fence")) {
                    Some(fence) => js_sys::JSON::parse(fence).ok().and_then(|f| f.as_f64()),
                    None => js_sys::Reflect::get(&value, &JsValue::from_str("fence"))
                        .ok()
                        .and_then(|f| f.as_f64()),
                }
                // Only a fence a take-over can raise counts (1e300 or -1 count as none).
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < MAX_FENCE as f64)
                .map_or(0, |f| f as u64);
                aside.push(set_aside(LEASE, LEASE_KEY, reason, record, Some(value)));
                fence
            }
        },
    };
    let lease = Lease {
        owner: owner.to_owned(),
        fence: Lease::next_fence(previous_fence),
        expires_at: now.saturating_add(lease_ms),
    };
    let value = to_js(&lease).map_err(AcquireError::Storage)?;
    store
        .put(&value, &JsValue::from_str(LEASE_KEY))
        .map_err(js)?;
    Ok(lease)
}

/// Reads one store in pages of `page_size` (see [`PageRead::issue`]): keys after the previous
/// page's last key, in this transaction, so keys and records line up. Far fewer round trips
/// than a cursor (one per page instead of one per record). Records with a key of the wrong
/// type or a value that is not JSON are set aside here; the rest go to the loader, which
/// checks each page's size and that keys strictly advance.
///
/// Pipelined: the next page is asked for as soon as this one's last key is known, before
/// this one is decoded, so the browser reads it while wasm decodes (operation pages are read
/// [`PAGES_PER_READ`] at a time for that; each holds up to 256 operations).
async fn read_store(
    tx: &Tx<'_>,
    kind: RecordStore,
    page_size: usize,
    loader: &mut LedgerLoader,
    aside: &mut Vec<SetAside>,
    raw_values: &mut RawValues,
) -> Result<(), AcquireError> {
    let store = tx.store(kind.name()).map_err(js)?;
    let per_read = match kind {
        RecordStore::OperationPages => page_size.min(PAGES_PER_READ),
        _ => page_size,
    };
    let limit = u32::try_from(per_read).unwrap_or(u32::MAX);
    let mut after: Option<JsValue> = None;
    let mut next = Some(PageRead::issue(&store, None, limit));
    while let Some(read) = next.take() {
        let (keys, values) = read.keys_and_values().await.map_err(js)?;
        if keys.len() != values.len() || keys.len() > per_read {
            return Err(broken(format!(
                "{} page of {} keys and {} records (page size {per_read})",
                kind.name(),
                keys.len(),
                values.len()
            )));
        }
        let Some(last) = keys.last().cloned() else {
            break;
        };
        if after.as_ref() == Some(&last) {
            return Err(broken(format!(
                "{} read did not advance at key {}",
                kind.name(),
                describe_key(&last)
            )));
        }
        if keys.len() == per_read {
            next = Some(PageRead::issue(&store, Some(&last), limit));
        }
        after = Some(last);
        let mut page = Vec::with_capacity(keys.len());
        let mut stored = Vec::with_capacity(keys.len());
        for (raw_key, value) in keys.into_iter().zip(values) {
            let key = if kind.numeric_keys() {
                event_key(&raw_key)
            } else {
                string_key(&raw_key)
            };
            let Some(key) = key else {
                let record = to_json(&value).unwrap_or_default();
                let reason = "key of a type or range the ledger never writes".to_owned();
                aside.push(SetAside {
                    report: report(kind.name(), &describe_key(&raw_key), reason, record),
                    raw_key,
                    raw_value: Some(value),
                });
                continue;
            };
            let text = match kind {
                RecordStore::OperationPages => page_text(&value),
                _ => json_text(&value),
            };
            match text {
                Ok(text) => {
                    page.push((key, text));
                    stored.push(value);
                }
                Err(reason) => aside.push(SetAside {
                    report: report(kind.name(), &key, reason, JsonText::default()),
                    raw_key,
                    raw_value: Some(value),
                }),
            }
        }
        if !page.is_empty() {
            let keys: Vec<String> = page.iter().map(|(key, _)| key.clone()).collect();
            let before = loader.quarantined().len();
            add_page(loader, kind, per_read, page)?;
            // Pair what this page set aside with its stored value (keys are unique and
            // ascending in a page, so a binary search finds each).
            for report in &loader.quarantined()[before..] {
                if let Ok(at) = keys.binary_search_by(|k| key_order(kind, k, &report.key)) {
                    raw_values.push((kind.name(), report.key.clone(), stored[at].clone()));
                }
            }
        }
    }
    Ok(())
}

/// Operation pages asked for in one read: a few hundred KB, small enough that decoding one
/// read overlaps the next, large enough that round trips stay few (25 for 100 000 pending).
const PAGES_PER_READ: usize = 16;

/// A request or transaction error thrown by the browser.
fn js(error: JsValue) -> AcquireError {
    AcquireError::Storage(js_error(&error))
}

/// A read that broke the page rules: a storage bug, the load stops (nothing written).
fn broken(message: String) -> AcquireError {
    AcquireError::Storage(SafeError::new(
        canvas_scheduler_core::ErrorCode::CorruptRecord.as_str(),
        &message,
    ))
}

/// Key order within a store's page: events by number, the rest as strings.
fn key_order(kind: RecordStore, a: &str, b: &str) -> std::cmp::Ordering {
    if kind.numeric_keys() {
        a.parse::<u64>().ok().cmp(&b.parse::<u64>().ok())
    } else {
        a.cmp(b)
    }
}

fn add_page(
    loader: &mut LedgerLoader,
    kind: RecordStore,
    page_size: usize,
    page: Vec<(String, String)>,
) -> Result<(), AcquireError> {
    loader
        .add_page(kind, page_size, page)
        .map_err(|e| AcquireError::Storage(SafeError::new(e.code.as_str(), &e.message)))
}

fn report(store: &'static str, key: &str, reason: String, record: JsonText) -> Quarantined {
    Quarantined {
        store,
        key: key.to_owned(),
        reason,
        record,
    }
}

fn set_aside(
    store: &'static str,
    key: &str,
    reason: String,
    record: JsonText,
    raw_value: Option<JsValue>,
) -> SetAside {
    SetAside {
        report: report(store, key, reason, record),
        raw_key: JsValue::from_str(key),
        raw_value,
    }
}

/// Moves every set-aside record to `quarantine` (key `"{store}/{key}"`) and deletes it from
/// its store; the stored value is the record exactly as it was read.
fn quarantine(tx: &Tx<'_>, now: Millis, aside: &[SetAside]) -> Result<(), AcquireError> {
    if aside.is_empty() {
        return Ok(());
    }
    let target = tx.store(QUARANTINE).map_err(js)?;
    for item in aside {
        let report = &item.report;
        let record = match &item.raw_value {
            Some(raw) => raw.clone(),
            None => to_js(&report.record).map_err(AcquireError::Storage)?,
        };
        let entry = js_sys::Object::new();
        let fields: [(&str, JsValue); 5] = [
            ("store", JsValue::from_str(report.store)),
            ("key", JsValue::from_str(&report.key)),
            ("reason", JsValue::from_str(&report.reason)),
            ("at", JsValue::from_f64(now as f64)),
            ("record", record),
        ];
        for (name, value) in fields {
            js_sys::Reflect::set(&entry, &JsValue::from_str(name), &value).map_err(js)?;
        }
        let key = format!("{}/{}", report.store, report.key);
        target.put(&entry, &JsValue::from_str(&key)).map_err(js)?;
        // The lease record is replaced by the new lease, not deleted.
        if report.store != LEASE {
            let source = tx.store(report.store).map_err(js)?;
            source.delete(&item.raw_key).map_err(js)?;
        }
    }
    Ok(())
}
