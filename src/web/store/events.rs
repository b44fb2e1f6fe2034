//! The event log read when asked for ([`IdbLedger::events_after`]): an open reads only
//! its highest key, and `events({ after, limit })` reads the pages above `after`.

use wasm_bindgen::JsValue;

use canvas_scheduler_core::{EventRecord, SafeError};

use super::codec::{decode, json_text};
use super::errors::js_error;
use super::requests::PageRead;
use super::schema::EVENTS;
use super::IdbLedger;

impl IdbLedger {
    /// The stored events with `seq > after`, at most `limit`, in seq order (one read-only
    /// transaction). Pages are keyed by their last seq, so the first `limit` pages above
    /// `after` hold every event asked for. A record that does not decode is skipped: the log
    /// is a diagnostic, and the rest of it still answers.
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn events_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<EventRecord>, SafeError> {
        let db = self.db()?;
        let tx = self.begin(&db, &[EVENTS], false)?;
        let store = tx.store(EVENTS).map_err(|e| js_error(&e))?;
        let after_key = JsValue::from_f64(after as f64);
        let read = PageRead::issue(&store, Some(&after_key), limit as u32);
        let (keys, values) = read.keys_and_values().await.map_err(|e| js_error(&e))?;
        let mut events: Vec<EventRecord> = Vec::new();
        for (key, value) in keys.iter().zip(&values) {
            // A page is keyed by its last seq, a single event (an earlier build's) by its own:
            // a record under any other key is not the log's.
            let Some(key) = key.as_f64().filter(|k| *k >= 0.0).map(|k| k as u64) else {
                continue;
            };
            let is_page = json_text(value).is_ok_and(|text| text.trim_start().starts_with('['));
            if is_page {
                let page = decode::<Vec<EventRecord>>(value).unwrap_or_default();
                if page.last().is_some_and(|last| last.seq == key) {
                    events.extend(page);
                }
            } else if let Ok(event) = decode::<EventRecord>(value) {
                if event.seq == key {
                    events.push(event);
                }
            }
        }
        // Pages come in key order and hold ascending seqs (a page that does not is skipped):
        // the events are in seq order, each once.
        let mut last = after;
        events.retain(|event| {
            let next = event.seq > last;
            last = last.max(event.seq);
            next
        });
        events.truncate(limit);
        Ok(events)
    }
}

/// `stored` and `recent` (this session's, at hand) as one log: by seq, each once (the one at
/// hand when both have it), above `after`, at most `limit`.
pub(crate) fn merged(
    mut stored: Vec<EventRecord>,
    recent: Vec<EventRecord>,
    after: u64,
    limit: usize,
) -> Vec<EventRecord> {
    // Both in seq order: what is at hand follows what storage has below it.
    let first_recent = recent.first().map_or(u64::MAX, |event| event.seq);
    stored.retain(|event| event.seq > after && event.seq < first_recent);
    stored.extend(recent.into_iter().filter(|event| event.seq > after));
    stored.truncate(limit);
    stored
}
