//! The stored records, the views and the wire bodies are serde types, read and written by
//! serde_json: records read back the same record and write the same bytes again, views leave
//! out what is absent, and JSON-text fields (payloads, canonical states, error details) are
//! written byte for byte as held. The bytes of stored records and frozen bodies are held to
//! the release's by `tests/behaviour/golden_codec.rs`.

use canvas_scheduler_core::{
    intent::IntentInput, json_text::JsonText, retention::Tombstone, BatchEntry, BatchPayload,
    Compacted, Explanation, FlushOutcome, Known, PendingEntry, SafeError, Saved, SchedulerStats,
    WireBody, *,
};
use serde_json::Value;

fn check<T>(value: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    let text = serde_json::to_string(value).unwrap();
    let back: T = serde_json::from_str(&text).unwrap();
    assert_eq!(&back, value, "round trip differs");
    assert_eq!(serde_json::to_string(&back).unwrap(), text, "bytes differ");
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

#[test]
fn records_read_back_the_same_record_and_bytes() {
    check(&full_op());
    check(&Operation::new(Intent::new("op-2".into(), 1, "t".into())));
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
    check(&request);
    check(&FrozenRequest::default());
    check(&Lease {
        owner: "o".into(),
        fence: 3,
        expires_at: 8,
    });
    check(&LedgerMeta {
        last_sequence: 1,
        last_event_seq: 2,
    });
    for kind in [
        EventKind::RetryScheduled,
        EventKind::DeadLettered,
        EventKind::LeaseLost,
    ] {
        check(&EventRecord {
            seq: 1,
            at: 2,
            kind,
            request_id: Some("r".into()),
            operation_id: None,
            attempt: Some(1),
            fence: Some(4),
            detail: Some("x".into()),
        });
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
        chain_end: Some("op-12".into()),
        whole: None,
    };
    check(&tombstone);
    check(&IntentInput {
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
    });
}

/// A view the module writes (never reads): an object whose absent values are left out, but for
/// the three members of `stats()` that are always there, `null` when there is no value.
fn check_view<T: serde::Serialize>(value: &T) {
    const NULLABLE: [&str; 3] = ["idleReason", "fence", "leaderOwner"];
    let derived = serde_json::to_value(value).unwrap();
    let Value::Object(members) = derived else {
        panic!("not an object: {derived}");
    };
    for (name, member) in &members {
        assert!(
            !member.is_null() || NULLABLE.contains(&name.as_str()),
            "{name} is null"
        );
    }
    if members.contains_key("leader") {
        for name in NULLABLE {
            assert!(members.contains_key(name), "stats without {name}");
        }
    }
}

fn explanation(full: bool) -> Explanation {
    Explanation {
        operation_id: "op-1".into(),
        state: "blocked",
        reason: "dead_letter".into(),
        canvas_id: full.then(|| "c1".into()),
        request_id: full.then(|| "req".into()),
        dependency_id: full.then(|| "op-0".into()),
        due_at: full.then_some(12),
        attempt: full.then_some(3),
        blockers: vec!["b".into()],
        held_canvas_ids: full.then(|| vec!["c1".into()]),
        release: full.then(|| vec!["retry".into(), "discard".into()]),
    }
}

#[test]
fn views_leave_out_what_is_absent() {
    for full in [true, false] {
        check_view(&explanation(full));
        check_view(&FlushOutcome {
            started: full,
            explanation: explanation(full),
        });
        check_view(&PendingEntry {
            id: "op-1".into(),
            state: "retrying",
            reason: "retry_scheduled".into(),
            attempt: 2,
            next_attempt_at: full.then_some(40),
            canvas_ids: vec!["c1".into(), "c2".into()],
            held_canvas_ids: full.then(|| vec!["c1".into()]),
            release: full.then(|| vec!["retry".into()]),
            sequence: 9,
        });
        check_view(&SchedulerStats {
            scanned: 1,
            claimed: 2,
            raced: 3,
            retried: 4,
            sent: 5,
            settled: 6,
            passes: 7,
            pending: 8,
            in_flight: 9,
            ready: 10,
            retry_scheduled: 11,
            claimed_canvases: 12,
            idle_reason: full.then_some("waiting_canvas"),
            leader: full,
            owner: "o".into(),
            settled_kept: 13,
            tombstones: 14,
            fence: full.then_some(15),
            leader_owner: full.then(|| "o".into()),
        });
        let compacted = Compacted {
            id: "op-1".into(),
            compacted: true,
            outcome: Settlement::Rejected,
            settled_at: 5,
            principal: full.then(|| "p".into()),
            replaced_by: full.then(|| "op-2".into()),
        };
        check_view(&compacted);
        // `operation(id)`: the record, or the tombstone's view, with nothing around either.
        assert_eq!(
            serde_json::to_value(Known::Tombstone(compacted.clone())).unwrap(),
            serde_json::to_value(&compacted).unwrap()
        );
        assert_eq!(
            serde_json::to_value(Known::Operation(Box::new(full_op()))).unwrap(),
            serde_json::to_value(full_op()).unwrap()
        );
        check_view(&Saved {
            settled: 3,
            blocked: if full { vec!["op-2".into()] } else { vec![] },
        });
    }
}

#[test]
fn wire_bodies_carry_their_payloads_byte_for_byte() {
    let payload =
        JsonText::compact(r#"{"shape":{"id":"s","x":1.5,"t":"é\u0000"},"n":[1,2]}"#).unwrap();
    let ids = vec!["op-1".to_owned(), "op-2".to_owned()];
    let canvases = vec!["c1".to_owned(), "c2".to_owned()];
    let versions = [("c1".to_owned(), 3u64), ("c2".to_owned(), 0)]
        .into_iter()
        .collect();
    let none = Default::default();
    for (owner, run, expected) in [(Some("c1"), Some("r"), &versions), (None, None, &none)] {
        let body = WireBody {
            id: "req-1",
            operation_ids: &ids,
            kind: "shape.upsert",
            owner_canvas_id: owner,
            run_id: run,
            protocol_version: 1,
            payload: &payload,
            canvas_ids: &canvases,
            expected_versions: expected,
        };
        let text = serde_json::to_string(&body).unwrap();
        assert!(
            text.contains(&format!(",\"payload\":{},", payload.text())),
            "{text}"
        );
    }
    let other = JsonText::compact("[true,null,\"x\"]").unwrap();
    let batch = BatchPayload {
        operations: vec![
            BatchEntry {
                kind: "shape.upsert",
                operation_id: "op-1",
                payload: &payload,
            },
            BatchEntry {
                kind: "shape.delete",
                operation_id: "op-2",
                payload: &other,
            },
        ],
    };
    assert_eq!(
        serde_json::to_string(&batch).unwrap(),
        format!(
            r#"{{"operations":[{{"kind":"shape.upsert","operationId":"op-1","payload":{}}},{{"kind":"shape.delete","operationId":"op-2","payload":[true,null,"x"]}}]}}"#,
            payload.text()
        )
    );
}

#[test]
fn options_read_by_the_config_derive_keep_each_defaults_the_reader_gives() {
    use canvas_scheduler_core::{
        retention::RetentionPolicy, BatchLimits, RetryPolicy, SchedulerConfig,
    };
    let read = |text: &str| serde_json::from_str::<SchedulerConfig>(text).unwrap();
    assert_eq!(read("{}"), SchedulerConfig::default());
    let config = read(
        r#"{"database":"db","endpoint":"https://a/v1","onEvent":null,"concurrency":4,
            "principal":"u","retry":{"baseMs":40000},"batch":{"kinds":["a.b"]},
            "retain":{"settled":0},"coalesceMs":16,"owner":"tab-1"}"#,
    );
    assert_eq!(
        config,
        SchedulerConfig {
            concurrency: 4,
            principal: Some("u".into()),
            retry: RetryPolicy {
                base_ms: 40_000,
                max_ms: 40_000,
                ..RetryPolicy::default()
            },
            batch: BatchLimits {
                max_operations: 32,
                max_bytes: 65_536,
                kinds: Some(vec!["a.b".into()]),
            },
            retain: RetentionPolicy {
                settled: 0,
                ..RetentionPolicy::default()
            },
            coalesce_ms: 16,
            owner: "tab-1".into(),
            ..SchedulerConfig::default()
        }
    );
    config.validate().unwrap();
    // The ranges are `validate`'s and the reader's: the derive reads the shape.
    assert!(read(r#"{"concurrency":0}"#).validate().is_err());
    assert!(serde_json::from_str::<SchedulerConfig>(r#"{"concurrency":"2"}"#).is_err());
}
