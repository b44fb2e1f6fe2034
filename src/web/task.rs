//! Background work on the page's event loop, through one spawn.

use std::future::Future;
use std::pin::Pin;

/// Runs `work` to completion on the current thread's event loop, as `spawn_local` does.
/// Every task goes in as a boxed future: `spawn_local` of each async block's own type
/// brought its own copy of the task code into the `.wasm`, one per call site.
pub fn spawn(work: impl Future<Output = ()> + 'static) {
    let work: Pin<Box<dyn Future<Output = ()>>> = Box::pin(work);
    wasm_bindgen_futures::spawn_local(work);
}
