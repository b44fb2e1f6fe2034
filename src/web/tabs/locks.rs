//! Web Locks (`navigator.locks`): liveness for leader election. The browser grants a lock
//! to one context at a time and releases it when that context closes or crashes, so the tab
//! waiting next learns at once that the leader is gone. Safety stays with the fenced lease.
//!
//! Bound through `Reflect` rather than web-sys's unstable `LockManager`, so it works the same
//! in a Window and a Worker and is simply absent where the API is.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::AbortController;

/// How a lock request ended before or at its grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Grant {
    /// We hold the lock until [`HeldLock::release`] (or until it is stolen).
    Granted,
    /// `ifAvailable` and someone else holds it.
    Unavailable,
    /// The request was aborted (our `cancel`) or failed.
    Aborted,
}

/// The global `navigator.locks`.
#[derive(Clone)]
pub(super) struct LockManager {
    locks: JsValue,
}

/// A lock request: its grant, its release, and how it ended.
pub(super) struct LockRequest {
    granted: Promise,
    finished: Promise,
    release: Rc<RefCell<Option<Function>>>,
    abort: Option<AbortController>,
}

fn deferred() -> (Promise, Rc<RefCell<Option<Function>>>) {
    let slot: Rc<RefCell<Option<Function>>> = Rc::new(RefCell::new(None));
    let inner = slot.clone();
    let promise = Promise::new(&mut |resolve, _reject| {
        *inner.borrow_mut() = Some(resolve);
    });
    (promise, slot)
}

fn settle(slot: &Rc<RefCell<Option<Function>>>, value: &JsValue) {
    if let Some(resolve) = slot.borrow_mut().take() {
        let _ = resolve.call1(&JsValue::UNDEFINED, value);
    }
}

impl LockManager {
    /// `navigator.locks` of this global (Window or Worker), if the browser has it.
    pub(super) fn get() -> Option<LockManager> {
        let global = js_sys::global();
        let navigator = Reflect::get(&global, &"navigator".into()).ok()?;
        let locks = Reflect::get(&navigator, &"locks".into()).ok()?;
        let request = Reflect::get(&locks, &"request".into()).ok()?;
        request.is_function().then_some(LockManager { locks })
    }

    /// Requests the exclusive lock `name`. With `if_available` the grant is `Unavailable` at
    /// once when another context holds it; with `steal` any holder loses it (its request
    /// ends with an `AbortError`) — only for a holder judged frozen.
    pub(super) fn request(&self, name: &str, if_available: bool, steal: bool) -> LockRequest {
        let (granted, grant_slot) = deferred();
        let (held, release) = deferred();
        let abort = AbortController::new().ok();
        let options = Object::new();
        let _ = Reflect::set(&options, &"ifAvailable".into(), &if_available.into());
        let _ = Reflect::set(&options, &"steal".into(), &steal.into());
        if let (Some(abort), false, false) = (&abort, steal, if_available) {
            // `signal` combines with neither `steal` nor `ifAvailable` (NotSupportedError).
            let _ = Reflect::set(&options, &"signal".into(), &abort.signal().into());
        }
        let on_grant = {
            let grant_slot = grant_slot.clone();
            let held = held.clone();
            Closure::once_into_js(move |lock: JsValue| -> JsValue {
                if lock.is_null() {
                    settle(&grant_slot, &"unavailable".into());
                    JsValue::UNDEFINED
                } else {
                    settle(&grant_slot, &"granted".into());
                    held.into()
                }
            })
        };
        let finished = Reflect::get(&self.locks, &"request".into())
            .ok()
            .and_then(|f| f.dyn_into::<Function>().ok())
            .and_then(|request| {
                request
                    .call3(&self.locks, &name.into(), &options, &on_grant)
                    .ok()
            })
            .and_then(|p| p.dyn_into::<Promise>().ok())
            .unwrap_or_else(|| Promise::reject(&"locks.request failed".into()));
        // A request that ends before its grant (aborted, refused) never calls back.
        let on_end = {
            let grant_slot = grant_slot.clone();
            Closure::once_into_js(move |_: JsValue| settle(&grant_slot, &"aborted".into()))
        };
        let finished = Reflect::get(&finished, &"then".into())
            .ok()
            .and_then(|then| then.dyn_into::<Function>().ok())
            .and_then(|then| then.call2(&finished, &on_end, &on_end).ok())
            .and_then(|p| p.dyn_into::<Promise>().ok())
            .unwrap_or(finished);
        LockRequest {
            granted,
            finished,
            release,
            abort,
        }
    }
}

impl LockRequest {
    /// Waits for the grant (or the end of the request).
    pub(super) async fn granted(&self) -> Grant {
        match JsFuture::from(self.granted.clone()).await {
            Ok(value) if value.as_string().as_deref() == Some("granted") => Grant::Granted,
            Ok(value) if value.as_string().as_deref() == Some("unavailable") => Grant::Unavailable,
            _ => Grant::Aborted,
        }
    }

    /// Resolves when the lock is no longer ours: released by us, or stolen by another
    /// context (or the request ended without a grant).
    pub(super) async fn finished(&self) {
        let _ = JsFuture::from(self.finished.clone()).await;
    }

    /// Resolves as [`LockRequest::finished`] does, as a promise that outlives the request.
    pub(super) fn ended(&self) -> Promise {
        self.finished.clone()
    }

    /// Releases a held lock, or withdraws a request still waiting in the queue.
    pub(super) fn release(&self) {
        settle(&self.release, &JsValue::UNDEFINED);
        if let Some(abort) = &self.abort {
            abort.abort();
        }
    }
}
