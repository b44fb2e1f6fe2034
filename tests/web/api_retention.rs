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

/// Issue 37 item 5: `operation(id)` is synchronous and tombstones live in IndexedDB, so after
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
    // Issue 38: b is still in the archive: read whole, though the open read none of it.
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
