//! Wake-up signals. Synthetic `online`/`offline` events on the global object (Window or
//! WorkerGlobalScope) and, in a page, `visibilitychange` on the document reach the callback;
//! dropping [`WakeSignals`] removes the listeners.

use std::cell::RefCell;
use std::rc::Rc;

use canvas_scheduler::web::wake::{is_online, WakeReason, WakeSignals};
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;
use web_sys::{Event, EventTarget};

fn dispatch(target: &EventTarget, name: &str) {
    let event = Event::new(name).expect("Event constructor");
    target.dispatch_event(&event).expect("dispatchEvent");
}

fn global_target() -> EventTarget {
    js_sys::global()
        .dyn_into::<EventTarget>()
        .expect("the global object is an EventTarget")
}

fn document_target() -> Option<EventTarget> {
    let document = js_sys::Reflect::get(&js_sys::global(), &"document".into()).ok()?;
    document.dyn_into::<EventTarget>().ok()
}

fn in_page() -> bool {
    crate::EXPECTED_GLOBAL == "Window"
}

fn recorder() -> (Rc<RefCell<Vec<WakeReason>>>, impl Fn(WakeReason) + 'static) {
    let log = Rc::new(RefCell::new(Vec::new()));
    let sink = log.clone();
    (log, move |reason| sink.borrow_mut().push(reason))
}

#[wasm_bindgen_test]
fn w2_online_and_offline_events_wake() {
    let (log, on_wake) = recorder();
    let signals = WakeSignals::new(on_wake).expect("listeners registered");
    let global = global_target();
    dispatch(&global, "offline");
    dispatch(&global, "online");
    assert_eq!(*log.borrow(), vec![WakeReason::Offline, WakeReason::Online]);

    drop(signals);
    dispatch(&global, "online");
    dispatch(&global, "offline");
    assert_eq!(log.borrow().len(), 2, "listeners outlived WakeSignals");
}

#[wasm_bindgen_test]
fn w2_visibilitychange_wakes_in_a_page_and_construction_works_in_a_worker() {
    let (log, on_wake) = recorder();
    let signals = WakeSignals::new(on_wake).expect("listeners registered");
    match document_target() {
        Some(document) => {
            assert!(in_page(), "a worker has no document");
            assert!(signals.watches_visibility());
            dispatch(&document, "visibilitychange");
            assert_eq!(*log.borrow(), vec![WakeReason::Visible]);
            drop(signals);
            dispatch(&document, "visibilitychange");
            assert_eq!(log.borrow().len(), 1, "listener outlived WakeSignals");
        }
        None => {
            assert!(!in_page(), "a page has a document");
            assert!(!signals.watches_visibility());
        }
    }
}

#[wasm_bindgen_test]
fn w2_is_online_reads_navigator_online_in_either_scope() {
    let navigator =
        js_sys::Reflect::get(&js_sys::global(), &"navigator".into()).expect("a navigator");
    let on_line = js_sys::Reflect::get(&navigator, &"onLine".into())
        .ok()
        .and_then(|v| v.as_bool())
        .expect("navigator.onLine is a boolean");
    assert_eq!(is_online(), on_line);
}
