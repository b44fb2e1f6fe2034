//! What the tabs say to each other (W4): the leader relays its events and answers host
//! actions; followers wake it and learn who leads.

use std::rc::Rc;

use crate::web::task::spawn;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

use super::channel::TabChannel;
use super::events;
use super::{Role, Tab, TabMessage};
use crate::core::error::SchedulerError;
use crate::core::io::Report;
use crate::web::driver::Driver;
use crate::web::json::to_js;

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
            TabMessage::Leader { owner, fence } => self.on_leader(owner, fence, leading),
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
            TabMessage::Event { event, operation } => self.on_relayed(&event, operation),
            TabMessage::Visible { from } => self.on_visible_follower(from),
            TabMessage::Handover { to } => self.on_handover(&to),
            TabMessage::Act {
                rid,
                from,
                action,
                arg,
            } => {
                if let Some(driver) = leading {
                    let this = self.clone();
                    spawn(async move {
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
            self.emit_json(&events::leader_changed(false, Some(&owner), fence));
            let from = self.owner();
            self.post(&TabMessage::Hello { from });
            self.repost_pending();
            let this = self.clone();
            spawn(async move { this.catch_up().await });
        }
    }

    /// A follower keeps the events about operations it enqueued.
    fn on_relayed(&self, event: &JsValue, operation: JsValue) {
        let ids = events::operation_ids(event);
        let ours = {
            let mut state = self.state.borrow_mut();
            if !matches!(state.role, Role::Follower | Role::Promoting) {
                return;
            }
            let ours: Vec<String> = ids
                .into_iter()
                .filter(|id| state.mine.contains(id))
                .collect();
            if let (false, [id]) = (
                operation.is_undefined() || operation.is_null(),
                ours.as_slice(),
            ) {
                state.views.set(id, &operation);
            }
            if events::kind(event).as_deref() == Some("settled") {
                for id in &ours {
                    state.mine.remove(id);
                }
            }
            !ours.is_empty()
        };
        if ours {
            self.emit(event);
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
            [id] => driver.inspect(|s, _| s.ledger().operation(id).map(|op| to_js(op))),
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

    fn on_relayed_own(&self, id: &str, event: &JsValue) {
        self.state.borrow_mut().mine.remove(id);
        self.emit(event);
    }
}

/// Runs a host action another tab asked of this dispatcher (or this tab's own).
pub(super) async fn serve(
    driver: &Driver,
    action: &str,
    arg: &JsValue,
) -> Result<JsValue, SchedulerError> {
    let id = arg.as_string().unwrap_or_default();
    match action {
        "flush" => driver.act(|s, now| s.flush(now, &id)).map(|o| to_js(&o)),
        "retry" => {
            let barrier = driver.act(|s, now| s.retry(now, &id))?;
            driver.wait_barrier(barrier).await.map(|()| JsValue::NULL)
        }
        "discard" => {
            let barrier = driver.act(|s, now| s.discard(now, &id))?;
            driver.wait_barrier(barrier).await.map(|()| JsValue::NULL)
        }
        "resume" => driver.resume().await.map(|()| JsValue::NULL),
        "settle" => {
            driver.settle().await;
            Ok(JsValue::NULL)
        }
        "operations" => {
            // Records of the given ids (a tab catching up after a change of leader).
            let ids: Vec<String> = js_sys::Array::from(arg)
                .iter()
                .filter_map(|id| id.as_string())
                .collect();
            Ok(driver.inspect(|s, _| {
                let found = js_sys::Array::new();
                for id in &ids {
                    if let Some(op) = s.ledger().operation(id) {
                        found.push(&to_js(op));
                    }
                }
                found.into()
            }))
        }
        "events" => {
            let number = |key: &str| {
                Reflect::get(arg, &key.into())
                    .ok()
                    .and_then(|n| n.as_f64())
                    .filter(|n| n.is_finite() && *n >= 0.0)
            };
            let after = number("after").unwrap_or(0.0) as u64;
            let limit = number("limit").unwrap_or(100.0).clamp(1.0, 1_000.0) as usize;
            Ok(driver.inspect(|s, _| to_js(&s.ledger().events_after(after, limit))))
        }
        other => Err(SchedulerError::new(
            crate::core::error::ErrorCode::InvalidOptions,
            format!("unknown action {other}"),
        )),
    }
}
