//! Named timers: each thing the scheduler waits for in time has its own due time, in one table
//! (as quinn-proto's `TimerTable`). The driver keeps a single wake-up, armed at
//! [`TimerTable::next_timeout`] through [`Effect::SetTimer`](super::io::Effect::SetTimer); the
//! table says which of them it is for.

use super::model::Millis;

/// What the scheduler may wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Timer {
    /// A pump pass that gave way with ready work left: the next one, at once.
    Pump,
    /// The earliest due retry, while a slot is free for it.
    Retry,
    /// The end of the earliest coalescing hold (`coalesceMs`).
    CoalesceHold,
    /// The next renewal of the dispatch lease.
    LeaseRenewal,
    /// The oldest settled operation outgrowing the retention policy's age.
    Compaction,
    /// Maintenance held back while the user works, run once they pause.
    QuietWork,
    /// The write of enqueues held for coalescing.
    HeldWrite,
    /// The next try of a storage write that failed.
    StorageRetry,
}

impl Timer {
    /// Every timer, in table order.
    pub const ALL: [Timer; 8] = [
        Timer::Pump,
        Timer::Retry,
        Timer::CoalesceHold,
        Timer::LeaseRenewal,
        Timer::Compaction,
        Timer::QuietWork,
        Timer::HeldWrite,
        Timer::StorageRetry,
    ];

    /// Its stable name (for logs and tests).
    pub fn name(self) -> &'static str {
        match self {
            Timer::Pump => "pump",
            Timer::Retry => "retry",
            Timer::CoalesceHold => "coalesce_hold",
            Timer::LeaseRenewal => "lease_renewal",
            Timer::Compaction => "compaction",
            Timer::QuietWork => "quiet_work",
            Timer::HeldWrite => "held_write",
            Timer::StorageRetry => "storage_retry",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One due time per [`Timer`], or none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimerTable {
    due: [Option<Millis>; Timer::ALL.len()],
}

impl TimerTable {
    /// Arms `timer` at `at`, or stops it (`None`).
    pub fn set(&mut self, timer: Timer, at: Option<Millis>) {
        self.due[timer.slot()] = at;
    }

    /// Stops `timer`.
    pub fn stop(&mut self, timer: Timer) {
        self.set(timer, None);
    }

    /// When `timer` is due, if armed.
    pub fn get(&self, timer: Timer) -> Option<Millis> {
        self.due[timer.slot()]
    }

    /// Whether `timer` is armed and due at `now`.
    pub fn is_expired(&self, timer: Timer, now: Millis) -> bool {
        self.get(timer).is_some_and(|at| at <= now)
    }

    /// The earliest due time of any armed timer: when the driver's wake-up goes off.
    pub fn next_timeout(&self) -> Option<Millis> {
        self.due.iter().flatten().copied().min()
    }

    /// The armed timers and their due times, in table order.
    pub fn armed(&self) -> impl Iterator<Item = (Timer, Millis)> + '_ {
        Timer::ALL
            .into_iter()
            .filter_map(|timer| self.get(timer).map(|at| (timer, at)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_next_timeout_is_the_earliest_armed_timer() {
        let mut table = TimerTable::default();
        assert_eq!(table.next_timeout(), None);
        table.set(Timer::LeaseRenewal, Some(3_000));
        table.set(Timer::Retry, Some(1_200));
        table.set(Timer::Compaction, Some(9_000));
        assert_eq!(table.next_timeout(), Some(1_200));
        table.stop(Timer::Retry);
        assert_eq!(table.next_timeout(), Some(3_000));
        assert!(table.is_expired(Timer::LeaseRenewal, 3_000));
        assert!(!table.is_expired(Timer::Compaction, 3_000));
        assert!(
            !table.is_expired(Timer::Retry, 3_000),
            "a stopped timer never expires"
        );
        assert_eq!(
            table.armed().collect::<Vec<_>>(),
            [(Timer::LeaseRenewal, 3_000), (Timer::Compaction, 9_000)]
        );
    }

    #[test]
    fn every_timer_has_its_own_slot_and_name() {
        let mut table = TimerTable::default();
        for (i, timer) in Timer::ALL.into_iter().enumerate() {
            table.set(timer, Some(100 + i as Millis));
        }
        for (i, timer) in Timer::ALL.into_iter().enumerate() {
            assert_eq!(
                table.get(timer),
                Some(100 + i as Millis),
                "{}",
                timer.name()
            );
        }
        let mut names: Vec<&str> = Timer::ALL.into_iter().map(Timer::name).collect();
        names.dedup();
        assert_eq!(names.len(), Timer::ALL.len());
    }
}
