//! The browser implementation of the clock port: [`BrowserClock`].
//!
//! Timers go through the *global* `setTimeout`/`clearTimeout` (bound by name, like
//! `gloo-timers`), so the same code runs in a Window and in a Worker. Each armed timer keeps its
//! JS closure in a map keyed by its handle; the entry is removed when the timer fires or is
//! cleared, so no closure outlives its timer. Time is `Date.now()`: absolute milliseconds since
//! the epoch, like the core's due times.
//!
//! Browsers throttle timers in background tabs, so a timer may fire late (never early, apart
//! from the clamp below). The core re-checks absolute due times on every wake-up, and
//! [`WakeSignals`](super::wake::WakeSignals) adds wake-ups on `visibilitychange` and `online`.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use canvas_scheduler_core::{Clock, Millis, TimerHandle};

/// Longest delay `setTimeout` honours: larger values overflow a signed 32-bit integer and make
/// the timer fire at once. Longer delays are clamped to this; the timer then fires early and
/// the driver, which re-checks absolute due times, arms it again.
pub const MAX_TIMER_DELAY_MS: Millis = i32::MAX as Millis;

#[wasm_bindgen]
extern "C" {
    /// The global `setTimeout` (Window or WorkerGlobalScope); returns the timer id.
    #[wasm_bindgen(js_name = "setTimeout", catch)]
    fn set_timeout(handler: &js_sys::Function, timeout: i32) -> Result<JsValue, JsValue>;

    /// The global `clearTimeout`.
    #[wasm_bindgen(js_name = "clearTimeout", catch)]
    fn clear_timeout(id: &JsValue) -> Result<(), JsValue>;

    /// `Date.now`, looked up at each call: the host may have replaced it.
    #[wasm_bindgen(js_namespace = Date, js_name = now, catch)]
    fn date_now() -> Result<JsValue, JsValue>;

    /// `Math.random`, looked up at each call.
    #[wasm_bindgen(js_namespace = Math, js_name = random, catch)]
    fn math_random() -> Result<JsValue, JsValue>;
}

/// Resolves after about `ms` (the global `setTimeout`; at once if it cannot be armed).
pub async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if set_timeout(&resolve, ms).is_err() {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

thread_local! {
    /// The last finite `Date.now()` read.
    static LAST_NOW: Cell<f64> = const { Cell::new(0.0) };
}

/// `Date.now()`, or the last good reading while a replacement the host installed throws or
/// answers something that is not a finite number: an exception thrown through the module's
/// frames would leave its state borrowed for good (every later call would trap).
pub fn wall_now() -> f64 {
    let read = date_now()
        .ok()
        .and_then(|v| v.as_f64())
        .filter(|n| n.is_finite());
    match read {
        Some(now) => {
            LAST_NOW.with(|last| last.set(now));
            now
        }
        None => LAST_NOW.with(Cell::get),
    }
}

/// `Math.random()` in [0, 1), or 0.5 while a replacement throws or answers nonsense.
pub fn random() -> f64 {
    math_random()
        .ok()
        .and_then(|v| v.as_f64())
        .filter(|n| (0.0..1.0).contains(n))
        .unwrap_or(0.5)
}

/// A timer handed to `setTimeout` and not yet fired or cleared.
struct Armed {
    /// The id `setTimeout` returned.
    id: JsValue,
    /// The JS function `setTimeout` calls; it must stay alive until then.
    _closure: Closure<dyn FnMut()>,
}

#[derive(Default)]
struct TimerTable {
    next_handle: TimerHandle,
    /// A handful at most (the dispatcher's wake-up, the tab's lease and election timers),
    /// so a list.
    armed: Vec<(TimerHandle, Armed)>,
}

impl TimerTable {
    /// Takes the entry of `handle` out of the table.
    fn take(&mut self, handle: TimerHandle) -> Option<Armed> {
        let at = self.armed.iter().position(|(armed, _)| *armed == handle)?;
        Some(self.armed.swap_remove(at).1)
    }
}

impl Drop for TimerTable {
    /// The closures die with the table, so their timers must not fire afterwards.
    fn drop(&mut self) {
        for (_, armed) in &self.armed {
            let _ = clear_timeout(&armed.id);
        }
    }
}

/// The browser clock: `Date.now()` and the global `setTimeout`/`clearTimeout`.
///
/// Clones share their timers. When the last clone is dropped every timer still armed is
/// cleared and never fires.
#[derive(Clone, Default)]
pub struct BrowserClock {
    table: Rc<RefCell<TimerTable>>,
}

impl BrowserClock {
    /// A clock with no timers armed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of timers armed and not yet fired or cleared.
    pub fn pending(&self) -> usize {
        self.table.borrow().armed.len()
    }
}

/// Fires the timer `handle`: removes its entry, then runs the callback with no borrow held, so
/// the callback may arm or clear timers itself.
fn fire(table: &Weak<RefCell<TimerTable>>, handle: TimerHandle, callback: Box<dyn FnOnce()>) {
    let Some(table) = table.upgrade() else {
        return;
    };
    let entry = table.borrow_mut().take(handle);
    // Dropping the entry frees the closure that is running now; wasm-bindgen defers the free
    // until the call returns.
    drop(entry);
    drop(table);
    callback();
}

impl Clock for BrowserClock {
    fn now(&self) -> Millis {
        // A float cast saturates: a clock before the epoch reads as 0.
        wall_now() as Millis
    }

    fn set_timer(&self, delay: Millis, callback: Box<dyn FnOnce()>) -> TimerHandle {
        let handle = {
            let mut table = self.table.borrow_mut();
            table.next_handle += 1;
            table.next_handle
        };
        let weak = Rc::downgrade(&self.table);
        let closure = Closure::once_assert_unwind_safe(move || fire(&weak, handle, callback));
        let timeout = i32::try_from(delay.min(MAX_TIMER_DELAY_MS)).unwrap_or(i32::MAX);
        match set_timeout(closure.as_ref().unchecked_ref(), timeout) {
            Ok(id) => {
                self.table.borrow_mut().armed.push((
                    handle,
                    Armed {
                        id,
                        _closure: closure,
                    },
                ));
            }
            Err(error) => {
                // No browser refuses a timer in practice; if one does, say so rather than
                // fail silently. The driver's next wake-up re-checks due times.
                web_sys::console::error_2(&"canvas-scheduler: setTimeout failed".into(), &error);
            }
        }
        handle
    }

    fn clear_timer(&self, handle: TimerHandle) {
        let entry = self.table.borrow_mut().take(handle);
        if let Some(armed) = entry {
            let _ = clear_timeout(&armed.id);
        }
    }
}
