//! Background work on the page's event loop, through one spawn.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

/// Runs `work` to completion on the current thread's event loop, as `spawn_local` does.
/// Every task goes in as a boxed future: `spawn_local` of each async block's own type
/// brought its own copy of the task code into the `.wasm`, one per call site.
pub fn spawn(work: impl Future<Output = ()> + 'static) {
    let work: Pin<Box<dyn Future<Output = ()>>> = Box::pin(work);
    wasm_bindgen_futures::spawn_local(work);
}

/// What waits for [`next_task`]'s messages, oldest first.
type Waiting = Rc<RefCell<VecDeque<Box<dyn FnOnce()>>>>;

/// The one channel [`next_task`] posts on, and what waits for its messages.
struct NextTask {
    port: web_sys::MessagePort,
    waiting: Waiting,
    _channel: web_sys::MessageChannel,
    _on_message: Closure<dyn FnMut()>,
}

thread_local! {
    static NEXT_TASK: RefCell<Option<NextTask>> = const { RefCell::new(None) };
}

/// Runs `work` in a task of its own, after every microtask queued before it: a message on a
/// `MessageChannel`, which hidden pages do not throttle as they do timers (up to a second).
/// Where no channel can be made, in a microtask instead.
pub fn next_task(work: Box<dyn FnOnce()>) {
    let unposted = NEXT_TASK.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = open_channel();
        }
        let Some(next) = slot.as_ref() else {
            return Some(work);
        };
        next.waiting.borrow_mut().push_back(work);
        match next.port.post_message(&JsValue::NULL) {
            Ok(()) => None,
            Err(_) => next.waiting.borrow_mut().pop_back(),
        }
    });
    if let Some(work) = unposted {
        spawn(async move { work() });
    }
}

/// The channel: each message runs the oldest waiting work, outside any borrow.
fn open_channel() -> Option<NextTask> {
    let channel = web_sys::MessageChannel::new().ok()?;
    let waiting: Waiting = Rc::default();
    let queue = waiting.clone();
    let on_message = Closure::<dyn FnMut()>::new(move || {
        let work = queue.borrow_mut().pop_front();
        if let Some(work) = work {
            work();
        }
    });
    channel
        .port1()
        .set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    Some(NextTask {
        port: channel.port2(),
        waiting,
        _channel: channel,
        _on_message: on_message,
    })
}
