//! A ledger written by an earlier release opens in this build, and nothing a user sees changed.
//!
//! `tests/fixtures/ledger-v10/dump.json` is a real IndexedDB ledger (schema version 10) written
//! by the release build named in `make.mjs`, which also wrote `expected.json`: what that build
//! did when it opened the dump again. Here the current build does the same steps (`restore.js`,
//! shared with `make.mjs`): the dump restored under a fresh name, opened with a transport that
//! answers `applied` and records every call, every retry made due, the dead letter retried.
//! Then, against the release's answers and the dump itself:
//! - every queued operation is delivered exactly once (one submit or one query each), the
//!   requests frozen in the dump under their own idempotency keys with their stored bytes, the
//!   newly frozen ones with the bodies the release wrote (request id aside), the upload with
//!   its blob;
//! - `known(ids)` answers the tombstones and the archived records as the release did, and so
//!   does `operation(id)` once they are looked up;
//! - the event log's stored pages read back as the release read them;
//! - the planted corrupt record is the one quarantine report;
//! - each compacted operation's intent, enqueued again as the host first gave it, is accepted
//!   as already there: nothing is sent and `known(ids)` answers as before (its stored intent
//!   digest still matches), while an altered one is refused `duplicate_operation`.

use std::collections::{BTreeMap, BTreeSet};

use canvas_scheduler::api::scheduler::Scheduler;
use canvas_scheduler_core::body_digest;
use js_sys::{Array, Function, Promise, Reflect};
use serde_json::Value;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{delete_database, unique_name};

const DUMP: &str = include_str!("../fixtures/ledger-v10/dump.json");
const EXPECTED: &str = include_str!("../fixtures/ledger-v10/expected.json");
const FIXTURE_JS: &str = include_str!("../fixtures/ledger-v10/restore.js");

fn parse(text: &str, what: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{what} is not JSON: {e}"))
}

/// A JSON text as a JS value (through `JSON.parse`).
fn to_js(value: &Value) -> JsValue {
    js_sys::JSON::parse(&value.to_string()).expect("JSON.parse of serde_json's text")
}

/// The requests stored in the dump, by id.
fn dumped_requests(dump: &Value) -> BTreeMap<String, Value> {
    let stores = dump["stores"].as_array().expect("dump.stores");
    let requests = stores
        .iter()
        .find(|store| store["name"] == "requests")
        .expect("a requests store");
    requests["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|record| {
            let text = record[1].as_str().expect("a request record is JSON text");
            (
                record[0].as_str().expect("a string key").to_owned(),
                parse(text, "a request record"),
            )
        })
        .collect()
}

/// A call as compared between builds: a request frozen here (not in the dump) has a fresh
/// id, so its id and digest are left out and the body's own `id` member is checked and
/// replaced.
fn comparable(call: &Value, dumped: &BTreeMap<String, Value>) -> Value {
    let id = call["id"].as_str().expect("call.id");
    if dumped.contains_key(id) {
        return call.clone();
    }
    let body = call["body"].as_str().expect("call.body");
    let own = format!("{{\"id\":{}", Value::from(id));
    assert!(
        body.starts_with(&own),
        "a fresh body names its own id: {body}"
    );
    let mut out = call.clone();
    out["id"] = Value::from("<fresh>");
    out["digest"] = Value::from("<fresh>");
    out["body"] = Value::from(body.replacen(&own, "{\"id\":\"<fresh>\"", 1));
    out
}

fn sorted_calls(calls: &[Value], dumped: &BTreeMap<String, Value>) -> Vec<Value> {
    let mut out: Vec<Value> = calls.iter().map(|c| comparable(c, dumped)).collect();
    out.sort_by_key(|call| call.to_string());
    out
}

/// `restore.js`'s object (restore, recorder, replay).
fn fixture_js() -> JsValue {
    Function::new_no_args(&format!("return ({FIXTURE_JS}\n);"))
        .call0(&JsValue::NULL)
        .expect("restore.js evaluates to its object")
}

/// Runs `replay` of restore.js with this build's `Scheduler.open`; its report as JSON.
async fn replay(name: &str, expected: &Value, owner: &str) -> Value {
    let fixture = fixture_js();
    let replay: Function = Reflect::get(&fixture, &"replay".into())
        .expect("replay")
        .into();
    let open = Closure::<dyn FnMut(JsValue) -> Promise>::new(Scheduler::open_js);
    let mut options = expected["options"].clone();
    options["owner"] = Value::from(owner);
    // The defaults of the release that wrote the ledger (one operation a request, no coalescing
    // hold), so that its calls compare with that release's one for one.
    options["batch"] = serde_json::json!({ "maxOperations": 1 });
    options["coalesceMs"] = Value::from(0);
    let args: Array = [
        open.as_ref().clone(),
        JsValue::from_str(name),
        JsValue::from_str(DUMP),
        to_js(&options),
        to_js(&expected["compacted"]),
        to_js(&expected["altered"]),
    ]
    .iter()
    .collect();
    let promise: Promise = replay.apply(&fixture, &args).expect("replay starts").into();
    let report = match JsFuture::from(promise).await {
        Ok(report) => report,
        Err(error) => panic!("replay failed: {}", describe(&error)),
    };
    drop(open);
    let text = js_sys::JSON::stringify(&report)
        .ok()
        .and_then(|t| t.as_string())
        .expect("the report is JSON");
    parse(&text, "the replay's report")
}

fn describe(error: &JsValue) -> String {
    let field = |name: &str| {
        Reflect::get(error, &name.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    match (field("code"), field("message")) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (None, Some(message)) => message,
        _ => format!("{error:?}"),
    }
}

fn array<'a>(value: &'a Value, what: &str) -> &'a Vec<Value> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("{what} is not an array: {value}"))
}

#[wasm_bindgen_test]
async fn a_ledger_written_by_an_earlier_release_opens_and_nothing_a_user_sees_changed() {
    let expected = parse(EXPECTED, "expected.json");
    let dump = parse(DUMP, "dump.json");
    let dumped = dumped_requests(&dump);
    let name = unique_name(&format!("ledger-fixture-{}", crate::EXPECTED_GLOBAL));
    let owner = format!("fixture-{}", crate::EXPECTED_GLOBAL);
    let report = replay(&name, &expected, &owner).await;
    delete_database(&name).await;
    let calls = array(&report["calls"], "calls");

    // The planted corrupt record, and only it, is set aside and reported.
    let quarantined = array(&report["quarantined"], "quarantined");
    assert_eq!(
        quarantined.len(),
        1,
        "one quarantine report: {quarantined:?}"
    );
    let (got, want) = (&quarantined[0], &expected["quarantined"][0]);
    assert_eq!((&got["store"], &got["key"]), (&want["store"], &want["key"]));
    let prefix = |event: &Value| {
        let reason = event["reason"].as_str().unwrap_or_default().to_owned();
        reason.split(':').next().unwrap_or_default().to_owned()
    };
    assert_eq!(prefix(got), prefix(want), "reason {}", got["reason"]);
    assert!(["not JSON", "undecodable"].contains(&prefix(got).as_str()));

    // Every queued operation delivered exactly once, nothing else.
    let mut times: BTreeMap<&str, usize> = BTreeMap::new();
    for call in calls {
        for id in array(&call["operationIds"], "operationIds") {
            *times.entry(id.as_str().expect("an id")).or_default() += 1;
        }
        let body = call["body"].as_str().expect("body");
        assert_eq!(call["digest"], body_digest(body), "digest of {call}");
    }
    let delivered: BTreeSet<&str> = array(&expected["delivered"], "delivered")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        times.keys().copied().collect::<BTreeSet<_>>(),
        delivered,
        "operations delivered"
    );
    assert!(
        times.values().all(|n| *n == 1),
        "each delivered once: {times:?}"
    );
    assert!(
        delivered.len() >= 10,
        "the fixture queues work: {delivered:?}"
    );

    // The requests frozen in the dump go under their own keys, with their stored bytes.
    for (id, request) in &dumped {
        let sent: Vec<&Value> = calls.iter().filter(|c| c["id"] == id.as_str()).collect();
        if request["phase"] == "resolved" {
            assert!(sent.is_empty(), "resolved request {id} sent again");
            continue;
        }
        assert_eq!(sent.len(), 1, "request {id} sent once: {sent:?}");
        assert_eq!(sent[0]["body"], request["body"], "body of {id}");
        assert_eq!(sent[0]["digest"], request["digest"], "digest of {id}");
        assert_eq!(sent[0]["operationIds"], request["operationIds"]);
    }

    // What was sent is what the release sent (bodies of new requests included).
    let ours = sorted_calls(calls, &dumped);
    let theirs = sorted_calls(array(&expected["calls"], "expected.calls"), &dumped);
    assert_eq!(ours.len(), theirs.len(), "number of calls");
    for (ours, theirs) in ours.iter().zip(&theirs) {
        assert_eq!(ours, theirs, "a call differs from the release's");
    }
    assert!(
        calls.iter().any(|c| c.get("blob").is_some()),
        "the upload carried its blob"
    );

    // Waiting for the host, then all saved.
    assert_eq!(
        report["waiting"], expected["waiting"],
        "what waited for the host"
    );
    assert_eq!(report["saved"]["blocked"], Value::Array(Vec::new()));
    assert_eq!(
        report["pending"],
        Value::Array(Vec::new()),
        "nothing pending"
    );

    // Settled history: tombstones and archived records, as the release answered them.
    // One change is deliberate: a compacted operation that a newer one replaced (coalesced
    // away) now names its replacement, which the earlier release left out.
    let with_replacement = |answers: &Value| {
        let mut answers = answers.clone();
        if let Some(replaced) = answers.get_mut("drag-1").filter(|a| a["compacted"] == true) {
            replaced["replacedBy"] = Value::String("drag-2".to_owned());
        }
        answers
    };
    assert_eq!(
        report["known"],
        with_replacement(&expected["known"]),
        "known(ids)"
    );
    assert_eq!(
        report["operations"],
        with_replacement(&expected["operations"]),
        "operation(id)"
    );
    let known = report["known"].as_object().expect("known");
    assert!(
        known.values().any(|a| a["compacted"] == true),
        "a tombstone"
    );
    assert!(
        known.values().any(|a| a["phase"] == "resolved"),
        "an archived record"
    );
    assert_eq!(known["never-stored"], Value::Null);

    // The event log's stored pages read as the release read them.
    let last = expected["lastStoredSeq"].as_u64().expect("lastStoredSeq");
    let stored: Vec<&Value> = array(&report["events"], "events")
        .iter()
        .filter(|e| e["seq"].as_u64().is_some_and(|seq| seq <= last))
        .collect();
    let want: Vec<&Value> = array(&expected["storedEvents"], "storedEvents")
        .iter()
        .collect();
    assert!(!want.is_empty());
    assert_eq!(stored, want, "events() of the stored log");

    // Compacted intents enqueued again as given: already there, nothing sent.
    assert_eq!(report["reenqueued"], expected["reenqueued"]);
    let reenqueued = report["reenqueued"].as_object().expect("reenqueued");
    assert!(!reenqueued.is_empty() && reenqueued.values().all(|r| r["ok"] == true));
    assert_eq!(
        report["callsAfterEnqueues"], 0,
        "an enqueue of a known intent sent something"
    );
    assert_eq!(
        report["knownAfterEnqueues"], report["known"],
        "known(ids) after the enqueues again"
    );
    assert_eq!(report["altered"], expected["alteredAnswer"]);
    assert_eq!(report["altered"]["code"], "duplicate_operation");
}
