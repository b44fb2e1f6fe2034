//! A one-shot signal awaited from Rust, built on a JS Promise (no extra crates).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Promise};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;

/// Resolved once; awaited by any number of clones.
#[derive(Clone)]
pub struct Signal {
    promise: Promise,
    resolve: Rc<RefCell<Option<Function>>>,
}

impl Signal {
    /// An unresolved signal.
    pub fn new() -> Self {
        let slot: Rc<RefCell<Option<Function>>> = Rc::new(RefCell::new(None));
        let inner = slot.clone();
        let promise = Promise::new(&mut |resolve, _reject| {
            *inner.borrow_mut() = Some(resolve);
        });
        Self {
            promise,
            resolve: slot,
        }
    }

    /// Wakes every waiter; later calls do nothing.
    pub fn resolve(&self) {
        if let Some(resolve) = self.resolve.borrow_mut().take() {
            let _ = resolve.call0(&JsValue::UNDEFINED);
        }
    }

    /// Waits for `resolve`.
    pub async fn wait(&self) {
        let _ = JsFuture::from(self.promise.clone()).await;
    }
}
