//! A partial enqueue of a tab that does not dispatch: the core decides
//! which intents of the call go to the inbox ([`partition`]) from what the inbox transaction
//! reads of the durable ledger and the inbox, and the accepted new ones are appended as one
//! entry in that same transaction. A refused intent writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use wasm_bindgen::JsValue;

use canvas_scheduler_core::{
    intent::{same_intent, IntentInput},
    partial::{partition, Holdings, Verdict},
    retention::Tombstone,
    ErrorCode, Known, Operation, SchedulerError,
};

use super::inbox::{js, read_queued, stored_operation, APPEND_STORES};
use super::schema::INBOX;
use super::tombstones::look_up_in;
use super::{unavailable, IdbLedger, InboxEntry};
use crate::web::store::requests::Tx;

/// What [`IdbLedger::append_inbox_partial`] did.
pub struct PartialAppend {
    /// One verdict per intent of the call, in order.
    pub verdicts: Vec<Verdict>,
    /// The accepted intents, in call order (appended, or already there as the same intent).
    pub accepted: Vec<IntentInput>,
    /// Whether an entry was appended (not when every accepted intent was already there).
    pub written: bool,
    /// The operations already in the ledger with the same intent as one accepted.
    pub present: Vec<Known>,
}

/// The durable ledger and the inbox, as the transaction read them for the call's ids.
struct InboxHoldings {
    principal: Option<String>,
    /// Each id looked up that is stored, with its operation (`None`: unreadable).
    stored: BTreeMap<String, Option<Operation>>,
    /// Every queued intent with the principal it was enqueued under.
    queued: Vec<(Option<String>, IntentInput)>,
    /// A queued intent's id → its place in `queued`.
    queued_at: BTreeMap<String, usize>,
    /// Tombstones of the ids neither stored nor queued: settled and compacted.
    compacted: Vec<Tombstone>,
}

impl Holdings for InboxHoldings {
    fn holds(&self, input: &IntentInput) -> Option<Verdict> {
        let same = match (
            self.stored_operation(&input.id),
            self.queued_intent(&input.id),
        ) {
            (Some(Some(operation)), _) => {
                same_intent(&operation.intent, input)
                    && operation.intent.principal == self.principal
            }
            (Some(None), _) => false,
            (None, Some((principal, queued))) => queued == input && *principal == self.principal,
            (None, None) => match self.tombstone(&input.id) {
                Some(t) => t.matches(input) && t.principal == self.principal,
                None => return None,
            },
        };
        Some(match same {
            true => Ok(()),
            false => Err(SchedulerError::new(
                ErrorCode::DuplicateOperation,
                format!(
                    "operation {} is already in the ledger with another intent",
                    input.id
                ),
            )),
        })
    }

    fn knows(&self, id: &str) -> bool {
        self.stored_operation(id).is_some()
            || self.queued_intent(id).is_some()
            || self.tombstone(id).is_some()
    }

    /// The dispatcher assigns sequences when it adopts the entry.
    fn last_sequence(&self) -> Option<u64> {
        None
    }
}

impl InboxHoldings {
    fn stored_operation(&self, id: &str) -> Option<&Option<Operation>> {
        self.stored.get(id)
    }

    fn tombstone(&self, id: &str) -> Option<&Tombstone> {
        self.compacted.iter().find(|t| t.id == id)
    }

    fn queued_intent(&self, id: &str) -> Option<&(Option<String>, IntentInput)> {
        let &at = self.queued_at.get(id)?;
        self.queued.get(at)
    }

    /// Reads what the checks of `slots` need: every queued intent, and the stored operation
    /// of each id the call names (its own and its dependencies).
    async fn read(
        tx: &Tx<'_>,
        pages: &std::cell::RefCell<super::tombstones::PageIndex>,
        principal: Option<String>,
        slots: &[Result<IntentInput, SchedulerError>],
    ) -> Result<Self, SchedulerError> {
        let queued = read_queued(tx).await?;
        let mut queued_at = BTreeMap::new();
        for (at, (_, intent)) in queued.iter().enumerate() {
            // The first entry with an id is the one the leader adopts.
            if !queued_at.contains_key(&intent.id) {
                queued_at.insert(intent.id.clone(), at);
            }
        }
        let mut stored = BTreeMap::new();
        let named = slots
            .iter()
            .flatten()
            .flat_map(|input| std::iter::once(&input.id).chain(&input.dependencies));
        let mut looked_up = BTreeSet::new();
        for id in named {
            if !looked_up.insert(id.clone()) {
                continue;
            }
            if let Some(operation) = stored_operation(tx, id).await? {
                stored.insert(id.clone(), operation);
            }
        }
        let missing: Vec<String> = looked_up
            .into_iter()
            .filter(|id| !stored.contains_key(id) && !queued_at.contains_key(id))
            .collect();
        let compacted = look_up_in(tx, pages, &missing).await.map_err(js)?;
        Ok(Self {
            principal,
            stored,
            queued,
            queued_at,
            compacted,
        })
    }
}

/// Appends the new ones of `accepted` (neither stored, queued nor compacted) to the inbox as
/// `entry` (its `intents` are replaced); whether an entry was written, and the operations
/// already in the ledger with the same intent as one accepted.
fn add_accepted(
    tx: &Tx<'_>,
    holdings: &InboxHoldings,
    entry: &mut InboxEntry,
    accepted: &[IntentInput],
) -> Result<(bool, Vec<Known>), SchedulerError> {
    let mut present = Vec::new();
    let mut fresh = Vec::new();
    for input in accepted {
        match holdings.stored_operation(&input.id) {
            Some(operation) => {
                present.extend(operation.clone().map(|op| Known::Operation(Box::new(op))))
            }
            None if holdings.queued_intent(&input.id).is_some() => {}
            None => match holdings.tombstone(&input.id) {
                Some(t) => present.push(Known::from(t)),
                None => fresh.push(input.clone()),
            },
        }
    }
    let written = !fresh.is_empty();
    if written {
        entry.intents = fresh;
        let text = canvas_scheduler_core::json_text::to_string(&*entry);
        let store = tx.store(INBOX).map_err(js)?;
        store.add(&JsValue::from_str(&text)).map_err(js)?;
    }
    Ok((written, present))
}

/// The atomic append's checks: `entry`'s intents all pass the partial append's checks
/// (an atomic enqueue admits exactly what a partial one would accept of them), or the first
/// refused is the call's refusal and nothing is written.
pub(super) async fn check_and_add(
    tx: &Tx<'_>,
    entry: &mut InboxEntry,
    pages: &std::cell::RefCell<super::tombstones::PageIndex>,
) -> Result<(bool, Vec<Known>), SchedulerError> {
    let slots: Vec<Result<IntentInput, SchedulerError>> = std::mem::take(&mut entry.intents)
        .into_iter()
        .map(Ok)
        .collect();
    let holdings = InboxHoldings::read(tx, pages, entry.principal.clone(), &slots).await?;
    // The tab checked fields and sizes before the transaction (`check_batch`).
    let decided = partition(slots, usize::MAX, &holdings);
    if let Some((index, Err(error))) = decided
        .verdicts
        .into_iter()
        .enumerate()
        .find(|(_, verdict)| verdict.is_err())
    {
        return Err(error.of_intent(index));
    }
    add_accepted(tx, &holdings, entry, &decided.accepted)
}

impl IdbLedger {
    /// Partial: appends the intents of `slots` the checks accept to the inbox as `entry`
    /// (its `intents` are replaced), in one strict readwrite transaction that also reads what
    /// the checks need; refuses each other one with its own error. Nothing is written when
    /// none is new.
    ///
    /// # Errors
    ///
    /// `storage_unavailable`: nothing written.
    pub async fn append_inbox_partial(
        &self,
        mut entry: InboxEntry,
        slots: Vec<Result<IntentInput, SchedulerError>>,
        max_payload_bytes: usize,
    ) -> Result<PartialAppend, SchedulerError> {
        let db = self.db().map_err(unavailable)?;
        let tx = self.begin(&db, &APPEND_STORES, true).map_err(unavailable)?;
        let appended = async {
            let holdings =
                InboxHoldings::read(&tx, &self.tombstone_index, entry.principal.clone(), &slots)
                    .await?;
            let decided = partition(slots, max_payload_bytes, &holdings);
            let (written, present) = add_accepted(&tx, &holdings, &mut entry, &decided.accepted)?;
            Ok::<_, SchedulerError>(PartialAppend {
                verdicts: decided.verdicts,
                accepted: decided.accepted,
                written,
                present,
            })
        }
        .await;
        match appended {
            Ok(appended) => self
                .finish(tx)
                .await
                .map_err(unavailable)
                .map(|()| appended),
            Err(error) => {
                tx.abort().await;
                Err(error)
            }
        }
    }
}
