//! The generator of `codec-golden.jsonl`: every stored string of the ledger fixture's dump,
//! then records drawn from a seeded generator (the spirit of `fuzz_inputs.rs`'s strategies:
//! hostile strings, numbers as JS and servers spell them, nesting, every optional field
//! present or not), each encoded by the module's codec as it is, with the digests it computes.

use std::collections::BTreeMap;

use canvas_scheduler_core::{
    body_digest,
    intent::IntentInput,
    json_text::{self, quoted, JsonText},
    packed::PackedPage,
    retention::Tombstone,
    BatchEntry, BatchPayload, BlobRef, EventKind, EventRecord, FrozenRequest, Intent, Lease,
    Operation, OperationOutcome, OperationPhase, RequestPhase, RetryAction, SafeError, Settlement,
    WireBody,
};
use serde_json::{Map, Value};

use super::{digests, InboxEntry};

const DUMP: &str = include_str!("../../fixtures/ledger-v10/dump.json");

/// SplitMix64: the same numbers on every platform, for ever.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    /// 0..=2^53-1, mostly small, sometimes at the edge.
    fn integer(&mut self) -> u64 {
        match self.below(6) {
            0 => 0,
            1 => self.below(100),
            2 => self.below(1 << 32),
            3 => (1 << 53) - 1 - self.below(3),
            _ => 1_796_000_000_000 + self.below(10_000_000),
        }
    }
}

/// Strings a hostile or careless host might give: escapes, controls, non-BMP, bidi, long.
const STRINGS: &[&str] = &[
    "a",
    "",
    "shape.upsert",
    "é\"\\q",
    "\u{0}",
    "tab\there\nnewline\r",
    "\u{1f}\u{7f}\u{80}",
    "\u{8}\u{c}",
    "😀 emoji",
    "\u{202e}bidi",
    "\u{2028}\u{2029}",
    "__proto__",
    "constructor",
    "a b",
    "NaN",
    "-0",
    "1e309",
    "</script>",
    "日本語",
    "\u{fffd}\u{feff}",
];

/// Numbers as a JS host writes them (through the module) and as servers send them.
const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "1.5",
    "-2.5",
    "1e+21",
    "1e21",
    "1E+2",
    "1e-7",
    "5e-324",
    "1.7976931348623157e+308",
    "9007199254740991",
    "-9007199254740991",
    "12345678901234567890",
    "1.10",
    "0.1",
    "3.141592653589793",
    "100",
];

fn string(rng: &mut Rng) -> String {
    match rng.below(20) {
        0 => "x".repeat(120 + rng.below(20) as usize),
        1 => format!("{}-{}", rng.pick(STRINGS), rng.below(1000)),
        _ => (*rng.pick(STRINGS)).to_owned(),
    }
}

fn id(rng: &mut Rng, prefix: &str) -> String {
    if rng.chance(10) {
        format!("{prefix}-{}", rng.pick(&["é", "😀", "a b", "\"q\"", "\\"]))
    } else {
        format!("{prefix}-{}", rng.below(100_000))
    }
}

/// A JSON text as the module keeps one: strings escaped as it escapes them, numbers as given.
fn json_text(rng: &mut Rng, depth: u32) -> String {
    let leaf = depth >= 3 || rng.chance(45);
    if leaf {
        return match rng.below(6) {
            0 => "null".into(),
            1 => (*rng.pick(&["true", "false"])).into(),
            2 | 3 => (*rng.pick(NUMBERS)).into(),
            _ => quoted(&string(rng)),
        };
    }
    let n = rng.below(4);
    if rng.chance(50) {
        let items: Vec<String> = (0..n).map(|_| json_text(rng, depth + 1)).collect();
        format!("[{}]", items.join(","))
    } else {
        let members: Vec<String> = (0..n)
            .map(|_| format!("{}:{}", quoted(&string(rng)), json_text(rng, depth + 1)))
            .collect();
        format!("{{{}}}", members.join(","))
    }
}

fn payload(rng: &mut Rng) -> JsonText {
    JsonText::compact(&json_text(rng, 0)).expect("the generator writes JSON")
}

/// A value kept only when present (`canonical`, error `details`): never `null`, which the
/// module leaves out where it reads one (`Members::present`).
fn present_value(rng: &mut Rng) -> JsonText {
    loop {
        let value = payload(rng);
        if !value.is_null() {
            return value;
        }
    }
}

fn maybe<T>(rng: &mut Rng, percent: u64, make: impl FnOnce(&mut Rng) -> T) -> Option<T> {
    rng.chance(percent).then(|| make(rng))
}

fn strings(rng: &mut Rng, prefix: &str, most: u64) -> Vec<String> {
    (0..rng.below(most + 1)).map(|_| id(rng, prefix)).collect()
}

fn versions(rng: &mut Rng) -> BTreeMap<String, u64> {
    (0..rng.below(3))
        .map(|_| (id(rng, "c"), rng.integer()))
        .collect()
}

fn safe_error(rng: &mut Rng) -> SafeError {
    let code = rng.pick(&[
        "conflict",
        "http_503",
        "transport_unknown",
        "superseded",
        "é",
    ]);
    let error = SafeError::new(code, &string(rng));
    match rng.below(3) {
        0 => error,
        1 => error.with_details(present_value(rng)),
        _ => error.with_invalid_details(),
    }
}

fn blob(rng: &mut Rng) -> BlobRef {
    BlobRef {
        id: id(rng, "blob"),
        size: rng.integer(),
        media_type: (*rng.pick(&["image/png", "", "application/octet-stream"])).to_owned(),
        name: maybe(rng, 50, string),
    }
}

fn intent(rng: &mut Rng) -> Intent {
    let kind = *rng.pick(&["shape.upsert", "shape.delete", "asset.upload", "run.start"]);
    let mut intent = Intent::new(id(rng, "op"), rng.integer(), kind.to_owned());
    intent.canvas_ids = strings(rng, "c", 3);
    intent.dependencies = strings(rng, "op", 2);
    if rng.chance(90) {
        intent.payload = payload(rng);
    }
    intent.expected_versions = versions(rng);
    intent.run_id = maybe(rng, 20, |r| id(r, "run"));
    intent.coalesce_key = maybe(rng, 20, |r| id(r, "shape"));
    intent.blob = maybe(rng, 15, |r| Box::new(blob(r)));
    intent.revision = rng.below(3) as u32;
    intent.principal = maybe(rng, 50, |r| id(r, "user"));
    intent
}

fn settlement(rng: &mut Rng) -> Settlement {
    *rng.pick(&[
        Settlement::Applied,
        Settlement::Rejected,
        Settlement::Discarded,
    ])
}

fn operation(rng: &mut Rng) -> Operation {
    let mut op = Operation::new(intent(rng));
    op.blockers = if rng.chance(20) {
        strings(rng, "blocker", 2)
    } else {
        Vec::new()
    };
    op.request_id = maybe(rng, 50, |r| id(r, "req"));
    if rng.chance(40) {
        op.phase = OperationPhase::Resolved;
        op.outcome = Some(Box::new(OperationOutcome {
            settlement: settlement(rng),
            request_id: maybe(rng, 70, |r| id(r, "req")),
            error: maybe(rng, 40, safe_error),
            canonical: maybe(rng, 40, present_value),
            at: rng.integer(),
        }));
    }
    op.given_digest = maybe(rng, 15, |r| body_digest(&string(r)));
    op
}

fn wire_body(rng: &mut Rng, ops: &[Operation], payload: &JsonText) -> (String, String) {
    let first = &ops[0].intent;
    let request_id = id(rng, "req");
    let operation_ids: Vec<String> = ops.iter().map(|op| op.intent.id.clone()).collect();
    let mut canvases = first.canvas_ids.clone();
    canvases.sort();
    canvases.dedup();
    let body = json_text::to_string(&WireBody {
        id: &request_id,
        operation_ids: &operation_ids,
        kind: &first.operation_type,
        owner_canvas_id: canvases.first().map(String::as_str),
        run_id: first.run_id.as_deref(),
        protocol_version: 1,
        payload,
        canvas_ids: &canvases,
        expected_versions: &first.expected_versions,
    });
    (request_id, body)
}

fn batch(ops: &[Operation]) -> String {
    json_text::to_string(&BatchPayload {
        operations: ops
            .iter()
            .map(|op| BatchEntry {
                kind: &op.intent.operation_type,
                operation_id: &op.intent.id,
                payload: &op.intent.payload,
            })
            .collect(),
    })
}

fn request(rng: &mut Rng) -> (FrozenRequest, String) {
    let ops: Vec<Operation> = (0..1 + rng.below(3)).map(|_| operation(rng)).collect();
    let payload = if ops.len() > 1 {
        JsonText::compact(&batch(&ops)).expect("a batch is JSON")
    } else {
        ops[0].intent.payload.clone()
    };
    let (request_id, body) = wire_body(rng, &ops, &payload);
    let first = &ops[0].intent;
    let request = FrozenRequest {
        id: request_id,
        operation_ids: ops.iter().map(|op| op.intent.id.clone()).collect(),
        kind: first.operation_type.clone(),
        owner_canvas_id: first.canvas_ids.first().cloned(),
        run_id: first.run_id.clone(),
        protocol_version: 1,
        canvas_ids: first.canvas_ids.clone(),
        expected_versions: first.expected_versions.clone(),
        digest: body_digest(&body),
        body: body.clone(),
        principal: first.principal.clone(),
        revisions: ops.iter().map(|op| op.intent.revision).collect(),
        phase: *rng.pick(&[
            RequestPhase::Frozen,
            RequestPhase::Dispatched,
            RequestPhase::Accepted,
            RequestPhase::Resolved,
        ]),
        attempt: rng.below(30) as u32,
        failures: rng.below(20) as u32,
        retry_at: maybe(rng, 40, Rng::integer),
        retry_action: maybe(rng, 40, |r| {
            *r.pick(&[RetryAction::Submit, RetryAction::Query])
        }),
        outcome: maybe(rng, 30, settlement),
        error: maybe(rng, 30, safe_error),
        canonical: maybe(rng, 20, present_value),
        blocked: maybe(rng, 15, |r| {
            (*r.pick(&["dead_letter", "unauthorized"])).to_owned()
        }),
        frozen_at: rng.integer(),
    };
    (request, body)
}

fn event(rng: &mut Rng, seq: u64) -> EventRecord {
    EventRecord {
        seq,
        at: rng.integer(),
        kind: *rng.pick(&[
            EventKind::Claimed,
            EventKind::Reclaimed,
            EventKind::Dispatched,
            EventKind::Settled,
            EventKind::RetryScheduled,
            EventKind::Blocked,
            EventKind::DeadLettered,
            EventKind::LeaseAcquired,
            EventKind::LeaseLost,
        ]),
        request_id: maybe(rng, 70, |r| id(r, "req")),
        operation_id: maybe(rng, 60, |r| id(r, "op")),
        attempt: maybe(rng, 60, |r| r.below(20) as u32),
        fence: maybe(rng, 80, |r| 1 + r.below(50)),
        detail: maybe(rng, 50, string),
    }
}

fn tombstone(rng: &mut Rng, key: u64) -> Tombstone {
    Tombstone {
        key,
        id: id(rng, "op"),
        principal: maybe(rng, 50, |r| id(r, "user")),
        digest: body_digest(&string(rng)),
        sequence: rng.integer(),
        settlement: settlement(rng),
        settled_at: rng.integer(),
        replaced_by: maybe(rng, 20, |r| id(r, "op")),
        chain_end: None,
        whole: None,
    }
}

fn input(rng: &mut Rng) -> IntentInput {
    let intent = intent(rng);
    IntentInput {
        id: intent.id,
        sequence: maybe(rng, 20, Rng::integer),
        operation_type: intent.operation_type,
        canvas_ids: intent.canvas_ids,
        dependencies: intent.dependencies,
        payload: intent.payload,
        expected_versions: maybe(rng, 40, versions),
        run_id: intent.run_id,
        coalesce_key: intent.coalesce_key,
        blob: intent.blob.map(|b| *b),
    }
}

/// One line of the corpus: the text, where it came from, and the digests the module computes.
fn line(kind: &str, source: &str, text: &str) -> String {
    let mut out = Map::new();
    out.insert("type".into(), Value::from(kind));
    out.insert("source".into(), Value::from(source));
    out.insert("text".into(), Value::from(text));
    for (name, value) in digests(kind, text).expect("the module's own text decodes") {
        out.insert(name.into(), value);
    }
    serde_json::to_string(&Value::Object(out)).expect("a line is JSON")
}

/// Every stored string of the ledger fixture, typed by its store (the planted corrupt record
/// left out), and every frozen body in it.
fn dump_lines(out: &mut Vec<String>) {
    let dump: Value = serde_json::from_str(DUMP).expect("dump.json");
    for store in dump["stores"].as_array().expect("stores") {
        let name = store["name"].as_str().expect("name");
        for record in store["records"].as_array().expect("records") {
            let key = match &record[0] {
                Value::String(key) => key.clone(),
                other => other.to_string(),
            };
            let source = format!("dump:{name}/{key}");
            let value = &record[1];
            let (kind, text) = match name {
                "operations" | "settled" => ("Operation", value.as_str()),
                "requests" => ("FrozenRequest", value.as_str()),
                "ledger_lease" => ("Lease", value.as_str()),
                "events" => ("EventPage", value.as_str()),
                "tombstones" => ("TombstonePage", value.as_str()),
                "inbox" => ("InboxEntry", value.as_str()),
                "operation_pages" => ("PackedPage", value["json"]["$u8text"].as_str()),
                _ => continue,
            };
            let text = text.expect("a stored JSON text");
            if key == "corrupt-1" {
                continue;
            }
            out.push(line(kind, &source, text));
            if kind == "FrozenRequest" {
                let request: FrozenRequest = serde_json::from_str(text).expect("a request");
                out.push(line("WireBody", &source, &request.body));
            }
            if kind == "InboxEntry" {
                let entry: InboxEntry = serde_json::from_str(text).expect("an inbox entry");
                for intent in &entry.intents {
                    out.push(line("IntentInput", &source, &json_text::to_string(intent)));
                }
            }
        }
    }
}

/// The corpus as the module's codec writes it today.
pub(super) fn corpus() -> String {
    let mut out = Vec::new();
    dump_lines(&mut out);
    let mut rng = Rng(0x5eed_c0de_0060_0059);
    let generated = "generated";
    for _ in 0..400 {
        let op = operation(&mut rng);
        out.push(line("Operation", generated, &json_text::to_string(&op)));
    }
    for _ in 0..100 {
        let intent = intent(&mut rng);
        out.push(line("Intent", generated, &json_text::to_string(&intent)));
    }
    for _ in 0..200 {
        let (request, body) = request(&mut rng);
        out.push(line(
            "FrozenRequest",
            generated,
            &json_text::to_string(&request),
        ));
        out.push(line("WireBody", generated, &body));
    }
    for _ in 0..30 {
        let lease = Lease {
            owner: id(&mut rng, "tab"),
            fence: 1 + rng.integer(),
            expires_at: rng.integer(),
        };
        out.push(line("Lease", generated, &json_text::to_string(&lease)));
    }
    for _ in 0..60 {
        let first = 1 + rng.integer() / 2;
        let page: Vec<EventRecord> = (0..1 + rng.below(4))
            .map(|n| event(&mut rng, first + n))
            .collect();
        out.push(line("EventPage", generated, &json_text::to_string(&page)));
    }
    for _ in 0..60 {
        let first = rng.integer();
        let page: Vec<Tombstone> = (0..1 + rng.below(4))
            .map(|n| tombstone(&mut rng, first.saturating_add(n)))
            .collect();
        out.push(line(
            "TombstonePage",
            generated,
            &json_text::to_string(&page),
        ));
    }
    for _ in 0..100 {
        let error = safe_error(&mut rng);
        out.push(line("SafeError", generated, &json_text::to_string(&error)));
    }
    for _ in 0..150 {
        let input = input(&mut rng);
        out.push(line(
            "IntentInput",
            generated,
            &json_text::to_string(&input),
        ));
    }
    for _ in 0..30 {
        let entry = InboxEntry {
            origin: id(&mut rng, "tab"),
            principal: maybe(&mut rng, 50, |r| id(r, "user")),
            at: rng.integer(),
            intents: (0..1 + rng.below(3)).map(|_| input(&mut rng)).collect(),
        };
        out.push(line("InboxEntry", generated, &json_text::to_string(&entry)));
    }
    for _ in 0..80 {
        let page: Vec<Operation> = (0..1 + rng.below(4)).map(|_| operation(&mut rng)).collect();
        out.push(line(
            "PackedPage",
            generated,
            &json_text::to_string(&PackedPage(&page)),
        ));
    }
    for _ in 0..40 {
        let ops: Vec<Operation> = (0..1 + rng.below(4)).map(|_| operation(&mut rng)).collect();
        out.push(line("BatchPayload", generated, &batch(&ops)));
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}
