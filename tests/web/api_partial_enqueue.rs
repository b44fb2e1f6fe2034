//! Partial enqueue as JavaScript sees it: `enqueueMany(intents, { atomic:
//! false })` stores the valid intents and resolves to one result per intent; the default
//! stays all-or-none; bad options are refused with `invalid_options` and store nothing. In
//! the dispatching tab and in one that does not dispatch (through the inbox).

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js};

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    )
}

/// A scheduler on ledger `run`, never started (nothing is sent: what is stored stays
/// pending), whose transport answers `applied`; payloads up to 1 KiB.
async fn open(run: &str, owner: &str) -> Scheduler {
    let options = js(&format!(
        "{{ database: 'cs-partial-{run}', owner: '{owner}', leaseMs: 1000, maxPayloadBytes: 1024,
           transport: {{ submit: async () => ({{ outcome: 'applied' }}), query: async () => ({{ outcome: 'applied' }}) }} }}"
    ));
    match Scheduler::open(options).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!("open {owner} failed: {}", code_of(&error)),
    }
}

fn field(value: &JsValue, name: &str) -> JsValue {
    Reflect::get(value, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

/// A mix: valid, oversized, invalid (a bad id, a NaN), one depending on the oversized one,
/// valid again.
fn mix(run: &str) -> JsValue {
    js(&format!(
        "[
          {{ id: '{run}-a', operationType: 'shape.upsert', canvasIds: ['c1'], payload: {{ x: 1 }} }},
          {{ id: '{run}-image', operationType: 'record.put', canvasIds: ['c1'], payload: {{ src: 'x'.repeat(2048) }} }},
          {{ id: 'bad id!', operationType: 'shape.upsert' }},
          {{ id: '{run}-caption', operationType: 'shape.upsert', canvasIds: ['c1'], dependencies: ['{run}-image'] }},
          {{ id: '{run}-nan', operationType: 'shape.upsert', payload: {{ x: NaN }} }},
          {{ id: '{run}-b', operationType: 'shape.upsert', canvasIds: ['c2'], dependencies: ['{run}-a'] }}
        ]"
    ))
}

const MIX_CODES: [&str; 6] = [
    "ok",
    "payload_too_large",
    "invalid_intent",
    "unknown_dependency",
    "invalid_intent",
    "ok",
];

/// `ok` or the code of each result, checking each result's shape on the way.
fn codes(results: &JsValue) -> Vec<String> {
    assert!(Array::is_array(results), "an array of results: {results:?}");
    Array::from(results)
        .iter()
        .map(|result| match field(&result, "ok").as_bool() {
            Some(true) => "ok".to_owned(),
            Some(false) => {
                let message = field(&result, "message").as_string().unwrap_or_default();
                assert!(!message.is_empty(), "a refusal says why: {result:?}");
                field(&result, "code").as_string().unwrap_or_default()
            }
            None => panic!("a result has a boolean ok: {result:?}"),
        })
        .collect()
}

async fn partial(scheduler: &Scheduler, intents: JsValue) -> Vec<String> {
    let results = scheduler
        .enqueue_many_js(intents, js("{ atomic: false }"))
        .await
        .expect("a partial enqueue resolves");
    codes(&results)
}

fn sequence(scheduler: &Scheduler, id: &str) -> Option<f64> {
    field(&field(&scheduler.operation(id), "intent"), "sequence").as_f64()
}

fn pending(scheduler: &Scheduler) -> Option<f64> {
    field(&scheduler.stats(), "pending").as_f64()
}

#[wasm_bindgen_test]
async fn i37_4_atomic_false_stores_the_valid_intents_and_answers_one_result_each() {
    let run = unique("mix");
    let scheduler = open(&run, "tab").await;
    assert_eq!(partial(&scheduler, mix(&run)).await, MIX_CODES);
    assert_eq!(
        (
            sequence(&scheduler, &format!("{run}-a")),
            sequence(&scheduler, &format!("{run}-b"))
        ),
        (Some(1.0), Some(2.0)),
        "stored in call order, sequences as if the refused ones were absent"
    );
    for refused in ["image", "caption", "nan"] {
        assert!(
            scheduler
                .operation(&format!("{run}-{refused}"))
                .is_undefined(),
            "{refused} is not stored"
        );
    }
    assert!(scheduler.operation("bad id!").is_undefined());
    assert_eq!(pending(&scheduler), Some(2.0));
    // The same call again: the stored ones are the same intents again (ok, nothing added).
    assert_eq!(partial(&scheduler, mix(&run)).await, MIX_CODES);
    assert_eq!(pending(&scheduler), Some(2.0));
    // A duplicate id within the call: the later one is refused.
    let twice = js(&format!(
        "[{{ id: '{run}-t', operationType: 'x', canvasIds: ['c3'] }}, {{ id: '{run}-t', operationType: 'x', canvasIds: ['c4'] }}]"
    ));
    assert_eq!(
        partial(&scheduler, twice).await,
        ["ok", "duplicate_operation"]
    );
    assert_eq!(sequence(&scheduler, &format!("{run}-t")), Some(3.0));
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn i37_4_the_default_stays_all_or_none() {
    let run = unique("atomic");
    let scheduler = open(&run, "tab").await;
    for options in ["undefined", "null", "{}", "{ atomic: true }"] {
        let error = scheduler
            .enqueue_many_js(mix(&run), js(options))
            .await
            .expect_err(options);
        assert_eq!(code_of(&error), "payload_too_large", "{options}");
        assert_eq!(field(&error, "index").as_f64(), Some(1.0), "{options}");
    }
    let error = scheduler.enqueue_many(mix(&run)).await.expect_err("atomic");
    assert_eq!(code_of(&error), "payload_too_large");
    assert!(scheduler.operation(&format!("{run}-a")).is_undefined());
    assert_eq!(pending(&scheduler), Some(0.0), "nothing stored");
    // All valid: resolves to nothing, as before.
    let valid = js(&format!("[{{ id: '{run}-ok', operationType: 'x' }}]"));
    let resolved = scheduler.enqueue_many(valid).await.expect("stored");
    assert!(resolved.is_undefined());
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn i37_4_bad_options_are_refused_with_a_code_and_store_nothing() {
    let run = unique("options");
    let scheduler = open(&run, "tab").await;
    for options in [
        "{ atomic: 'yes' }",
        "{ atomic: 0 }",
        "{ atomic: false, partial: true }",
        "{ Atomic: false }",
        "42",
        "'atomic'",
        "[false]",
        "{ get atomic() { throw new Error('no'); } }",
        "new Proxy({}, { ownKeys() { throw new Error('no'); } })",
    ] {
        let error = scheduler
            .enqueue_many_js(mix(&run), js(options))
            .await
            .expect_err(options);
        assert_eq!(code_of(&error), "invalid_options", "{options}");
        assert_eq!(
            field(&error, "name").as_string().as_deref(),
            Some("CanvasSchedulerError")
        );
    }
    assert!(scheduler.operation(&format!("{run}-a")).is_undefined());
    assert_eq!(pending(&scheduler), Some(0.0), "nothing stored");
    // What refuses the call itself still rejects: not an array (or an unreadable one), more
    // intents than one call takes (a hole each), a stopped scheduler.
    for intents in [
        "'not an array'",
        "new Proxy([], { get() { throw new Error('no'); } })",
        "new Array(2 ** 32 - 1)",
    ] {
        let error = scheduler
            .enqueue_many_js(js(intents), js("{ atomic: false }"))
            .await
            .expect_err(intents);
        assert_eq!(code_of(&error), "invalid_intent", "{intents}");
    }
    // A hostile intent is a refusal of that intent only.
    let hostile = js(&format!(
        "[null,
          new Proxy({{}}, {{ ownKeys() {{ throw new Error('no'); }} }}),
          {{ id: '{run}-fine', operationType: 'x' }}]"
    ));
    assert_eq!(
        partial(&scheduler, hostile).await,
        ["invalid_intent", "invalid_intent", "ok"]
    );
    let holes = js("Object.defineProperty([1], 0, { get() { throw new Error('no'); } })");
    assert_eq!(partial(&scheduler, holes).await, ["invalid_intent"]);
    assert_eq!(pending(&scheduler), Some(1.0), "only the fine one stored");
    scheduler.stop();
    let error = scheduler
        .enqueue_many_js(mix(&run), js("{ atomic: false }"))
        .await
        .expect_err("stopped");
    assert_eq!(code_of(&error), "scheduler_closed");
}

#[wasm_bindgen_test]
async fn i37_4_a_tab_that_does_not_dispatch_enqueues_partially_through_the_inbox() {
    let run = unique("follower");
    let leader = open(&run, "a").await;
    let follower = open(&run, "b").await;
    assert_eq!(field(&follower.stats(), "leader").as_bool(), Some(false));
    // Already in the ledger: the same intent again is ok, another intent under its id not.
    leader
        .enqueue(js(&format!(
            "{{ id: '{run}-stored', operationType: 'x', canvasIds: ['c9'] }}"
        )))
        .await
        .expect("stored");
    let intents = js(&format!(
        "[
          {{ id: '{run}-stored', operationType: 'x', canvasIds: ['c9'] }},
          {{ id: '{run}-stored', operationType: 'y' }},
          {{ id: '{run}-f', operationType: 'x', dependencies: ['{run}-stored'] }},
          {{ id: '{run}-g', operationType: 'x', dependencies: ['{run}-nowhere'] }},
          {{ id: '{run}-h', operationType: 'x', payload: {{ src: 'x'.repeat(2048) }} }}
        ]"
    ));
    assert_eq!(
        partial(&follower, intents).await,
        [
            "ok",
            "duplicate_operation",
            "ok",
            "unknown_dependency",
            "payload_too_large"
        ]
    );
    // The leader adopts the inbox entry: only f arrives.
    let f = format!("{run}-f");
    for _ in 0..200 {
        if !leader.operation(&f).is_undefined() {
            break;
        }
        super::support::sleep(25).await;
    }
    assert!(!leader.operation(&f).is_undefined(), "f adopted");
    assert_eq!(sequence(&leader, &f), Some(2.0));
    for refused in ["g", "h"] {
        assert!(leader.operation(&format!("{run}-{refused}")).is_undefined());
    }
    assert_eq!(pending(&leader), Some(2.0));
    follower.stop();
    leader.stop();
}
