//! Request batching: consecutive ready operations of the same kind on the same canvas set may
//! travel in one frozen request, up to `batch.maxOperations` and `batch.maxBytes`. Every kind
//! batches unless the host narrows it with `batch.kinds`, except the kinds with a lane or a
//! lifecycle of their own (`NEVER_BATCHED`). Claims,
//! dependencies and exactly-once are unchanged: the batch claims the shared canvases, every
//! member is ready on its own, and the server applies the batch atomically under one key.

use super::Scheduler;
use crate::core::config::BatchLimits;
use crate::core::host::Host;
use crate::core::json::{ToJson, Writer};
use crate::core::model::{Intent, UPLOAD_KIND};
use crate::core::payload::Payload;

/// Never in a batch: an upload is a multipart body with its own exclusive lane, and a run's
/// start or cancel is answered `accepted` and followed on its own (the reference server
/// refuses them in a batch with `not_batchable`).
pub const NEVER_BATCHED: [&str; 3] = [UPLOAD_KIND, "run.start", "run.cancel"];

fn batchable_kind(limits: &BatchLimits, kind: &str) -> bool {
    !NEVER_BATCHED.contains(&kind)
        && limits
            .kinds
            .as_ref()
            .is_none_or(|kinds| kinds.iter().any(|k| k == kind))
}

fn payload_bytes(intent: &Intent) -> usize {
    intent.payload.text().len()
}

/// The batch body's payload, `{"operations":[{"kind","operationId","payload"}, ...]}`.
/// Members in key order: the body reads as it did when built from a sorted JSON map.
struct BatchPayload<'a>(Vec<&'a Intent>);

impl ToJson for BatchPayload<'_> {
    fn write_json(&self, writer: &mut Writer) {
        writer.object();
        writer.key("operations");
        writer.array();
        for intent in &self.0 {
            writer.object();
            writer.member("kind", &intent.operation_type);
            writer.member("operationId", &intent.id);
            writer.member("payload", &intent.payload);
            writer.end_object();
        }
        writer.end_array();
        writer.end_object();
    }
}

impl<H: Host> Scheduler<H> {
    /// Takes from the ready queue the operations that may join `first` in one request.
    pub(super) fn gather_batch(&mut self, first: &Intent, canvases: &[String]) -> Vec<Intent> {
        let (max_operations, max_bytes) = (
            self.config.batch.max_operations,
            self.config.batch.max_bytes,
        );
        if max_operations < 2
            || !self.host.batchable()
            || !batchable_kind(&self.config.batch, &first.operation_type)
            || !first.expected_versions.is_empty()
        {
            return Vec::new();
        }
        // The first leaves waiting now: its canvases' next waiter is offered and may join
        // (a released canvas wakes only its earliest waiter), and so on down the run.
        self.unwait(&first.id);
        let mut bytes = payload_bytes(first);
        let mut members: Vec<Intent> = Vec::new();
        while members.len() + 1 < max_operations {
            let Some((sequence, id)) = self.ready.first().map(|(s, id)| (s, id.to_owned())) else {
                break;
            };
            let Some(candidate) = self.ledger.operation(&id).map(|o| o.intent.clone()) else {
                break;
            };
            let fits = candidate.operation_type == first.operation_type
                && candidate.principal == first.principal
                // Each version guard expects its own version; a shared body cannot carry them.
                && candidate.expected_versions.is_empty()
                && self.is_ready(&id)
                && self.host.participants(&candidate).map(|mut p| {
                    p.sort();
                    p.dedup();
                    p
                }).ok().as_deref() == Some(canvases)
                && self.claims.occupied(sequence, canvases).is_empty()
                && bytes.saturating_add(payload_bytes(&candidate)) <= max_bytes;
            if !fits {
                break; // only consecutive operations join
            }
            bytes += payload_bytes(&candidate);
            self.ready.remove(sequence, &id);
            self.unwait(&id);
            members.push(candidate);
        }
        members
    }

    /// The body payload of a batch: one entry per operation, in order (SPEC §1, protocol v1).
    pub(super) fn batch_payload(first: &Intent, members: &[Intent]) -> Payload {
        Payload::from_json(&BatchPayload(
            std::iter::once(first).chain(members).collect(),
        ))
    }
}
