//! The browser clock fires timers through the global `setTimeout` (page and worker alike),
//! never early, in due order; cleared timers never fire; no closure outlives its timer.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use canvas_scheduler::web::clock::{BrowserClock, MAX_TIMER_DELAY_MS};
use canvas_scheduler_core::Clock;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen]
extern "C" {
    /// The global `setTimeout`, bound here so waiting does not depend on the clock under test.
    #[wasm_bindgen(js_name = "setTimeout")]
    fn global_set_timeout(handler: &js_sys::Function, timeout: i32) -> JsValue;
}

/// Waits `ms` milliseconds (a Promise resolved by the global `setTimeout`).
pub(super) async fn sleep(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _reject| {
        global_set_timeout(&resolve, ms);
    });
    let _ = JsFuture::from(promise).await;
}

/// A Promise and a callback that resolves it with the `Date.now()` of the call.
fn fired_at() -> (js_sys::Promise, Box<dyn FnOnce()>) {
    let resolver = Rc::new(RefCell::new(None::<js_sys::Function>));
    let promise = {
        let resolver = resolver.clone();
        js_sys::Promise::new(&mut move |resolve, _reject| {
            *resolver.borrow_mut() = Some(resolve);
        })
    };
    let callback = Box::new(move || {
        if let Some(resolve) = resolver.borrow_mut().take() {
            let _ = resolve.call1(&JsValue::NULL, &js_sys::Date::now().into());
        }
    });
    (promise, callback)
}

#[wasm_bindgen_test]
async fn w2_timer_fires_after_its_delay_not_before() {
    let clock = BrowserClock::new();
    let (promise, callback) = fired_at();
    let fired = Rc::new(Cell::new(false));
    let armed_at = js_sys::Date::now();
    clock.set_timer(
        120,
        Box::new({
            let fired = fired.clone();
            move || {
                fired.set(true);
                callback();
            }
        }),
    );
    assert_eq!(clock.pending(), 1);

    sleep(30).await;
    assert!(!fired.get(), "fired 30 ms into a 120 ms delay");
    assert_eq!(clock.pending(), 1);

    let at = JsFuture::from(promise)
        .await
        .ok()
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::NAN);
    // Date.now() has 1 ms granularity, so allow 1 ms of rounding.
    assert!(
        at - armed_at >= 119.0,
        "fired {} ms after arming a 120 ms timer",
        at - armed_at
    );
    assert!(fired.get());
    assert_eq!(clock.pending(), 0, "a fired timer frees its entry");
}

#[wasm_bindgen_test]
async fn w2_cleared_timer_never_fires() {
    let clock = BrowserClock::new();
    let fired = Rc::new(Cell::new(false));
    let handle = clock.set_timer(
        20,
        Box::new({
            let fired = fired.clone();
            move || fired.set(true)
        }),
    );
    clock.clear_timer(handle);
    assert_eq!(clock.pending(), 0);
    sleep(80).await;
    assert!(!fired.get(), "a cleared timer fired");
    // Clearing again, or an unknown handle, is ignored.
    clock.clear_timer(handle);
    clock.clear_timer(handle + 1_000);
    assert_eq!(clock.pending(), 0);
}

#[wasm_bindgen_test]
async fn w2_timers_fire_in_due_order() {
    let clock = BrowserClock::new();
    let log = Rc::new(RefCell::new(Vec::new()));
    for (delay, name) in [(60, "d"), (0, "a"), (40, "c"), (15, "b")] {
        let log = log.clone();
        clock.set_timer(delay, Box::new(move || log.borrow_mut().push(name)));
    }
    let (promise, last) = fired_at();
    clock.set_timer(100, last);
    assert_eq!(clock.pending(), 5);
    let _ = JsFuture::from(promise).await;
    assert_eq!(*log.borrow(), vec!["a", "b", "c", "d"]);
    assert_eq!(clock.pending(), 0);
}

#[wasm_bindgen_test]
async fn w2_callback_may_arm_and_clear_timers() {
    let clock = BrowserClock::new();
    let (promise, done) = fired_at();
    let late = Rc::new(Cell::new(false));
    let doomed = clock.set_timer(
        50,
        Box::new({
            let late = late.clone();
            move || late.set(true)
        }),
    );
    let inner = clock.clone();
    clock.set_timer(
        5,
        Box::new(move || {
            // Re-entrant use from inside a firing timer.
            inner.clear_timer(doomed);
            inner.set_timer(5, done);
        }),
    );
    let _ = JsFuture::from(promise).await;
    sleep(70).await;
    assert!(!late.get(), "the timer cleared from a callback fired");
    assert_eq!(clock.pending(), 0);
}

#[wasm_bindgen_test]
async fn w2_hundred_timers_set_and_cleared_leave_nothing_behind() {
    let clock = BrowserClock::new();
    let fired = Rc::new(Cell::new(0_u32));
    let handles: Vec<_> = (0..100)
        .map(|i| {
            let fired = fired.clone();
            clock.set_timer(10 + i % 20, Box::new(move || fired.set(fired.get() + 1)))
        })
        .collect();
    assert_eq!(clock.pending(), 100);
    let mut unique = handles.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 100, "handles are unique");
    for handle in handles {
        clock.clear_timer(handle);
    }
    assert_eq!(clock.pending(), 0);
    sleep(60).await;
    assert_eq!(fired.get(), 0);
}

#[wasm_bindgen_test]
async fn w2_fired_timers_leave_nothing_behind() {
    let clock = BrowserClock::new();
    let fired = Rc::new(Cell::new(0_u32));
    for _ in 0..100 {
        let fired = fired.clone();
        clock.set_timer(0, Box::new(move || fired.set(fired.get() + 1)));
    }
    let (promise, last) = fired_at();
    clock.set_timer(20, last);
    let _ = JsFuture::from(promise).await;
    assert_eq!(fired.get(), 100);
    assert_eq!(clock.pending(), 0);
}

#[wasm_bindgen_test]
async fn w2_delay_beyond_set_timeout_range_is_clamped_not_immediate() {
    let clock = BrowserClock::new();
    let fired = Rc::new(Cell::new(false));
    let mut handles = Vec::new();
    for delay in [MAX_TIMER_DELAY_MS + 1, u64::from(u32::MAX) + 1, u64::MAX] {
        let fired = fired.clone();
        handles.push(clock.set_timer(delay, Box::new(move || fired.set(true))));
    }
    sleep(30).await;
    assert!(
        !fired.get(),
        "an overlong delay overflowed and fired at once"
    );
    assert_eq!(clock.pending(), 3);
    for handle in handles {
        clock.clear_timer(handle);
    }
    assert_eq!(clock.pending(), 0);
}

#[wasm_bindgen_test]
async fn w2_dropping_the_clock_clears_its_timers() {
    let fired = Rc::new(Cell::new(false));
    {
        let clock = BrowserClock::new();
        let fired = fired.clone();
        clock.set_timer(10, Box::new(move || fired.set(true)));
    }
    sleep(50).await;
    assert!(!fired.get(), "a timer of a dropped clock fired");
}

#[wasm_bindgen_test]
fn w2_now_is_date_now() {
    let clock = BrowserClock::new();
    let before = js_sys::Date::now();
    let now = clock.now() as f64;
    let after = js_sys::Date::now();
    assert!(
        before <= now && now <= after + 2.0,
        "{before} <= {now} <= {after}"
    );
    assert!(now > 1.6e12, "now() is absolute ms since the epoch: {now}");
}

/// `next_task` (the group commit after enqueues became durable) runs its work after every
/// microtask queued before it, however long their chain, in order, each once.
#[wasm_bindgen_test]
async fn next_task_runs_after_the_microtasks_queued_before_it_in_order() {
    use canvas_scheduler::web::task::next_task;
    // A chain of 20 promise hops, as a caller's continuations after an enqueue resolves.
    super::support::js(
        "(() => { globalThis.nextTaskHops = 0; let p = Promise.resolve(); \
         for (let i = 0; i < 20; i++) p = p.then(() => { globalThis.nextTaskHops += 1; }); })()",
    );
    let hops = || {
        js_sys::Reflect::get(&js_sys::global(), &"nextTaskHops".into())
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(-1.0)
    };
    let seen = Rc::new(RefCell::new(Vec::new()));
    for n in 0..3 {
        let seen = seen.clone();
        next_task(Box::new(move || seen.borrow_mut().push((n, hops()))));
    }
    sleep(20).await;
    assert_eq!(*seen.borrow(), vec![(0, 20.0), (1, 20.0), (2, 20.0)]);
}
