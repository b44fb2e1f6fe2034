//! Adopting the shared inbox: intents other tabs wrote are admitted into this
//! dispatcher's ledger in append order, then removed from the inbox once durable here.

use canvas_scheduler_core::{BatchNo, SchedulerError};

use super::Driver;

/// What became of one inbox entry, for the tab that wrote it.
#[derive(Clone, Debug)]
pub struct Adoption {
    /// The enqueuing tab's owner id.
    pub origin: String,
    /// The entry's operation ids.
    pub operation_ids: Vec<String>,
    /// `None` when admitted; the refusal otherwise (the entry is quarantined).
    pub refused: Option<SchedulerError>,
    /// An entry that could not even be read (no origin, no ids): its inbox key and the reason
    /// it was quarantined, for the leader's `onEvent` (set aside, and said so).
    pub malformed: Option<(String, String)>,
}

impl Driver {
    /// Admits every inbox entry (one pass; the caller runs one pass at a time), waits until
    /// they are durable in the ledger, then clears them from the inbox. Admitting twice is
    /// harmless (an identical intent already in the ledger is skipped), so a crash between
    /// the two writes loses and duplicates nothing.
    ///
    /// # Errors
    ///
    /// `storage_unavailable` and the scheduler's own state errors; entries stay in the inbox.
    pub async fn adopt_inbox(&self) -> Result<Vec<Adoption>, SchedulerError> {
        let store = self.store();
        let records = store.read_inbox().await?;
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let mut adopted = Vec::new();
        let mut refused = Vec::new();
        let mut outcomes = Vec::new();
        let mut barrier: Option<BatchNo> = None;
        let mut stopped: Option<SchedulerError> = None;
        for record in &records {
            let entry = match &record.entry {
                Ok(entry) => entry,
                Err(reason) => {
                    refused.push((record, reason.clone()));
                    outcomes.push(Adoption {
                        origin: String::new(),
                        operation_ids: Vec::new(),
                        refused: None,
                        // An inbox key is an auto-increment integer, written as one.
                        malformed: Some(((record.key as u64).to_string(), reason.clone())),
                    });
                    continue;
                }
            };
            self.begin_look_up();
            let learnt = self.learn_tombstones(&entry.intents).await;
            let result = learnt.map(|()| {
                self.with(|s, now| s.adopt(now, entry.intents.clone(), entry.principal.clone()))
            });
            self.end_look_up();
            let result = match result {
                Ok(result) => result,
                Err(error) => {
                    stopped = Some(error);
                    break;
                }
            };
            let refusal = match result {
                Ok(b) => {
                    barrier = Some(b);
                    adopted.push(record.key);
                    None
                }
                Err(error) if error.code.refuses_inbox_entry() => {
                    refused.push((record, format!("{}: {}", error.code(), error.message)));
                    Some(error)
                }
                Err(error) => {
                    stopped = Some(error);
                    break;
                }
            };
            outcomes.push(Adoption {
                origin: entry.origin.clone(),
                operation_ids: entry.intents.iter().map(|i| i.id.clone()).collect(),
                refused: refusal,
                malformed: None,
            });
        }
        if let Some(barrier) = barrier {
            self.wait_written(barrier).await?;
        }
        let now = self.inspect(|_, now| now);
        store.clear_inbox(now, &adopted, &refused).await?;
        match stopped {
            Some(error) if outcomes.is_empty() => Err(error),
            _ => Ok(outcomes),
        }
    }
}
