//! A one-shot signal awaited from Rust: a flag and the wakers of its waiters (no extra crates).
//!
//! Pure Rust rather than a JS `Promise`: every `enqueue` waits on one, and a promise-backed
//! signal cost a JS promise, its executor closure and two more closures for the await.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

#[derive(Default)]
struct SignalState {
    resolved: bool,
    wakers: Vec<Waker>,
}

/// Resolved once; awaited by any number of clones.
#[derive(Clone, Default)]
pub(crate) struct Signal {
    state: Rc<RefCell<SignalState>>,
}

impl Signal {
    /// An unresolved signal.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Wakes every waiter; later calls do nothing.
    pub(crate) fn resolve(&self) {
        let wakers = {
            let mut state = self.state.borrow_mut();
            if state.resolved {
                return;
            }
            state.resolved = true;
            std::mem::take(&mut state.wakers)
        };
        for waker in wakers {
            waker.wake();
        }
    }

    /// Waits for `resolve`.
    pub(crate) async fn wait(&self) {
        Wait { state: &self.state }.await
    }
}

struct Wait<'a> {
    state: &'a Rc<RefCell<SignalState>>,
}

impl Future for Wait<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.state.borrow_mut();
        if state.resolved {
            return Poll::Ready(());
        }
        if !state.wakers.iter().any(|w| w.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
