//! Request batching: ready operations of the same kind on the same canvas set may travel in
//! one frozen request, up to `batch.maxOperations` and `batch.maxBytes`. Every kind batches
//! unless the host narrows it with `batch.kinds`, except the kinds with a lane or a lifecycle
//! of their own (`NEVER_BATCHED`). Claims, dependencies and exactly-once are unchanged: the
//! batch claims the shared canvases, every member is ready on its own, and the server applies
//! the batch atomically under one key.
//!
//! A burst that alternates canvases still batches: the gathering looks past ready operations
//! that cannot join, as long as none of them touches the batch's canvases (per-canvas order
//! is never changed: a member never overtakes an earlier operation on its canvases). Where the
//! host's `participants` is an intent's `canvasIds` (no hook), looking past one is a read of
//! the intent, and the gathering looks past at most [`LOOK_PAST_PER_MEMBER`] × `maxOperations`:
//! a paste over 50 canvases, each canvas's edits 50 apart in the queue, still fills its
//! batches. With a `participants` hook each look is a call of it, at most [`SCAN_PER_MEMBER`]
//! × `maxOperations`.
//! With a `compile` hook each member is compiled under the batch's request id, and joins only
//! if its compiled kind, owner, run and canvases are the first's and it guards no version.
//!
//! A server that cannot take batches declines one: it answers a request of several operations
//! `rejected` with the error code [`BATCH_NOT_SUPPORTED`], having applied none of them. The
//! request is resolved as declined (no operation settles), each of its operations is frozen
//! again on its own under a new key once the request's claims are released, and this scheduler
//! gathers no batch again until it is opened anew (a server upgraded meanwhile gets batches
//! again after a reload). Batches frozen before the decline arrived are sent, and declined,
//! as they were frozen.

use super::Scheduler;
use crate::config::BatchLimits;
use crate::host::{CompiledRequest, Host};
use crate::io::{AttemptOutcome, AttemptStatus};
use crate::model::{FrozenRequest, Intent, Millis, UPLOAD_KIND};
use crate::payload::Payload;
use crate::protocol::BATCH_NOT_SUPPORTED;

/// Never in a batch: an upload is a multipart body with its own exclusive lane, and a run's
/// start or cancel is answered `accepted` and followed on its own (the reference server
/// refuses them in a batch with `not_batchable`).
pub(super) const NEVER_BATCHED: [&str; 3] = [UPLOAD_KIND, "run.start", "run.cancel"];

/// How many ready operations the gathering may look at for each place in the batch, when
/// each look calls the host's `participants` hook.
pub(super) const SCAN_PER_MEMBER: usize = 4;

/// How many ready operations the gathering may look at for each place in the batch, when the
/// participants are the intents' own `canvasIds` (a look is a read of the ledger).
pub(super) const LOOK_PAST_PER_MEMBER: usize = 64;

fn batchable_kind(limits: &BatchLimits, kind: &str) -> bool {
    !NEVER_BATCHED.contains(&kind)
        && limits
            .kinds
            .as_ref()
            .is_none_or(|kinds| kinds.iter().any(|k| k == kind))
}

/// One operation of a batch beside the first: its intent, and the kind and payload its body
/// entry carries (compiled, when the host compiles).
#[derive(Clone, Debug)]
pub(super) struct Member {
    pub intent: Intent,
    pub kind: String,
    pub payload: Payload,
}

/// The batch body's payload, `{"operations":[{"kind","operationId","payload"}, ...]}`.
/// Members in key order: the body reads as it did when built from a sorted JSON map.
#[derive(serde::Serialize)]
pub struct BatchPayload<'a> {
    /// One entry per operation, in order.
    #[serde(rename = "operations")]
    pub operations: Vec<BatchEntry<'a>>,
}

/// One operation of a batch body.
#[derive(serde::Serialize)]
pub struct BatchEntry<'a> {
    /// Its kind (compiled).
    #[serde(rename = "kind")]
    pub kind: &'a str,
    /// Its id.
    #[serde(rename = "operationId")]
    pub operation_id: &'a str,
    /// Its payload (compiled).
    #[serde(rename = "payload")]
    pub payload: &'a Payload,
}

/// Whether `status` declines `request` as a batch: a rejection with the code
/// [`BATCH_NOT_SUPPORTED`] of a request that carries several operations. (To a request of one
/// operation the code is an ordinary rejection: there is nothing to take apart.)
pub(super) fn declines_batch(request: &FrozenRequest, status: &AttemptStatus) -> bool {
    request.operation_ids.len() > 1
        && status.outcome == AttemptOutcome::Rejected
        && status
            .error
            .as_ref()
            .is_some_and(|e| e.code == BATCH_NOT_SUPPORTED)
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

impl<H: Host> Scheduler<H> {
    /// Takes from the ready queue the operations that may join `first` (compiled as
    /// `compiled` under `request_id`) in one request.
    pub(super) fn gather_batch(
        &mut self,
        now: Millis,
        first: &Intent,
        compiled: &CompiledRequest,
        canvases: &[String],
        request_id: &str,
    ) -> Vec<Member> {
        let (max_operations, max_bytes) = (
            self.config.batch.max_operations,
            self.config.batch.max_bytes,
        );
        let kind = compiled
            .kind
            .as_deref()
            .unwrap_or(&first.operation_type)
            .to_owned();
        if max_operations < 2
            || self.batches_declined
            || self.goes_alone(&first.id)
            || !batchable_kind(&self.config.batch, &first.operation_type)
            || !compiled.expected_versions.is_empty()
        {
            return Vec::new();
        }
        // The first leaves waiting now: its canvases' next waiter is offered and may join
        // (a released canvas wakes only its earliest waiter), and so on down the run.
        self.unwait(&first.id);
        let mut bytes = compiled.payload.text().len();
        let mut members: Vec<Member> = Vec::new();
        // Read afresh at each step: a member leaving its canvases' waiters offers the next
        // waiter to the ready queue, which may join in turn.
        let mut cursor: Option<(u64, String)> = None;
        let declared = self.host.participants_are_declared();
        let per_member = if declared {
            LOOK_PAST_PER_MEMBER
        } else {
            SCAN_PER_MEMBER
        };
        let mut scan = max_operations.saturating_mul(per_member);
        while members.len() + 1 < max_operations && scan > 0 {
            scan -= 1;
            let next = self
                .ready
                .after(cursor.as_ref().map(|(s, id)| (*s, id.as_str())))
                .map(|(s, id)| (s, id.to_owned()));
            let Some((sequence, id)) = next else {
                break;
            };
            cursor = Some((sequence, id.clone()));
            let Some(op) = self.ledger.operation(&id) else {
                break;
            };
            if declared && !op.intent.canvas_ids.iter().any(|c| canvases.contains(c)) {
                continue; // another canvas set: look past it, without a copy of it
            }
            let candidate = op.intent.clone();
            let participants = if declared {
                Ok(candidate.canvas_ids.clone())
            } else {
                self.ask_host(|host, reads| host.participants(&candidate, reads))
            };
            let Ok(participants) = participants.map(sorted) else {
                break; // its own examination reports the failure
            };
            if participants.as_slice() != canvases {
                if participants.iter().any(|c| canvases.contains(c)) {
                    break; // an earlier operation on these canvases: nothing later may pass it
                }
                continue; // another canvas set: look past it
            }
            let fits = candidate.operation_type == first.operation_type
                && candidate.principal == first.principal
                && !self.held_for_coalescing(now, &id)
                && !self.goes_alone(&id)
                && self.is_ready(&id)
                && self.claims.occupied(sequence, canvases).is_empty();
            if !fits {
                break; // same canvases, cannot join: it goes first, and so must what follows
            }
            let own = self.ask_host(|host, reads| host.compile(&candidate, request_id, reads));
            let Ok(own) = own else {
                break;
            };
            let joins = own.kind.as_deref().unwrap_or(&candidate.operation_type) == kind
                && own.owner_canvas_id == compiled.owner_canvas_id
                && own.run_id == compiled.run_id
                && own.protocol_version == compiled.protocol_version
                // Each version guard expects its own version; a shared body cannot carry them.
                && own.expected_versions.is_empty()
                && sorted(own.canvas_ids.clone()).as_slice() == canvases
                && bytes.saturating_add(own.payload.text().len()) <= max_bytes;
            if !joins {
                break;
            }
            bytes += own.payload.text().len();
            self.ready.remove(sequence, &id);
            self.unwait(&id);
            members.push(Member {
                kind: candidate.operation_type.clone(),
                intent: candidate,
                payload: own.payload,
            });
        }
        members
    }

    /// The body payload of a batch: one entry per operation, in order (protocol v1).
    pub(super) fn batch_payload<'a>(
        first: &'a Intent,
        payload: &'a Payload,
        members: &'a [Member],
    ) -> Payload {
        let operations = std::iter::once(BatchEntry {
            kind: &first.operation_type,
            operation_id: &first.id,
            payload,
        })
        .chain(members.iter().map(|m| BatchEntry {
            kind: &m.kind,
            operation_id: &m.intent.id,
            payload: &m.payload,
        }))
        .collect();
        Payload::from_json(&BatchPayload { operations })
    }
}
