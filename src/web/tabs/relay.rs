//! What the tabs say to each other: the leader relays its events and answers host
//! actions; followers wake it and learn who leads.

use std::rc::Rc;

use crate::web::driver::Signal;
use crate::web::task::spawn;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

use canvas_scheduler_core::{json_text::JsonText, Operation, Report, SchedulerError};

use super::action::HostAction;
use super::channel::TabChannel;
use super::events;
use super::{Role, Tab, TabMessage};
use crate::web::driver::Driver;
use crate::web::json::to_js;

/// How many times a follower reads hinted operations that show nothing new yet, after the
/// latest hint (the leader may post before its write is durable; a tick apart, 250 ms–1 s).
const HINT_READS: u32 = 8;

/// The event an operation's stored record stands for: its settlement, else a block (its own,
/// or its request's) not yet delivered (`dead_letter` as `dead_lettered`).
fn stored_event(
    op: &Operation,
    request_blocked: Option<&String>,
    heard: Option<&String>,
) -> Option<JsonText> {
    if let Some(outcome) = &op.outcome {
        return Some(events::event_json(&Report::Settled {
            operation_id: op.intent.id.clone(),
            request_id: outcome.request_id.clone(),
            settlement: outcome.settlement,
            error: outcome.error.clone(),
            canonical: outcome.canonical.clone(),
        }));
    }
    let reason = op.blockers.last().or(request_blocked)?;
    if heard == Some(reason) {
        return None;
    }
    let request_id = op.request_id.clone();
    Some(events::event_json(&if reason == "dead_letter" {
        Report::DeadLettered {
            operation_ids: vec![op.intent.id.clone()],
            request_id: request_id.unwrap_or_default(),
            error: None,
            // A follower reads the operation, not its request: its own canvases (a batch's
            // request may hold more; `explain` on the leader names them all).
            held_canvas_ids: op.intent.canvas_ids.clone(),
        }
    } else {
        Report::Blocked {
            operation_id: op.intent.id.clone(),
            request_id,
            reason: reason.clone(),
        }
    }))
}

/// An error as an action's answer.
pub(super) fn error_value(error: &SchedulerError) -> JsValue {
    to_js(&events::error_object(error))
}

impl Tab {
    pub(super) fn open_channel(&self) {
        let name = self.lock_name();
        let weak = Rc::downgrade(&self.state);
        let channel = TabChannel::open(
            &name,
            Rc::new(move |message| {
                if let Some(state) = weak.upgrade() {
                    Tab { state }.on_message(message);
                }
            }),
        );
        self.state.borrow_mut().channel = channel.map(Rc::new);
    }

    fn on_message(&self, message: TabMessage) {
        // Another tab exists: relay events while leading, also right after a takeover (before
        // the others have said hello to the new leader).
        self.state.borrow_mut().relay = true;
        let leading = self.driver();
        match message {
            TabMessage::Hello { .. } => {
                if let Some(driver) = leading {
                    let owner = self.owner();
                    let fence = driver.inspect(|s, _| s.stats().fence);
                    self.post(&TabMessage::Leader { owner, fence });
                }
            }
            TabMessage::Leader { owner, fence } => {
                // Believed only as far as the stored lease confirms it (a page script can
                // post anything on the channel).
                let this = self.clone();
                spawn(async move { this.on_leader_claim(owner, fence).await });
            }
            TabMessage::Loading { .. } => self.state.borrow_mut().watched = None,
            TabMessage::Gone { owner } => {
                let mut state = self.state.borrow_mut();
                if state.leader_owner.as_deref() == Some(owner.as_str()) {
                    state.leader_owner = None;
                }
                state.watched = None;
            }
            TabMessage::Wake { .. } => {
                if leading.is_some() {
                    let this = self.clone();
                    spawn(async move { this.adopt().await });
                }
            }
            TabMessage::Event { event, .. } => self.on_relayed(&event),
            TabMessage::Visible { from } => self.on_visible_follower(from),
            TabMessage::Handover { to } => self.on_handover(&to),
            TabMessage::Act {
                rid,
                from,
                principal,
                action,
                arg,
            } => {
                if let Some(driver) = leading {
                    let this = self.clone();
                    spawn(async move {
                        if matches!(action, HostAction::WhenSaved) {
                            // The asking tab's intents may still be in the inbox: a pass
                            // begun after the question adopts them, so the answer covers them.
                            this.adopt_pass().await;
                        }
                        let served = match own_work(&driver, principal, action, &arg) {
                            Ok(()) => serve(&driver, action, &arg).await,
                            Err(error) => Err(error),
                        };
                        let (ok, value) = match served {
                            Ok(value) => (true, value),
                            Err(error) => (false, error_value(&error)),
                        };
                        this.post(&TabMessage::Done {
                            rid,
                            to: from,
                            ok,
                            value,
                        });
                    });
                }
            }
            TabMessage::Done { rid, to, ok, value } => {
                if to == self.owner() {
                    self.answer(rid, ok, value);
                }
            }
        }
    }

    /// A `leader` message: acted on only when the stored lease is `owner`'s with `fence`.
    async fn on_leader_claim(&self, owner: String, fence: Option<u64>) {
        let Ok(Some(stored)) = self.store().read_lease().await else {
            return;
        };
        if stored.owner != owner || fence.is_some_and(|f| f != stored.fence) {
            return; // not what the ledger says: stale or forged
        }
        let leading = self.driver();
        self.on_leader(owner, Some(stored.fence), leading);
    }

    fn on_leader(&self, owner: String, fence: Option<u64>, leading: Option<Driver>) {
        if let Some(driver) = leading {
            // Two leaders can only overlap until the older one's next write is fenced; a
            // newer fence in the stored lease is reason enough to stop now.
            let ours = driver.inspect(|s, _| s.stats().fence);
            if fence > ours && owner != self.owner() {
                self.demote();
            }
            return;
        }
        let changed = {
            let mut state = self.state.borrow_mut();
            state.watched = None;
            let changed = state.leader_owner.as_deref() != Some(owner.as_str());
            state.leader_owner = Some(owner.clone());
            changed
        };
        if changed {
            self.emit_json(&events::leader_changed(false, Some(&owner), fence));
            let from = self.owner();
            self.post(&TabMessage::Hello { from });
            self.repost_pending();
            let this = self.clone();
            spawn(async move { this.catch_up().await });
        }
    }

    /// A follower hears that something happened to operations it enqueued. The channel is
    /// not trusted (any script of the origin can post on it): the event is only a hint, and
    /// what is delivered is read from the ledger ([`Tab::confirm_hinted`]).
    fn on_relayed(&self, event: &JsValue) {
        {
            let mut state = self.state.borrow_mut();
            if !matches!(state.role, Role::Follower | Role::Promoting) {
                return;
            }
            for id in events::operation_ids(event) {
                if state.mine.contains(&id) {
                    state.hinted.insert(id);
                    state.hint_reads = HINT_READS;
                }
            }
            if state.hinted.is_empty() {
                return;
            }
        }
        let this = self.clone();
        spawn(async move { this.confirm_hinted().await });
    }

    /// Reads the hinted operations from the ledger and delivers what their records show:
    /// `settled` from a stored outcome, `dead_lettered` and `blocked` from stored blockers,
    /// and a refusal when the operation is neither in the ledger nor in the inbox any more
    /// (the dispatcher set it aside). A record not written yet is read again on the next tick,
    /// a few times.
    pub(super) async fn confirm_hinted(&self) {
        let ids: Vec<String> = {
            let mut state = self.state.borrow_mut();
            if state.hint_reads == 0 {
                state.hinted.clear();
            }
            state.hint_reads = state.hint_reads.saturating_sub(1);
            state.hinted.iter().cloned().collect()
        };
        if ids.is_empty() {
            return;
        }
        let Ok(found) = self.store().read_operations(&ids).await else {
            return;
        };
        for (id, found) in ids.into_iter().zip(found) {
            let (whole, queued) = (found.operation, found.queued);
            let request_blocked = found.request_blocked;
            // Settled and compacted without an archived copy: the record its tombstone gives.
            let view = match (&whole, &found.compacted) {
                (Some(op), _) => Some(to_js(op)),
                (None, Some(compacted)) => Some(to_js(compacted)),
                (None, None) => None,
            };
            let record = whole.or_else(|| found.compacted.as_ref().map(|c| c.settled_record()));
            let event = {
                let mut state = self.state.borrow_mut();
                if !matches!(state.role, Role::Follower | Role::Promoting)
                    || !state.mine.contains(&id)
                {
                    state.hinted.remove(&id);
                    continue;
                }
                let event = match &record {
                    Some(op) => {
                        stored_event(op, request_blocked.as_ref(), state.heard_blocked.get(&id))
                    }
                    None if !queued => Some(events::refused(
                        &id,
                        &SchedulerError::new(
                            canvas_scheduler_core::ErrorCode::InvalidIntent,
                            "the dispatching tab refused this operation",
                        ),
                    )),
                    None => None,
                };
                if let Some(view) = &view {
                    state.views.set(&id, view);
                }
                match (&event, &record) {
                    (Some(_), Some(op)) if op.outcome.is_none() => {
                        let reason = op
                            .blockers
                            .last()
                            .or(request_blocked.as_ref())
                            .cloned()
                            .unwrap_or_default();
                        state.heard_blocked.insert(id.clone(), reason);
                        state.hinted.remove(&id);
                    }
                    (Some(_), _) => {
                        state.mine.remove(&id);
                        state.heard_blocked.remove(&id);
                        state.hinted.remove(&id);
                    }
                    (None, _) => {} // read again on the next tick, while reads are left
                }
                event
            };
            if let Some(event) = event {
                self.emit_json(&event);
            }
        }
    }

    /// The leader's own reports: to this tab's host, and to the others when any listens.
    pub(super) fn on_report(&self, report: &Report) {
        let event = to_js(&events::event_json(report));
        if let Report::Settled { operation_id, .. } = report {
            self.state.borrow_mut().mine.remove(operation_id);
        }
        self.emit(&event);
        let (relay, driver) = {
            let state = self.state.borrow();
            let driver = match &state.role {
                Role::Leader(driver) => Some(driver.clone()),
                _ => None,
            };
            (state.relay, driver)
        };
        let (true, Some(driver)) = (relay, driver) else {
            return;
        };
        let operation = match events::operation_ids(&event).as_slice() {
            [id] => driver.inspect(|s, _| s.ledger().operation(id).map(to_js)),
            _ => None,
        };
        self.post(&TabMessage::Event {
            event,
            operation: operation.unwrap_or(JsValue::UNDEFINED),
        });
    }

    /// Adopts the inbox (one pass at a time; a request during a pass runs another after
    /// it). Refused entries are reported as `settled` `rejected` to the tab that wrote them.
    pub(super) async fn adopt(&self) {
        {
            let mut state = self.state.borrow_mut();
            if state.adopting {
                state.adopt_again = true;
                return;
            }
            state.adopting = true;
        }
        loop {
            let Some(driver) = self.driver() else { break };
            let writes_before = self.state.borrow().own_writes;
            if let Ok(outcomes) = driver.adopt_inbox().await {
                {
                    // Every entry this tab wrote before the pass began is adopted (or refused).
                    let mut state = self.state.borrow_mut();
                    state.own_adopted = state.own_adopted.max(writes_before);
                }
                for outcome in outcomes {
                    if let Some((key, reason)) = &outcome.malformed {
                        // The entry is set aside in `quarantine`; the leader's host hears it.
                        self.emit_json(&events::quarantined("inbox", key, reason));
                    }
                    let Some(error) = outcome.refused else {
                        continue;
                    };
                    for id in outcome.operation_ids {
                        let event = to_js(&events::refused(&id, &error));
                        if outcome.origin == self.owner() {
                            self.on_relayed_own(&id, &event);
                        } else {
                            self.post(&TabMessage::Event {
                                event,
                                operation: JsValue::UNDEFINED,
                            });
                        }
                    }
                }
            }
            let mut state = self.state.borrow_mut();
            if !state.adopt_again {
                break;
            }
            state.adopt_again = false;
        }
        let waiters = {
            let mut state = self.state.borrow_mut();
            state.adopting = false;
            std::mem::take(&mut state.inbox_waiters)
        };
        for waiter in waiters {
            waiter.resolve();
        }
    }

    /// Waits for an adoption pass that begins after the call (the running one, if any, is
    /// asked for one more).
    async fn adopt_pass(&self) {
        let signal = Signal::new();
        self.state.borrow_mut().inbox_waiters.push(signal.clone());
        self.adopt().await;
        signal.wait().await;
    }

    fn on_relayed_own(&self, id: &str, event: &JsValue) {
        self.state.borrow_mut().mine.remove(id);
        self.emit(event);
    }
}

/// A tab asks the dispatcher only about its own principal's work. An action on one
/// operation (`flush`, `retry`, `discard`) needs the operation's principal to be the asking
/// tab's; `resume`, `operations` and the event log need the dispatcher's to be. (The asking
/// tab names its principal: this keeps an honest tab of another user off the leader's work;
/// it is no defence against a script that lies on the channel.)
fn own_work(
    driver: &Driver,
    principal: Option<String>,
    action: HostAction,
    arg: &JsValue,
) -> Result<(), SchedulerError> {
    let refuse = |what: &str| {
        Err(SchedulerError::new(
            canvas_scheduler_core::ErrorCode::OtherPrincipal,
            format!("{what} belongs to another principal than the tab that asked"),
        ))
    };
    match action {
        HostAction::Flush | HostAction::Retry | HostAction::Discard => {
            let id = arg.as_string().unwrap_or_default();
            // Settled and compacted, at hand: its tombstone keeps the principal.
            let owner = driver.inspect(|s, _| {
                let ledger = s.ledger();
                ledger
                    .operation(&id)
                    .map(|op| op.intent.principal.clone())
                    .or_else(|| ledger.tombstone(&id).map(|t| t.principal.clone()))
            });
            match owner {
                Some(owner) if owner != principal => refuse(&format!("operation {id}")),
                _ => Ok(()), // unknown ids get serve()'s own error
            }
        }
        HostAction::Resume | HostAction::RetryAllNow | HostAction::Events => {
            let leader = driver.inspect(|s, _| s.config().principal.clone());
            if leader == principal {
                Ok(())
            } else {
                refuse("the dispatching tab's work")
            }
        }
        HostAction::Settle | HostAction::WhenSaved => Ok(()),
    }
}

/// Runs a host action another tab asked of this dispatcher (or this tab's own).
pub(super) async fn serve(
    driver: &Driver,
    action: HostAction,
    arg: &JsValue,
) -> Result<JsValue, SchedulerError> {
    let id = arg.as_string().unwrap_or_default();
    match action {
        HostAction::Flush => driver.act(|s, now| s.flush(now, &id)).map(|o| to_js(&o)),
        HostAction::Retry => {
            let barrier = driver.act(|s, now| s.retry(now, &id))?;
            driver.wait_barrier(barrier).await.map(|()| JsValue::NULL)
        }
        HostAction::Discard => {
            let barrier = driver.act(|s, now| s.discard(now, &id))?;
            driver.wait_barrier(barrier).await.map(|()| JsValue::NULL)
        }
        HostAction::Resume => driver.resume().await.map(|()| JsValue::NULL),
        HostAction::RetryAllNow => {
            driver.act(|s, now| s.retry_all_now(now));
            Ok(JsValue::NULL)
        }
        HostAction::Settle => {
            driver.settle().await;
            Ok(JsValue::NULL)
        }
        HostAction::WhenSaved => driver.when_saved().await.map(|saved| to_js(&saved)),
        HostAction::Events => {
            let number = |key: &str| {
                Reflect::get(arg, &key.into())
                    .ok()
                    .and_then(|n| n.as_f64())
                    .filter(|n| n.is_finite() && *n >= 0.0)
            };
            let after = number("after").unwrap_or(0.0) as u64;
            let limit = number("limit").unwrap_or(100.0).clamp(1.0, 1_000.0) as usize;
            // Read when asked for (an open reads none of the log), with this session's at hand.
            let store = driver.store();
            let stored = store
                .events_after(after, limit)
                .await
                .map_err(crate::web::store::unavailable)?;
            let recent = driver.inspect(|s, _| s.ledger().events_after(after, limit));
            Ok(to_js(&crate::web::store::events::merged(
                stored, recent, after, limit,
            )))
        }
    }
}
