//! The tabs' `BroadcastChannel`: hints and relays between tabs of one ledger. Nothing
//! here is needed for safety — a lost message delays work (the periodic rescan and lease
//! watch catch up), it never loses or duplicates it.
//!
//! Messages are plain objects `{t: kind, ...}` sent by structured clone, so events and
//! records travel as the very objects `onEvent` and `operation()` hand out.

use std::rc::Rc;

use js_sys::{Object, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BroadcastChannel, MessageEvent};

use super::action::HostAction;

/// What tabs tell each other.
#[derive(Clone, Debug)]
pub enum TabMessage {
    /// A tab that does not dispatch is here (`from`): the leader starts relaying events.
    Hello {
        /// The tab's id.
        from: String,
    },
    /// `owner` now dispatches with `fence`.
    Leader {
        /// The dispatching tab's id.
        owner: String,
        /// Its lease's fence (`None` when the message carried none, or not a number).
        fence: Option<u64>,
    },
    /// `owner` holds the lock and is loading the ledger to lead (a heartbeat: a large ledger
    /// can take longer than a lease to load, and the lease it takes is not visible until then).
    Loading {
        /// The loading tab's id.
        owner: String,
    },
    /// `owner` stopped dispatching and gave the lease up.
    Gone {
        /// The id of the tab that stopped.
        owner: String,
    },
    /// The inbox has new entries written by `from`.
    Wake {
        /// The id of the tab that wrote them.
        from: String,
    },
    /// A tab that does not dispatch became visible (`from`): a hidden leader may hand over.
    Visible {
        /// The id of the tab that became visible.
        from: String,
    },
    /// The hidden leader stopped and gave the lease up for `to`, which now steals the lock.
    Handover {
        /// The id of the tab the lease is given up for.
        to: String,
    },
    /// An event of the dispatcher (as `onEvent` receives it) and, when it names one
    /// operation, that operation's record after it.
    Event {
        /// The event object.
        event: JsValue,
        /// The record of the operation the event names, after it, when it names one.
        operation: JsValue,
    },
    /// Host action `action` asked of the dispatcher by tab `from`, request id `rid`.
    /// `principal` is the asking tab's (the leader serves it only that principal's work).
    Act {
        /// The request id, chosen by the asking tab.
        rid: u64,
        /// The asking tab's id.
        from: String,
        /// The asking tab's principal, when it has one.
        principal: Option<String>,
        /// The host action asked.
        action: HostAction,
        /// Its argument, as the asking tab's caller passed it.
        arg: JsValue,
    },
    /// The dispatcher's answer to `rid` of tab `to`: the value, or `{code, message}`.
    Done {
        /// The request id of the `Act` answered.
        rid: u64,
        /// The asking tab's id.
        to: String,
        /// Whether the action succeeded (`value` is its result) or failed (`value` is
        /// `{code, message}`).
        ok: bool,
        /// The result or the error.
        value: JsValue,
    },
}

fn set(target: &Object, key: &str, value: &JsValue) {
    let _ = Reflect::set(target, &key.into(), value);
}

fn get(source: &JsValue, key: &str) -> JsValue {
    Reflect::get(source, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

fn text(source: &JsValue, key: &str) -> Option<String> {
    get(source, key).as_string()
}

fn number(source: &JsValue, key: &str) -> Option<u64> {
    get(source, key)
        .as_f64()
        .filter(|n| n.is_finite() && *n >= 0.0 && n.fract() == 0.0)
        .map(|n| n as u64)
}

impl TabMessage {
    fn encode(&self) -> JsValue {
        let out = Object::new();
        let kind = match self {
            TabMessage::Hello { from } => {
                set(&out, "from", &from.into());
                "hello"
            }
            TabMessage::Leader { owner, fence } => {
                set(&out, "owner", &owner.into());
                if let Some(fence) = fence {
                    set(&out, "fence", &(*fence as f64).into());
                }
                "leader"
            }
            TabMessage::Loading { owner } => {
                set(&out, "owner", &owner.into());
                "loading"
            }
            TabMessage::Gone { owner } => {
                set(&out, "owner", &owner.into());
                "gone"
            }
            TabMessage::Wake { from } => {
                set(&out, "from", &from.into());
                "wake"
            }
            TabMessage::Visible { from } => {
                set(&out, "from", &from.into());
                "visible"
            }
            TabMessage::Handover { to } => {
                set(&out, "to", &to.into());
                "handover"
            }
            TabMessage::Event { event, operation } => {
                set(&out, "event", event);
                set(&out, "operation", operation);
                "event"
            }
            TabMessage::Act {
                rid,
                from,
                principal,
                action,
                arg,
            } => {
                set(&out, "rid", &(*rid as f64).into());
                set(&out, "from", &from.into());
                if let Some(principal) = principal {
                    set(&out, "principal", &principal.into());
                }
                set(&out, "action", &action.name().into());
                set(&out, "arg", arg);
                "act"
            }
            TabMessage::Done { rid, to, ok, value } => {
                set(&out, "rid", &(*rid as f64).into());
                set(&out, "to", &to.into());
                set(&out, "ok", &(*ok).into());
                set(&out, "value", value);
                "done"
            }
        };
        set(&out, "t", &kind.into());
        out.into()
    }

    /// Reads a message; anything malformed is `None` (and ignored).
    fn decode(data: &JsValue) -> Option<TabMessage> {
        Some(match text(data, "t")?.as_str() {
            "hello" => TabMessage::Hello {
                from: text(data, "from")?,
            },
            "leader" => TabMessage::Leader {
                owner: text(data, "owner")?,
                fence: number(data, "fence"),
            },
            "loading" => TabMessage::Loading {
                owner: text(data, "owner")?,
            },
            "gone" => TabMessage::Gone {
                owner: text(data, "owner")?,
            },
            "wake" => TabMessage::Wake {
                from: text(data, "from")?,
            },
            "visible" => TabMessage::Visible {
                from: text(data, "from")?,
            },
            "handover" => TabMessage::Handover {
                to: text(data, "to")?,
            },
            "event" => TabMessage::Event {
                event: get(data, "event"),
                operation: get(data, "operation"),
            },
            "act" => TabMessage::Act {
                rid: number(data, "rid")?,
                from: text(data, "from")?,
                principal: text(data, "principal"),
                action: HostAction::named(&text(data, "action")?)?,
                arg: get(data, "arg"),
            },
            "done" => TabMessage::Done {
                rid: number(data, "rid")?,
                to: text(data, "to")?,
                ok: get(data, "ok").as_bool()?,
                value: get(data, "value"),
            },
            _ => return None,
        })
    }
}

/// A `BroadcastChannel` carrying [`TabMessage`]s; the listener goes with it.
pub(super) struct TabChannel {
    channel: BroadcastChannel,
    _listener: Closure<dyn FnMut(MessageEvent)>,
}

impl TabChannel {
    /// Opens channel `name`; `on_message` gets every well-formed message of other tabs
    /// (anything else on the channel is ignored).
    pub(super) fn open(name: &str, on_message: Rc<dyn Fn(TabMessage)>) -> Option<TabChannel> {
        let channel = BroadcastChannel::new(name).ok()?;
        let listener = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            if let Some(message) = TabMessage::decode(&event.data()) {
                on_message(message);
            }
        });
        channel.set_onmessage(Some(listener.as_ref().unchecked_ref()));
        Some(TabChannel {
            channel,
            _listener: listener,
        })
    }

    /// Posts `message` to the other tabs (never to ourselves).
    pub(super) fn post(&self, message: &TabMessage) {
        let _ = self.channel.post_message(&message.encode());
    }
}

impl Drop for TabChannel {
    fn drop(&mut self) {
        self.channel.set_onmessage(None);
        self.channel.close();
    }
}
