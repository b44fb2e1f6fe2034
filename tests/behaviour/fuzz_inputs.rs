//! Property-based fuzzing (proptest) of the two places where untrusted bytes enter the core:
//!
//! - **Host input** ("bad input changes nothing", docs/guarantees.md): arbitrary JSON and malformed
//!   IntentInput-shaped objects (random keys, wrong types, huge strings, deep nesting,
//!   `__proto__` keys, NaN-like strings, duplicate ids, dependency cycles, explicit sequences)
//!   go through the JSON decoder (`serde_json::from_str::<IntentInput>` on their text),
//!   `check_fields` and `Scheduler::enqueue`. Nothing panics; every refusal carries a stable
//!   code; a refused enqueue leaves the ledger exactly as it was.
//! - **Storage**: a real ledger written by the [`Harness`] is corrupted record by
//!   record (flipped fields, truncated bodies, changed digests, repeated sequences, wrong keys,
//!   garbage, reordered or oversized pages) and read back through [`LedgerLoader`], with some
//!   or all of its operations stored in operation pages (entries corrupted, operations copied
//!   into other pages or beside their records). Nothing panics; every record is either loaded
//!   or quarantined (a page-level error is always `corrupt_record`, and only when the paging
//!   itself was broken); every operation a page names is loaded or its page (or its entry) is
//!   reported; a page copy standing in for a set-aside record loads blocked; a body that does
//!   not match its digest is never loaded; and a scheduler recovered from what was loaded runs
//!   without panicking.
//!
//! Case count: `FUZZ_CASES` (default 128 per property, a few seconds in debug). Seed:
//! `FUZZ_SEED` (default: random each run). The seed is printed at the start of each property
//! and proptest prints the shrunk failing input, so a failure is replayed exactly with
//! `FUZZ_SEED=<seed> FUZZ_CASES=<cases> cargo test --test behaviour fuzz_inputs`. No persistence file is
//! written (`failure_persistence: None`): a failure found here is turned into a named
//! regression test in the behaviour files instead, where it documents what it proves.
#![cfg(any(not(target_arch = "wasm32"), target_os = "wasi"))]

use crate::common::ENQUEUE_CODES;
use std::collections::{BTreeMap, BTreeSet};

use canvas_scheduler_core::{
    body_digest,
    intent::{check_fields, IntentInput, MAX_SAFE_INTEGER},
    AttemptOutcome, AttemptStatus, CountingHost, SchedulerConfig, SchedulerError,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{from_str, Error as JsonError};

/// The compact JSON text serde_json writes.
fn to_string<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("serializes")
}
use canvas_scheduler_core::{LedgerLoader, LedgerSnapshot, OperationPhase, RecordStore};
use canvas_scheduler_testing::{Harness, MemoryStore};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------------------------
// Configuration: case count and seed from the environment, the seed always printed.

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// A runner with `FUZZ_CASES` cases and the `FUZZ_SEED` seed (random when unset; printed).
fn runner(property: &str) -> TestRunner {
    let cases = env_u64("FUZZ_CASES")
        .unwrap_or(128)
        .clamp(1, u64::from(u32::MAX)) as u32;
    let seed = env_u64("FUZZ_SEED").unwrap_or_else(|| {
        // std's randomly keyed hasher: random on every platform the tests run on (WASI has no
        // process id to mix in).
        use std::hash::BuildHasher;
        std::collections::hash_map::RandomState::new().hash_one(0u64)
    });
    // Printed on stdout: libtest shows it with the failure (or always with --nocapture).
    println!(
        "fuzz_inputs {property}: {cases} cases, seed {seed}\n  replay: FUZZ_SEED={seed} FUZZ_CASES={cases} cargo test --test behaviour fuzz_inputs {property}"
    );
    TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        // Shrinking a 100 KB string is slow; a bounded shrink still reports a small input.
        max_shrink_iters: 2_048,
        ..Config::default()
    })
}

fn run<S: Strategy>(
    property: &str,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S::Value: std::fmt::Debug,
{
    let mut runner = runner(property);
    let result = runner.run(&strategy, test);
    if let Err(failure) = result {
        panic!("{property}: {failure}");
    }
}

fn check_code(error: &SchedulerError, allowed: &[&str]) -> Result<(), TestCaseError> {
    prop_assert!(
        allowed.contains(&error.code()),
        "unexpected code {} ({error})",
        error.code()
    );
    prop_assert!(
        !error.message.is_empty(),
        "empty message for {}",
        error.code()
    );
    Ok(())
}

/// Decodes a JSON value as a `T` from its text, with serde_json.
fn decode<T: DeserializeOwned>(value: &Value) -> Result<T, JsonError> {
    from_str(&to_string(value))
}

// ---------------------------------------------------------------------------------------------
// Regressions found by this fuzzer are pinned as named tests at the end of the file (two so
// far: sequences past 2^53-1, assigned or loaded; both fixed in the core).

// ---------------------------------------------------------------------------------------------
// Generators: JSON values.

/// Strings a hostile or buggy editor might send: empty, unicode, control characters,
/// `__proto__`, NaN-like spellings, near-limit and over-limit lengths.
fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9._:-]{1,12}",
        1 => Just(String::new()),
        1 => Just("__proto__".to_string()),
        1 => Just("constructor".to_string()),
        1 => prop::sample::select(vec!["NaN", "Infinity", "-Infinity", "-0", "1e309", "null", "undefined"])
            .prop_map(str::to_string),
        1 => Just("a b".to_string()),
        1 => Just("é\u{0}\u{202e}😀".to_string()),
        1 => (127usize..=130).prop_map(|n| "x".repeat(n)),
        1 => any::<String>(),
    ]
}

/// Occasionally huge strings (up to ~300 KB, past the 256 KiB payload limit).
fn maybe_huge_string() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => nasty_string(),
        1 => (1usize..300_000).prop_map(|n| "y".repeat(n)),
    ]
}

fn json_number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(json!(MAX_SAFE_INTEGER)),
        Just(json!(MAX_SAFE_INTEGER + 1)),
        Just(json!(0)),
        Just(json!(-1)),
        // serde_json cannot hold NaN or infinities: those become null, like JSON.stringify.
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        Just(json!(1.5)),
    ]
}

fn json_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        json_number(),
        maybe_huge_string().prop_map(Value::String),
    ]
}

/// Arbitrary JSON, a few levels deep, with `__proto__` among the possible keys.
fn json_value() -> impl Strategy<Value = Value> {
    json_leaf().prop_recursive(6, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((nasty_string(), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A chain of arrays/objects around a leaf, around the 64-level payload limit.
fn deep_json() -> impl Strategy<Value = Value> {
    (0usize..140, any::<bool>(), json_leaf()).prop_map(|(depth, objects, leaf)| {
        let mut value = leaf;
        for level in 0..depth {
            value = if objects && level % 2 == 0 {
                json!({ "k": value })
            } else {
                json!([value])
            };
        }
        value
    })
}

fn payload() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => json_value(),
        2 => deep_json(),
        1 => json_value().prop_map(|v| json!({ "__proto__": v })),
        1 => json_value().prop_map(|v| json!({ "nested": [{ "__proto__": v }] })),
        1 => (250_000usize..270_000).prop_map(|n| json!({ "big": "z".repeat(n) })),
    ]
}

// ---------------------------------------------------------------------------------------------
// Generators: IntentInput-shaped objects.

/// Ids from a small pool (so duplicates, known dependencies and cycles are common), plus bad ones.
fn intent_id() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(vec!["a", "b", "c", "d", "e", "base-1", "base-2", "base-3"])
            .prop_map(str::to_string),
        1 => nasty_string(),
    ]
}

fn id_list() -> impl Strategy<Value = Value> {
    prop::collection::vec(intent_id(), 0..4).prop_map(|ids| json!(ids))
}

fn sequence() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => (1u64..50).prop_map(Value::from),
        1 => prop::sample::select(vec![
            json!(0), json!(-1), json!(1.5), json!("3"), json!(MAX_SAFE_INTEGER),
            json!(MAX_SAFE_INTEGER - 1), json!(MAX_SAFE_INTEGER + 1), json!(u64::MAX),
            json!("NaN"), json!(null),
        ]),
    ]
}

fn operation_type() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::sample::select(vec!["shape.upsert", "asset.upload", "run.start", "run.cancel", "custom.kind"])
            .prop_map(Value::from),
        1 => nasty_string().prop_map(Value::from),
        1 => (60usize..70).prop_map(|n| Value::from("k".repeat(n))),
    ]
}

fn expected_versions() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(intent_id(), json_number(), 0..3).prop_map(|m| json!(m))
}

fn blob() -> impl Strategy<Value = Value> {
    (intent_id(), json_number(), nasty_string(), any::<bool>()).prop_map(
        |(id, size, media, extra)| {
            let mut blob = json!({ "id": id, "size": size, "mediaType": media });
            if extra {
                blob["__proto__"] = json!({});
            }
            blob
        },
    )
}

/// One field: absent, well-typed, or of an arbitrary (usually wrong) type.
fn field(good: BoxedStrategy<Value>) -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => Just(None),
        8 => good.prop_map(Some),
        1 => json_value().prop_map(Some),
    ]
    .boxed()
}

/// An IntentInput-shaped object: each known field absent, right or wrong, plus stray keys.
fn intent_json() -> impl Strategy<Value = Value> {
    let fields = (
        prop_oneof![9 => intent_id().prop_map(Value::from).prop_map(Some), 1 => field(json_value().boxed())],
        field(sequence().boxed()),
        prop_oneof![9 => operation_type().prop_map(Some), 1 => field(json_value().boxed())],
        field(id_list().boxed()),
        field(id_list().boxed()),
        field(payload().boxed()),
        field(expected_versions().boxed()),
        field(intent_id().prop_map(Value::from).boxed()),
        field(maybe_huge_string().prop_map(Value::from).boxed()),
        field(blob().boxed()),
    );
    let strays = prop::collection::vec(
        (
            prop_oneof![
                Just("__proto__".to_string()),
                Just("operation_type".to_string()),
                Just("ID".to_string()),
                nasty_string(),
            ],
            json_value(),
        ),
        0..2,
    );
    (fields, prop::bool::weighted(0.1), strays).prop_map(|(f, with_strays, strays)| {
        let names = [
            "id",
            "sequence",
            "operationType",
            "canvasIds",
            "dependencies",
            "payload",
            "expectedVersions",
            "runId",
            "coalesceKey",
            "blob",
        ];
        let values = [f.0, f.1, f.2, f.3, f.4, f.5, f.6, f.7, f.8, f.9];
        let mut object = Map::new();
        for (name, value) in names.iter().zip(values) {
            if let Some(value) = value {
                object.insert((*name).to_string(), value);
            }
        }
        if with_strays {
            object.extend(strays);
        }
        Value::Object(object)
    })
}

/// A batch element: mostly intent-shaped objects, sometimes any JSON at all.
fn batch_element() -> impl Strategy<Value = Value> {
    prop_oneof![9 => intent_json(), 1 => json_value()]
}

/// Valid intents already in the ledger before the fuzzed batches (so duplicates of stored
/// operations, dependencies on them and sequences below theirs are exercised).
fn base_intents(count: usize) -> Vec<IntentInput> {
    (1..=count)
        .map(|n| {
            decode(&json!({
                "id": format!("base-{n}"),
                "operationType": "shape.upsert",
                "canvasIds": [format!("c{}", n % 2)],
                "payload": { "shapeId": n },
            }))
            .unwrap_or_else(|e| panic!("base intent: {e}"))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// (a) Host input through decode, check_fields and enqueue.

fn enqueue_case(
    base: usize,
    batches: Vec<Vec<Value>>,
    answer: Vec<bool>,
) -> Result<(), TestCaseError> {
    let config = SchedulerConfig::default();
    let max_payload = config.max_payload_bytes;
    let mut h = Harness::new(config, CountingHost::new("fz"));
    h.start();
    if base > 0 {
        prop_assert!(h.enqueue(base_intents(base)).is_ok());
    }
    for (round, batch) in batches.into_iter().enumerate() {
        let mut decoded = Vec::new();
        for value in &batch {
            // Decoding never panics; what it accepts survives a round trip unchanged.
            if let Ok(input) = decode::<IntentInput>(value) {
                let again = from_str::<IntentInput>(&to_string(&input));
                prop_assert_eq!(again.as_ref().ok(), Some(&input), "round trip");
                decoded.push(input);
            }
        }
        if decoded.is_empty() {
            continue;
        }
        let mut fields_ok = true;
        for input in &decoded {
            if let Err(error) = check_fields(input, max_payload) {
                check_code(&error, &["invalid_intent", "payload_too_large"])?;
                fields_ok = false;
            }
        }
        let before = h.scheduler.ledger().snapshot();
        let result = h.scheduler.enqueue(h.now, decoded.clone());
        match result {
            Err(error) => {
                check_code(&error, &ENQUEUE_CODES)?;
                prop_assert_eq!(
                    &h.scheduler.ledger().snapshot(),
                    &before,
                    "a refused enqueue ({}) changed the ledger",
                    error
                );
                h.drain();
                prop_assert_eq!(&h.scheduler.ledger().snapshot(), &before);
            }
            Ok(_) => {
                prop_assert!(fields_ok, "enqueue admitted an intent check_fields refuses");
                check_admitted(&h, &before, &decoded)?;
                h.drain();
            }
        }
        // Let some work complete so later batches may depend on resolved operations.
        if answer.get(round).copied().unwrap_or(false) {
            while h
                .answer_first(AttemptStatus::outcome(AttemptOutcome::Applied))
                .is_some()
            {}
        }
    }
    Ok(())
}

/// After an accepted enqueue: every intent is stored as given, sequences strictly increase
/// in batch order, above everything before, and stay JS-safe integers.
fn check_admitted(
    h: &Harness<CountingHost>,
    before: &LedgerSnapshot,
    batch: &[IntentInput],
) -> Result<(), TestCaseError> {
    let ids: BTreeSet<&str> = batch.iter().map(|i| i.id.as_str()).collect();
    prop_assert_eq!(ids.len(), batch.len(), "duplicate ids admitted");
    let mut last = before.meta.last_sequence;
    for input in batch {
        let stored = h.scheduler.ledger().operation(&input.id);
        let compacted_before = stored.is_none()
            && h.scheduler.ledger().tombstone(&input.id).is_some()
            && !before.operations.iter().any(|o| o.intent.id == input.id);
        if compacted_before {
            // Settled and compacted before this enqueue (an enqueue compacts nothing): the
            // identical re-enqueue resolves from its tombstone and stores nothing new.
            prop_assert!(h.scheduler.known(&input.id).is_some());
            continue;
        }
        prop_assert!(stored.is_some(), "{} not in the ledger", input.id);
        let Some(stored) = stored else { continue };
        if before.operations.iter().any(|o| o.intent.id == input.id) {
            continue; // an identical re-enqueue: already there, nothing new
        }
        prop_assert_eq!(&stored.intent.payload, &input.payload);
        prop_assert_eq!(&stored.intent.dependencies, &input.dependencies);
        if let Some(sequence) = input.sequence {
            prop_assert_eq!(stored.intent.sequence, sequence);
        }
        prop_assert!(stored.intent.sequence > last, "sequence did not increase");
        prop_assert!(
            stored.intent.sequence <= MAX_SAFE_INTEGER,
            "{} was given sequence {}, not a safe JS integer",
            input.id,
            stored.intent.sequence
        );
        last = stored.intent.sequence;
    }
    // Every dependency names an operation the ledger knows (whole, or compacted once settled).
    for input in batch {
        for dependency in &input.dependencies {
            prop_assert!(h.scheduler.known(dependency).is_some());
        }
    }
    Ok(())
}

#[test]
fn fuzz_arbitrary_json_never_panics_the_decoder_or_the_checks() {
    run("fuzz_arbitrary_json", json_value(), |value| {
        if let Ok(input) = decode::<IntentInput>(&value) {
            if let Err(error) = check_fields(&input, 256 * 1024) {
                check_code(&error, &["invalid_intent", "payload_too_large"])?;
            }
        }
        Ok(())
    });
}

#[test]
fn fuzz_malformed_intents_are_refused_with_a_code_and_change_nothing() {
    let strategy = (
        0usize..=3,
        prop::collection::vec(prop::collection::vec(batch_element(), 1..5), 1..5),
        prop::collection::vec(any::<bool>(), 4),
    );
    run(
        "fuzz_malformed_intents",
        strategy,
        |(base, batches, answer)| enqueue_case(base, batches, answer),
    );
}

/// Well-formed intents with random dependencies among a small id pool: cycles (including
/// self-loops), unknown dependencies and duplicates are refused as a whole batch.
#[test]
fn fuzz_dependency_graphs_and_explicit_sequences() {
    let intent = (
        prop::sample::select(vec!["a", "b", "c", "d", "e"]),
        prop::collection::vec(
            prop::sample::select(vec!["a", "b", "c", "d", "e", "base-1", "zz"]),
            0..3,
        ),
        prop::option::weighted(
            0.3,
            prop_oneof![1u64..20, Just(MAX_SAFE_INTEGER - 1), Just(MAX_SAFE_INTEGER)],
        ),
    )
        .prop_map(|(id, deps, sequence)| {
            let mut deps: Vec<&str> = deps;
            deps.sort_unstable();
            deps.dedup();
            let mut value = json!({
                "id": id, "operationType": "shape.upsert", "canvasIds": ["c1"],
                "dependencies": deps, "payload": {"n": 1},
            });
            if let Some(sequence) = sequence {
                value["sequence"] = json!(sequence);
            }
            value
        });
    let strategy = (
        0usize..=2,
        prop::collection::vec(prop::collection::vec(intent, 1..6), 1..4),
        prop::collection::vec(any::<bool>(), 3),
    );
    run(
        "fuzz_dependency_graphs",
        strategy,
        |(base, batches, answer)| enqueue_case(base, batches, answer),
    );
}

// ---------------------------------------------------------------------------------------------
// (b) Corrupted ledgers through the loader.

/// A real ledger: operations (some with dependencies, an upload), frozen requests in several
/// phases (applied, retrying, in flight), events, the lease and meta.
fn real_ledger(shape: u8) -> LedgerSnapshot {
    let config = SchedulerConfig {
        concurrency: 1 + usize::from(shape % 3),
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("src"));
    h.start();
    let intents: Vec<Value> = (0..8)
        .map(|n| {
            let mut v = json!({
                "id": format!("op-{n}"),
                "operationType": if n == 3 { "asset.upload" } else { "shape.upsert" },
                "canvasIds": if n == 3 { json!([]) } else { json!([format!("c{}", n % 3)]) },
                "payload": { "shapeId": n, "text": "é\"\\" },
            });
            if n > 4 && shape % 2 == 0 {
                v["dependencies"] = json!([format!("op-{}", n - 2)]);
            }
            v
        })
        .collect();
    let inputs = intents
        .into_iter()
        .map(|v| decode(&v).unwrap_or_else(|e| panic!("intent: {e}")))
        .collect();
    if let Err(error) = h.enqueue(inputs) {
        panic!("enqueue: {error}");
    }
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Unresolved));
    h.advance(5_000);
    h.answer_first(AttemptStatus::outcome(AttemptOutcome::Accepted));
    if shape % 3 == 0 {
        h.answer_first(AttemptStatus::outcome(AttemptOutcome::Rejected));
    }
    h.store.snapshot()
}

/// One corruption of the ledger's records.
#[derive(Clone, Debug)]
enum Mutation {
    /// Replace (or, with `None`, remove) a top-level field of record `pick`.
    Field {
        store: usize,
        pick: usize,
        field: usize,
        value: Option<Value>,
    },
    /// Replace a nested intent field of an operation.
    IntentField {
        pick: usize,
        field: usize,
        value: Value,
    },
    /// Cut a request's body short.
    TruncateBody { pick: usize, at: usize },
    /// Change one byte of a request's body, keeping its digest.
    EditBody { pick: usize, at: usize },
    /// Change a request's digest.
    Digest { pick: usize, digest: String },
    /// Give an operation the sequence of another.
    DuplicateSequence { pick: usize, from: usize },
    /// Give an operation an edge-case sequence (0, 2^53-1, 2^53, u64::MAX, -1, 1.5, "3").
    Sequence { pick: usize, value: Value },
    /// Store a record under another key (may break key order: a page-level error).
    WrongKey {
        store: usize,
        pick: usize,
        key: String,
    },
    /// Replace a whole record with garbage.
    Garbage {
        store: usize,
        pick: usize,
        value: Value,
    },
    /// Swap two records (breaks key order: a page-level error).
    Swap { store: usize, a: usize, b: usize },
    /// Repeat a record (a repeated key: a page-level error).
    Repeat { store: usize, pick: usize },
    /// Corrupt the lease or the meta singleton.
    Singleton { meta: bool, value: Value },
    /// Replace an operation in a page (`field` 0: the whole entry) or one of its intent fields.
    PageEntry {
        pick: usize,
        entry: usize,
        field: usize,
        value: Value,
    },
    /// Put a copy of an operation (from a record or a page) into a page: a stale copy under a
    /// record or a newer page, or the same operation twice in one page.
    CopyIntoPage { source: usize, page: usize },
}

impl Mutation {
    /// Whether this may break page order or keys (so a `corrupt_record` page error is allowed).
    fn breaks_paging(&self) -> bool {
        matches!(
            self,
            Mutation::WrongKey { .. } | Mutation::Swap { .. } | Mutation::Repeat { .. }
        )
    }
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let store = 0usize..STORES.len();
    let pick = any::<prop::sample::Index>().prop_map(|i| i.index(1 << 16));
    prop_oneof![
        4 => (store.clone(), pick.clone(), 0usize..32, prop::option::weighted(0.8, json_value()))
            .prop_map(|(store, pick, field, value)| Mutation::Field { store, pick, field, value }),
        3 => (pick.clone(), 0usize..16, json_value())
            .prop_map(|(pick, field, value)| Mutation::IntentField { pick, field, value }),
        2 => (pick.clone(), pick.clone()).prop_map(|(pick, at)| Mutation::TruncateBody { pick, at }),
        2 => (pick.clone(), pick.clone()).prop_map(|(pick, at)| Mutation::EditBody { pick, at }),
        2 => (pick.clone(), prop_oneof![Just(String::new()), "fnv1a64:[0-9a-f]{16}", nasty_string()])
            .prop_map(|(pick, digest)| Mutation::Digest { pick, digest }),
        2 => (pick.clone(), pick.clone()).prop_map(|(pick, from)| Mutation::DuplicateSequence { pick, from }),
        1 => (pick.clone(), prop::sample::select(vec![
            json!(0), json!(MAX_SAFE_INTEGER), json!(MAX_SAFE_INTEGER + 1), json!(u64::MAX),
            json!(-1), json!(1.5), json!("3"),
        ])).prop_map(|(pick, value)| Mutation::Sequence { pick, value }),
        1 => (store.clone(), pick.clone(), nasty_string())
            .prop_map(|(store, pick, key)| Mutation::WrongKey { store, pick, key }),
        2 => (store.clone(), pick.clone(), json_value())
            .prop_map(|(store, pick, value)| Mutation::Garbage { store, pick, value }),
        1 => (store.clone(), pick.clone(), pick.clone()).prop_map(|(store, a, b)| Mutation::Swap { store, a, b }),
        1 => (store, pick.clone()).prop_map(|(store, pick)| Mutation::Repeat { store, pick }),
        1 => (any::<bool>(), json_value()).prop_map(|(meta, value)| Mutation::Singleton { meta, value }),
        2 => (pick.clone(), pick.clone(), 0usize..16, json_value())
            .prop_map(|(pick, entry, field, value)| Mutation::PageEntry { pick, entry, field, value }),
        2 => (pick.clone(), pick.clone()).prop_map(|(source, page)| Mutation::CopyIntoPage { source, page }),
    ]
}

const STORES: [RecordStore; 4] = [
    RecordStore::Operations,
    RecordStore::Requests,
    RecordStore::Events,
    RecordStore::OperationPages,
];
/// Index of the operation pages in [`STORES`].
const PAGES: usize = 3;

/// The ledger as the store would page it: key-ordered records per store, then the singletons.
/// Operation pages hold JSON arrays of operations, keyed by page number.
struct Records {
    stores: [Vec<(String, Value)>; 4],
    lease: Option<Value>,
    meta: Option<Value>,
}

fn to_value<T: Serialize + ?Sized>(record: &T) -> Value {
    from_str(&to_string(record)).unwrap_or_else(|e| panic!("serialize: {e}"))
}

/// The snapshot's records; with `paged` > 0, every operation whose place is a multiple of
/// `paged` is stored in a page (up to three a page) instead of its own record.
fn records(snapshot: &LedgerSnapshot, paged: usize) -> Records {
    let mut operations: Vec<(String, Value)> = snapshot
        .operations
        .iter()
        .map(|o| (o.intent.id.clone(), to_value(o)))
        .collect();
    operations.sort_by(|x, y| x.0.cmp(&y.0));
    let mut in_pages = Vec::new();
    if paged > 0 {
        let (moved, kept): (Vec<_>, Vec<_>) = operations
            .into_iter()
            .enumerate()
            .partition(|(at, _)| at % paged == 0);
        operations = kept.into_iter().map(|(_, record)| record).collect();
        in_pages = moved.into_iter().map(|(_, (_, value))| value).collect();
    }
    let pages: Vec<(String, Value)> = in_pages
        .chunks(3)
        .enumerate()
        .map(|(no, ops)| ((no + 1).to_string(), Value::Array(ops.to_vec())))
        .collect();
    let mut requests: Vec<(String, Value)> = snapshot
        .requests
        .iter()
        .map(|r| (r.id.clone(), to_value(r)))
        .collect();
    requests.sort_by(|x, y| x.0.cmp(&y.0));
    let mut events: Vec<(u64, Value)> = snapshot
        .events
        .iter()
        .map(|e| (e.seq, to_value(e)))
        .collect();
    events.sort_by_key(|e| e.0);
    Records {
        stores: [
            operations,
            requests,
            events
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
            pages,
        ],
        lease: snapshot.lease.as_ref().map(to_value),
        meta: Some(to_value(&snapshot.meta)),
    }
}

fn apply(records: &mut Records, mutation: &Mutation) {
    let len = |records: &Records, store: usize| records.stores[store].len();
    match mutation {
        Mutation::Field {
            store,
            pick,
            field,
            value,
        } => {
            let n = len(records, *store);
            if n == 0 {
                return;
            }
            let record = &mut records.stores[*store][pick % n].1;
            let Some(map) = record.as_object_mut() else {
                return;
            };
            let keys: Vec<String> = map.keys().cloned().collect();
            if keys.is_empty() {
                return;
            }
            let key = keys[field % keys.len()].clone();
            match value {
                Some(value) => {
                    map.insert(key, value.clone());
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        Mutation::IntentField { pick, field, value } => {
            let n = len(records, 0);
            if n == 0 {
                return;
            }
            let record = &mut records.stores[0][pick % n].1;
            let Some(intent) = record.get_mut("intent").and_then(Value::as_object_mut) else {
                return;
            };
            let keys: Vec<String> = intent.keys().cloned().collect();
            if !keys.is_empty() {
                intent.insert(keys[field % keys.len()].clone(), value.clone());
            }
        }
        Mutation::TruncateBody { pick, at } | Mutation::EditBody { pick, at } => {
            let n = len(records, 1);
            if n == 0 {
                return;
            }
            let record = &mut records.stores[1][pick % n].1;
            let Some(body) = record
                .get("body")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                return;
            };
            let chars: Vec<char> = body.chars().collect();
            if chars.is_empty() {
                return;
            }
            let at = at % chars.len();
            let changed: String = if matches!(mutation, Mutation::TruncateBody { .. }) {
                chars[..at].iter().collect()
            } else {
                let mut chars = chars;
                chars[at] = if chars[at] == '1' { '2' } else { '1' };
                chars.into_iter().collect()
            };
            record["body"] = Value::String(changed);
        }
        Mutation::Digest { pick, digest } => {
            let n = len(records, 1);
            if n == 0 {
                return;
            }
            let record = &mut records.stores[1][pick % n].1;
            // Only where the record still is an object with a digest (a garbage record stays).
            if let Some(stored) = record.pointer_mut("/digest") {
                *stored = if stored.as_str() != Some(digest.as_str()) {
                    Value::String(digest.clone())
                } else {
                    Value::String(format!("{digest}0"))
                };
            }
        }
        Mutation::DuplicateSequence { pick, from } => {
            let n = len(records, 0);
            if n == 0 {
                return;
            }
            let sequence = records.stores[0][from % n].1["intent"]["sequence"].clone();
            if let Some(target) = records.stores[0][pick % n]
                .1
                .pointer_mut("/intent/sequence")
            {
                *target = sequence;
            }
        }
        Mutation::Sequence { pick, value } => {
            let n = len(records, 0);
            if n == 0 {
                return;
            }
            if let Some(target) = records.stores[0][pick % n]
                .1
                .pointer_mut("/intent/sequence")
            {
                *target = value.clone();
            }
        }
        Mutation::WrongKey { store, pick, key } => {
            let n = len(records, *store);
            if n > 0 {
                records.stores[*store][pick % n].0 = key.clone();
            }
        }
        Mutation::Garbage { store, pick, value } => {
            let n = len(records, *store);
            if n > 0 {
                records.stores[*store][pick % n].1 = value.clone();
            }
        }
        Mutation::Swap { store, a, b } => {
            let n = len(records, *store);
            if n > 0 {
                records.stores[*store].swap(a % n, b % n);
            }
        }
        Mutation::Repeat { store, pick } => {
            let n = len(records, *store);
            if n > 0 {
                let record = records.stores[*store][pick % n].clone();
                records.stores[*store].insert(pick % n, record);
            }
        }
        Mutation::Singleton { meta, value } => {
            if *meta {
                records.meta = Some(value.clone());
            } else {
                records.lease = Some(value.clone());
            }
        }
        Mutation::PageEntry {
            pick,
            entry,
            field,
            value,
        } => {
            let n = len(records, PAGES);
            if n == 0 {
                return;
            }
            let Some(ops) = records.stores[PAGES][pick % n].1.as_array_mut() else {
                return;
            };
            if ops.is_empty() {
                return;
            }
            let at = entry % ops.len();
            if *field == 0 {
                ops[at] = value.clone();
            } else if let Some(intent) = ops[at].get_mut("intent").and_then(Value::as_object_mut) {
                let keys: Vec<String> = intent.keys().cloned().collect();
                if !keys.is_empty() {
                    intent.insert(keys[field % keys.len()].clone(), value.clone());
                }
            }
        }
        Mutation::CopyIntoPage { source, page } => {
            let n = len(records, PAGES);
            let sources: Vec<Value> = records.stores[0]
                .iter()
                .map(|(_, v)| v.clone())
                .chain(
                    records.stores[PAGES]
                        .iter()
                        .filter_map(|(_, v)| v.as_array())
                        .flatten()
                        .cloned(),
                )
                .collect();
            if n == 0 || sources.is_empty() {
                return;
            }
            let copy = sources[source % sources.len()].clone();
            if let Some(ops) = records.stores[PAGES][page % n].1.as_array_mut() {
                ops.push(copy);
            }
        }
    }
}

/// The operation ids a page record names (entries that are not legible operations name none).
fn page_ids(page: &Value) -> Vec<String> {
    page.as_array()
        .into_iter()
        .flatten()
        .filter_map(|op| op.pointer("/intent/id").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

fn loader_case(
    shape: u8,
    mutations: Vec<Mutation>,
    page_size: usize,
    oversize: bool,
    recover: bool,
    paged: usize,
) -> Result<(), TestCaseError> {
    let original = real_ledger(shape);
    let clean = records(&original, paged);
    let mut records = records(&original, paged);
    for mutation in &mutations {
        apply(&mut records, mutation);
    }
    let paging_broken = mutations.iter().any(Mutation::breaks_paging) || oversize;
    // Operations are counted by id (a page holds many, a record may supersede a page copy);
    // every other record one by one.
    let input_count = records.stores[1].len()
        + records.stores[2].len()
        + usize::from(records.lease.is_some())
        + usize::from(records.meta.is_some());

    let mut loader = LedgerLoader::new();
    let mut page_error = None;
    'stores: for (slot, store) in STORES.iter().enumerate() {
        for page in records.stores[slot].chunks(page_size) {
            // An oversized page: the store handed back more than it was asked for.
            let limit = if oversize && page.len() > 1 {
                page.len() - 1
            } else {
                page_size
            };
            if let Err(error) = loader.add_page(*store, limit, page.to_vec()) {
                page_error = Some(error);
                break 'stores;
            }
        }
    }
    if let Some(error) = page_error {
        check_code(&error, &["corrupt_record"])?;
        prop_assert!(
            paging_broken,
            "page-level error without a paging corruption: {}",
            error
        );
        return Ok(());
    }
    loader.set_singletons(records.lease.clone(), records.meta.clone());
    let (loaded, quarantined) = loader.finish();

    // Never silently dropped: every record read is loaded or quarantined.
    let loaded_count = loaded.requests.len()
        + loaded.events.len()
        + usize::from(loaded.lease.is_some())
        + usize::from(records.meta.is_some() && !quarantined.iter().any(|q| q.store == "meta"));
    let operation_reports: Vec<(&str, &str)> = quarantined
        .iter()
        .filter(|q| q.store == "operations" || q.store == "operation_pages")
        .map(|q| (q.store, q.key.as_str()))
        .collect();
    prop_assert_eq!(
        loaded_count + quarantined.len() - operation_reports.len(),
        input_count,
        "records lost: {} loaded, {} quarantined, {} read; quarantined: {:?}",
        loaded_count,
        quarantined.len(),
        input_count,
        quarantined
            .iter()
            .map(|q| (q.store, &q.key, &q.reason))
            .collect::<Vec<_>>()
    );
    for q in &quarantined {
        prop_assert!(!q.reason.is_empty());
    }
    // Every operation record and every operation a page names is loaded, or its record, its
    // page or its entry in the page is reported.
    let loaded_ids: BTreeSet<&str> = loaded
        .operations
        .iter()
        .map(|o| o.intent.id.as_str())
        .collect();
    let reported = |store: &str, key: &str| operation_reports.contains(&(store, key));
    for (key, _) in &records.stores[0] {
        prop_assert!(
            loaded_ids.contains(key.as_str()) || reported("operations", key),
            "operation record {} neither loaded nor reported: {:?}",
            key,
            operation_reports
        );
    }
    // A page copy standing in for a record that was set aside is never trusted as current.
    for op in &loaded.operations {
        if reported("operations", &op.intent.id) && op.phase == OperationPhase::Pending {
            prop_assert!(
                op.blockers.iter().any(|b| b == "record_quarantined"),
                "{} loaded from a page copy unblocked after its record was set aside",
                op.intent.id
            );
        }
    }
    for (page, value) in &records.stores[PAGES] {
        for id in page_ids(value) {
            prop_assert!(
                loaded_ids.contains(id.as_str())
                    || reported("operation_pages", page)
                    || reported("operation_pages", &format!("{page}/{id}")),
                "operation {} of page {} neither loaded nor reported: {:?}",
                id,
                page,
                operation_reports
            );
        }
    }
    if mutations.is_empty() {
        prop_assert!(
            quarantined.is_empty(),
            "a clean ledger lost records: {:?}",
            quarantined
        );
        prop_assert_eq!(loaded.operations.len(), original.operations.len());
        prop_assert_eq!(loaded.requests.len(), original.requests.len());
    }

    // A body that does not match its digest is never loaded, and no altered body is.
    let clean_bodies: BTreeMap<&str, &str> = clean.stores[1]
        .iter()
        .filter_map(|(_, v)| Some((v["digest"].as_str()?, v["body"].as_str()?)))
        .collect();
    for request in &loaded.requests {
        prop_assert_eq!(body_digest(&request.body), request.digest.clone());
        prop_assert_eq!(
            clean_bodies.get(request.digest.as_str()).copied(),
            Some(request.body.as_str()),
            "request {} was loaded with a body that was never frozen",
            request.id
        );
    }
    // Loaded operations are unique by id and by sequence; meta covers every sequence.
    let ids: BTreeSet<&str> = loaded
        .operations
        .iter()
        .map(|o| o.intent.id.as_str())
        .collect();
    let sequences: BTreeSet<u64> = loaded
        .operations
        .iter()
        .map(|o| o.intent.sequence)
        .collect();
    prop_assert_eq!(ids.len(), loaded.operations.len());
    prop_assert_eq!(sequences.len(), loaded.operations.len());
    prop_assert!(sequences.iter().all(|s| *s <= loaded.meta.last_sequence));
    // A sequence no conforming scheduler could have written is corrupt: quarantined.
    if let Some(unsafe_op) = loaded
        .operations
        .iter()
        .find(|o| o.intent.sequence > MAX_SAFE_INTEGER)
    {
        prop_assert!(
            false,
            "operation {} loaded with sequence {}, above 2^53-1",
            unsafe_op.intent.id,
            unsafe_op.intent.sequence
        );
    }

    if recover {
        recover_from(loaded)?;
    }
    Ok(())
}

/// A scheduler recovered from whatever was loaded starts (or refuses with a code), takes new
/// work and runs it without panicking.
fn recover_from(mut loaded: LedgerSnapshot) -> Result<(), TestCaseError> {
    // The lease record is the loader's business, not the recovery's: start from a free lease.
    loaded.lease = None;
    let mut h = Harness::over(
        SchedulerConfig::default(),
        CountingHost::new("rec"),
        MemoryStore::from_snapshot(loaded),
        10_000_000,
    );
    if let Err(error) = h.scheduler.start(h.now) {
        check_code(&error, &["recovery_claim_conflict", "corrupt_record"])?;
        return Ok(());
    }
    h.drain();
    let fresh: IntentInput = decode(&json!({
        "id": "after-recovery", "operationType": "shape.upsert", "canvasIds": ["c9"],
    }))
    .map_err(|e| TestCaseError::fail(e.to_string()))?;
    if let Err(error) = h.enqueue(vec![fresh]) {
        check_code(&error, &ENQUEUE_CODES)?;
    }
    for _ in 0..20 {
        h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied));
        h.advance(60_000);
    }
    Ok(())
}

#[test]
fn fuzz_corrupted_ledgers_are_quarantined_never_dropped_or_trusted() {
    let strategy = (
        any::<u8>(),
        prop::collection::vec(mutation(), 0..5),
        1usize..6,
        prop::bool::weighted(0.05),
        prop::bool::weighted(0.5),
        // Operations stored in pages: none (0), every one, every second or every third.
        0usize..4,
    );
    run(
        "fuzz_corrupted_ledgers",
        strategy,
        |(shape, mutations, page_size, oversize, recover, paged)| {
            loader_case(shape, mutations, page_size, oversize, recover, paged)
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Regressions found by this fuzzer, pinned with their minimal inputs (both fixed in the core:
// sequences stay at or below 2^53-1, assigned or loaded).

fn plain_edit(id: &str) -> IntentInput {
    decode(&json!({"id": id, "operationType": "shape.upsert", "canvasIds": ["c1"]}))
        .unwrap_or_else(|e| panic!("intent: {e}"))
}

#[test]
fn regression_auto_assigned_sequence_never_passes_max_safe_integer() {
    let mut h = Harness::new(SchedulerConfig::default(), CountingHost::new("b1"));
    h.start();
    let top = IntentInput {
        sequence: Some(MAX_SAFE_INTEGER),
        ..plain_edit("a")
    };
    // Minimal input from the fuzzer: one batch [{a, sequence: 2^53-1}, {b}].
    let result = h.enqueue(vec![top, plain_edit("b")]);
    let sequence = h
        .scheduler
        .ledger()
        .operation("b")
        .map(|o| o.intent.sequence);
    assert!(
        result.is_err() || sequence.is_some_and(|s| s <= MAX_SAFE_INTEGER),
        "b was admitted with sequence {sequence:?}"
    );
}

#[test]
fn regression_a_stored_sequence_above_max_safe_integer_is_quarantined() {
    let mut h = Harness::new(SchedulerConfig::default(), CountingHost::new("b2"));
    h.start();
    if let Err(error) = h.enqueue(vec![plain_edit("a")]) {
        panic!("enqueue: {error}");
    }
    let mut record = to_value(&h.store.snapshot().operations[0]);
    record["intent"]["sequence"] = json!(u64::MAX);
    let mut loader = LedgerLoader::new();
    if let Err(error) = loader.add_page(RecordStore::Operations, 10, vec![("a".into(), record)]) {
        panic!("page: {error}");
    }
    let (loaded, quarantined) = loader.finish();
    assert_eq!(
        (loaded.operations.len(), quarantined.len()),
        (0, 1),
        "sequence u64::MAX was loaded (last_sequence {}); enqueueing next panics with \
         'attempt to add with overflow' at core/src/scheduler/enqueue.rs (validate_batch)",
        loaded.meta.last_sequence
    );
}
