//! Validated reads from storage. Records arrive as JSON text in key-ordered pages; every
//! page is checked (size respected, keys strictly advancing, no repeats) and every record is
//! decoded and checked. A corrupt or foreign record is quarantined and reported — never
//! silently dropped, never fatal to the rest of the ledger.
//!
//! Records are decoded straight from their text into the typed records (serde derives): no
//! intermediate tree, which cost a second pass and a copy per record. A record that is set
//! aside is reported as its text.

use super::digest::body_digest;
use super::error::{ErrorCode, SchedulerError};
use super::intent::check_id;
use serde::de::DeserializeOwned;
use serde_json::Error as JsonError;

use super::json_text::{JsonText, Members};
use super::ledger::LedgerSnapshot;
use super::model::{EventRecord, FrozenRequest, Lease, LedgerMeta, Operation, OperationPhase};
use super::operation_pages::current_copies;
use super::packed::decode_page;
use std::collections::BTreeSet;

/// The object stores of the ledger, as named in storage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordStore {
    /// `operations`, keyed by operation id.
    Operations,
    /// `requests`, keyed by request id.
    Requests,
    /// `events`, keyed by seq.
    Events,
    /// `operation_pages`, keyed by page number (see `operation_pages`).
    OperationPages,
}

impl RecordStore {
    /// The object store name.
    pub fn name(self) -> &'static str {
        match self {
            RecordStore::Operations => "operations",
            RecordStore::Requests => "requests",
            RecordStore::Events => "events",
            RecordStore::OperationPages => "operation_pages",
        }
    }

    /// Whether keys are numbers (compared as such) rather than strings.
    pub fn numeric_keys(self) -> bool {
        matches!(self, RecordStore::Events | RecordStore::OperationPages)
    }
}

/// A record set aside because it failed validation.
#[derive(Clone, Debug, PartialEq)]
pub struct Quarantined {
    /// Where it was.
    pub store: &'static str,
    /// Its key.
    pub key: String,
    /// Why it was set aside.
    pub reason: String,
    /// The record as read.
    pub record: JsonText,
}

/// Accumulates validated pages into a [`LedgerSnapshot`].
#[derive(Debug, Default)]
pub struct LedgerLoader {
    snapshot: LedgerSnapshot,
    quarantined: Vec<Quarantined>,
    last_key: [Option<String>; 4],
    /// Legible operation pages by number; merged with the records in `finish`.
    pages: Vec<(u64, Vec<Operation>)>,
    /// Sequences seen, and the highest.
    sequences: BTreeSet<u64>,
    top_sequence: u64,
    /// Operations listed by request records that were set aside: one of them may have
    /// carried them (their own records need not point at it, see `Ledger::freeze`).
    suspect_operations: BTreeSet<String>,
    /// A request record was set aside without a legible `operationIds`.
    illegible_request: bool,
}

/// A stored record's JSON as handed to the loader: text as read from storage (the browser
/// store) or a value built by a test or simulation.
pub trait RecordJson {
    /// The record's JSON text.
    fn into_text(self) -> String;
}

impl RecordJson for String {
    fn into_text(self) -> String {
        self
    }
}

/// Records given as trees (tests and tools build them that way).
impl RecordJson for serde_json::Value {
    fn into_text(self) -> String {
        self.to_string()
    }
}

fn decode<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| undecodable(text, &e))
}

/// Why `text` did not decode: not JSON at all, or JSON of another shape.
fn undecodable(text: &str, error: &JsonError) -> String {
    match serde_json::from_str::<JsonText>(text) {
        Ok(_) => format!("undecodable: {error}"),
        Err(e) => format!("not JSON: {e}"),
    }
}

/// The record as reported when it is set aside: its JSON, or the text itself when it is not
/// JSON.
fn reported(text: String) -> JsonText {
    JsonText::compact(&text).unwrap_or_else(|| JsonText::string(&text))
}

/// The `id` member of a frozen body, which must be a JSON object (other members are only
/// checked to be well formed).
fn body_id(body: &str) -> Result<Option<String>, JsonError> {
    let Some(members) = Members::of(body) else {
        return Err(serde::de::Error::custom("not a JSON object"));
    };
    let mut id = None;
    for (key, value) in members.iter() {
        if key == "id" && id.is_none() {
            id = serde_json::from_str::<Option<String>>(value)?;
        }
    }
    Ok(id)
}

/// A page of the event log (all events of one persist batch, keyed by its last seq): not
/// empty, seqs strictly ascending, the last one equal to the key, the first one after the
/// last event accepted before it (pages never overlap; a record set aside between them does
/// not count).
fn check_event_page(page: &[EventRecord], key: &str, after: u64) -> Result<(), String> {
    let (Some(first), Some(last)) = (page.first(), page.last()) else {
        return Err("empty event page".into());
    };
    if last.seq.to_string() != key {
        return Err(format!(
            "key {key} holds an event page ending at {}",
            last.seq
        ));
    }
    if page.windows(2).any(|pair| pair[0].seq >= pair[1].seq) {
        return Err("event page not in ascending seq order".into());
    }
    if first.seq <= after {
        return Err(format!(
            "event page from {} overlaps the record at {after}",
            first.seq
        ));
    }
    Ok(())
}

/// Whether `operations`, in id order, hold `id`.
fn holds(operations: &[Operation], id: &str) -> bool {
    operations
        .binary_search_by(|op| op.intent.id.as_str().cmp(id))
        .is_ok()
}

/// Two lists of operations in id order (no id in both) as one, in id order.
fn merge_by_id(records: Vec<Operation>, paged: Vec<Operation>) -> Vec<Operation> {
    if paged.is_empty() {
        return records;
    }
    if records.is_empty() {
        return paged;
    }
    let mut merged = Vec::with_capacity(records.len() + paged.len());
    let mut paged = paged.into_iter().peekable();
    for op in records {
        while let Some(next) = paged.next_if(|p| p.intent.id < op.intent.id) {
            merged.push(next);
        }
        merged.push(op);
    }
    merged.extend(paged);
    merged
}

impl LedgerLoader {
    /// A loader expecting pages of at most `page_size` records.
    pub fn new() -> Self {
        Self::default()
    }

    /// Checks one page's shape: at most `limit` records, keys strictly after the previous page's.
    /// A page that breaks these rules is a storage bug: the load stops with an error.
    pub fn add_page<R: RecordJson>(
        &mut self,
        store: RecordStore,
        limit: usize,
        page: Vec<(String, R)>,
    ) -> Result<(), SchedulerError> {
        if page.len() > limit {
            return Err(SchedulerError::new(
                ErrorCode::CorruptRecord,
                format!(
                    "{} page of {} records exceeds the page size {limit}",
                    store.name(),
                    page.len()
                ),
            ));
        }
        let slot = store as usize;
        for (key, value) in page {
            let advanced = match &self.last_key[slot] {
                None => true,
                Some(last) if store.numeric_keys() => {
                    key.parse::<u64>().ok() > last.parse::<u64>().ok()
                }
                Some(last) => key > *last,
            };
            if !advanced {
                return Err(SchedulerError::new(
                    ErrorCode::CorruptRecord,
                    format!("{} cursor did not advance at key {key}", store.name()),
                ));
            }
            self.last_key[slot] = Some(key.clone());
            let text = value.into_text();
            if let Err(reason) = self.accept(store, &key, &text) {
                let record = reported(text);
                if store == RecordStore::Requests {
                    self.suspect(&record);
                }
                self.quarantined.push(Quarantined {
                    store: store.name(),
                    key,
                    reason,
                    record,
                });
            }
        }
        Ok(())
    }

    /// Notes an operation's sequence; false when another operation has it.
    fn note_sequence(&mut self, sequence: u64) -> bool {
        self.top_sequence = self.top_sequence.max(sequence);
        self.sequences.insert(sequence)
    }

    /// Notes the operations a set-aside request record lists, or that it lists none legibly.
    fn suspect(&mut self, record: &JsonText) {
        let listed = record
            .members()
            .and_then(|members| members.get("operationIds"))
            .and_then(|ids| serde_json::from_str::<Vec<String>>(ids).ok());
        match listed {
            Some(ids) => self.suspect_operations.extend(ids),
            None => self.illegible_request = true,
        }
    }

    /// What has been set aside so far, in order (the browser store pairs each with the value
    /// as stored, to move it to `quarantine` unchanged).
    pub fn quarantined(&self) -> &[Quarantined] {
        &self.quarantined
    }

    fn accept(&mut self, store: RecordStore, key: &str, text: &str) -> Result<(), String> {
        match store {
            RecordStore::Operations => {
                let op: Operation = decode(text)?;
                check_id(&op.intent.id, "id").map_err(|e| e.message)?;
                if op.intent.id != key {
                    return Err(format!("key {key} holds operation {}", op.intent.id));
                }
                let sequence = op.intent.sequence;
                // A sequence no scheduler could have assigned is as corrupt as a repeat.
                if sequence == 0
                    || sequence > super::intent::MAX_SAFE_INTEGER
                    || !self.note_sequence(sequence)
                {
                    return Err(format!(
                        "sequence {sequence} is zero, above 2^53-1 or repeated"
                    ));
                }
                // Keys strictly advance and each is its operation's id: the records stay in
                // id order, so finding one is a binary search (no set of 100 000 ids).
                self.snapshot.operations.push(op);
            }
            RecordStore::Requests => {
                let request: FrozenRequest = decode(text)?;
                if request.id != key {
                    return Err(format!("key {key} holds request {}", request.id));
                }
                if body_digest(&request.body) != request.digest {
                    return Err("body does not match its digest".into());
                }
                let body_id =
                    body_id(&request.body).map_err(|_| "body is not a JSON object".to_string())?;
                if body_id.as_deref() != Some(request.id.as_str()) {
                    return Err("body id differs from the request id".into());
                }
                let mut sorted = request.canvas_ids.clone();
                sorted.sort();
                sorted.dedup();
                if sorted != request.canvas_ids || request.operation_ids.is_empty() {
                    return Err("canvas ids not sorted and unique, or no operations".into());
                }
                self.snapshot.requests.push(request);
            }
            RecordStore::OperationPages => {
                let no: u64 = key
                    .parse()
                    .map_err(|_| format!("page key {key} is not a page number"))?;
                let page = decode_page(text).map_err(|e| undecodable(text, &e))?;
                if page.is_empty() {
                    return Err("empty operation page".into());
                }
                for op in &page {
                    check_id(&op.intent.id, "id").map_err(|e| e.message)?;
                }
                // A page lists its new operations in id order: then no id can repeat, and
                // only a page that is not in order needs the set.
                let ascending = page
                    .windows(2)
                    .all(|pair| pair[0].intent.id < pair[1].intent.id);
                if !ascending {
                    let mut ids = BTreeSet::new();
                    for op in &page {
                        if !ids.insert(op.intent.id.clone()) {
                            return Err(format!("operation {} twice in one page", op.intent.id));
                        }
                    }
                }
                self.pages.push((no, page));
            }
            RecordStore::Events if text.trim_start().starts_with('[') => {
                let page: Vec<EventRecord> = decode(text)?;
                let after = self.snapshot.events.last().map_or(0, |event| event.seq);
                check_event_page(&page, key, after)?;
                self.snapshot.events.extend(page);
            }
            RecordStore::Events => {
                let event: EventRecord = decode(text)?;
                if event.seq.to_string() != key {
                    return Err(format!("key {key} holds event {}", event.seq));
                }
                self.snapshot.events.push(event);
            }
        }
        Ok(())
    }

    /// Sets the lease and meta records (single records; a corrupt one is quarantined).
    pub fn set_singletons<L: RecordJson, M: RecordJson>(
        &mut self,
        lease: Option<L>,
        meta: Option<M>,
    ) {
        if let Some(value) = lease {
            let text = value.into_text();
            match decode::<Lease>(&text) {
                Ok(lease) => self.snapshot.lease = Some(lease),
                Err(reason) => self.quarantined.push(Quarantined {
                    store: "lease",
                    key: "lease".into(),
                    reason,
                    record: reported(text),
                }),
            }
        }
        if let Some(value) = meta {
            let text = value.into_text();
            match decode::<LedgerMeta>(&text) {
                Ok(meta) => self.snapshot.meta = meta,
                Err(reason) => self.quarantined.push(Quarantined {
                    store: "meta",
                    key: "meta".into(),
                    reason,
                    record: reported(text),
                }),
            }
        }
    }

    /// Adds each operation's current page copy (one without its own record; the newest page's
    /// copy) to the snapshot, with the same checks a record gets, and notes which page holds
    /// it. A pending copy whose record was set aside is the operation as it was before that
    /// record: it loads blocked `record_quarantined` (written back), for the host to judge.
    fn merge_pages(&mut self) {
        let set_aside: BTreeSet<String> = self
            .quarantined
            .iter()
            .filter(|q| q.store == RecordStore::Operations.name())
            .map(|q| q.key.clone())
            .collect();
        let records = std::mem::take(&mut self.snapshot.operations);
        let (mut paged, homes, stale) =
            current_copies(std::mem::take(&mut self.pages), |id| holds(&records, id));
        self.snapshot.stale_copies = stale;
        // In place: 100 000 operations are not moved once more.
        paged.retain_mut(|op| {
            let id = &op.intent.id;
            let sequence = op.intent.sequence;
            if sequence == 0
                || sequence > super::intent::MAX_SAFE_INTEGER
                || !self.note_sequence(sequence)
            {
                // Reported, and left in its page: the page stays stored (it keeps a current
                // copy that never loads) as the whole record, and the report names it.
                let no = homes
                    .iter()
                    .find(|(_, ids)| ids.contains(id))
                    .map_or(0, |(no, _)| *no);
                self.quarantined.push(Quarantined {
                    store: RecordStore::OperationPages.name(),
                    key: format!("{no}/{id}"),
                    reason: format!("sequence {sequence} is zero, above 2^53-1 or repeated"),
                    record: JsonText::from_json(&serde_json::json!({
                        "id": id,
                        "page": no,
                        "sequence": sequence,
                    })),
                });
                return false;
            }
            if set_aside.contains(id) && op.phase == OperationPhase::Pending {
                self.snapshot.amended.insert(id.clone());
                op.blockers.push("record_quarantined".into());
            }
            true
        });
        self.snapshot.operations = merge_by_id(records, paged);
        self.snapshot.operation_pages = homes;
    }

    /// Cross-record checks, then the snapshot and what was quarantined. A request whose
    /// operations are all missing is foreign; an operation pointing at a missing request is
    /// blocked `request_quarantined`: the server may have that key, so only the host decides.
    /// So is a pending operation without a pointer that no unresolved request lists when a
    /// set-aside request record lists it — or, if that record was illegible, every such
    /// operation: it may have been frozen into that request (see `Ledger::freeze`).
    pub fn finish(mut self) -> (LedgerSnapshot, Vec<Quarantined>) {
        self.merge_pages();
        let operations = &self.snapshot.operations;
        let (kept, foreign): (Vec<_>, Vec<_>) = std::mem::take(&mut self.snapshot.requests)
            .into_iter()
            .partition(|r| r.operation_ids.iter().any(|id| holds(operations, id)));
        for request in foreign {
            let record = JsonText::from_json(&request);
            self.quarantined.push(Quarantined {
                store: "requests",
                key: request.id.clone(),
                reason: "request carries no known operation".into(),
                record,
            });
        }
        let request_ids: BTreeSet<String> = kept.iter().map(|r| r.id.clone()).collect();
        let carried: BTreeSet<String> = kept
            .iter()
            .filter(|r| r.is_unresolved())
            .flat_map(|r| r.operation_ids.iter().cloned())
            .collect();
        self.snapshot.requests = kept;
        for op in &mut self.snapshot.operations {
            let id = &op.intent.id;
            let lost = match &op.request_id {
                Some(request) => !request_ids.contains(request),
                None => {
                    !carried.contains(id)
                        && (self.illegible_request || self.suspect_operations.contains(id))
                }
            };
            if lost
                && op.phase == OperationPhase::Pending
                && !op.blockers.iter().any(|b| b == "request_quarantined")
            {
                op.blockers.push("request_quarantined".into());
                // Written back: the next load no longer sees the set-aside request.
                self.snapshot.amended.insert(id.clone());
            }
        }
        self.snapshot.meta.last_sequence = self.snapshot.meta.last_sequence.max(self.top_sequence);
        (self.snapshot, self.quarantined)
    }
}
