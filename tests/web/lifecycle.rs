//! The page's lifecycle, driven as worker mode drives it (`pageLifecycle("hidden" |
//! "shown")`; in a Window the same pause and resume follow `pagehide`/`freeze` and
//! `pageshow`/`resume`, which tests/e2e/lifecycle.mjs drives in a real browser): a paused tab
//! sends nothing and holds nothing, a request it had on the wire is aborted and asked about
//! (never sent twice), work enqueued while paused waits durably, and the tab dispatches again
//! when shown. `stop()` stays final. Also the `persist` option.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::store_support::{hold_lease_store, raw_keys};
use super::support::{code_of, js, sleep};
use canvas_scheduler::web::store::schema;

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    )
}

/// A transport that records every call in `globalThis[log]` (`submit <id> <ops>`, `query
/// <id>`, `abort <id>`) and answers `applied`; a submit of an operation named `slow-…` waits
/// until its signal aborts.
fn recording_transport(log: &str) -> String {
    format!(
        "{{
           submit: (request, signal) => new Promise((resolve, reject) => {{
             const calls = (globalThis['{log}'] ??= []);
             calls.push(`submit ${{request.id}} ${{request.operationIds.join(',')}}`);
             if (!request.operationIds.some((id) => id.startsWith('slow-'))) return resolve({{ outcome: 'applied' }});
             signal.addEventListener('abort', () => {{ calls.push(`abort ${{request.id}}`); reject(signal.reason); }});
           }}),
           query: async (request) => {{
             (globalThis['{log}'] ??= []).push(`query ${{request.id}}`);
             return {{ outcome: 'applied' }};
           }},
         }}"
    )
}

fn calls(log: &str) -> Vec<String> {
    let value = Reflect::get(&js_sys::global(), &log.into()).unwrap_or(JsValue::UNDEFINED);
    if value.is_undefined() {
        return Vec::new();
    }
    js_sys::Array::from(&value)
        .iter()
        .filter_map(|v| v.as_string())
        .collect()
}

async fn open(database: &str, log: &str) -> Scheduler {
    let options = js(&format!(
        "({{ database: '{database}', transport: {}, leaseMs: 1000, persist: false,
             retry: {{ baseMs: 20, maxMs: 200 }} }})",
        recording_transport(log)
    ));
    match Scheduler::open(options).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!("open failed: {}", code_of(&error)),
    }
}

/// A started scheduler on a fresh database named after `name`, with the global its transport
/// logs to.
async fn started(name: &str) -> (Scheduler, String, String) {
    let (database, log) = (
        unique(&format!("cs-{name}")),
        unique(&format!("{name}_log")).replace('-', "_"),
    );
    let scheduler = open(&database, &log).await;
    scheduler.start().unwrap();
    (scheduler, database, log)
}

fn stat(scheduler: &Scheduler, key: &str) -> JsValue {
    Reflect::get(&scheduler.stats(), &key.into()).unwrap()
}

async fn until(what: &str, ready: impl Fn() -> bool) {
    for _ in 0..300 {
        if ready() {
            return;
        }
        sleep(20).await;
    }
    panic!("timed out waiting for {what}");
}

async fn enqueue(scheduler: &Scheduler, id: &str) {
    let intent = js(&format!(
        "({{ id: '{id}', operationType: 'shape.move', canvasIds: ['c-{id}'], payload: {{ x: 1 }} }})"
    ));
    JsFuture::from(scheduler.enqueue(intent))
        .await
        .map_err(|e| code_of(&e))
        .unwrap();
}

fn settled(scheduler: &Scheduler, id: &str) -> bool {
    let record = scheduler.operation(id);
    Reflect::get(&record, &"phase".into())
        .ok()
        .and_then(|p| p.as_string())
        .as_deref()
        == Some("resolved")
}

fn submits_of(log: &str, id: &str) -> usize {
    calls(log)
        .iter()
        .filter(|c| c.starts_with("submit ") && c.split(' ').nth(2) == Some(id))
        .count()
}

#[wasm_bindgen_test]
async fn a_paused_tab_sends_nothing_and_dispatches_again_when_shown() {
    let (scheduler, _, log) = started("life").await;
    enqueue(&scheduler, "before").await;
    until("the first operation to settle", || {
        settled(&scheduler, "before")
    })
    .await;

    scheduler.page_lifecycle(JsValue::from_str("hidden"));
    assert_eq!(stat(&scheduler, "idleReason"), "paused");
    assert_eq!(stat(&scheduler, "leader"), false);
    // Enqueued while paused: durable (in the shared inbox), not sent while paused.
    enqueue(&scheduler, "during").await;
    sleep(300).await;
    assert_eq!(submits_of(&log, "during"), 0, "{:?}", calls(&log));
    assert_eq!(stat(&scheduler, "idleReason"), "paused");

    scheduler.page_lifecycle(JsValue::from_str("shown"));
    until("the tab to lead again", || {
        stat(&scheduler, "leader") == true
    })
    .await;
    enqueue(&scheduler, "after").await;
    until("the later operations to settle", || {
        settled(&scheduler, "during") && settled(&scheduler, "after")
    })
    .await;
    for id in ["before", "during", "after"] {
        assert_eq!(submits_of(&log, id), 1, "{id}: {:?}", calls(&log));
    }
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn a_request_on_the_wire_at_a_pause_is_aborted_and_asked_about_never_sent_again() {
    let (scheduler, _, log) = started("life-wire").await;
    enqueue(&scheduler, "slow-1").await;
    until("the slow request to be sent", || {
        submits_of(&log, "slow-1") == 1
    })
    .await;
    // A `whenSaved()` made before the pause resolves after it, through the resumed tab.
    let saved = scheduler.when_saved();

    scheduler.page_lifecycle(JsValue::from_str("hidden"));
    until("the attempt to be aborted", || {
        calls(&log).iter().any(|c| c.starts_with("abort "))
    })
    .await;
    scheduler.page_lifecycle(JsValue::from_str("shown"));
    JsFuture::from(saved)
        .await
        .map_err(|e| code_of(&e))
        .unwrap();
    // Resolved only once the operation enqueued before it is settled.
    assert!(settled(&scheduler, "slow-1"), "{:?}", calls(&log));
    assert_eq!(submits_of(&log, "slow-1"), 1, "{:?}", calls(&log));
    assert!(
        calls(&log).iter().any(|c| c.starts_with("query ")),
        "the interrupted request is asked about: {:?}",
        calls(&log)
    );
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn a_pause_aborts_the_batch_being_written() {
    // The batch of an enqueue is held up by another connection's transaction on the lease
    // store (its lease read unanswered), as a frozen page never runs that answer: the pause
    // aborts it, so the paused tab holds no transaction another tab would wait for. The
    // enqueue is saved again once the tab is back, and sent once.
    let (scheduler, database, log) = started("life-abort").await;
    enqueue(&scheduler, "before").await;
    until("the first operation to settle", || {
        settled(&scheduler, "before")
    })
    .await;
    let release = hold_lease_store(&database).await;
    let intent = js(
        "({ id: 'held', operationType: 'shape.move', canvasIds: ['c-held'], payload: { x: 1 } })",
    );
    let held = scheduler.enqueue(intent);
    sleep(50).await;
    scheduler.page_lifecycle(JsValue::from_str("hidden"));
    release.call0(&JsValue::NULL).unwrap();
    sleep(300).await;
    let written = raw_keys(&database, schema::OPERATIONS).await;
    assert!(
        !written
            .iter()
            .any(|key| key.as_string().as_deref() == Some("held")),
        "the batch begun before the pause was aborted, not committed: {written:?}"
    );

    scheduler.page_lifecycle(JsValue::from_str("shown"));
    JsFuture::from(held).await.map_err(|e| code_of(&e)).unwrap();
    until("the held operation to settle", || {
        settled(&scheduler, "held")
    })
    .await;
    assert_eq!(submits_of(&log, "held"), 1, "{:?}", calls(&log));
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn stop_stays_final_across_a_page_that_comes_back() {
    let (scheduler, _, _) = started("life-stop").await;
    scheduler.page_lifecycle(JsValue::from_str("hidden"));
    scheduler.stop();
    scheduler.page_lifecycle(JsValue::from_str("shown"));
    sleep(200).await;
    assert_eq!(stat(&scheduler, "idleReason"), "stopped");
    let error = JsFuture::from(scheduler.enqueue(js(
        "({ id: 'late', operationType: 'shape.move', canvasIds: ['c'] })",
    )))
    .await
    .unwrap_err();
    assert_eq!(code_of(&error), "scheduler_closed");
}

#[wasm_bindgen_test]
async fn persist_is_a_boolean_option_and_stats_say_what_the_browser_granted() {
    let database = unique("cs-persist");
    let error = Scheduler::open(js(&format!(
        "({{ database: '{database}', endpoint: 'http://127.0.0.1:9/v1', persist: 'yes' }})"
    )))
    .await
    .err()
    .expect("persist: 'yes' is refused");
    assert_eq!(code_of(&error), "invalid_options");

    let scheduler = Scheduler::open(js(&format!(
        "({{ database: '{database}', endpoint: 'http://127.0.0.1:9/v1' }})"
    )))
    .await
    .map_err(|e| code_of(&e))
    .unwrap();
    // What the browser says, once it has answered: a boolean where it has navigator.storage.
    let has_storage = js("typeof navigator.storage?.persisted === 'function'")
        .as_bool()
        .unwrap();
    let expected = if has_storage {
        until("stats().persisted to be set", || {
            stat(&scheduler, "persisted").is_truthy() || stat(&scheduler, "persisted") == false
        })
        .await;
        // Asked once the scheduler has its answer (Firefox grants only after `persist()`).
        JsFuture::from(js_sys::Promise::from(js("navigator.storage.persisted()")))
            .await
            .unwrap()
    } else {
        JsValue::NULL
    };
    assert_eq!(stat(&scheduler, "persisted"), expected);
    scheduler.stop();
}
