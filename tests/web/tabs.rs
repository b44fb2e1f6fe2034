//! Several tabs on one ledger, as several `Scheduler`s of one page or worker: they
//! share IndexedDB, the Web Lock and the `BroadcastChannel` exactly as tabs do. An in-page
//! transport applies each idempotency key once and counts what reached it.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js, sleep};

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}_{}_{}",
        crate::EXPECTED_GLOBAL,
        js_sys::Date::now() as u64
    )
}

fn field(value: &JsValue, name: &str) -> JsValue {
    Reflect::get(value, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

/// Opens tab `owner` of ledger `run`; events go to `globalThis.{run}_{owner}`; the in-page
/// server's state is `globalThis.{run}_server`.
async fn open_tab(run: &str, owner: &str) -> Scheduler {
    open_tab_with(run, owner, "").await
}

/// [`open_tab`] with more options (`extra`: members ending with a comma).
async fn open_tab_with(run: &str, owner: &str, extra: &str) -> Scheduler {
    let options = js(&format!(
        "{{ database: 'cs-tabs-{run}', owner: '{owner}', leaseMs: 1000, concurrency: 2, {extra}
           retry: {{ baseMs: 5, maxMs: 50 }},
           onEvent: (e) => (globalThis.{run}_{owner} ??= []).push(e),
           transport: {{
             submit: async (request) => {{
               const s = (globalThis.{run}_server ??= {{ keys: {{}}, ops: {{}}, by: {{}} }});
               if (!s.keys[request.id]) {{
                 for (const id of request.operationIds) s.ops[id] = (s.ops[id] ?? 0) + 1;
               }}
               s.keys[request.id] = (s.keys[request.id] ?? 0) + 1;
               await new Promise((r) => setTimeout(r, 2));
               return {{ outcome: 'applied' }};
             }},
             query: async (request) => (globalThis.{run}_server?.keys[request.id] ? {{ outcome: 'applied' }} : {{ status: 404 }}),
           }} }}"
    ));
    match Scheduler::open(options).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!("open {owner} failed: {}", code_of(&error)),
    }
}

fn intents(run: &str, prefix: &str, count: usize) -> JsValue {
    js(&format!(
        "Array.from({{ length: {count} }}, (_, i) => ({{ id: '{run}-{prefix}-' + i, operationType: 'shape.upsert', canvasIds: ['c' + (i % 3)], payload: {{ i }} }}))"
    ))
}

/// The operation ids `owner` heard `settled` for.
fn settled_ids(run: &str, owner: &str) -> Vec<String> {
    let events = js(&format!("globalThis.{run}_{owner} ?? []"));
    js_sys::Array::from(&events)
        .iter()
        .filter(|e| field(e, "type").as_string().as_deref() == Some("settled"))
        .filter_map(|e| field(&e, "operationId").as_string())
        .collect()
}

fn event_types(run: &str, owner: &str) -> Vec<String> {
    let events = js(&format!("globalThis.{run}_{owner} ?? []"));
    js_sys::Array::from(&events)
        .iter()
        .filter_map(|e| field(&e, "type").as_string())
        .collect()
}

/// How many times the in-page server applied each operation.
fn applied(run: &str) -> Vec<(String, f64)> {
    let entries = js(&format!(
        "Object.entries(globalThis.{run}_server?.ops ?? {{}})"
    ));
    js_sys::Array::from(&entries)
        .iter()
        .map(|pair| {
            let pair = js_sys::Array::from(&pair);
            (
                pair.get(0).as_string().unwrap_or_default(),
                pair.get(1).as_f64().unwrap_or(0.0),
            )
        })
        .collect()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..400 {
        if done() {
            return;
        }
        sleep(25).await;
    }
    panic!("timed out waiting for {what}");
}

/// Settled operations leave the working stores as they settle (here with nothing
/// kept whole: only tombstones). A tab that does not dispatch still knows them: an intent that
/// depends on one is accepted, the same intent again is present (settled, not sent again), and
/// each tab hears its own outcomes.
#[wasm_bindgen_test]
async fn issue_38_a_follower_knows_operations_settled_and_compacted() {
    let run = unique("compacted");
    let keep_nothing = "retain: { settled: 0 },";
    let a = open_tab_with(&run, "a", keep_nothing).await;
    let b = open_tab_with(&run, "b", keep_nothing).await;
    for tab in [&a, &b] {
        tab.start().expect("start");
    }
    wait_for("b to learn the leader", || {
        stats_of(&b).1.as_deref() == Some("a")
    })
    .await;
    let first = format!("{run}-x");
    let intent = |id: &str, deps: &str| {
        js(&format!(
            "({{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['c0'], payload: {{ v: 1 }}, dependencies: [{deps}] }})"
        ))
    };
    a.enqueue(intent(&first, "")).await.expect("a enqueues x");
    // A later one holds the ledger's highest sequence, so x may be compacted.
    a.enqueue(intent(&format!("{run}-z"), ""))
        .await
        .expect("a enqueues z");
    wait_for("x to be compacted", || {
        field(&a.operation(&first), "compacted").as_bool() == Some(true)
    })
    .await;
    let second = format!("{run}-y");
    b.enqueue(intent(&second, &format!("'{first}'")))
        .await
        .expect("a dependency on a compacted operation is known");
    b.enqueue(intent(&first, ""))
        .await
        .expect("the same intent again is harmless");
    assert_eq!(
        field(&b.operation(&first), "compacted").as_bool(),
        Some(true),
        "present, as its tombstone"
    );
    let other = js(&format!(
        "({{ id: '{first}', operationType: 'shape.upsert', canvasIds: ['c0'], payload: {{ v: 2 }} }})"
    ));
    let refused = b.enqueue(other).await.expect_err("another intent under x");
    assert_eq!(code_of(&refused), "duplicate_operation");
    wait_for("b to hear y settle", || {
        settled_ids(&run, "b").contains(&second)
    })
    .await;
    let counts = applied(&run);
    for id in [&first, &second] {
        let n = counts.iter().find(|(op, _)| op == id).map(|(_, n)| *n);
        assert_eq!(n, Some(1.0), "{id} applied once: {counts:?}");
    }
    a.stop();
    b.stop();
}

/// A tab that does not dispatch knows what another tab enqueued: its `known(ids)` reads the
/// working stores (the operation pending, the dispatching tab holding it back), then the
/// tombstones once it is settled and compacted; an id never enqueued is `undefined`.
#[wasm_bindgen_test]
async fn a_follower_knows_what_another_tab_enqueued_pending_or_compacted() {
    let run = unique("follower_known");
    let keep_nothing = "retain: { settled: 0 },";
    let a = open_tab_with(&run, "a", keep_nothing).await;
    let b = open_tab_with(&run, "b", keep_nothing).await;
    for tab in [&a, &b] {
        tab.start().expect("start");
    }
    wait_for("b to learn the leader", || {
        stats_of(&b).1.as_deref() == Some("a")
    })
    .await;
    let release = a.hold().expect("hold");
    let (x, z) = (format!("{run}-x"), format!("{run}-z"));
    for id in [&x, &z] {
        let intent = js(&format!(
            "({{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['c0'], payload: {{}} }})"
        ));
        a.enqueue(intent).await.expect("a enqueues");
    }
    let known = |ids: String| {
        let answer = b.known(js(&ids));
        async move {
            let answer = wasm_bindgen_futures::JsFuture::from(answer).await;
            js_sys::Array::from(&answer.expect("known"))
        }
    };
    let answers = known(format!("['{x}', '{run}-never']")).await;
    assert_eq!(
        field(&answers.get(0), "phase").as_string().as_deref(),
        Some("pending"),
        "{:?}",
        answers.get(0)
    );
    assert!(answers.get(1).is_undefined());
    release.call0(&JsValue::NULL).expect("release");
    wait_for("x to be compacted", || {
        field(&a.operation(&x), "compacted").as_bool() == Some(true)
    })
    .await;
    let answers = known(format!("['{x}']")).await;
    assert_eq!(field(&answers.get(0), "compacted").as_bool(), Some(true));
    assert_eq!(
        field(&answers.get(0), "outcome").as_string().as_deref(),
        Some("applied")
    );
    a.stop();
    b.stop();
}

/// Tabs "a" (dispatching) and "b" (following it) of ledger `run`, both started.
async fn leader_and_follower(run: &str) -> (Scheduler, Scheduler) {
    let a = open_tab(run, "a").await;
    let b = open_tab(run, "b").await;
    for tab in [&a, &b] {
        tab.start().expect("start");
    }
    wait_for("b to learn the leader", || {
        stats_of(&b).1.as_deref() == Some("a")
    })
    .await;
    (a, b)
}

fn stats_of(scheduler: &Scheduler) -> (bool, Option<String>) {
    let stats = scheduler.stats();
    (
        field(&stats, "leader").as_bool().unwrap_or(false),
        field(&stats, "leaderOwner").as_string(),
    )
}

#[wasm_bindgen_test]
async fn w4_one_tab_dispatches_every_tab_enqueues_and_hears_its_outcomes() {
    let run = unique("one");
    let a = open_tab(&run, "a").await;
    let b = open_tab(&run, "b").await;
    let c = open_tab(&run, "c").await;
    assert_eq!(
        stats_of(&a),
        (true, Some("a".into())),
        "the first tab leads"
    );
    assert!(!stats_of(&b).0 && !stats_of(&c).0, "the others follow");
    for tab in [&a, &b, &c] {
        tab.start().expect("start");
    }
    wait_for("followers to learn the leader", || {
        stats_of(&b).1.as_deref() == Some("a") && stats_of(&c).1.as_deref() == Some("a")
    })
    .await;
    a.enqueue_many(intents(&run, "a", 15))
        .await
        .expect("a enqueues");
    b.enqueue_many(intents(&run, "b", 15))
        .await
        .expect("b enqueues");
    for i in 0..10 {
        let one = js(&format!(
            "{{ id: '{run}-c-{i}', operationType: 'shape.upsert', canvasIds: ['c{}'], payload: {{ i: {i} }} }}",
            i % 3
        ));
        c.enqueue(one).await.expect("c enqueues");
    }
    wait_for("every tab to hear its operations settle", || {
        settled_ids(&run, "b").len() == 15 && settled_ids(&run, "c").len() == 10
    })
    .await;
    let counts = applied(&run);
    assert_eq!(counts.len(), 40, "every operation reached the server");
    assert!(
        counts.iter().all(|(_, n)| *n == 1.0),
        "each once: {counts:?}"
    );
    // A follower hears only its own operations, and reads what it enqueued.
    assert!(settled_ids(&run, "b").iter().all(|id| id.contains("-b-")));
    let record = b.operation(&format!("{run}-b-3"));
    assert_eq!(
        field(&record, "phase").as_string().as_deref(),
        Some("resolved")
    );
    let why = b.explain(&format!("{run}-b-3")).expect("explain");
    assert_eq!(
        field(&why, "state").as_string().as_deref(),
        Some("resolved")
    );
    assert_eq!(
        b.explain("nobody").err().map(|e| code_of(&e)).as_deref(),
        Some("unknown_operation")
    );
    // Host actions of a follower are answered by the leader.
    let flushed = b.flush("nobody".into()).await.err().map(|e| code_of(&e));
    assert_eq!(flushed.as_deref(), Some("unknown_operation"));
    let log = b
        .events(JsValue::UNDEFINED)
        .await
        .expect("events through the leader");
    assert!(js_sys::Array::from(&log).length() > 0);
    b.settle().await.expect("settle through the leader");
    // A tab opened later (a reload) that enqueues the same intent again changes nothing and
    // reads the stored record.
    let d = open_tab(&run, "d").await;
    d.enqueue(js(&format!(
        "{{ id: '{run}-b-3', operationType: 'shape.upsert', canvasIds: ['c0'], payload: {{ i: 3 }} }}"
    )))
    .await
    .expect("an identical intent again is harmless");
    let record = d.operation(&format!("{run}-b-3"));
    assert_eq!(
        field(&record, "phase").as_string().as_deref(),
        Some("resolved")
    );
    sleep(300).await;
    assert_eq!(applied(&run).len(), 40, "nothing new was sent");
    for tab in [&a, &b, &c, &d] {
        tab.stop();
    }
}

#[wasm_bindgen_test]
async fn w4_a_follower_refuses_bad_input_and_the_ledger_is_unchanged() {
    let run = unique("bad");
    let a = open_tab(&run, "a").await;
    let b = open_tab(&run, "b").await;
    let _hold = a.hold().expect("hold");
    a.start().expect("start");
    a.enqueue(js(&format!(
        "{{ id: '{run}-x', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ v: 1 }} }}"
    )))
    .await
    .expect("durable");
    let cases = [
        ("{ id: 'bad id!', operationType: 'shape.upsert', canvasIds: ['c'] }".to_owned(), "invalid_intent"),
        (
            format!("{{ id: '{run}-y', operationType: 'shape.upsert', canvasIds: ['c'], dependencies: ['{run}-none'] }}"),
            "unknown_dependency",
        ),
        (
            format!("{{ id: '{run}-x', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ v: 2 }} }}"),
            "duplicate_operation",
        ),
    ];
    for (intent, code) in cases {
        let refused = b.enqueue(js(&intent)).await.err().map(|e| code_of(&e));
        assert_eq!(refused.as_deref(), Some(code), "{intent}");
    }
    // The same intent again is harmless; a dependency on a stored operation is fine.
    b.enqueue(js(&format!(
        "{{ id: '{run}-x', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ v: 1 }} }}"
    )))
    .await
    .expect("identical re-enqueue");
    b.enqueue(js(&format!(
        "{{ id: '{run}-z', operationType: 'shape.upsert', canvasIds: ['c'], dependencies: ['{run}-x'] }}"
    )))
    .await
    .expect("dependency in the ledger");
    wait_for("the leader to adopt", || {
        field(&a.stats(), "pending").as_f64() == Some(2.0)
    })
    .await;
    assert!(
        a.operation(&format!("{run}-y")).is_undefined(),
        "nothing refused was stored"
    );
    a.stop();
    b.stop();
}

#[wasm_bindgen_test]
async fn w4_when_the_leader_stops_another_tab_takes_over_and_finishes() {
    let run = unique("over");
    let a = open_tab(&run, "a").await;
    let b = open_tab(&run, "b").await;
    let _hold = a.hold().expect("nothing leaves tab a");
    a.start().expect("start a");
    b.start().expect("start b");
    b.enqueue_many(intents(&run, "b", 12))
        .await
        .expect("b enqueues");
    a.enqueue_many(intents(&run, "a", 8))
        .await
        .expect("a enqueues");
    wait_for("the leader to adopt b's intents", || {
        field(&a.stats(), "pending").as_f64() == Some(20.0)
    })
    .await;
    assert!(applied(&run).is_empty(), "held: nothing sent yet");
    a.stop(); // hands the lease over and releases the lock
    wait_for("b to take over", || stats_of(&b).0).await;
    assert!(event_types(&run, "b").iter().any(|t| t == "leader_changed"));
    assert_eq!(stats_of(&b).1.as_deref(), Some("b"));
    wait_for("b's operations to settle", || {
        settled_ids(&run, "b").len() >= 12
    })
    .await;
    wait_for("every operation applied", || applied(&run).len() == 20).await;
    let counts = applied(&run);
    assert!(
        counts.iter().all(|(_, n)| *n == 1.0),
        "each once: {counts:?}"
    );
    b.stop();
}

#[wasm_bindgen_test]
async fn w4_without_web_locks_the_lease_alone_decides() {
    let run = unique("nolock");
    // Tabs opened while `navigator.locks` is hidden never see it (it is read at open).
    js("Object.defineProperty(navigator, 'locks', { configurable: true, get: () => undefined })");
    let a = open_tab(&run, "a").await;
    let b = open_tab(&run, "b").await;
    js("delete navigator.locks");
    assert!(js("typeof navigator.locks.request === 'function'").is_truthy());
    assert!(stats_of(&a).0, "a took the free lease");
    assert!(!stats_of(&b).0, "b found it held");
    a.start().expect("start a");
    b.start().expect("start b");
    b.enqueue_many(intents(&run, "b", 6))
        .await
        .expect("b enqueues");
    wait_for("b's operations through a", || {
        settled_ids(&run, "b").len() == 6
    })
    .await;
    // No lock to pass on: b takes the lease once a has given it up.
    a.stop();
    wait_for("b to take the lease", || stats_of(&b).0).await;
    b.enqueue_many(intents(&run, "b2", 4))
        .await
        .expect("b enqueues as leader");
    wait_for("every operation applied", || applied(&run).len() == 10).await;
    assert!(applied(&run).iter().all(|(_, n)| *n == 1.0));
    b.stop();
}

#[wasm_bindgen_test]
async fn w4_a_newly_elected_tab_keeps_its_enqueue_order_across_the_inbox() {
    let run = unique("order");
    js("Object.defineProperty(navigator, 'locks', { configurable: true, get: () => undefined })");
    let a = open_tab(&run, "a").await;
    let b = open_tab(&run, "b").await;
    js("delete navigator.locks");
    a.stop(); // nobody leads until b sees the lease given up
    let one = |i: usize| {
        js(&format!(
            "{{ id: '{run}-x{i}', operationType: 'shape.upsert', canvasIds: ['c'], payload: {{ i: {i} }} }}"
        ))
    };
    b.enqueue(one(1)).await.expect("x1 to the inbox");
    b.enqueue(one(2)).await.expect("x2 to the inbox");
    // Keep the inbox locked (a readwrite transaction kept busy) for 1.5 s, so b is elected
    // while x1 and x2 still wait there: x3, enqueued as leader, must not overtake them.
    js(&format!(
        "(() => {{ const open = indexedDB.open('cs-tabs-{run}'); const until = Date.now() + 1500;
           open.onsuccess = () => {{ const store = open.result.transaction('inbox', 'readwrite').objectStore('inbox');
             const spin = () => {{ if (Date.now() < until) store.get(0).onsuccess = spin; }}; spin(); }}; }})()"
    ));
    wait_for("b to lead", || stats_of(&b).0).await;
    b.enqueue(one(3)).await.expect("x3 as leader");
    let sequence = |i: usize| {
        let record = b.operation(&format!("{run}-x{i}"));
        field(&field(&record, "intent"), "sequence").as_f64()
    };
    let (s1, s2, s3) = (sequence(1), sequence(2), sequence(3));
    assert!(
        s1.is_some() && s1 < s2 && s2 < s3,
        "enqueue order kept: {s1:?} {s2:?} {s3:?}"
    );
    b.stop();
}

/// A malformed `inbox` entry (written here with raw IndexedDB, as a damaged or foreign
/// record would be) is set aside in `quarantine` under `inbox/{key}`, and the leader's
/// `onEvent` hears `{type: "quarantined", store: "inbox", key, reason}`.
#[wasm_bindgen_test]
async fn d4_a_malformed_inbox_entry_is_quarantined_and_reported_to_the_leader() {
    let run = unique("badinbox");
    let database = format!("cs-tabs-{run}");
    // The ledger's schema, made by a first tab that then leaves.
    let first = open_tab(&run, "first").await;
    first.stop();
    sleep(50).await;
    super::store_support::raw_put(
        &database,
        "inbox",
        JsValue::from_f64(7.0),
        JsValue::from_str("{\"oops\":1}"),
    )
    .await;
    let leader = open_tab(&run, "leader").await;
    let quarantined = || {
        js_sys::Array::from(&js(&format!("globalThis.{run}_leader ?? []")))
            .iter()
            .find(|e| field(e, "type").as_string().as_deref() == Some("quarantined"))
    };
    wait_for("the quarantined event", || quarantined().is_some()).await;
    let event = quarantined().expect("event");
    assert_eq!(field(&event, "store").as_string().as_deref(), Some("inbox"));
    assert_eq!(field(&event, "key").as_string().as_deref(), Some("7"));
    let reason = field(&event, "reason").as_string().unwrap_or_default();
    assert!(!reason.is_empty(), "a reason is given");
    leader.stop();
    sleep(50).await;
    let kept = super::store_support::raw_keys(&database, "quarantine").await;
    assert!(
        kept.iter()
            .any(|k| k.as_string().as_deref() == Some("inbox/7")),
        "set aside, not dropped: {kept:?}"
    );
    assert!(
        super::store_support::raw_keys(&database, "inbox")
            .await
            .is_empty(),
        "gone from the inbox"
    );
}

/// Enqueues a tab that does not dispatch
/// makes while its last inbox append is written share the next transaction, each checked and
/// answered on its own: one that reuses an earlier id with another intent is refused
/// `duplicate_operation`, the others resolve, reach the server once each, and keep their call
/// order as their sequence order.
#[wasm_bindgen_test]
async fn issue38_a_followers_enqueues_share_inbox_writes_and_are_answered_one_by_one() {
    let run = unique("groupcommit");
    let (a, b) = leader_and_follower(&run).await;
    // Counts the readwrite transactions that append to the inbox (their scope: the inbox and
    // the ledger's operations, which the append checks against).
    js(&format!(
        "(() => {{ const original = IDBDatabase.prototype.transaction;
            globalThis.{run}_appends = 0;
            globalThis.{run}_restore = () => (IDBDatabase.prototype.transaction = original);
            IDBDatabase.prototype.transaction = function (stores, mode, options) {{
              const names = typeof stores === 'string' ? [stores] : Array.from(stores);
              if (mode === 'readwrite' && names.includes('inbox') && names.includes('operations')) globalThis.{run}_appends += 1;
              return original.call(this, stores, mode, options);
            }}; }})()"
    ));
    let calls = js_sys::Array::new();
    for i in 0..12 {
        // The eighth reuses the third's id with another payload.
        let (id, value) = if i == 7 { (2, 99) } else { (i, i) };
        let intent = js(&format!(
            "({{ id: '{run}-g-{id}', operationType: 'shape.upsert', canvasIds: ['c{}'], payload: {{ v: {value} }} }})",
            i % 2
        ));
        calls.push(&b.enqueue(intent));
    }
    let settled = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::all_settled(&calls))
        .await
        .expect("allSettled");
    js(&format!("globalThis.{run}_restore()"));
    let appends = js(&format!("globalThis.{run}_appends"))
        .as_f64()
        .unwrap_or(0.0);
    let outcomes: Vec<String> = js_sys::Array::from(&settled)
        .iter()
        .map(|r| match field(&r, "status").as_string().as_deref() {
            Some("fulfilled") => "ok".to_owned(),
            _ => field(&field(&r, "reason"), "code")
                .as_string()
                .unwrap_or_default(),
        })
        .collect();
    let mut expected = vec!["ok".to_owned(); 12];
    expected[7] = "duplicate_operation".into();
    assert_eq!(outcomes, expected);
    assert!(
        (1.0..=4.0).contains(&appends),
        "12 enqueues made at once took {appends} inbox transactions"
    );
    let ids: Vec<String> = (0..12)
        .filter(|i| *i != 7)
        .map(|i| format!("{run}-g-{i}"))
        .collect();
    wait_for("the leader to apply all eleven", || {
        let done = applied(&run);
        ids.iter()
            .all(|id| done.iter().any(|(op, n)| op == id && *n == 1.0))
    })
    .await;
    // Call order is sequence order.
    let sequences: Vec<f64> = ids
        .iter()
        .map(|id| {
            field(&field(&a.operation(id), "intent"), "sequence")
                .as_f64()
                .unwrap_or(-1.0)
        })
        .collect();
    assert!(
        sequences.windows(2).all(|w| w[0] < w[1]),
        "sequences out of call order: {sequences:?}"
    );
    assert!(applied(&run).iter().all(|(_, n)| *n == 1.0));
    for tab in [a, b] {
        tab.stop();
    }
}

/// A follower's `whenSaved()` covers what it enqueued before the call, though its
/// intents sit in the shared inbox until the leader adopts them: it resolves only once the
/// server applied them, whether the enqueue was awaited or not.
#[wasm_bindgen_test]
async fn issue37_a_followers_when_saved_covers_its_intents_still_in_the_inbox() {
    let run = unique("saved");
    let (a, b) = leader_and_follower(&run).await;
    let ours = |prefix: &str| {
        applied(&run)
            .iter()
            .filter(|(id, n)| id.contains(prefix) && *n == 1.0)
            .count()
    };
    // Awaited, then asked at once.
    b.enqueue_many(intents(&run, "awaited", 5))
        .await
        .expect("b enqueues");
    let saved = b.when_saved().await.expect("whenSaved through the leader");
    assert_eq!(
        ours("-awaited-"),
        5,
        "resolved only once all five were applied"
    );
    assert_eq!(js_sys::Array::from(&field(&saved, "blocked")).length(), 0);
    // Not awaited: the call still came before whenSaved.
    let enqueued = b.enqueue_many(intents(&run, "unawaited", 5));
    b.when_saved().await.expect("whenSaved");
    assert_eq!(ours("-unawaited-"), 5, "covers an enqueue not yet durable");
    enqueued.await.expect("durable");
    for tab in [&a, &b] {
        tab.stop();
    }
}
