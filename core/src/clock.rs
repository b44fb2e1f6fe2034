//! The clock port: `now`, `set_timer`, `clear_timer`. The core itself only ever receives
//! `now` as an argument and asks for wake-ups through [`Effect::SetTimer`](super::io::Effect);
//! drivers carry those out through a [`Clock`]. `VirtualClock` (this module's tests) moves
//! only when told to; the browser one lives in `web::clock`.

#[cfg(test)]
use std::{cell::RefCell, collections::BTreeMap, rc::Rc};

use super::model::Millis;

/// Handle of an armed timer.
pub type TimerHandle = u64;

/// A source of time and one-shot timers.
pub trait Clock {
    /// Current time in ms since the epoch.
    fn now(&self) -> Millis;
    /// Calls `callback` once, `delay` ms from now (0: on a later turn).
    fn set_timer(&self, delay: Millis, callback: Box<dyn FnOnce()>) -> TimerHandle;
    /// Cancels a timer; unknown or fired handles are ignored.
    fn clear_timer(&self, handle: TimerHandle);
}

#[cfg(test)]
#[derive(Default)]
struct VirtualState {
    now: Millis,
    next_handle: TimerHandle,
    timers: BTreeMap<(Millis, TimerHandle), Box<dyn FnOnce()>>,
}

#[cfg(test)]
/// A clock that moves only when told to; timers fire in due order, ties in arming order.
#[derive(Clone, Default)]
pub(crate) struct VirtualClock {
    state: Rc<RefCell<VirtualState>>,
}

#[cfg(test)]
impl VirtualClock {
    /// A virtual clock starting at `start`.
    pub(crate) fn starting_at(start: Millis) -> Self {
        let clock = Self::default();
        clock.state.borrow_mut().now = start;
        clock
    }

    /// Number of armed timers.
    pub(crate) fn armed(&self) -> usize {
        self.state.borrow().timers.len()
    }

    /// Fires the earliest timer due at or before `limit`, moving time to its due time.
    pub(crate) fn fire_next(&self, limit: Millis) -> bool {
        let callback = {
            let mut state = self.state.borrow_mut();
            let Some((&(due, handle), _)) = state.timers.iter().next() else {
                return false;
            };
            if due > limit {
                return false;
            }
            state.now = state.now.max(due);
            state.timers.remove(&(due, handle))
        };
        match callback {
            Some(callback) => {
                callback();
                true
            }
            None => false,
        }
    }

    /// Moves time forward by `delta`, firing every timer due on the way.
    pub(crate) fn advance(&self, delta: Millis) {
        let target = self.now().saturating_add(delta);
        while self.fire_next(target) {}
        let mut state = self.state.borrow_mut();
        state.now = state.now.max(target);
    }
}

#[cfg(test)]
impl Clock for VirtualClock {
    fn now(&self) -> Millis {
        self.state.borrow().now
    }

    fn set_timer(&self, delay: Millis, callback: Box<dyn FnOnce()>) -> TimerHandle {
        let mut state = self.state.borrow_mut();
        state.next_handle += 1;
        let handle = state.next_handle;
        let due = state.now.saturating_add(delay);
        state.timers.insert((due, handle), callback);
        handle
    }

    fn clear_timer(&self, handle: TimerHandle) {
        self.state
            .borrow_mut()
            .timers
            .retain(|(_, h), _| *h != handle);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w2_virtual_timers_fire_in_due_order_and_clear() {
        let clock = VirtualClock::starting_at(1_000);
        let log = Rc::new(RefCell::new(Vec::new()));
        for (delay, name) in [(30, "c"), (10, "a"), (10, "b")] {
            let log = log.clone();
            clock.set_timer(delay, Box::new(move || log.borrow_mut().push(name)));
        }
        let cleared = {
            let log = log.clone();
            clock.set_timer(20, Box::new(move || log.borrow_mut().push("cleared")))
        };
        clock.clear_timer(cleared);
        clock.advance(15);
        assert_eq!(*log.borrow(), vec!["a", "b"]);
        assert_eq!(clock.now(), 1_015);
        clock.advance(100);
        assert_eq!(*log.borrow(), vec!["a", "b", "c"]);
        assert_eq!(clock.armed(), 0);
    }
}
