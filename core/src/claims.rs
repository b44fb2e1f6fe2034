//! Canvas claims: an unresolved request claims every canvas it touches; operations that
//! need a claimed canvas wait on it. A waiting operation also reserves its canvases against
//! later operations, so operations sharing a canvas leave in `sequence` order.

use crate::seq_set::SeqSet;
use std::collections::BTreeMap;

use super::error::{ErrorCode, SchedulerError};

/// Claims per canvas and the operations waiting on each.
#[derive(Debug, Default)]
pub(crate) struct CanvasClaims {
    claims: BTreeMap<String, String>,
    waiters: BTreeMap<String, SeqSet>,
}

impl CanvasClaims {
    /// Claims every canvas for a request; a canvas held by another request is a conflict and
    /// nothing is claimed then.
    pub(crate) fn claim(
        &mut self,
        request_id: &str,
        canvases: &[String],
    ) -> Result<(), SchedulerError> {
        let conflicts: Vec<&str> = canvases
            .iter()
            .filter(|canvas| {
                self.claims
                    .get(canvas.as_str())
                    .is_some_and(|holder| holder != request_id)
            })
            .map(String::as_str)
            .collect();
        if !conflicts.is_empty() {
            return Err(SchedulerError::new(
                ErrorCode::RecoveryClaimConflict,
                format!(
                    "canvases claimed by two unresolved requests: {}",
                    conflicts.join(", ")
                ),
            ));
        }
        for canvas in canvases {
            self.claims.insert(canvas.clone(), request_id.to_owned());
        }
        Ok(())
    }

    /// Releases the canvases a request holds; returns, per canvas, its earliest waiter: the
    /// only one that may take it next (a canvas's operations go in order). The others
    /// keep waiting, and their reservations, until the one before them leaves; waking them
    /// all made every release cost the whole queue of a busy canvas.
    pub(crate) fn release(&mut self, request_id: &str, canvases: &[String]) -> Vec<(u64, String)> {
        let mut woken = Vec::new();
        for canvas in canvases {
            if self
                .claims
                .get(canvas)
                .is_some_and(|holder| holder == request_id)
            {
                self.claims.remove(canvas);
                woken.extend(self.first_waiter(canvas).map(|(s, id)| (s, id.to_owned())));
            }
        }
        woken
    }

    /// The request holding a canvas.
    pub(crate) fn holder(&self, canvas: &str) -> Option<&str> {
        self.claims.get(canvas).map(String::as_str)
    }

    /// Canvases an operation may not take now: claimed, or reserved by an earlier waiter.
    pub(crate) fn occupied(&self, sequence: u64, canvases: &[String]) -> Vec<String> {
        canvases
            .iter()
            .filter(|canvas| {
                self.claims.contains_key(canvas.as_str())
                    || self
                        .waiters
                        .get(canvas.as_str())
                        .and_then(SeqSet::first)
                        .is_some_and(|(first, _)| first < sequence)
            })
            .cloned()
            .collect()
    }

    /// Registers an operation as waiting on (and reserving) its canvases.
    pub(crate) fn wait(&mut self, sequence: u64, id: &str, canvases: &[String]) {
        for canvas in canvases {
            self.waiters
                .entry(canvas.clone())
                .or_default()
                .insert(sequence, id);
        }
    }

    /// Removes an operation from every waiter set (it was sent, blocked or discarded); returns,
    /// per canvas it reserved and nobody holds, the earliest waiter left behind it.
    pub(crate) fn unwait(
        &mut self,
        sequence: u64,
        id: &str,
        canvases: &[String],
    ) -> Vec<(u64, String)> {
        let mut woken = Vec::new();
        for canvas in canvases {
            let Some(set) = self.waiters.get_mut(canvas) else {
                continue;
            };
            if set.remove(sequence, id) && !self.claims.contains_key(canvas) {
                woken.extend(set.first().map(|(s, id)| (s, id.to_owned())));
            }
            if set.is_empty() {
                self.waiters.remove(canvas);
            }
        }
        woken
    }

    /// A snapshot of canvas → request.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, String> {
        self.claims.clone()
    }

    /// Number of claimed canvases.
    pub(crate) fn len(&self) -> usize {
        self.claims.len()
    }

    /// The earliest waiter reserving a canvas.
    pub(crate) fn first_waiter(&self, canvas: &str) -> Option<(u64, &str)> {
        self.waiters.get(canvas).and_then(SeqSet::first)
    }

    /// Drops every claim and waiter (before recovery rebuilds them).
    pub(crate) fn clear(&mut self) {
        self.claims.clear();
        self.waiters.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn s4_two_requests_never_share_a_canvas() {
        let mut claims = CanvasClaims::default();
        claims.claim("r1", &ids(&["a", "b"])).unwrap();
        let err = claims.claim("r2", &ids(&["b", "c"])).unwrap_err();
        assert_eq!(err.code(), "recovery_claim_conflict");
        assert_eq!(claims.holder("c"), None, "a conflict claims nothing");
        claims.claim("r1", &ids(&["a"])).unwrap();
    }

    #[test]
    fn s4_waiters_reserve_and_are_woken_on_release() {
        let mut claims = CanvasClaims::default();
        claims.claim("r1", &ids(&["b"])).unwrap();
        // op 1 needs a and b: b is claimed, so it waits and reserves a as well.
        assert_eq!(claims.occupied(1, &ids(&["a", "b"])), ids(&["b"]));
        claims.wait(1, "op1", &ids(&["a", "b"]));
        // op 2 needs only a, but the earlier op 1 reserved it.
        assert_eq!(claims.occupied(2, &ids(&["a"])), ids(&["a"]));
        claims.wait(2, "op2", &ids(&["a"]));
        let woken = claims.release("r1", &ids(&["b"]));
        assert_eq!(woken, vec![(1, "op1".to_owned())]);
        let woken = claims.unwait(1, "op1", &ids(&["a", "b"]));
        assert_eq!(woken, vec![(2, "op2".to_owned())]);
    }
}
