//! A tab that does not dispatch: enqueues through the inbox, asks the leader for host
//! actions, and answers reads from what it knows (its own operations, as relayed).

use std::cell::RefCell;
use std::rc::Rc;

use crate::web::task::spawn;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

use canvas_scheduler_core::{
    intent::{check_batch, into_intent, IntentInput},
    Clock, ErrorCode, Known, Operation, OperationPhase, Report, SchedulerError, SchedulerStats,
    RELEASE_ACTIONS,
};

use super::action::HostAction;
use super::relay::serve;
use super::{Role, Tab, TabMessage};
use crate::web::driver::Signal;
use crate::web::json::to_js;
use crate::web::store::InboxEntry;

/// How long a follower waits for the leader to answer a host action (`settle` waits as long
/// as it takes).
const ANSWER_TIMEOUT_MS: u64 = 5_000;

/// A host action asked of the leader, waiting for its answer.
pub(super) struct Pending {
    message: TabMessage,
    result: Rc<RefCell<Option<Result<JsValue, SchedulerError>>>>,
    signal: Signal,
}

impl Pending {
    /// Completes the action (first answer wins).
    pub(super) fn finish(&self, result: Result<JsValue, SchedulerError>) {
        let mut slot = self.result.borrow_mut();
        if slot.is_none() {
            *slot = Some(result);
        }
        self.signal.resolve();
    }
}

/// What an inbox append answers one enqueue: whether its entry was written, and the
/// operations already in the ledger; or its refusal.
type Appended = Result<(bool, Vec<Known>), SchedulerError>;

/// An enqueue waiting for this tab's next inbox append (group commit), and where its answer goes.
pub(super) struct Queued {
    entry: InboxEntry,
    answer: Rc<RefCell<Option<Appended>>>,
    signal: Signal,
}

/// What `operation(id)` answers for an id the ledger knows: the record, or its tombstone.
fn known_js(known: &Known) -> JsValue {
    match known {
        Known::Operation(op) => to_js(op.as_ref()),
        Known::Tombstone(compacted) => to_js(compacted),
    }
}

/// An enqueue the inbox append did not answer (never expected: one answer an entry).
fn unanswered() -> SchedulerError {
    SchedulerError::new(
        ErrorCode::StorageUnavailable,
        "the inbox write gave no answer",
    )
}

fn from_error_value(value: &JsValue) -> SchedulerError {
    let field = |name: &str| {
        Reflect::get(value, &name.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    let code = field("code").unwrap_or_default();
    let message =
        field("message").unwrap_or_else(|| "the dispatching tab refused the action".to_owned());
    let code = ErrorCode::ALL
        .iter()
        .find(|c| c.as_str() == code.as_str())
        .cloned()
        .unwrap_or(ErrorCode::InvalidState);
    SchedulerError::new(code, message)
}

/// What `operation(id)` answers for each of `intents` until the leader relays its record:
/// the operation as enqueued (sequence 0).
pub(super) fn views_of(
    intents: &[IntentInput],
    principal: &Option<String>,
) -> Vec<(String, JsValue)> {
    intents
        .iter()
        .map(|input| {
            let op = Operation::new(into_intent(input.clone(), 0, principal.clone()));
            (input.id.clone(), to_js(&op))
        })
        .collect()
}

impl Tab {
    /// Validates `intents` as far as possible without the ledger, writes them to the
    /// inbox (checked against the ledger in that transaction) and wakes the leader.
    pub(super) async fn enqueue_to_inbox(
        &self,
        intents: Vec<IntentInput>,
    ) -> Result<(), SchedulerError> {
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
        check_batch(&intents, max_payload)?;
        let views = views_of(&intents, &principal);
        let entry = InboxEntry {
            origin: origin.clone(),
            principal,
            at: now,
            intents,
        };
        let answer = Rc::new(RefCell::new(None));
        let signal = Signal::new();
        let lead = {
            let mut state = self.state.borrow_mut();
            state.inbox_writes_in_flight += 1;
            state.inbox_queue.push(Queued {
                entry,
                answer: answer.clone(),
                signal: signal.clone(),
            });
            !std::mem::replace(&mut state.inbox_appending, true)
        };
        // Group commit: the enqueue that finds no append under way writes every one waiting;
        // the others wait, and the first of those left waiting writes the next.
        if !lead {
            signal.wait().await;
        }
        if answer.borrow().is_none() {
            self.append_queued().await;
        }
        self.inbox_write_done();
        let appended = answer.borrow_mut().take();
        let (written, present) = appended.unwrap_or_else(|| Err(unanswered()))?;
        self.after_inbox_write(&origin, written, views, present)
            .await;
        Ok(())
    }

    /// Writes the enqueues waiting for this tab's inbox in one transaction, in the order they
    /// came, each checked and answered on its own; then wakes the first still waiting to
    /// write the next (or says no append is under way).
    async fn append_queued(&self) {
        let queued = std::mem::take(&mut self.state.borrow_mut().inbox_queue);
        let (entries, waiters): (Vec<InboxEntry>, Vec<_>) = queued
            .into_iter()
            .map(|q| (q.entry, (q.answer, q.signal)))
            .unzip();
        let count = entries.len();
        let answers = match self.store().append_inbox(entries).await {
            Ok(answers) => answers,
            Err(error) => (0..count).map(|_| Err(error.clone())).collect(),
        };
        let mut answers = answers.into_iter();
        for (answer, signal) in waiters {
            *answer.borrow_mut() = Some(answers.next().unwrap_or_else(|| Err(unanswered())));
            signal.resolve();
        }
        let mut state = self.state.borrow_mut();
        match state.inbox_queue.first() {
            Some(next) => next.signal.resolve(),
            None => state.inbox_appending = false,
        }
    }

    /// One of this tab's inbox writes is over (written or failed).
    pub(super) fn inbox_write_done(&self) {
        let idle = {
            let mut state = self.state.borrow_mut();
            state.inbox_writes_in_flight -= 1;
            if state.inbox_writes_in_flight > 0 {
                return;
            }
            std::mem::take(&mut state.inbox_idle)
        };
        for signal in idle {
            signal.resolve();
        }
    }

    /// Once no inbox write of this tab is under way.
    async fn inbox_writes_done(&self) {
        let signal = {
            let mut state = self.state.borrow_mut();
            if state.inbox_writes_in_flight == 0 {
                return;
            }
            let signal = Signal::new();
            state.inbox_idle.push(signal.clone());
            signal
        };
        signal.wait().await;
    }

    /// After an entry of this tab's intents was written to the inbox (`written`: not when
    /// every one was already there): this tab hears about each of them (`views`: as stored
    /// when enqueued; `present`: the ones already in the ledger), and the leader is woken.
    pub(super) async fn after_inbox_write(
        &self,
        origin: &str,
        written: bool,
        views: Vec<(String, JsValue)>,
        present: Vec<Known>,
    ) {
        {
            let mut state = self.state.borrow_mut();
            if written {
                state.own_writes += 1;
            }
            for (id, view) in views {
                state.mine.insert(id.clone());
                state.views.set_if_absent(&id, &view);
            }
            // Already in the ledger (enqueued again, e.g. after a reload): its stored record
            // answers `operation()`, and a resolved one has nothing more to hear.
            for known in present {
                let (id, resolved, view) = match known {
                    Known::Operation(op) => (
                        op.intent.id.clone(),
                        op.phase == OperationPhase::Resolved,
                        to_js(op.as_ref()),
                    ),
                    // Settled and compacted: known by its tombstone.
                    Known::Tombstone(compacted) => (compacted.id.clone(), true, to_js(&compacted)),
                };
                if resolved {
                    state.mine.remove(&id);
                }
                state.views.set(&id, &view);
            }
        }
        self.post(&TabMessage::Wake {
            from: origin.to_owned(),
        });
        if self.driver().is_some() {
            // Elected while writing: adopt it ourselves.
            self.adopt().await;
        }
    }

    /// Runs a host action: here while leading, by the leader otherwise.
    ///
    /// A `whenSaved()` whose dispatcher stopped under it while this tab stays open (a pause,
    /// a lost lead) waits on through whoever dispatches now.
    pub async fn act(&self, action: HostAction, arg: JsValue) -> Result<JsValue, SchedulerError> {
        let mut tries = 0;
        loop {
            if matches!(action, HostAction::WhenSaved) {
                self.until_started().await;
            }
            let result = self.act_once(action, arg.clone()).await;
            let interrupted = matches!(action, HostAction::WhenSaved)
                && matches!(&result, Err(e) if e.code == ErrorCode::SchedulerClosed)
                && !matches!(self.state.borrow().role, Role::Closed);
            tries += 1;
            if !interrupted || tries >= super::INTERRUPTED_TRIES {
                return result;
            }
        }
    }

    /// While this tab, elected, loads the ledger before starting (the host started it): wait
    /// for the start, whose recovery finds the operations a `whenSaved()` covers. Bounded.
    async fn until_started(&self) {
        for _ in 0..1_000 {
            let loading = {
                let state = self.state.borrow();
                match &state.role {
                    Role::Promoting => state.started,
                    Role::Leader(driver) => {
                        state.started && !driver.inspect(|s, _| s.is_running() || s.is_closed())
                    }
                    _ => false,
                }
            };
            if !loading {
                return;
            }
            crate::web::clock::sleep(20).await;
        }
    }

    async fn act_once(&self, action: HostAction, arg: JsValue) -> Result<JsValue, SchedulerError> {
        if matches!(self.state.borrow().role, Role::Closed) {
            return Err(SchedulerError::new(
                ErrorCode::SchedulerClosed,
                "the scheduler was stopped",
            ));
        }
        if let Some(driver) = self.driver() {
            return serve(&driver, action, &arg).await;
        }
        if matches!(action, HostAction::WhenSaved) {
            // What this tab enqueued before the call: its inbox writes are done before the
            // leader is asked (which adopts the inbox before it answers).
            self.inbox_writes_done().await;
            if let Some(driver) = self.driver() {
                return serve(&driver, action, &arg).await;
            }
        }
        let (rid, pending) = {
            let mut state = self.state.borrow_mut();
            state.next_rid += 1;
            let rid = state.next_rid;
            let message = TabMessage::Act {
                rid,
                from: state.options.config.owner.clone(),
                principal: state.options.config.principal.clone(),
                action,
                arg,
            };
            let pending = Pending {
                message,
                result: Rc::new(RefCell::new(None)),
                signal: Signal::new(),
            };
            let waiter = (pending.result.clone(), pending.signal.clone());
            state.pending.insert(rid, pending);
            (rid, waiter)
        };
        let message = self
            .state
            .borrow()
            .pending
            .get(&rid)
            .map(|p| p.message.clone());
        if let Some(message) = message {
            self.post(&message);
        }
        if !matches!(action, HostAction::Settle | HostAction::WhenSaved) {
            let weak = Rc::downgrade(&self.state);
            let state = self.state.borrow();
            state.clock.set_timer(
                ANSWER_TIMEOUT_MS,
                Box::new(move || {
                    let Some(state) = weak.upgrade() else { return };
                    let pending = state.borrow_mut().pending.remove(&rid);
                    if let Some(pending) = pending {
                        pending.finish(Err(SchedulerError::new(
                            ErrorCode::NotLeader,
                            "no dispatching tab answered; try again",
                        )));
                    }
                }),
            );
        }
        let (result, signal) = pending;
        signal.wait().await;
        let outcome = result.borrow_mut().take();
        outcome.unwrap_or_else(|| {
            Err(SchedulerError::new(
                ErrorCode::NotLeader,
                "no dispatching tab answered",
            ))
        })
    }

    /// The leader's answer to one of our actions.
    pub(super) fn answer(&self, rid: u64, ok: bool, value: JsValue) {
        let pending = self.state.borrow_mut().pending.remove(&rid);
        if let Some(pending) = pending {
            pending.finish(if ok {
                Ok(value)
            } else {
                Err(from_error_value(&value))
            });
        }
    }

    /// A new leader: ask it what the old one may never have answered.
    pub(super) fn repost_pending(&self) {
        let messages: Vec<TabMessage> = self
            .state
            .borrow()
            .pending
            .values()
            .map(|p| p.message.clone())
            .collect();
        for message in &messages {
            self.post(message);
        }
    }

    /// Elected with actions still waiting for an answer: run them here.
    pub(super) fn serve_pending_locally(&self) {
        let Some(driver) = self.driver() else { return };
        let pending = std::mem::take(&mut self.state.borrow_mut().pending);
        for (_, waiter) in pending {
            let driver = driver.clone();
            spawn(async move {
                let TabMessage::Act { action, arg, .. } = &waiter.message else {
                    return;
                };
                waiter.finish(serve(&driver, *action, arg).await);
            });
        }
    }

    /// Canvas id → request id (the dispatcher's claims; none while following).
    ///
    /// # Errors
    ///
    /// `invalid_state` (see [`Driver::read`](crate::web::driver::Driver::read)).
    pub fn claims(&self) -> Result<JsValue, SchedulerError> {
        match self.driver() {
            Some(driver) => driver.read(|s, _| to_js(&s.claims())),
            None => Ok(js_sys::Object::new().into()),
        }
    }

    /// The operation record: the ledger's while leading; while following, the latest the
    /// leader relayed for an operation this tab enqueued (sequence 0 until it is relayed).
    ///
    /// # Errors
    ///
    /// `invalid_state` (see [`Driver::read`](crate::web::driver::Driver::read)).
    pub fn operation(&self, id: &str) -> Result<Option<JsValue>, SchedulerError> {
        match self.driver() {
            Some(driver) => driver.read(|s, _| s.known(id).map(|known| known_js(&known))),
            None => Ok(self.state.borrow().views.get(id)),
        }
    }

    /// Retention: what the ledger knows of each of `ids` — the record, the tombstone of a
    /// compacted operation (looked up in the ledger), or `undefined` — in order. While
    /// following: the relayed view of an operation this tab enqueued, else what the ledger
    /// stores of it (the working stores, then the tombstones and the archive, in one read).
    ///
    /// # Errors
    ///
    /// `storage_unavailable`.
    pub async fn known(&self, ids: Vec<String>) -> Result<Vec<JsValue>, SchedulerError> {
        if let Some(driver) = self.driver() {
            let known = driver.known(ids).await?;
            return Ok(known
                .iter()
                .map(|k| k.as_ref().map_or(JsValue::UNDEFINED, known_js))
                .collect());
        }
        let store = self.store();
        let stored = store
            .known_records(&ids)
            .await
            .map_err(crate::web::store::unavailable)?;
        let state = self.state.borrow();
        Ok(ids
            .iter()
            .zip(stored)
            .map(|(id, stored)| {
                state
                    .views
                    .get(id)
                    .or_else(|| stored.as_ref().map(known_js))
                    .unwrap_or(JsValue::UNDEFINED)
            })
            .collect())
    }

    /// Why the operation is where it is. While following, an operation of this tab is
    /// explained as waiting for the dispatching tab (`not_leader`) until it resolves.
    ///
    /// # Errors
    ///
    /// `unknown_operation`.
    pub fn explain(&self, id: &str) -> Result<JsValue, SchedulerError> {
        if let Some(driver) = self.driver() {
            return driver.read(|s, now| s.explain(now, id))?.map(|e| to_js(&e));
        }
        let view = self.operation(id)?.ok_or_else(|| {
            SchedulerError::new(
                ErrorCode::UnknownOperation,
                format!("operation {id} is not known to this tab (another tab dispatches)"),
            )
        })?;
        let field = |name: &str| Reflect::get(&view, &name.into()).unwrap_or(JsValue::UNDEFINED);
        let resolved = field("phase").as_string().as_deref() == Some("resolved");
        let explanation = js_sys::Object::new();
        let fields: [(&str, JsValue); 4] = [
            ("operationId", id.into()),
            (
                "state",
                if resolved { "resolved" } else { "pending" }.into(),
            ),
            (
                "reason",
                if resolved { "resolved" } else { "not_leader" }.into(),
            ),
            ("blockers", field("blockers")),
        ];
        for (name, value) in fields {
            let _ = Reflect::set(&explanation, &name.into(), &value);
        }
        Ok(explanation.into())
    }

    /// The unsettled operations in sequence order. While following: this tab's own,
    /// as the leader last relayed them (`queued` for `not_leader`, or `blocked`).
    ///
    /// # Errors
    ///
    /// `invalid_state` (see [`Driver::read`](crate::web::driver::Driver::read)).
    pub fn pending(&self) -> Result<JsValue, SchedulerError> {
        if let Some(driver) = self.driver() {
            return driver.read(|s, now| to_js(&s.pending(now)));
        }
        let state = self.state.borrow();
        let mut entries: Vec<canvas_scheduler_core::PendingEntry> = Vec::new();
        for id in state.mine.iter() {
            let Some(view) = state.views.get(id) else {
                continue;
            };
            let Ok(op) = crate::web::store::codec::decode::<Operation>(&view) else {
                continue;
            };
            if op.phase == OperationPhase::Resolved {
                continue;
            }
            let blocked = op.blockers.first().cloned();
            // A request blocked with canvases claimed (frozen: it has a request id) holds them.
            let holds = blocked.is_some() && op.request_id.is_some();
            entries.push(canvas_scheduler_core::PendingEntry {
                id: id.clone(),
                state: if blocked.is_some() {
                    "blocked"
                } else {
                    "queued"
                },
                reason: blocked.unwrap_or_else(|| "not_leader".into()),
                attempt: 0,
                next_attempt_at: None,
                canvas_ids: op.intent.canvas_ids.clone(),
                held_canvas_ids: holds.then(|| op.intent.canvas_ids.clone()),
                release: holds.then(|| RELEASE_ACTIONS.map(String::from).to_vec()),
                sequence: op.intent.sequence,
            });
        }
        entries.sort_by_key(|e| e.sequence);
        Ok(to_js(&entries))
    }

    /// Counters and the idle reason; `leaderOwner` names the dispatching tab when known.
    ///
    /// # Errors
    ///
    /// `invalid_state` (see [`Driver::read`](crate::web::driver::Driver::read)).
    /// `persisted` says whether the browser keeps the origin's storage persistent.
    pub fn stats(&self) -> Result<JsValue, SchedulerError> {
        let stats = self.stats_here()?;
        let persisted = self
            .state
            .borrow()
            .persisted
            .map_or(JsValue::NULL, JsValue::from);
        let _ = Reflect::set(&stats, &"persisted".into(), &persisted);
        Ok(stats)
    }

    fn stats_here(&self) -> Result<JsValue, SchedulerError> {
        if let Some(driver) = self.driver() {
            return driver.read(|s, _| to_js(&s.stats()));
        }
        let state = self.state.borrow();
        let idle = match state.role {
            Role::Closed => "stopped",
            _ if state.paused => "paused",
            _ if !state.started => "not_started",
            _ => "not_leader",
        };
        Ok(to_js(&SchedulerStats {
            scanned: 0,
            claimed: 0,
            raced: 0,
            retried: 0,
            sent: 0,
            settled: 0,
            passes: 0,
            pending: state.mine.len(),
            in_flight: 0,
            ready: 0,
            retry_scheduled: 0,
            claimed_canvases: 0,
            idle_reason: Some(idle),
            leader: false,
            owner: state.options.config.owner.clone(),
            settled_kept: 0,
            tombstones: 0,
            fence: None,
            leader_owner: state.leader_owner.clone(),
        }))
    }

    /// After a change of leader: outcomes of this tab's operations that a relay message may
    /// have missed (a leader dying between writing an outcome and posting it) are read from
    /// the ledger — the new leader's, or this tab's own once elected — and delivered.
    pub(super) async fn catch_up(&self) {
        let ids: Vec<String> = self.state.borrow().mine.iter().cloned().collect();
        if ids.is_empty() {
            return;
        }
        // What is durable (the old leader wrote it): whole, or compacted since.
        let Ok(found) = self.store().read_operations(&ids).await else {
            return;
        };
        for found in found {
            let (operation, view) = match (found.operation, found.compacted) {
                (Some(op), _) => {
                    let view = to_js(&op);
                    (op, view)
                }
                (None, Some(compacted)) => {
                    let view = to_js(&compacted);
                    (compacted.settled_record(), view)
                }
                (None, None) => continue,
            };
            let id = operation.intent.id.clone();
            let Some(outcome) = operation.outcome.clone() else {
                continue;
            };
            if !self.state.borrow_mut().mine.remove(&id) {
                continue; // heard meanwhile
            }
            self.state.borrow().views.set(&id, &view);
            let report = Report::Settled {
                operation_id: id,
                request_id: outcome.request_id,
                settlement: outcome.settlement,
                error: outcome.error,
                canonical: outcome.canonical,
            };
            self.emit(&to_js(&super::events::event_json(&report)));
        }
    }
}
