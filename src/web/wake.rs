//! Wake-up signals: browsers throttle or suspend timers in background tabs and workers, so
//! a timer may fire long after its due time. These signals let the driver re-check its absolute
//! due times as soon as the page is visible again or the network comes back: throttling delays
//! work, it never loses it.
//!
//! [`WakeSignals`] listens for `online`/`offline` on the global object (a Window or a
//! WorkerGlobalScope) and, in a Window, for `visibilitychange` on the document. [`is_online`]
//! reads `navigator.onLine` in either scope.

use std::fmt;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Document, Event, EventTarget, VisibilityState, Window, WorkerGlobalScope};

use super::listener::Listener;

/// Why the driver is woken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeReason {
    /// The document became visible (Window only): timers may have been throttled meanwhile.
    Visible,
    /// The browser reports the network is back.
    Online,
    /// The browser reports the network is gone.
    Offline,
}

/// Why [`WakeSignals::new`] failed. Each variant has a stable [`code`](WakeError::code).
#[derive(Debug, Clone, PartialEq)]
pub enum WakeError {
    /// The global object is not an `EventTarget` (not a Window or a Worker).
    NoEventTarget,
    /// `addEventListener` threw.
    Listen(String),
}

impl WakeError {
    /// Stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoEventTarget => "wake_signals_unavailable",
            Self::Listen(_) => "wake_signals_failed",
        }
    }
}

impl fmt::Display for WakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoEventTarget => write!(f, "the global object cannot receive events"),
            Self::Listen(why) => write!(f, "cannot listen for wake-up events: {why}"),
        }
    }
}

impl std::error::Error for WakeError {}

/// Listeners that call back on `online`, `offline` and (in a Window) `visibilitychange`.
/// Dropping it removes them.
pub struct WakeSignals {
    listeners: Vec<Listener>,
}

impl WakeSignals {
    /// Registers the listeners; `on_wake` is called with the reason on each signal.
    /// `visibilitychange` only reports [`WakeReason::Visible`] when the document is visible
    /// afterwards (becoming hidden needs no wake-up).
    ///
    /// # Errors
    ///
    /// [`WakeError::NoEventTarget`] when the global object is not an `EventTarget`;
    /// [`WakeError::Listen`] when `addEventListener` throws.
    pub fn new(on_wake: impl Fn(WakeReason) + 'static) -> Result<Self, WakeError> {
        let on_wake: Rc<dyn Fn(WakeReason)> = Rc::new(on_wake);
        let global = js_sys::global()
            .dyn_into::<EventTarget>()
            .map_err(|_| WakeError::NoEventTarget)?;
        let mut signals = Self {
            listeners: Vec::new(),
        };
        signals.listen(&global, "online", &on_wake, |_| Some(WakeReason::Online))?;
        signals.listen(&global, "offline", &on_wake, |_| Some(WakeReason::Offline))?;
        if let Some(document) = document() {
            let target: EventTarget = document.clone().into();
            signals.listen(&target, "visibilitychange", &on_wake, move |_| {
                (document.visibility_state() == VisibilityState::Visible)
                    .then_some(WakeReason::Visible)
            })?;
        }
        Ok(signals)
    }

    /// Whether `visibilitychange` is observed (there is a document: a Window, not a Worker).
    pub fn watches_visibility(&self) -> bool {
        self.listeners
            .iter()
            .any(|listener| listener.event() == "visibilitychange")
    }

    fn listen(
        &mut self,
        target: &EventTarget,
        event: &'static str,
        on_wake: &Rc<dyn Fn(WakeReason)>,
        reason: impl Fn(&Event) -> Option<WakeReason> + 'static,
    ) -> Result<(), WakeError> {
        let on_wake = on_wake.clone();
        let listener = Listener::add(target, event, move |event: Event| {
            if let Some(reason) = reason(&event) {
                on_wake(reason);
            }
        })
        .map_err(|e| WakeError::Listen(describe(&e)))?;
        self.listeners.push(listener);
        Ok(())
    }
}

/// Whether the browser believes it is online (`navigator.onLine`), in a Window or a Worker.
/// Where there is no navigator to ask, it answers `true`: assume online and let a failed fetch
/// say otherwise.
pub fn is_online() -> bool {
    let global = js_sys::global();
    if let Some(window) = global.dyn_ref::<Window>() {
        return window.navigator().on_line();
    }
    if let Some(worker) = global.dyn_ref::<WorkerGlobalScope>() {
        return worker.navigator().on_line();
    }
    true
}

/// The document of the global scope, if it has one (a Window, not a Worker).
fn document() -> Option<Document> {
    js_sys::global().dyn_ref::<Window>()?.document()
}

fn describe(error: &JsValue) -> String {
    error
        .dyn_ref::<js_sys::Error>()
        .map(|e| String::from(e.message()))
        .or_else(|| error.as_string())
        .unwrap_or_else(|| "unknown error".to_owned())
}

/// Whether this global is a document that is not visible now (a background tab). A Worker
/// has no visibility of its own: never hidden.
pub fn is_hidden() -> bool {
    document().is_some_and(|d| d.visibility_state() == VisibilityState::Hidden)
}
