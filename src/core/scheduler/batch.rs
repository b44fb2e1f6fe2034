//! Request batching: consecutive ready operations of the same kind on the same canvas set may
//! travel in one frozen request, up to `batch.maxOperations` and `batch.maxBytes`. Claims,
//! dependencies and exactly-once are unchanged: the batch claims the shared canvases, every
//! member is ready on its own, and the server applies the batch atomically under one key.

use super::Scheduler;
use crate::core::host::Host;
use crate::core::json::{ToJson, Writer};
use crate::core::model::Intent;
use crate::core::payload::Payload;

/// Protocol v1 batches only shape operations (the reference server refuses others).
fn batchable_kind(kind: &str) -> bool {
    kind.starts_with("shape.")
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
        let limits = self.config.batch.clone();
        if limits.max_operations < 2
            || !self.host.batchable()
            || !batchable_kind(&first.operation_type)
            || !first.expected_versions.is_empty()
        {
            return Vec::new();
        }
        // The first leaves waiting now: its canvases' next waiter is offered and may join
        // (a released canvas wakes only its earliest waiter), and so on down the run.
        self.unwait(&first.id);
        let mut bytes = payload_bytes(first);
        let mut members: Vec<Intent> = Vec::new();
        while members.len() + 1 < limits.max_operations {
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
                && bytes.saturating_add(payload_bytes(&candidate)) <= limits.max_bytes;
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
