//! The page's lifecycle, as a Window sees it: the page is leaving or being frozen
//! (`pagehide`; `freeze` of the Page Lifecycle API), or it is back (`pageshow` from the
//! back/forward cache, `persisted: true`; `resume` after a freeze).
//!
//! A page kept in the back/forward cache, or frozen, runs no code: a dispatcher there holds
//! the ledger while sending nothing, and the browser evicts a cached page that holds a Web
//! Lock another tab wants or that a `BroadcastChannel` message reaches. So the tab layer
//! pauses on [`PageEvent::Hidden`] and joins again on [`PageEvent::Shown`]. A worker has no
//! page of its own: there the page's side of worker mode tells its worker.

use std::rc::Rc;

use js_sys::Reflect;
use wasm_bindgen::JsCast;
use web_sys::{Event, EventTarget, Window};

use super::listener::Listener;

/// What happened to the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageEvent {
    /// `pagehide` (leaving: unloaded, or kept in the back/forward cache) or `freeze`.
    Hidden,
    /// `pageshow` of a page restored from the back/forward cache, or `resume`.
    Shown,
}

/// The listeners of one tab; dropping it removes them.
pub struct PageLifecycle {
    _listeners: Vec<Listener>,
}

impl PageLifecycle {
    /// Listens in a Window (`None` elsewhere, or where a listener cannot be added): `on_event`
    /// hears each [`PageEvent`]. A first `pageshow` (a fresh load) is not one.
    pub fn watch(on_event: impl Fn(PageEvent) + 'static) -> Option<PageLifecycle> {
        let window = js_sys::global().dyn_into::<Window>().ok()?;
        let document: EventTarget = window.document()?.into();
        let window: EventTarget = window.into();
        let on_event: Rc<dyn Fn(PageEvent)> = Rc::new(on_event);
        let restored = |event: &Event| {
            Reflect::get(event, &"persisted".into())
                .ok()
                .and_then(|persisted| persisted.as_bool())
                == Some(true)
        };
        let listeners = [
            (&window, "pagehide", PageEvent::Hidden, false),
            (&window, "pageshow", PageEvent::Shown, true),
            (&document, "freeze", PageEvent::Hidden, false),
            (&document, "resume", PageEvent::Shown, false),
        ]
        .into_iter()
        .map(|(target, event, what, only_restored)| {
            let on_event = on_event.clone();
            Listener::add(target, event, move |e: Event| {
                if !only_restored || restored(&e) {
                    on_event(what);
                }
            })
            .ok()
        })
        .collect::<Option<Vec<Listener>>>()?;
        Some(PageLifecycle {
            _listeners: listeners,
        })
    }
}
