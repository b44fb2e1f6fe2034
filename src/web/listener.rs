//! An event listener that is removed when dropped: what `wake` and `page_lifecycle` keep.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{Event, EventTarget};

/// One listener added to `target` for `event`; dropping it removes it.
pub struct Listener {
    target: EventTarget,
    event: &'static str,
    closure: Closure<dyn FnMut(Event)>,
}

impl Listener {
    /// Adds `on_event` as a listener of `event` on `target`.
    ///
    /// # Errors
    ///
    /// What `addEventListener` threw.
    pub fn add(
        target: &EventTarget,
        event: &'static str,
        on_event: impl FnMut(Event) + 'static,
    ) -> Result<Listener, JsValue> {
        let closure =
            Closure::<dyn FnMut(Event)>::wrap_assert_unwind_safe(Box::new(on_event) as Box<_>);
        target.add_event_listener_with_callback(event, closure.as_ref().unchecked_ref())?;
        Ok(Listener {
            target: target.clone(),
            event,
            closure,
        })
    }

    /// The event it listens for.
    pub fn event(&self) -> &'static str {
        self.event
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Removing a listener that was added never throws; nothing to report.
        let _ = self
            .target
            .remove_event_listener_with_callback(self.event, self.closure.as_ref().unchecked_ref());
    }
}
