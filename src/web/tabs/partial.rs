//! Partial enqueue (`enqueueMany(intents, { atomic: false })`) in either
//! role: while this tab dispatches the core decides in its scheduler; otherwise in the inbox
//! transaction, from the durable ledger and the inbox. Either way the accepted intents
//! are written in one transaction and each refused one changes nothing.

use std::collections::BTreeSet;

use canvas_scheduler_core::{intent::IntentInput, partial::Verdict, Clock, SchedulerError};

use super::follower::views_of;
use super::{closed, interrupted, Tab, INTERRUPTED_TRIES};
use crate::web::store::{InboxEntry, PartialAppend};

/// A partial enqueue's intents, each decoded or refused by the decoding.
pub(super) type Slots = Vec<Result<IntentInput, SchedulerError>>;

impl Tab {
    /// Durable partial enqueue: resolves once the accepted intents are stored, with a verdict
    /// per intent.
    ///
    /// # Errors
    ///
    /// What refuses the whole call: `scheduler_closed`, `storage_unavailable`, `lease_lost`.
    /// A dispatcher stopped under the call is handled as in [`Tab::enqueue`].
    pub async fn enqueue_partial(&self, slots: Slots) -> Result<Vec<Verdict>, SchedulerError> {
        if matches!(self.state.borrow().role, super::Role::Closed) {
            return Err(closed());
        }
        let mut result = Err(interrupted());
        for _ in 0..INTERRUPTED_TRIES {
            if let Some(done) = self.enqueue_partial_here_or_inbox(slots.clone()).await {
                result = done;
                break;
            }
        }
        self.note_pending();
        result
    }

    /// `None`: the dispatcher was stopped under the call.
    async fn enqueue_partial_here_or_inbox(
        &self,
        slots: Slots,
    ) -> Option<Result<Vec<Verdict>, SchedulerError>> {
        Some(match self.driver() {
            Some(driver) => {
                if let Err(error) = self.after_own_inbox().await {
                    return Some(Err(error));
                }
                // Kept until settled, so this tab still hears them if it stops leading; a
                // refused one, or every one of a failed call, is forgotten again.
                let mut ids = Vec::with_capacity(slots.len());
                let mut fresh = Vec::new();
                {
                    let mut state = self.state.borrow_mut();
                    for slot in &slots {
                        let id = slot.as_ref().ok().map(|input| input.id.clone());
                        if let Some(id) = &id {
                            if state.mine.insert(id.clone()) {
                                fresh.push(id.clone());
                            }
                        }
                        ids.push(id);
                    }
                }
                let result = driver.enqueue_partial(slots).await;
                // An id refused in one place may be accepted in another (a duplicate).
                let mut accepted = BTreeSet::new();
                if let Ok(verdicts) = &result {
                    for (id, verdict) in ids.into_iter().zip(verdicts) {
                        if let (Some(id), Ok(())) = (id, verdict) {
                            accepted.insert(id);
                        }
                    }
                }
                let mut state = self.state.borrow_mut();
                for id in fresh.iter().filter(|id| !accepted.contains(*id)) {
                    state.mine.remove(id);
                }
                drop(state);
                if result.is_err() && self.stopped_under(&driver) {
                    return None;
                }
                result
            }
            None => self.enqueue_partial_to_inbox(slots).await,
        })
    }

    /// A tab that does not dispatch: the inbox transaction decides and writes; then as
    /// [`Tab::after_inbox_write`].
    async fn enqueue_partial_to_inbox(&self, slots: Slots) -> Result<Vec<Verdict>, SchedulerError> {
        let (max_payload, principal, origin, now) = {
            let state = self.state.borrow();
            let config = &state.options.config;
            (
                config.max_payload_bytes,
                config.principal.clone(),
                config.owner.clone(),
                state.clock.now(),
            )
        };
        let entry = InboxEntry {
            origin: origin.clone(),
            principal: principal.clone(),
            at: now,
            intents: Vec::new(),
        };
        self.state.borrow_mut().inbox_writes_in_flight += 1;
        let appended = self
            .store()
            .append_inbox_partial(entry, slots, max_payload)
            .await;
        self.inbox_write_done();
        let PartialAppend {
            verdicts,
            accepted,
            written,
            present,
        } = appended?;
        let views = views_of(&accepted, &principal);
        self.after_inbox_write(&origin, written, views, present)
            .await;
        Ok(verdicts)
    }
}
