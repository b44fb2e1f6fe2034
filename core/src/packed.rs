//! The packed form of an operation page: each operation one JSON array, its fields by
//! position, trailing defaults left out —
//! `[id, sequence, operationType, phase, canvasIds, dependencies, payload, blockers, revision,
//! requestId, outcome, expectedVersions, runId, coalesceKey, blob, principal, givenDigest]`.
//!
//! A load of 100 000 pending operations reads and parses every page; as objects, the field
//! names were about 45% of the bytes, and matching them a good part of the parse. Packed, a
//! page is a little over half the bytes and decodes without a key. Only pages use it: single
//! records, the JS views and the wire keep named fields. [`decode_page`] reads both forms,
//! so pages written as objects by earlier builds still load.

use std::fmt;

use serde::de::{Error as _, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::model::{Intent, Operation, OperationPhase};

/// Fields always written: id, sequence, operation type, phase.
const ALWAYS: usize = 4;

/// A page's operations, written in the packed form.
pub struct PackedPage<'a>(pub &'a [Operation]);

impl Serialize for PackedPage<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(Packed))
    }
}

/// One operation, written as its packed array.
struct Packed<'a>(&'a Operation);

impl Serialize for Packed<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let op = self.0;
        let intent = &op.intent;
        // Whether each optional field differs from its default, in position order.
        let present = [
            !intent.canvas_ids.is_empty(),
            !intent.dependencies.is_empty(),
            !intent.payload.is_null(),
            !op.blockers.is_empty(),
            intent.revision != 0,
            op.request_id.is_some(),
            op.outcome.is_some(),
            !intent.expected_versions.is_empty(),
            intent.run_id.is_some(),
            intent.coalesce_key.is_some(),
            intent.blob.is_some(),
            intent.principal.is_some(),
            op.given_digest.is_some(),
        ];
        let len = ALWAYS + present.iter().rposition(|p| *p).map_or(0, |at| at + 1);
        let mut seq = serializer.serialize_seq(Some(len))?;
        seq.serialize_element(&intent.id)?;
        seq.serialize_element(&intent.sequence)?;
        seq.serialize_element(&intent.operation_type)?;
        seq.serialize_element(&op.phase)?;
        let mut at = ALWAYS;
        // Each optional field in position order, up to the last one present.
        macro_rules! optional {
            ($($value:expr),*) => {$(
                if at < len {
                    seq.serialize_element(&$value)?;
                }
                at += 1;
            )*};
        }
        optional!(
            intent.canvas_ids,
            intent.dependencies,
            intent.payload,
            op.blockers,
            intent.revision,
            op.request_id,
            op.outcome,
            intent.expected_versions,
            intent.run_id,
            intent.coalesce_key,
            intent.blob,
            intent.principal,
            op.given_digest
        );
        debug_assert_eq!(at, ALWAYS + present.len());
        seq.end()
    }
}

/// One packed operation as read; missing trailing fields take their default.
struct Unpacked(Operation);

impl<'de> Deserialize<'de> for Unpacked {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(UnpackedVisitor)
    }
}

struct UnpackedVisitor;

impl<'de> Visitor<'de> for UnpackedVisitor {
    type Value = Unpacked;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a packed operation")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unpacked, A::Error> {
        let short = || A::Error::custom("a packed operation has fewer than 4 fields");
        let id = seq.next_element()?.ok_or_else(short)?;
        let sequence = seq.next_element()?.ok_or_else(short)?;
        let operation_type = seq.next_element()?.ok_or_else(short)?;
        let phase: OperationPhase = seq.next_element()?.ok_or_else(short)?;
        let mut op = Operation::new(Intent::new(id, sequence, operation_type));
        op.phase = phase;
        macro_rules! optional {
            ($($place:expr),*) => {$(
                match seq.next_element()? {
                    Some(value) => $place = value,
                    None => return Ok(Unpacked(op)),
                }
            )*};
        }
        optional!(
            op.intent.canvas_ids,
            op.intent.dependencies,
            op.intent.payload,
            op.blockers,
            op.intent.revision,
            op.request_id,
            op.outcome,
            op.intent.expected_versions,
            op.intent.run_id,
            op.intent.coalesce_key,
            op.intent.blob,
            op.intent.principal,
            op.given_digest
        );
        if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            return Err(A::Error::custom(
                "a packed operation has more than 17 fields",
            ));
        }
        Ok(Unpacked(op))
    }
}

/// The operations of a page's JSON text, packed (this build's pages) or as objects (earlier
/// builds'). `Err` when it is neither.
///
/// # Errors
///
/// The text is not such a page.
pub fn decode_page(text: &str) -> Result<Vec<Operation>, serde_json::Error> {
    let packed = text
        .trim_start()
        .strip_prefix('[')
        .is_some_and(|rest| rest.trim_start().starts_with('['));
    if !packed {
        return serde_json::from_str(text);
    }
    let page: Vec<Unpacked> = serde_json::from_str(text)?;
    Ok(page.into_iter().map(|Unpacked(op)| op).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{BlobRef, OperationOutcome, Settlement};
    use crate::payload::Payload;
    use crate::safe_error::SafeError;
    use serde_json::json;

    fn plain(id: &str, sequence: u64) -> Operation {
        let mut op = crate::test_support::pending_upsert(id, sequence, "c1");
        op.intent.payload = json!({"x": 1}).into();
        op
    }

    fn rich() -> Operation {
        let mut op = plain("op-rich", 9);
        op.intent.dependencies = vec!["op-1".into()];
        op.intent.expected_versions.insert("c1".into(), 7);
        op.intent.run_id = Some("run-1".into());
        op.intent.coalesce_key = Some("shape:1".into());
        op.intent.blob = Some(Box::new(BlobRef {
            id: "blob-1".into(),
            size: 12,
            media_type: "image/png".into(),
            name: Some("a.png".into()),
        }));
        op.intent.revision = 2;
        op.intent.principal = Some("user:1".into());
        op.blockers = vec!["held".into()];
        op.request_id = Some("req-1".into());
        op.phase = OperationPhase::Resolved;
        op.outcome = Some(Box::new(OperationOutcome {
            settlement: Settlement::Rejected,
            request_id: Some("req-1".into()),
            // Details too: a superseded operation's names what replaced it.
            error: Some(
                SafeError::new("superseded", "replaced by op-2")
                    .with_details(json!({"replacedBy": "op-2"}).into()),
            ),
            canonical: Some(json!({"v": 2}).into()),
            at: 5,
        }));
        op.given_digest = Some("digest-of-the-intent-as-given".into());
        op
    }

    fn packed(ops: &[Operation]) -> String {
        serde_json::to_string(&PackedPage(ops)).expect("serializes")
    }

    #[test]
    fn packed_pages_round_trip_every_field() {
        let mut bare = plain("op-bare", 3);
        bare.intent.canvas_ids.clear();
        bare.intent.payload = Payload::default();
        let ops = vec![plain("op-1", 1), rich(), bare];
        let text = packed(&ops);
        assert_eq!(decode_page(&text).expect("decodes"), ops);
        assert!(
            text.starts_with(r#"[["op-1",1,"shape.upsert","pending",["c1"],[],{"x":1}],"#),
            "trailing defaults are left out: {text}"
        );
        assert!(
            text.ends_with(r#"["op-bare",3,"shape.upsert","pending"]]"#),
            "{text}"
        );
    }

    #[test]
    fn pages_of_objects_still_load() {
        let ops = vec![plain("op-1", 1), rich()];
        let text = serde_json::to_string(&ops).expect("serializes");
        assert_eq!(decode_page(&text).expect("decodes"), ops);
        assert_eq!(decode_page(" [ ]").expect("empty"), Vec::new());
    }

    #[test]
    fn a_malformed_packed_operation_is_an_error() {
        for text in [
            r#"[["op-1",1,"shape.upsert"]]"#,
            r#"[["op-1",1,"shape.upsert","pending",[],[],null,[],0,null,null,{},null,null,null,null,null,"extra"]]"#,
            r#"[["op-1","1","shape.upsert","pending"]]"#,
            r#"[["op-1",1,"shape.upsert","gone"]]"#,
            r#"[["op-1",1,"shape.upsert","pending"],{"intent":{}}]"#,
        ] {
            assert!(decode_page(text).is_err(), "{text}");
        }
    }
}
