//! The stored records are serde types (issue 40): their derives write the same members, names
//! and skip rules as the module's own codec (`core::json`, `json_record!`), which the module
//! keeps for size (ARCHITECTURE), and read back the same record. JSON-text fields (payloads,
//! canonical states, error details) are strings holding the text in serde's view.

use canvas_scheduler::core::intent::IntentInput;
use canvas_scheduler::core::json::{self, JsonText, ToJson};
use canvas_scheduler::core::model::*;
use canvas_scheduler::core::retention::Tombstone;
use canvas_scheduler::core::safe_error::SafeError;
use serde_json::Value;

/// The hand-made codec's value, with the JSON-text members at `paths` turned into strings.
fn hand<T: ToJson>(value: &T, paths: &[&[&str]]) -> Value {
    let mut tree: Value = serde_json::from_str(&json::to_string(value)).unwrap();
    for path in paths {
        let pointer: String = path.iter().map(|key| format!("/{key}")).collect();
        if let Some(at) = tree.pointer_mut(&pointer) {
            let text = serde_json::to_string(at).unwrap();
            *at = Value::String(text);
        }
    }
    tree
}

fn check<T>(value: &T, paths: &[&[&str]])
where
    T: ToJson + serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let derived = serde_json::to_value(value).unwrap();
    assert_eq!(derived, hand(value, paths), "members differ");
    let back: T = serde_json::from_value(derived).unwrap();
    assert_eq!(&back, value, "round trip differs");
}

fn error() -> SafeError {
    SafeError::new("conflict", "no").with_details(JsonText::compact(r#"{"a":[1,2]}"#).unwrap())
}

fn full_op() -> Operation {
    let mut intent = Intent::new("op-1".into(), 7, "shape.upsert".into());
    intent.canvas_ids = vec!["c1".into()];
    intent.dependencies = vec!["op-0".into()];
    intent.payload = JsonText::compact(r#"{"s":"é\"q","x":1}"#).unwrap();
    intent.expected_versions.insert("c1".into(), 3);
    intent.run_id = Some("r".into());
    intent.coalesce_key = Some("k".into());
    intent.blob = Some(Box::new(BlobRef {
        id: "b".into(),
        size: 9,
        media_type: "image/png".into(),
        name: Some("n.png".into()),
    }));
    intent.revision = 2;
    intent.principal = Some("p".into());
    let mut op = Operation::new(intent);
    op.phase = OperationPhase::Resolved;
    op.blockers = vec!["x".into()];
    op.request_id = Some("req".into());
    op.outcome = Some(Box::new(OperationOutcome {
        settlement: Settlement::Rejected,
        request_id: Some("req".into()),
        error: Some(error()),
        canonical: Some(JsonText::compact(r#"{"v":2}"#).unwrap()),
        at: 99,
    }));
    op.given_digest = Some("d".into());
    op
}

const OP_PATHS: &[&[&str]] = &[
    &["intent", "payload"],
    &["outcome", "canonical"],
    &["outcome", "error", "details"],
];

#[test]
fn records_written_by_the_modules_codec_have_the_members_their_derives_name() {
    check(&full_op(), OP_PATHS);
    check(
        &Operation::new(Intent::new("op-2".into(), 1, "t".into())),
        OP_PATHS,
    );
    let request = FrozenRequest {
        id: "req".into(),
        operation_ids: vec!["op-1".into()],
        kind: "shape.upsert".into(),
        owner_canvas_id: Some("c1".into()),
        run_id: Some("r".into()),
        protocol_version: 1,
        canvas_ids: vec!["c1".into()],
        expected_versions: [("c1".to_owned(), 3u64)].into_iter().collect(),
        body: r#"{"id":"req"}"#.into(),
        digest: "dd".into(),
        principal: Some("p".into()),
        revisions: vec![0],
        phase: RequestPhase::Dispatched,
        attempt: 2,
        failures: 1,
        retry_at: Some(5),
        retry_action: Some(RetryAction::Query),
        outcome: Some(Settlement::Applied),
        error: Some(error()),
        canonical: Some(JsonText::compact("[1]").unwrap()),
        blocked: Some("b".into()),
        frozen_at: 4,
    };
    check(&request, &[&["canonical"], &["error", "details"]]);
    check(&FrozenRequest::default(), &[]);
    check(
        &Lease {
            owner: "o".into(),
            fence: 3,
            expires_at: 8,
        },
        &[],
    );
    check(
        &LedgerMeta {
            last_sequence: 1,
            last_event_seq: 2,
        },
        &[],
    );
    for kind in [
        EventKind::RetryScheduled,
        EventKind::DeadLettered,
        EventKind::LeaseLost,
    ] {
        check(
            &EventRecord {
                seq: 1,
                at: 2,
                kind,
                request_id: Some("r".into()),
                operation_id: None,
                attempt: Some(1),
                fence: Some(4),
                detail: Some("x".into()),
            },
            &[],
        );
    }
    let tombstone = Tombstone {
        key: 3,
        id: "op-1".into(),
        principal: Some("p".into()),
        digest: "d".into(),
        sequence: 7,
        settlement: Settlement::Discarded,
        settled_at: 9,
        replaced_by: Some("op-9".into()),
        whole: None,
    };
    check(&tombstone, &[]);
    check(
        &IntentInput {
            id: "op-1".into(),
            sequence: Some(3),
            operation_type: "t".into(),
            canvas_ids: vec!["c".into()],
            dependencies: vec![],
            payload: JsonText::compact("{\"a\":1}").unwrap(),
            expected_versions: Some([("c".to_owned(), 1u64)].into_iter().collect()),
            run_id: None,
            coalesce_key: Some("k".into()),
            blob: None,
        },
        &[&["payload"]],
    );
}
