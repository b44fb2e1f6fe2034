//! Host code called while the dispatcher's state is borrowed, and what the API does about it.
//!
//! The core calls `compile` and `participants` synchronously in the middle of a step, while the
//! driver holds its state mutably borrowed: borrowing it again would panic, which aborts the
//! module. So such calls run inside [`run`], which also sets, for the hook's duration, the
//! scheduler the core handed it (a shared borrow of the state as it stands between two
//! operations, see `core::host::Host`). Every API method asks [`running`] first:
//!
//! - the synchronous reads (`stats`, `operation`, `explain`, `claims`, `pending`) answer
//!   through [`read`] from that scheduler: a consistent snapshot that costs nothing until a
//!   read is made;
//! - the asynchronous methods start their work on a later microtask anyway (once the step is
//!   over);
//! - the synchronous ones that would change the ledger mid-step (`hold`, `start`) are refused
//!   with a coded error (`invalid_state`), and `stop()` and a hold's release are done on the
//!   next microtask.

use std::cell::Cell;

use canvas_scheduler_core::Scheduler;

use crate::web::driver::WebHost;

thread_local! {
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static NEXT_KEY: Cell<u64> = const { Cell::new(1) };
}

scoped_tls::scoped_thread_local!(static READS: Scheduler<WebHost>);

/// A key naming one driver's scheduler (its [`WebHost`] carries it), so that a read finds the
/// scheduler it asked for and no other.
pub fn new_key() -> u64 {
    NEXT_KEY.with(|next| {
        let key = next.get();
        next.set(key + 1);
        key
    })
}

/// Runs host code called from inside a core step; `reads`, when given, is the scheduler the
/// core handed the hook, which [`read`] answers from meanwhile.
pub fn run<T>(reads: Option<&Scheduler<WebHost>>, host_code: impl FnOnce() -> T) -> T {
    DEPTH.with(|depth| depth.set(depth.get() + 1));
    let out = match reads {
        Some(scheduler) => READS.set(scheduler, host_code),
        None => host_code(),
    };
    DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    out
}

/// Whether host code called from inside a core step is running now.
pub fn running() -> bool {
    DEPTH.with(|depth| depth.get() > 0)
}

/// Reads the scheduler of `key` as a running hook was handed it; `None` when no hook of that
/// scheduler is running.
pub fn read<T>(key: u64, reader: impl FnOnce(&Scheduler<WebHost>) -> T) -> Option<T> {
    if !READS.is_set() {
        return None;
    }
    READS.with(|scheduler| (scheduler.host().key == key).then(|| reader(scheduler)))
}
