//! The worked example of `docs/protocol.md` is what the scheduler really sends: the body it
//! freezes for the example's intent, byte for byte, and the digest it stores with it. The kit's
//! side of the same example (canonical text, SHA-256) is checked by
//! `server/test/protocol-doc.test.mjs`.

use canvas_scheduler_core::{body_digest, intent::IntentInput, Host, Payload, SchedulerConfig};
use canvas_scheduler_testing::Harness;

const PROTOCOL: &str = include_str!("../../docs/protocol.md");

/// The text of the first fenced block after `<!-- example:{name} -->`.
fn example(name: &str) -> &'static str {
    let marker = format!("<!-- example:{name} -->");
    let after = PROTOCOL
        .split_once(&marker)
        .unwrap_or_else(|| panic!("docs/protocol.md has no {marker}"))
        .1;
    let fence = after.find("```").expect("a fenced block after the marker");
    let opened = &after[fence..];
    let body_start = opened.find('\n').expect("a fence line") + 1;
    let body = &opened[body_start..];
    let end = body.find("\n```").expect("a closing fence");
    &body[..end]
}

/// The example's request id.
struct ExampleKey;

impl Host for ExampleKey {
    fn create_request_id(&mut self) -> String {
        "8f3b2c1e-5a47-4d0b-9c6e-2f1a7d9e4b35".into()
    }
}

/// The intent of the example's `enqueue`, with its payload's members in the order the editor
/// wrote them.
fn example_intent() -> IntentInput {
    let payload: Payload = serde_json::from_str(
        r#"{"shapeId":"s1","shape":{"type":"note","y":20.5,"x":10,"text":"Café ✓"}}"#,
    )
    .expect("JSON payload");
    IntentInput {
        id: "op-7".into(),
        sequence: None,
        operation_type: "shape.upsert".into(),
        canvas_ids: vec!["canvas-a".into()],
        dependencies: Vec::new(),
        payload,
        expected_versions: Some([("canvas-a".to_string(), 0)].into()),
        run_id: None,
        coalesce_key: None,
        blob: None,
    }
}

#[test]
fn the_protocol_docs_worked_example_is_the_body_the_scheduler_freezes_and_its_digest() {
    let mut h = Harness::new(SchedulerConfig::default(), ExampleKey);
    h.start();
    h.enqueue(vec![example_intent()]).expect("enqueued");
    h.drain();
    let sent = h.wire.first().expect("the example is sent");
    assert_eq!(sent.request.body, example("body"), "the documented body");
    assert_eq!(sent.request.body.len(), 283, "the documented length");
    assert_eq!(
        body_digest(&sent.request.body),
        example("client-digest"),
        "the documented client digest"
    );
    assert_eq!(sent.request.digest, example("client-digest"), "as stored");
}
