//! What the tabs say to each other (W4): the leader relays its events and answers host
//! actions; followers wake it and learn who leads.

use std::rc::Rc;

use serde_json::{json, Value};
use wasm_bindgen_futures::spawn_local;

use super::channel::TabChannel;
use super::events;
use super::{Role, Tab, TabMessage};
use crate::core::error::SchedulerError;
use crate::core::io::Report;
use crate::web::driver::Driver;

/// An error as an action's answer.
pub(super) fn error_value(error: &SchedulerError) -> Value {
    json!({ "code": error.code.as_str(), "message": error.message })
}

impl Tab {
    pub(super) fn open_channel(&self) {
        let name = format!("canvas-scheduler:{}", self.state.borrow().options.database);
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
        let leading = self.driver();
        match message {
            TabMessage::Hello { .. } => {
                if let Some(driver) = leading {
                    self.state.borrow_mut().relay = true;
                    let owner = self.owner();
                    let fence = driver.inspect(|s, _| s.stats().fence);
                    self.post(&TabMessage::Leader { owner, fence });
                }
            }
            TabMessage::Leader { owner, fence } => self.on_leader(owner, fence, leading),
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
                    spawn_local(async move { this.adopt().await });
                }
            }
            TabMessage::Event { event, operation } => self.on_relayed(event, operation),
            TabMessage::Act {
                rid,
                from,
                action,
                arg,
            } => {
                if let Some(driver) = leading {
                    let this = self.clone();
                    spawn_local(async move {
                        let (ok, value) = match serve(&driver, &action, &arg).await {
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

    fn on_leader(&self, owner: String, fence: Option<u64>, leading: Option<Driver>) {
        if let Some(driver) = leading {
            // Two leaders can only overlap until the older one's next write is fenced; a
            // newer fence announced is reason enough to stop now.
            let ours = driver.inspect(|s, _| s.stats().fence);
            if fence > ours {
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
            self.emit(&events::leader_changed(false, Some(&owner), fence));
            let from = self.owner();
            self.post(&TabMessage::Hello { from });
            self.repost_pending();
        }
    }

    /// A follower keeps the events about operations it enqueued.
    fn on_relayed(&self, event: Value, operation: Option<Value>) {
        let ids = events::operation_ids(&event);
        let ours = {
            let mut state = self.state.borrow_mut();
            if !matches!(state.role, Role::Follower | Role::Promoting) {
                return;
            }
            let ours: Vec<String> = ids
                .into_iter()
                .filter(|id| state.mine.contains(id))
                .collect();
            if let (Some(view), [id]) = (operation, ours.as_slice()) {
                state.views.insert(id.clone(), view);
            }
            if event.get("type").and_then(Value::as_str) == Some("settled") {
                for id in &ours {
                    state.mine.remove(id);
                }
            }
            !ours.is_empty()
        };
        if ours {
            self.emit(&event);
        }
    }

    /// The leader's own reports: to this tab's host, and to the others when any listens.
    pub(super) fn on_report(&self, report: &Report) {
        let event = events::event_json(report);
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
        let ids = events::operation_ids(&event);
        let operation = match ids.as_slice() {
            [id] => driver.inspect(|s, _| {
                s.ledger()
                    .operation(id)
                    .and_then(|op| serde_json::to_value(op).ok())
            }),
            _ => None,
        };
        self.post(&TabMessage::Event { event, operation });
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
            if let Ok(outcomes) = driver.adopt_inbox().await {
                for outcome in outcomes {
                    let Some(error) = outcome.refused else {
                        continue;
                    };
                    for id in outcome.operation_ids {
                        let event = json!({
                            "type": "settled", "operationId": id, "outcome": "rejected",
                            "error": error_value(&error),
                        });
                        if outcome.origin == self.owner() {
                            self.on_relayed_own(&id, &event);
                        } else {
                            self.post(&TabMessage::Event {
                                event,
                                operation: None,
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
        self.state.borrow_mut().adopting = false;
    }

    fn on_relayed_own(&self, id: &str, event: &Value) {
        self.state.borrow_mut().mine.remove(id);
        self.emit(event);
    }
}

/// Runs a host action another tab asked of this dispatcher.
pub(super) async fn serve(
    driver: &Driver,
    action: &str,
    arg: &Value,
) -> Result<Value, SchedulerError> {
    let id = arg.as_str().unwrap_or_default().to_owned();
    match action {
        "flush" => {
            let outcome = driver.act(|s, now| s.flush(now, &id))?;
            Ok(serde_json::to_value(outcome).unwrap_or(Value::Null))
        }
        "retry" => {
            let barrier = driver.act(|s, now| s.retry(now, &id))?;
            driver.wait_barrier(barrier).await.map(|()| Value::Null)
        }
        "discard" => {
            let barrier = driver.act(|s, now| s.discard(now, &id))?;
            driver.wait_barrier(barrier).await.map(|()| Value::Null)
        }
        "resume" => driver.resume().await.map(|()| Value::Null),
        "settle" => {
            driver.settle().await;
            Ok(Value::Null)
        }
        "events" => {
            let number = |key: &str| arg.get(key).and_then(Value::as_u64);
            let after = number("after").unwrap_or(0);
            let limit = number("limit").unwrap_or(100) as usize;
            let events = driver.inspect(|s, _| s.ledger().events_after(after, limit));
            Ok(serde_json::to_value(events).unwrap_or(Value::Null))
        }
        other => Err(SchedulerError::new(
            crate::core::error::ErrorCode::InvalidOptions,
            format!("unknown action {other}"),
        )),
    }
}
