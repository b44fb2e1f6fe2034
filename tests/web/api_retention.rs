//! Retention as JavaScript sees it: the `retain` option is checked (`invalid_options`), a
//! compacted operation answers `operation(id)` and `known(ids)` with its tombstone, and
//! `stats()` counts what is kept whole and the tombstones.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js, sleep};

fn field(value: &JsValue, name: &str) -> JsValue {
    Reflect::get(value, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

#[wasm_bindgen_test]
async fn invalid_retention_options_are_refused() {
    let run = format!("ret-opt-{}", js_sys::Date::now() as u64);
    for retain in [
        "5",
        "{ settled: -1 }",
        "{ settled: 1.5 }",
        "{ settledMs: '1000' }",
        "{ tombstones: 20000000 }",
        "{ tombstoneMs: -5 }",
        "{ keep: 3 }",
    ] {
        let source =
            format!("{{ database: 'cs-{run}', endpoint: 'http://127.0.0.1:9', retain: {retain} }}");
        let error = Scheduler::open(js(&source)).await.err().expect(&source);
        assert_eq!(code_of(&error), "invalid_options", "{source}");
    }
}

#[wasm_bindgen_test]
async fn a_compacted_operation_answers_its_tombstone_and_stats_count_it() {
    let run = format!(
        "ret-api-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    );
    let options = js(&format!(
        "{{ database: 'cs-{run}', owner: 'tab-{run}', retain: {{ settled: 1 }},
           transport: {{
             submit: async () => ({{ outcome: 'applied' }}),
             query: async () => ({{ outcome: 'applied' }}),
           }} }}"
    ));
    let scheduler = match Scheduler::open(options).await {
        Ok(s) => s,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    };
    scheduler.start().expect("start");
    // c holds the highest sequence (stays in the ledger); a and b are compacted as they
    // settle, and the archive keeps the newest one (b) whole.
    for id in ["a", "b", "c"] {
        let intent = js(&format!(
            "({{ id: '{run}-{id}', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{}} }})"
        ));
        JsFuture::from(scheduler.enqueue(intent))
            .await
            .expect("durable");
        let _ = scheduler.settle().await;
    }
    let a = format!("{run}-a");
    for _ in 0..100 {
        if field(&scheduler.operation(&a), "compacted").is_truthy() {
            break;
        }
        sleep(20).await;
    }
    let tombstone = scheduler.operation(&a);
    assert_eq!(
        field(&tombstone, "compacted").as_bool(),
        Some(true),
        "{tombstone:?}"
    );
    assert_eq!(
        field(&tombstone, "outcome").as_string().as_deref(),
        Some("applied")
    );
    assert!(field(&tombstone, "settledAt").as_f64().is_some());
    let b = scheduler.operation(&format!("{run}-b"));
    assert_eq!(
        field(&b, "phase").as_string().as_deref(),
        Some("resolved"),
        "kept whole in the archive"
    );
    let stats = scheduler.stats();
    assert_eq!(field(&stats, "settledKept").as_f64(), Some(2.0), "b and c");
    assert_eq!(field(&stats, "tombstones").as_f64(), Some(2.0), "a and b");
    let known = JsFuture::from(scheduler.known(js(&format!("['{a}', 'never']"))))
        .await
        .expect("known");
    let known = js_sys::Array::from(&known);
    assert_eq!(field(&known.get(0), "compacted").as_bool(), Some(true));
    assert!(known.get(1).is_undefined());
    let error = JsFuture::from(scheduler.known(js("'a'")))
        .await
        .expect_err("not an array");
    assert_eq!(code_of(&error), "invalid_intent");
    scheduler.stop();
}

/// `operation(id)` is synchronous and tombstones live in IndexedDB, so after
/// a reload a compacted operation answers `undefined` until `known(ids)` looks it up (as the
/// `.d.ts` says); from then on `operation(id)` answers the same tombstone `known` gave.
#[wasm_bindgen_test]
async fn a_compacted_operation_after_a_reload_answers_operation_once_known_looked_it_up() {
    let run = format!(
        "ret-reload-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    );
    let options = || {
        js(&format!(
            "{{ database: 'cs-{run}', owner: 'tab-{run}', retain: {{ settled: 1 }},
               transport: {{
                 submit: async () => ({{ outcome: 'applied' }}),
                 query: async () => ({{ outcome: 'applied' }}),
               }} }}"
        ))
    };
    let open = || async {
        match Scheduler::open(options()).await {
            Ok(s) => s,
            Err(error) => panic!("open failed: {}", code_of(&error)),
        }
    };
    let first = open().await;
    first.start().expect("start");
    // Compacted as they settle but for c (the highest sequence); the archive keeps the newest
    // one whole (b), so `a` is only a tombstone.
    for id in ["a", "b", "c"] {
        let intent = js(&format!(
            "({{ id: '{run}-{id}', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{}} }})"
        ));
        JsFuture::from(first.enqueue(intent))
            .await
            .expect("durable");
        let _ = first.settle().await;
    }
    let a = format!("{run}-a");
    for _ in 0..100 {
        if field(&first.operation(&a), "compacted").is_truthy() {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(
        field(&first.operation(&a), "compacted").as_bool(),
        Some(true)
    );
    first.stop();
    sleep(50).await;
    let second = open().await;
    second.start().expect("start");
    // Opening read no tombstone: the synchronous call cannot know the id yet.
    assert!(second.operation(&a).is_undefined());
    let known = JsFuture::from(second.known(js(&format!("['{a}']"))))
        .await
        .expect("known");
    let tombstone = js_sys::Array::from(&known).get(0);
    assert_eq!(field(&tombstone, "compacted").as_bool(), Some(true));
    assert_eq!(
        field(&tombstone, "outcome").as_string().as_deref(),
        Some("applied")
    );
    // Looked up, it is at hand: `operation(id)` answers what `known` gave.
    let stringify = |v: &JsValue| js_sys::JSON::stringify(v).ok().and_then(|s| s.as_string());
    assert_eq!(stringify(&second.operation(&a)), stringify(&tombstone));
    // B is still in the archive: read whole, though the open read none of it.
    let b = format!("{run}-b");
    assert!(
        second.operation(&b).is_undefined(),
        "the open read no settled history"
    );
    let known = JsFuture::from(second.known(js(&format!("['{b}']"))))
        .await
        .expect("known");
    let whole = js_sys::Array::from(&known).get(0);
    assert_eq!(
        field(&whole, "phase").as_string().as_deref(),
        Some("resolved")
    );
    assert_eq!(
        field(&field(&whole, "intent"), "id").as_string().as_deref(),
        Some(b.as_str())
    );
    assert_eq!(stringify(&second.operation(&b)), stringify(&whole));
    second.stop();
}

/// With the default policy, settled operations leave the stores an open
/// reads (`operations`, `operation_pages`, `requests`) as they settle, whole in the archive
/// (`settled`); the next open reads none of them, nor the event log, and both answer when
/// asked (`known`, `events`).
#[wasm_bindgen_test]
async fn issue_38_settled_operations_leave_the_stores_an_open_reads() {
    use super::store_support::raw_keys;
    use canvas_scheduler::web::store::schema;
    let run = format!(
        "ret-leave-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    );
    let database = format!("cs-{run}");
    let options = || {
        js(&format!(
            "{{ database: '{database}', owner: 'tab-{run}',
               transport: {{
                 submit: async () => ({{ outcome: 'applied' }}),
                 query: async () => ({{ outcome: 'applied' }}),
               }} }}"
        ))
    };
    let first = Scheduler::open(options()).await.expect("open");
    first.start().expect("start");
    let count = 40;
    let intents = js(&format!(
        "Array.from({{ length: {count} }}, (_, i) => ({{ id: '{run}-' + i, operationType: 'shape.upsert', canvasIds: ['c' + (i % 4)], payload: {{ i }} }}))"
    ));
    JsFuture::from(first.enqueue_many(intents))
        .await
        .expect("durable");
    // All but the one holding the highest sequence go, a batch or two after they settle.
    for _ in 0..200 {
        let _ = JsFuture::from(first.settle()).await;
        if field(&first.stats(), "tombstones").as_f64() == Some(f64::from(count - 1)) {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(
        field(&first.stats(), "tombstones").as_f64(),
        Some(f64::from(count - 1))
    );
    let last = format!("{run}-{}", count - 1);
    let early = format!("{run}-0");
    assert_eq!(
        field(&first.operation(&early), "phase")
            .as_string()
            .as_deref(),
        Some("resolved"),
        "whole at hand in the session that settled it"
    );
    first.stop();
    sleep(50).await;
    let stored = |store| {
        let database = database.clone();
        async move { raw_keys(&database, store).await.len() }
    };
    assert_eq!(
        stored(schema::OPERATIONS).await,
        1,
        "only the highest sequence"
    );
    assert_eq!(stored(schema::OPERATION_PAGES).await, 0);
    assert_eq!(stored(schema::REQUESTS).await, 1);
    assert_eq!(
        stored(schema::SETTLED).await,
        count as usize - 1,
        "archived whole"
    );

    let second = Scheduler::open(options()).await.expect("reopen");
    second.start().expect("start");
    assert!(
        second.operation(&early).is_undefined(),
        "the open read no settled history"
    );
    assert_eq!(
        field(&second.operation(&last), "phase")
            .as_string()
            .as_deref(),
        Some("resolved")
    );
    let known = JsFuture::from(second.known(js(&format!("['{early}']"))))
        .await
        .expect("known");
    let whole = js_sys::Array::from(&known).get(0);
    assert_eq!(
        field(&field(&whole, "intent"), "id").as_string().as_deref(),
        Some(early.as_str()),
        "read whole from the archive"
    );
    let log = JsFuture::from(second.events(js("({ limit: 1000 })")))
        .await
        .expect("events");
    let log = js_sys::Array::from(&log);
    assert!(
        log.length() >= count,
        "the log answers from storage: {}",
        log.length()
    );
    let seqs: Vec<f64> = log
        .iter()
        .filter_map(|e| field(&e, "seq").as_f64())
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in seq order, each once"
    );
    second.stop();
}
