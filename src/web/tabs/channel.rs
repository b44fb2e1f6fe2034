//! The tabs' `BroadcastChannel` (W4): hints and relays between tabs of one ledger. Nothing
//! here is needed for safety — a lost message delays work (the periodic rescan and lease
//! watch catch up), it never loses or duplicates it.

use std::rc::Rc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BroadcastChannel, MessageEvent};

/// What tabs tell each other. Sent as JSON text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub enum TabMessage {
    /// A tab that does not dispatch is here: the leader starts relaying events.
    Hello {
        /// Its owner id.
        from: String,
    },
    /// `owner` now dispatches with `fence`.
    Leader {
        /// The leader's owner id.
        owner: String,
        /// Its fence.
        fence: Option<u64>,
    },
    /// `owner` stopped dispatching and gave the lease up.
    Gone {
        /// The former leader's owner id.
        owner: String,
    },
    /// The inbox has new entries.
    Wake {
        /// Who wrote them.
        from: String,
    },
    /// An event of the dispatcher, for the tabs whose operations it names.
    Event {
        /// The event as `onEvent` receives it.
        event: Value,
        /// The operation record after the event, when it names one.
        operation: Option<Value>,
    },
    /// A host action asked of the dispatcher by another tab.
    Act {
        /// Request id, unique per sender.
        rid: u64,
        /// The asking tab.
        from: String,
        /// `flush`, `retry`, `discard`, `resume`, `settle`, `events`.
        action: String,
        /// The operation id, or the `events` options.
        arg: Value,
    },
    /// The dispatcher's answer to an [`TabMessage::Act`].
    Done {
        /// The request id.
        rid: u64,
        /// The asking tab.
        to: String,
        /// The result, or `{code, message}` when `ok` is false.
        ok: bool,
        /// The value or the error.
        value: Value,
    },
}

/// A `BroadcastChannel` carrying [`TabMessage`]s; the listener goes with it.
pub struct TabChannel {
    channel: BroadcastChannel,
    _listener: Closure<dyn FnMut(MessageEvent)>,
}

impl TabChannel {
    /// Opens channel `name`; `on_message` gets every well-formed message of other tabs
    /// (anything else on the channel is ignored).
    pub fn open(name: &str, on_message: Rc<dyn Fn(TabMessage)>) -> Option<TabChannel> {
        let channel = BroadcastChannel::new(name).ok()?;
        let listener = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let Some(text) = event.data().as_string() else {
                return;
            };
            if let Ok(message) = serde_json::from_str::<TabMessage>(&text) {
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
    pub fn post(&self, message: &TabMessage) {
        if let Ok(text) = serde_json::to_string(message) {
            let _ = self.channel.post_message(&JsValue::from_str(&text));
        }
    }
}

impl Drop for TabChannel {
    fn drop(&mut self) {
        self.channel.set_onmessage(None);
        self.channel.close();
    }
}
