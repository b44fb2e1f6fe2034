//! The retry queue: due time, then sequence; superseded entries carry stale tokens.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::collections::BinaryHeap;

use super::model::{Millis, RetryAction};

/// One scheduled attempt of a request.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct RetryEntry {
    /// Absolute due time.
    pub due_at: Millis,
    /// Tie-breaker: the order in which retries were scheduled.
    pub order: u64,
    /// The request to attempt.
    pub request_id: String,
    /// Submit or query.
    pub action: RetryAction,
    /// Valid only while it equals the request's current token.
    pub token: u64,
}

/// A min-heap of retries with per-request tokens, so rescheduling is O(log n) without removal.
#[derive(Debug, Default)]
pub(crate) struct RetryQueue {
    heap: BinaryHeap<Reverse<RetryEntry>>,
    tokens: BTreeMap<String, u64>,
    next_order: u64,
    next_token: u64,
}

impl RetryQueue {
    /// Schedules (or reschedules) a request; any earlier entry for it becomes stale.
    pub(crate) fn schedule(
        &mut self,
        request_id: &str,
        due_at: Millis,
        action: RetryAction,
    ) -> RetryEntry {
        self.next_order += 1;
        self.next_token += 1;
        self.tokens.insert(request_id.to_owned(), self.next_token);
        let entry = RetryEntry {
            due_at,
            order: self.next_order,
            request_id: request_id.to_owned(),
            action,
            token: self.next_token,
        };
        self.heap.push(Reverse(entry.clone()));
        entry
    }

    /// Puts back an entry that was deferred (its token still decides validity).
    pub(crate) fn requeue(&mut self, entry: RetryEntry) {
        if self.is_current(&entry) {
            self.heap.push(Reverse(entry));
        }
    }

    /// Forgets every scheduled retry of a request.
    pub(crate) fn cancel(&mut self, request_id: &str) {
        self.tokens.remove(request_id);
    }

    /// Whether the request has a current scheduled retry.
    pub(crate) fn is_scheduled(&self, request_id: &str) -> bool {
        self.tokens.contains_key(request_id)
    }

    /// Whether an entry is still the request's current one.
    pub(crate) fn is_current(&self, entry: &RetryEntry) -> bool {
        self.tokens.get(&entry.request_id) == Some(&entry.token)
    }

    /// The earliest current entry, dropping stale ones on the way.
    pub(crate) fn peek(&mut self) -> Option<&RetryEntry> {
        while let Some(Reverse(top)) = self.heap.peek() {
            if self.tokens.get(&top.request_id) == Some(&top.token) {
                break;
            }
            self.heap.pop();
        }
        self.heap.peek().map(|Reverse(entry)| entry)
    }

    /// Takes the earliest current entry if it is due at `now`; it stays current until cancelled.
    pub(crate) fn pop_due(&mut self, now: Millis) -> Option<RetryEntry> {
        if self.peek()?.due_at > now {
            return None;
        }
        self.heap.pop().map(|Reverse(entry)| entry)
    }

    /// Number of requests with a current retry.
    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether no retry is scheduled.
    pub(crate) fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Due time of a request's current retry, if any (for `explain`).
    pub(crate) fn due_of(&self, request_id: &str) -> Option<Millis> {
        let token = self.tokens.get(request_id)?;
        self.heap
            .iter()
            .find(|Reverse(entry)| entry.request_id == request_id && entry.token == *token)
            .map(|Reverse(entry)| entry.due_at)
    }

    /// Moves every due time `by` ms earlier (the wall clock went back by that much).
    pub(crate) fn shift_earlier(&mut self, by: Millis) {
        let heap = std::mem::take(&mut self.heap);
        self.heap = heap
            .into_iter()
            .map(|Reverse(mut entry)| {
                entry.due_at = entry.due_at.saturating_sub(by);
                Reverse(entry)
            })
            .collect();
    }

    /// Drops everything.
    pub(crate) fn clear(&mut self) {
        self.heap.clear();
        self.tokens.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s11_orders_by_due_then_schedule_order_and_skips_stale() {
        let mut queue = RetryQueue::default();
        queue.schedule("a", 100, RetryAction::Query);
        queue.schedule("b", 50, RetryAction::Submit);
        queue.schedule("c", 50, RetryAction::Query);
        queue.schedule("b", 200, RetryAction::Query); // supersedes b@50
        assert!(queue.pop_due(49).is_none());
        assert_eq!(queue.pop_due(60).map(|e| e.request_id), Some("c".into()));
        assert!(queue.pop_due(60).is_none(), "stale b@50 is skipped");
        assert_eq!(queue.pop_due(150).map(|e| e.request_id), Some("a".into()));
        assert_eq!(queue.due_of("b"), Some(200));
        queue.cancel("b");
        assert!(queue.pop_due(1_000).is_none());
    }
}
