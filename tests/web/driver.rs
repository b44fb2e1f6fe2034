//! The browser pieces together: the scheduler on the IndexedDB ledger, the browser clock and the
//! fetch transport against the reference server (started on 127.0.0.1 by the test command).
//! 200 operations on 10 canvases with dependencies; the server must see each exactly once and
//! in per-canvas sequence order.

use std::collections::BTreeMap;

use canvas_scheduler::web::driver::{Driver, DriverOptions};
use canvas_scheduler_core::{intent::IntentInput, OperationPhase, SchedulerConfig, Settlement};
use serde_json::{json, Value};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::sleep;

fn server() -> &'static str {
    match option_env!("CANVAS_SCHEDULER_TEST_SERVER") {
        Some(url) => url,
        None => panic!(
            "CANVAS_SCHEDULER_TEST_SERVER is not set: run the browser tests through `npm test`"
        ),
    }
}

async fn fetch_json(url: &str) -> Value {
    let global = js_sys::global();
    let fetch = js_sys::Reflect::get(&global, &"fetch".into()).expect("fetch exists");
    let fetch: js_sys::Function = fetch.dyn_into().expect("fetch is a function");
    let init = web_sys::RequestInit::new();
    let headers = web_sys::Headers::new().expect("headers");
    headers
        .set("x-admin-token", super::transport::admin_token())
        .expect("x-admin-token");
    init.set_headers(&headers);
    let promise: js_sys::Promise = fetch
        .call2(&global, &url.into(), &init)
        .expect("fetch call")
        .dyn_into()
        .expect("promise");
    let response: web_sys::Response = JsFuture::from(promise)
        .await
        .expect("fetch ok")
        .dyn_into()
        .expect("response");
    let text = JsFuture::from(response.text().expect("text"))
        .await
        .expect("body");
    serde_json::from_str(&text.as_string().unwrap_or_default()).expect("json state")
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    )
}

#[wasm_bindgen_test]
async fn w1_w3_two_hundred_operations_reach_the_server_once_each_in_canvas_order() {
    let run = unique("w5");
    let options = DriverOptions {
        database: format!("cs-test-{run}"),
        endpoint: server().to_owned(),
        attempt_timeout_ms: 10_000,
        load_page_size: 100,
        max_answer_bytes: canvas_scheduler::web::transport::DEFAULT_MAX_ANSWER_BYTES,
        config: SchedulerConfig {
            concurrency: 2,
            owner: format!("tab-{run}"),
            ..SchedulerConfig::default()
        },
        host: Default::default(),
        send_hooks: Default::default(),
        js_transport: None,
    };
    let (driver, quarantined) = Driver::open(options, None, false).await.expect("open");
    assert!(quarantined.is_empty());
    driver.start().expect("start");
    let canvases: Vec<String> = (0..10).map(|c| format!("{run}-c{c}")).collect();
    let mut intents = Vec::new();
    for i in 0..200u32 {
        let id = format!("{run}-op{i:03}");
        let canvas = canvases[(i % 10) as usize].clone();
        let dependencies = if i >= 10 && i % 7 == 0 {
            vec![format!("{run}-op{:03}", i - 3)]
        } else {
            Vec::new()
        };
        intents.push(IntentInput {
            id,
            sequence: None,
            operation_type: "shape.upsert".into(),
            canvas_ids: vec![canvas],
            dependencies,
            payload: json!({ "shapeId": format!("s{i}"), "shape": { "x": i, "y": 2 * i } }).into(),
            expected_versions: None,
            run_id: None,
            coalesce_key: None,
            blob: None,
        });
    }
    // Half in one call (one transaction), the rest one by one.
    let rest = intents.split_off(100);
    driver.enqueue(intents).await.expect("enqueue 100");
    for intent in rest {
        driver.enqueue(vec![intent]).await.expect("enqueue one");
    }
    for _ in 0..200 {
        driver.settle().await;
        let pending = driver.inspect(|s, _| s.stats().pending);
        if pending == 0 {
            break;
        }
        // Work waits on a timer (a retry) or a dependency: give the event loop a turn.
        sleep(50).await;
    }
    let ids: Vec<String> = (0..200).map(|i| format!("{run}-op{i:03}")).collect();
    for id in &ids {
        // Settled operations leave the ledger: read as `operation(id)` answers.
        let settled = driver.inspect(|s, _| match s.known(id) {
            Some(canvas_scheduler_core::Known::Operation(o)) => {
                Some((o.phase, o.outcome.as_ref().map(|x| x.settlement)))
            }
            _ => None,
        });
        assert_eq!(
            settled,
            Some((OperationPhase::Resolved, Some(Settlement::Applied))),
            "{id}"
        );
    }
    let state = fetch_json(&format!("{}/admin/state", server())).await;
    for id in &ids {
        assert_eq!(
            state["operations"][id]["applications"],
            json!(1),
            "{id} applied exactly once"
        );
    }
    let sequence: BTreeMap<String, u64> = ids
        .iter()
        .filter_map(|id| {
            driver.inspect(|s, _| match s.known(id) {
                Some(canvas_scheduler_core::Known::Operation(o)) => {
                    Some((id.clone(), o.intent.sequence))
                }
                _ => None,
            })
        })
        .collect();
    for canvas in &canvases {
        let order: Vec<u64> = state["canvases"][canvas]["order"]
            .as_array()
            .expect("canvas order")
            .iter()
            .filter_map(|v| v.as_str().and_then(|id| sequence.get(id).copied()))
            .collect();
        assert_eq!(order.len(), 20, "{canvas}");
        // Dependencies may hold an earlier one back; without them the order is strict.
        let strict: Vec<u64> = order
            .iter()
            .copied()
            .filter(|s| (s - 1) % 7 != 0 || *s < 11)
            .collect();
        assert!(
            strict.windows(2).all(|w| w[0] < w[1]),
            "{canvas}: {order:?}"
        );
    }
    driver.stop();
}

async fn open_driver_with(
    run: &str,
    sink: Option<canvas_scheduler::web::driver::ReportSink>,
) -> Driver {
    open_driver_config(
        run,
        sink,
        SchedulerConfig {
            concurrency: 2,
            owner: format!("tab-{run}"),
            ..SchedulerConfig::default()
        },
    )
    .await
}

async fn open_driver_config(
    run: &str,
    sink: Option<canvas_scheduler::web::driver::ReportSink>,
    config: SchedulerConfig,
) -> Driver {
    let options = DriverOptions {
        database: format!("cs-test-{run}"),
        endpoint: server().to_owned(),
        attempt_timeout_ms: 10_000,
        load_page_size: 100,
        max_answer_bytes: canvas_scheduler::web::transport::DEFAULT_MAX_ANSWER_BYTES,
        config,
        host: Default::default(),
        send_hooks: Default::default(),
        js_transport: None,
    };
    let (driver, _) = Driver::open(options, sink, false).await.expect("open");
    driver
}

fn shape(run: &str, i: u32, canvas: &str) -> IntentInput {
    IntentInput {
        id: format!("{run}-op{i:03}"),
        sequence: None,
        operation_type: "shape.upsert".into(),
        canvas_ids: vec![format!("{run}-{canvas}")],
        dependencies: Vec::new(),
        payload: json!({ "shapeId": format!("s{i}"), "shape": { "x": i } }).into(),
        expected_versions: None,
        run_id: None,
        coalesce_key: None,
        blob: None,
    }
}

/// Recovery through the driver: operations enqueued one per turn are each written as a record, and
/// once enough have gathered the quiet scheduler folds them into pages (held here, so nothing
/// is dispatched); a reload reads them all back.
#[wasm_bindgen_test]
async fn s18_records_enqueued_one_per_turn_are_folded_into_pages_when_quiet() {
    let run = unique("fold");
    let config = |owner: &str| SchedulerConfig {
        owner: owner.to_owned(),
        fold_records_at: 8,
        ..SchedulerConfig::default()
    };
    let driver = open_driver_config(&run, None, config("tab-a")).await;
    let hold = driver.hold().expect("hold");
    driver.start().expect("start");
    for i in 0..20 {
        driver
            .enqueue(vec![shape(&run, i, "a")])
            .await
            .expect("enqueue");
    }
    driver.settle().await;
    let database = format!("cs-test-{run}");
    // Folding is the quiet scheduler's housekeeping: it follows the last enqueue's write.
    let (mut records, mut pages) = (usize::MAX, 0);
    for _ in 0..100 {
        records = super::store_support::raw_keys(&database, "operations")
            .await
            .len();
        pages = super::store_support::raw_keys(&database, "operation_pages")
            .await
            .len();
        if records < 8 {
            break;
        }
        sleep(20).await;
    }
    // How many pages depends on when quiet moments fall (an enqueue made as the one before
    // it becomes durable joins the next batch, which is then not quiet): at least one, and
    // fewer than `fold_records_at` loose.
    assert!(records < 8, "{records} records left loose");
    assert!(pages >= 1, "{pages} pages");
    driver.release(hold);
    driver.stop();
    let again = open_driver_config(&run, None, config("tab-a")).await;
    assert_eq!(again.inspect(|s, _| s.ledger().operation_count()), 20);
    again.stop();
}

/// What the host heard of storage: the names `storage_failed` gave, and how many times
/// `storage_recovered` came.
type StorageHeard = std::rc::Rc<std::cell::RefCell<(Vec<String>, usize)>>;

fn storage_sink() -> (StorageHeard, canvas_scheduler::web::driver::ReportSink) {
    use canvas_scheduler_core::Report;
    let heard = StorageHeard::default();
    let seen = heard.clone();
    let sink: canvas_scheduler::web::driver::ReportSink =
        std::rc::Rc::new(move |report: &Report| match report {
            Report::StorageFailed { error } => seen.borrow_mut().0.push(error.code.clone()),
            Report::StorageRecovered => seen.borrow_mut().1 += 1,
            _ => {}
        });
    (heard, sink)
}

/// Waits (bounded) until nothing is pending.
async fn drained(driver: &Driver) {
    for _ in 0..300 {
        if driver.inspect(|s, _| s.stats().pending) == 0 {
            return;
        }
        driver.settle().await;
        sleep(50).await;
    }
}

/// Through the whole stack: a storage fault refuses the enqueue whose write it hit, which
/// leaves nothing behind and is never sent; the host hears `storage_failed` with the error's
/// name; the next enqueue tries at once and works, with no `resume()`, and
/// `storage_recovered` says so. A connection the browser closed is opened again by the driver
/// before the next write: that enqueue is stored, with no failure to report.
#[wasm_bindgen_test]
async fn w5_a_storage_fault_refuses_the_enqueue_it_hit_and_the_next_works_without_resume() {
    use canvas_scheduler::web::store::StoreFault;
    for (n, fault) in [
        StoreFault::QuotaOnNextWrite,
        StoreFault::AbortNextTransaction,
        StoreFault::CloseConnection,
    ]
    .into_iter()
    .enumerate()
    {
        let run = unique(&format!("w5f{n}"));
        let (heard, sink) = storage_sink();
        let driver = open_driver_with(&run, Some(sink)).await;
        // Held until the checks below: the enqueue's own transaction is the next write.
        let hold = driver.hold().expect("hold");
        driver.start().expect("start");
        driver
            .enqueue(vec![shape(&run, 0, "a")])
            .await
            .expect("whatever start writes is durable first");
        driver.store().inject(fault);
        let hit = shape(&run, 1, "a");
        let result = driver.enqueue(vec![hit.clone()]).await;
        let closed = fault == StoreFault::CloseConnection;
        if closed {
            result.expect("stored on a connection opened again");
            assert!(heard.borrow().0.is_empty(), "no write failed");
        } else {
            let error = result.expect_err("the enqueue's transaction failed");
            assert_eq!(error.code(), "storage_unavailable");
            assert!(
                driver.inspect(|s, _| s.ledger().operation(&hit.id).is_none()),
                "{fault:?}: a refused enqueue leaves nothing behind"
            );
            assert_eq!(heard.borrow().0.len(), 1, "{fault:?}: storage_failed once");
            let name = if fault == StoreFault::QuotaOnNextWrite {
                "QuotaExceededError"
            } else {
                "AbortError"
            };
            assert_eq!(heard.borrow().0[0], name);
        }
        driver
            .enqueue(vec![shape(&run, 2, "a")])
            .await
            .expect("the next enqueue, with no resume()");
        assert_eq!(
            heard.borrow().1,
            heard.borrow().0.len(),
            "{fault:?}: storage_recovered"
        );
        driver.release(hold);
        drained(&driver).await;
        let state = fetch_json(&format!("{}/admin/state", server())).await;
        let mut sent = vec![0, 2];
        if closed {
            sent.push(1);
        } else {
            assert!(
                state["operations"][&hit.id].is_null(),
                "{fault:?}: the refused enqueue was never sent"
            );
        }
        for i in sent {
            assert_eq!(
                state["operations"][format!("{run}-op{i:03}")]["applications"],
                json!(1),
                "op{i} after {fault:?}"
            );
        }
        driver.stop();
    }
}

/// Storage faults in the middle of a burst that is being dispatched. The
/// host hears `storage_failed`, the scheduler tries storage again on its own (no `resume()`),
/// says `storage_recovered`, and the server applies every operation exactly once.
#[wasm_bindgen_test]
async fn w5_storage_chaos_during_a_burst_loses_nothing_sends_nothing_twice_and_needs_no_resume() {
    use canvas_scheduler::web::store::StoreFault;
    for (n, fault) in [
        StoreFault::QuotaOnNextWrite,
        StoreFault::AbortNextTransaction,
        StoreFault::CloseConnection,
    ]
    .into_iter()
    .enumerate()
    {
        let run = unique(&format!("w5b{n}"));
        let (heard, sink) = storage_sink();
        let driver = open_driver_with(&run, Some(sink)).await;
        driver.start().expect("start");
        let burst: Vec<IntentInput> = (0..40)
            .map(|i| shape(&run, i, ["a", "b", "c", "d"][i as usize % 4]))
            .collect();
        driver.enqueue(burst).await.expect("burst durable");
        // Dispatch has begun: its next transaction (a dispatch marker or an answer) fails.
        driver.store().inject(fault);
        drained(&driver).await;
        // The answers may all be in before storage is tried again (a batched burst is done in
        // a few requests): the scheduler's own retry of storage ends the failure.
        for _ in 0..400 {
            let (failed, recovered) = (heard.borrow().0.len(), heard.borrow().1);
            if failed == recovered {
                break;
            }
            sleep(50).await;
        }
        // A closed connection is opened again before the next write: a failure only if the
        // close caught a transaction under way.
        let expected = usize::from(fault != StoreFault::CloseConnection);
        assert!(
            heard.borrow().0.len() >= expected && heard.borrow().0.len() <= 1,
            "the fault hit the burst ({fault:?}): {:?}",
            heard.borrow()
        );
        assert_eq!(
            heard.borrow().1,
            heard.borrow().0.len(),
            "{fault:?}: recovered by itself"
        );
        assert_eq!(
            driver.inspect(|s, _| s.stats().pending),
            0,
            "{fault:?}: the burst finished"
        );
        let state = fetch_json(&format!("{}/admin/state", server())).await;
        for i in 0..40 {
            let id = format!("{run}-op{i:03}");
            assert_eq!(
                state["operations"][&id]["applications"],
                json!(1),
                "{id} after {fault:?}"
            );
        }
        driver.stop();
    }
}

/// Durability in a real run: the enqueue's batch and the freeze's are strict; the answer's, which a
/// query recovers if a power loss drops it, is written relaxed.
#[wasm_bindgen_test]
async fn w1_an_answer_is_written_relaxed_and_the_enqueue_and_freeze_strict() {
    let run = unique("relaxed");
    let config = SchedulerConfig {
        owner: format!("tab-{run}"),
        ..SchedulerConfig::default()
    };
    let driver = open_driver_config(&run, None, config).await;
    let hold = driver.hold().expect("hold");
    driver.start().expect("start");
    driver.settle().await;
    let store = driver.store();
    let id = format!("{run}-op");
    let before = store.relaxed_batches();
    driver
        .enqueue(vec![IntentInput {
            id: id.clone(),
            sequence: None,
            operation_type: "shape.upsert".into(),
            canvas_ids: vec![format!("{run}-c")],
            dependencies: Vec::new(),
            payload: json!({ "shapeId": "s", "shape": { "x": 1 } }).into(),
            expected_versions: None,
            run_id: None,
            coalesce_key: None,
            blob: None,
        }])
        .await
        .expect("enqueue");
    assert_eq!(
        store.relaxed_batches(),
        before,
        "the enqueue is written strict"
    );
    // Released, it is frozen (strict) and sent; its answer is written relaxed.
    driver.release(hold);
    let mut settled = None;
    for _ in 0..100 {
        driver.settle().await;
        settled = driver.inspect(|s, _| {
            s.ledger()
                .operation(&id)
                .and_then(|o| o.outcome.as_ref().map(|x| x.settlement))
        });
        if settled.is_some() {
            break;
        }
        sleep(20).await;
    }
    assert_eq!(settled, Some(Settlement::Applied));
    // The answer's batch opens at the group commit that follows it (bounded wait).
    for _ in 0..100 {
        if store.relaxed_batches() > before {
            break;
        }
        sleep(20).await;
    }
    assert!(
        store.relaxed_batches() > before,
        "the answer's batch is relaxed: {} relaxed batches, {} before",
        store.relaxed_batches(),
        before
    );
    driver.stop();
}
