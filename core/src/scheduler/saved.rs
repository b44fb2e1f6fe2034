//! "Is everything saved?": the unsettled operations as a badge lists them, and the
//! decision `whenSaved()` waits on. The driver keeps each call's covered ids and asks
//! [`Scheduler::saved_state`] after every step; the decision lives here so the simulation
//! checks it (an op it covers is never still sendable when it says saved).

use super::Scheduler;
use crate::host::Host;
use crate::model::{Millis, OperationPhase};

/// One unsettled operation, as `pending()` lists it.
#[derive(serde::Serialize, Clone, Debug, PartialEq)]
pub struct PendingEntry {
    /// The operation.
    #[serde(rename = "id")]
    pub id: String,
    /// `queued`, `in_flight`, `retrying` or `blocked`.
    #[serde(rename = "state")]
    pub state: &'static str,
    /// `explain(id).reason`: why it is where it is.
    #[serde(rename = "reason")]
    pub reason: String,
    /// Sends so far of its request (0 before the first).
    #[serde(rename = "attempt")]
    pub attempt: u32,
    /// When its next attempt is due, when one is scheduled.
    #[serde(rename = "nextAttemptAt", skip_serializing_if = "Option::is_none")]
    pub next_attempt_at: Option<Millis>,
    /// The canvases it holds or waits for.
    #[serde(rename = "canvasIds")]
    pub canvas_ids: Vec<String>,
    /// For a blocked one whose request holds canvases (a dead letter, say): those canvases
    /// (`explain(id).heldCanvasIds`), which nothing else touching them passes until released.
    #[serde(rename = "heldCanvasIds", skip_serializing_if = "Option::is_none")]
    pub held_canvas_ids: Option<Vec<String>>,
    /// And how the host releases them: `["retry", "discard"]` (`explain(id).release`).
    #[serde(rename = "release", skip_serializing_if = "Option::is_none")]
    pub release: Option<Vec<String>>,
    /// Its sequence (the order of the list; not written to JS).
    #[serde(skip)]
    pub sequence: u64,
}

/// What `whenSaved()` resolves with.
#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct Saved {
    /// Covered operations settled (applied, rejected or discarded).
    #[serde(rename = "settled")]
    pub settled: usize,
    /// Covered operations blocked (dead letters included), in sequence order.
    #[serde(rename = "blocked")]
    pub blocked: Vec<String>,
}

impl<H: Host> Scheduler<H> {
    /// Unsettled operations (settled ones leave the count at once).
    pub fn unsettled_count(&self) -> usize {
        self.indexed.len()
    }

    /// The unsettled operations in sequence order: O(unsettled), no storage read.
    pub fn pending(&self, now: Millis) -> Vec<PendingEntry> {
        let mut out: Vec<PendingEntry> = self
            .indexed
            .iter()
            .filter_map(|id| self.pending_entry(now, id))
            .collect();
        out.sort_by_key(|e| e.sequence);
        out
    }

    fn pending_entry(&self, now: Millis, id: &str) -> Option<PendingEntry> {
        let op = self.ledger.operation(id)?;
        if op.phase == OperationPhase::Resolved {
            return None;
        }
        let why = self.explain(now, id).ok()?;
        let state = match why.state {
            "blocked" => "blocked",
            "in_flight" => "in_flight",
            _ if why.attempt.unwrap_or(0) > 0 => "retrying",
            _ => "queued",
        };
        Some(PendingEntry {
            id: id.to_owned(),
            state,
            reason: why.reason,
            attempt: why.attempt.unwrap_or(0),
            next_attempt_at: why.due_at,
            canvas_ids: op.intent.canvas_ids.clone(),
            held_canvas_ids: why.held_canvas_ids,
            release: why.release,
            sequence: op.intent.sequence,
        })
    }

    /// The ids a `whenSaved()` called now covers: every unsettled operation.
    pub fn saved_mark(&self) -> Vec<String> {
        self.indexed.iter().cloned().collect()
    }

    /// Whether an op can still be sent: unsettled and not blocked.
    pub fn may_send(&self, now: Millis, id: &str) -> bool {
        match self.ledger.operation(id) {
            Some(op) if op.phase != OperationPhase::Resolved => {
                !matches!(self.explain(now, id), Ok(why) if why.state == "blocked")
            }
            _ => false,
        }
    }

    /// `Some` once every covered op is settled or blocked. `covered` sheds the settled ones
    /// (so repeated checks cost what is left) and `settled` counts them.
    pub fn saved_state(
        &self,
        now: Millis,
        covered: &mut Vec<String>,
        settled: &mut usize,
    ) -> Option<Saved> {
        let before = covered.len();
        covered.retain(|id| {
            self.ledger
                .operation(id)
                .is_some_and(|op| op.phase != OperationPhase::Resolved)
        });
        *settled += before - covered.len();
        if covered.iter().any(|id| self.may_send(now, id)) {
            return None;
        }
        let mut blocked: Vec<(u64, String)> = covered
            .iter()
            .filter_map(|id| Some((self.ledger.operation(id)?.intent.sequence, id.clone())))
            .collect();
        blocked.sort();
        Some(Saved {
            settled: *settled,
            blocked: blocked.into_iter().map(|(_, id)| id).collect(),
        })
    }
}
