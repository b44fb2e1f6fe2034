//! The golden codec corpus: records, wire bodies and digests exactly as the release's own codec
//! wrote them (`tests/fixtures/codec-golden.jsonl`), so a new codec is held to the old bytes.
//!
//! Each line is `{type, source, text}` and, where the type has one, the digest the ledger
//! keeps of it: `intentDigest` (an operation's or intent's, the hash a tombstone keeps to
//! recognise the same intent enqueued again), `intentDigests` (a page's, one per operation),
//! `bodyDigest` (a frozen body's, checked before every resend). `source` is `dump:STORE/KEY`
//! for a record of the ledger fixture (`tests/fixtures/ledger-v10/dump.json`) and `generated`
//! for the seeded records of `golden_codec/generate.rs`, which wrote the file once
//! (`GOLDEN_WRITE=1 cargo test --test golden_codec -- --ignored`) and is not needed again.
//!
//! The check, kept as the codec changes: every text decodes and encodes again to the same
//! bytes, and every digest computed from what was decoded is the recorded one. Only
//! [`recode`] and the digest functions name the codec: a change of codec changes them, never
//! the corpus.
#![cfg(any(not(target_arch = "wasm32"), target_os = "wasi"))]

mod generate;

use std::collections::BTreeMap;

use canvas_scheduler_core::{
    body_digest,
    intent::IntentInput,
    json_text::{self, JsonText},
    packed::{decode_page, PackedPage},
    retention::{input_digest, intent_digest, Tombstone},
    BatchEntry, BatchPayload, EventRecord, FrozenRequest, Intent, Lease, Operation, SafeError,
    WireBody,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The corpus, one JSON object a line.
pub(crate) const CORPUS: &str = include_str!("../fixtures/codec-golden.jsonl");

/// An inbox entry as `web::store::inbox::InboxEntry` stores it (that type is wasm-only
/// today): the same members, read and written by the same serde derive; its intents
/// are the core's [`IntentInput`].
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct InboxEntry {
    /// The enqueuing tab.
    #[serde(rename = "origin")]
    pub origin: String,
    /// Its principal.
    #[serde(rename = "principal", default)]
    pub principal: Option<String>,
    /// When it was written.
    #[serde(rename = "at")]
    pub at: u64,
    /// The intents.
    #[serde(rename = "intents")]
    pub intents: Vec<IntentInput>,
}

/// A frozen body as read back: the module only writes them, so its members are read here
/// (the payload as its exact text) and the module's writer must give the same bytes again.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireIn<'a> {
    id: String,
    #[serde(rename = "operationIds")]
    operation_ids: Vec<String>,
    kind: String,
    #[serde(rename = "ownerCanvasId", default)]
    owner_canvas_id: Option<String>,
    #[serde(rename = "runId", default)]
    run_id: Option<String>,
    #[serde(rename = "protocolVersion")]
    protocol_version: u32,
    #[serde(borrow)]
    payload: &'a RawValue,
    #[serde(rename = "canvasIds")]
    canvas_ids: Vec<String>,
    #[serde(rename = "expectedVersions")]
    expected_versions: BTreeMap<String, u64>,
}

/// A batch body's payload as read back.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchIn<'a> {
    #[serde(borrow)]
    operations: Vec<BatchEntryIn<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchEntryIn<'a> {
    kind: String,
    #[serde(rename = "operationId")]
    operation_id: String,
    #[serde(borrow)]
    payload: &'a RawValue,
}

/// A JSON value's exact text, as the module keeps a payload.
fn exact(raw: &RawValue) -> Result<JsonText, String> {
    serde_json::from_str::<JsonText>(raw.get()).map_err(|e| e.to_string())
}

fn again<T: DeserializeOwned + Serialize>(text: &str) -> Result<String, String> {
    let value: T = serde_json::from_str(text).map_err(|e| e.to_string())?;
    Ok(json_text::to_string(&value))
}

/// Decodes `text` as a `kind` and encodes it again with the module's codec.
pub(crate) fn recode(kind: &str, text: &str) -> Result<String, String> {
    match kind {
        "Operation" => again::<Operation>(text),
        "Intent" => again::<Intent>(text),
        "FrozenRequest" => again::<FrozenRequest>(text),
        "Lease" => again::<Lease>(text),
        "EventPage" => again::<Vec<EventRecord>>(text),
        "TombstonePage" => again::<Vec<Tombstone>>(text),
        "SafeError" => again::<SafeError>(text),
        "IntentInput" => again::<IntentInput>(text),
        "InboxEntry" => again::<InboxEntry>(text),
        "PackedPage" => {
            let page = decode_page(text).map_err(|e| e.to_string())?;
            Ok(json_text::to_string(&PackedPage(&page)))
        }
        "WireBody" => {
            let body: WireIn<'_> = serde_json::from_str(text).map_err(|e| e.to_string())?;
            let payload = exact(body.payload)?;
            Ok(json_text::to_string(&WireBody {
                id: &body.id,
                operation_ids: &body.operation_ids,
                kind: &body.kind,
                owner_canvas_id: body.owner_canvas_id.as_deref(),
                run_id: body.run_id.as_deref(),
                protocol_version: body.protocol_version,
                payload: &payload,
                canvas_ids: &body.canvas_ids,
                expected_versions: &body.expected_versions,
            }))
        }
        "BatchPayload" => {
            let batch: BatchIn<'_> = serde_json::from_str(text).map_err(|e| e.to_string())?;
            let payloads = batch
                .operations
                .iter()
                .map(|entry| exact(entry.payload))
                .collect::<Result<Vec<_>, _>>()?;
            let operations = batch
                .operations
                .iter()
                .zip(&payloads)
                .map(|(entry, payload)| BatchEntry {
                    kind: &entry.kind,
                    operation_id: &entry.operation_id,
                    payload,
                })
                .collect();
            Ok(json_text::to_string(&BatchPayload { operations }))
        }
        other => Err(format!("no such type in the corpus: {other}")),
    }
}

/// The digests a line records, computed again from its decoded text.
fn digests(kind: &str, text: &str) -> Result<BTreeMap<&'static str, Value>, String> {
    let mut out = BTreeMap::new();
    match kind {
        "Operation" => {
            let op: Operation = serde_json::from_str(text).map_err(|e| e.to_string())?;
            out.insert("intentDigest", Value::from(intent_digest(&op.intent)));
        }
        "Intent" => {
            let intent: Intent = serde_json::from_str(text).map_err(|e| e.to_string())?;
            out.insert("intentDigest", Value::from(intent_digest(&intent)));
        }
        "IntentInput" => {
            let input: IntentInput = serde_json::from_str(text).map_err(|e| e.to_string())?;
            out.insert("intentDigest", Value::from(input_digest(&input)));
        }
        "PackedPage" => {
            let page = decode_page(text).map_err(|e| e.to_string())?;
            let all = page.iter().map(|op| Value::from(intent_digest(&op.intent)));
            out.insert("intentDigests", Value::Array(all.collect()));
        }
        "FrozenRequest" => {
            let request: FrozenRequest = serde_json::from_str(text).map_err(|e| e.to_string())?;
            out.insert("bodyDigest", Value::from(body_digest(&request.body)));
        }
        "WireBody" => {
            out.insert("bodyDigest", Value::from(body_digest(text)));
        }
        _ => {}
    }
    Ok(out)
}

/// The corpus's lines, parsed.
fn lines() -> Vec<Value> {
    CORPUS
        .lines()
        .enumerate()
        .map(|(at, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("codec-golden.jsonl:{}: not JSON: {e}", at + 1))
        })
        .collect()
}

/// Every type, with at least this many lines of it (so the check cannot pass on a corpus
/// that lost a type).
const TYPES: [(&str, usize); 12] = [
    ("Operation", 400),
    ("Intent", 100),
    ("FrozenRequest", 200),
    ("Lease", 30),
    ("EventPage", 60),
    ("TombstonePage", 60),
    ("SafeError", 100),
    ("IntentInput", 150),
    ("InboxEntry", 30),
    ("PackedPage", 80),
    ("WireBody", 150),
    ("BatchPayload", 40),
];

#[test]
fn every_golden_text_decodes_and_encodes_to_the_same_bytes() {
    let mut failures = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (at, line) in lines().iter().enumerate() {
        let (kind, text) = (line["type"].as_str(), line["text"].as_str());
        let (Some(kind), Some(text)) = (kind, text) else {
            panic!("codec-golden.jsonl:{}: no type or text", at + 1);
        };
        *counts.entry(kind.to_owned()).or_default() += 1;
        let source = line["source"].as_str().unwrap_or("?");
        match recode(kind, text) {
            Ok(out) if out == text => {}
            Ok(out) => failures.push(format!(
                "line {} ({kind}, {source}): encoded differently\n  was {text}\n  now {out}",
                at + 1
            )),
            Err(error) => failures.push(format!(
                "line {} ({kind}, {source}): does not decode: {error}",
                at + 1
            )),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of the corpus's texts changed:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    for (kind, least) in TYPES {
        let seen = counts.get(kind).copied().unwrap_or(0);
        assert!(
            seen >= least,
            "{kind}: {seen} lines, at least {least} expected"
        );
    }
    assert_eq!(counts.len(), TYPES.len(), "types in the corpus: {counts:?}");
}

#[test]
fn every_golden_digest_is_computed_again_from_what_was_decoded() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for (at, line) in lines().iter().enumerate() {
        let kind = line["type"].as_str().unwrap_or_default();
        let text = line["text"].as_str().unwrap_or_default();
        let computed = match digests(kind, text) {
            Ok(computed) => computed,
            Err(error) => {
                failures.push(format!("line {}: {error}", at + 1));
                continue;
            }
        };
        for (name, value) in computed {
            checked += 1;
            if line[name] != value {
                failures.push(format!(
                    "line {} ({kind}): {name} was {} now {value}",
                    at + 1,
                    line[name]
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} digests changed:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    assert!(checked >= 1_000, "only {checked} digests checked");
}

/// Frozen requests in the corpus keep the digest of their body: the same bytes sent again.
#[test]
fn golden_frozen_requests_carry_their_bodys_digest() {
    for line in lines().iter().filter(|l| l["type"] == "FrozenRequest") {
        let text = line["text"].as_str().unwrap_or_default();
        let request: FrozenRequest = serde_json::from_str(text).expect("decodes");
        assert_eq!(request.digest, line["bodyDigest"], "{text}");
    }
}

/// `GOLDEN_WRITE=1 cargo test --test golden_codec -- --ignored` writes the corpus (from the
/// module's codec as it is); without `GOLDEN_WRITE` it checks that the generator still
/// writes the file as it is.
#[test]
#[ignore = "writes or re-derives the corpus; the checks above read it"]
fn the_generator_writes_the_corpus() {
    let written = generate::corpus();
    if std::env::var_os("GOLDEN_WRITE").is_some() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/codec-golden.jsonl"
        );
        std::fs::write(path, &written).expect("write the corpus");
        println!("wrote {} lines to {path}", written.lines().count());
    } else {
        assert!(
            written == CORPUS,
            "the generator no longer writes codec-golden.jsonl"
        );
    }
}
