//! The live saved-state events: `{type: "pending", count}` when the unsettled count changes and
//! `{type: "saved"}` when it reaches zero. Many changes in one frame are one event: a change
//! arms a ~16 ms timer (a frame; a worker has no `requestAnimationFrame`), and the count is
//! read when it fires. The count is the core's (`unsettled_count`) while leading, this tab's
//! own unsettled operations while following.

use wasm_bindgen::JsValue;

use canvas_scheduler_core::Clock;

use super::{Role, Tab};

/// About one animation frame.
const FRAME_MS: u64 = 16;

impl Tab {
    /// Something may have changed the unsettled count: report it within a frame.
    pub(super) fn note_pending(&self) {
        let weak = {
            let mut state = self.state.borrow_mut();
            if state.on_event.is_none() || state.pending_armed || matches!(state.role, Role::Closed)
            {
                return;
            }
            state.pending_armed = true;
            std::rc::Rc::downgrade(&self.state)
        };
        let clock = self.state.borrow().clock.clone();
        clock.set_timer(
            FRAME_MS,
            Box::new(move || {
                if let Some(state) = weak.upgrade() {
                    Tab { state }.report_pending();
                }
            }),
        );
    }

    fn unsettled_count(&self) -> usize {
        match self.driver() {
            Some(driver) => driver.inspect(|s, _| s.unsettled_count()),
            None => self.state.borrow().mine.len(),
        }
    }

    fn report_pending(&self) {
        self.state.borrow_mut().pending_armed = false;
        if matches!(self.state.borrow().role, Role::Closed) {
            return;
        }
        let count = self.unsettled_count();
        let (sink, changed) = {
            let mut state = self.state.borrow_mut();
            let changed = state.last_pending != Some(count);
            state.last_pending = Some(count);
            (state.on_event.clone(), changed)
        };
        let Some(sink) = sink.filter(|_| changed) else {
            return;
        };
        let event = js_sys::Object::new();
        let _ = js_sys::Reflect::set(&event, &"type".into(), &"pending".into());
        let _ = js_sys::Reflect::set(&event, &"count".into(), &JsValue::from(count as f64));
        sink(&event.into());
        if count == 0 {
            let saved = js_sys::Object::new();
            let _ = js_sys::Reflect::set(&saved, &"type".into(), &"saved".into());
            sink(&saved.into());
        }
    }
}
