//! Host code called while the dispatcher's state is borrowed, and what the API does about it.
//!
//! The core calls `compile` and `participants` synchronously in the middle of a step, while the
//! driver holds its state mutably borrowed. A hook that calls back into the scheduler would
//! then borrow it again, and a `RefCell` double borrow panics, which aborts the module. So such
//! calls run inside [`run`], and every API method asks [`running`] first: the asynchronous ones
//! start their work on a later microtask anyway (once the step is over); the synchronous ones
//! are refused with a coded error (`invalid_state`), or, for `stop()` and a hold's release,
//! done on the next microtask.

use std::cell::Cell;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Runs host code called from inside a core step.
pub fn run<T>(host_code: impl FnOnce() -> T) -> T {
    DEPTH.with(|depth| depth.set(depth.get() + 1));
    let out = host_code();
    DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    out
}

/// Whether host code called from inside a core step is running now.
pub fn running() -> bool {
    DEPTH.with(|depth| depth.get() > 0)
}
