//! Hostile hooks, through the exported `Scheduler` with an in-page
//! transport (no server):
//!
//! - every host hook is bounded by `attemptTimeoutMs`: a `headers`, `authorize`,
//!   `classifyError`, `transport.submit` or `transport.query` that never settles ends the
//!   attempt `unresolved` with `hook_timeout` naming the hook, frees the slot (another canvas's
//!   operation is delivered meanwhile), is retried (automatically, or by `retry(id)` after a
//!   dead letter) and then frees its canvas (a later operation on it is delivered); the hook's
//!   late answer changes nothing;
//! - `compile`, `participants` and `onEvent` may call any scheduler method: it works, or
//!   throws a coded error (`invalid_state` for `hold` and `start` inside
//!   `compile`/`participants`, whose step holds the scheduler's state; the reads answer there,
//!   see `hook_reads.rs`), and never traps the module.
//!
//! Each test's state lives on `globalThis` under a name made from its run id, so the page and
//! worker binaries, and reruns, never share it.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::{Array, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js, sleep};

pub(super) fn unique(prefix: &str) -> String {
    let random = (js_sys::Math::random() * 1e12) as u64;
    format!("{prefix}-{}-{random}", crate::EXPECTED_GLOBAL)
}

/// The run's JS state object, `globalThis[name]`.
pub(super) fn state_name(run: &str) -> String {
    format!("__hostile_{}", run.replace('-', "_"))
}

fn text(value: &JsValue, key: &str) -> Option<String> {
    Reflect::get(value, &key.into())
        .ok()
        .and_then(|v| v.as_string())
}

fn reason(scheduler: &Scheduler, id: &str) -> String {
    match scheduler.explain(id) {
        Ok(why) => text(&why, "reason").unwrap_or_default(),
        Err(error) => format!("explain failed: {}", code_of(&error)),
    }
}

/// Polls (about 5 s at most) until `done` holds; panics with `what` otherwise.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..250 {
        if done() {
            return;
        }
        sleep(20).await;
    }
    panic!("timed out waiting for {what}");
}

pub(super) async fn wait_reason(scheduler: &Scheduler, id: &str, expected: &str) {
    wait_until(&format!("{id} to be {expected}"), || {
        reason(scheduler, id) == expected
    })
    .await;
    assert_eq!(reason(scheduler, id), expected);
}

pub(super) fn intent(id: &str, canvas: &str) -> JsValue {
    js(&format!(
        "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['{canvas}'], payload: {{ shapeId: 's-{id}' }} }}"
    ))
}

pub(super) async fn open(options: &str) -> Scheduler {
    match Scheduler::open(js(options)).await {
        Ok(scheduler) => scheduler,
        Err(error) => panic!(
            "open failed: {} {:?}",
            code_of(&error),
            text(&error, "message")
        ),
    }
}

/// Options whose hook to hang (the run state's `hang`: `headers`, `authorize`,
/// `classifyError`, `submit` or `query`) never settles the first time it is called; `S.late()` settles that call afterwards with an
/// answer that would change things if it were read. The in-page transport applies each
/// request id once. The first submit throws when the hook to hang needs an unresolved
/// attempt first (`classifyError` sees only those; a query follows only one).
fn hanging_options(run: &str, max_attempts: u32) -> String {
    let s = format!("globalThis.{}", state_name(run));
    format!(
        "{{ database: 'cs-hostile-{run}', owner: 'tab-{run}', concurrency: 1, attemptTimeoutMs: 100,
           retry: {{ baseMs: 1, maxMs: 5, maxAttempts: {max_attempts} }},
           onEvent: (e) => {s}.events.push(e),
           headers: () => {s}.hook('headers', {{ 'x-late': 'late' }}, {{}}),
           authorize: () => {s}.hook('authorize', {{ allowed: false, reason: 'late' }}, {{ allowed: true }}),
           classifyError: () => {s}.hook('classifyError', {{ retryable: false }}, undefined),
           transport: {{
             submit: (request) => {{
               if (['classifyError', 'query'].includes({s}.hang) && !{s}.threw) {{
                 {s}.threw = true;
                 throw new TypeError('network down');
               }}
               return {s}.hook('submit', {{ outcome: 'rejected' }}, () => {{
                 {s}.applied[request.id] = ({s}.applied[request.id] ?? 0) + 1;
                 return {{ outcome: 'applied' }};
               }});
             }},
             query: (request) => {s}.hook('query', {{ outcome: 'rejected' }},
               () => ({s}.applied[request.id] ? {{ outcome: 'applied' }} : {{ status: 404 }})),
           }} }}"
    )
}

/// Installs the run's state: `hook(name, late, answer)` hangs the first call of the hook to
/// hang and answers every other call (`answer` itself, or what it returns when a function).
fn install_state(run: &str, hang: &str) {
    js(&format!(
        "globalThis.{} = {{
           hang: '{hang}', hung: 0, events: [], applied: {{}}, calls: {{}},
           hook(name, late, answer) {{
             this.calls[name] = (this.calls[name] ?? 0) + 1;
             if (name === this.hang && !this.hung) {{
               this.hung = 1;
               return new Promise((resolve) => {{ this.late = () => resolve(late); }});
             }}
             return typeof answer === 'function' ? answer() : answer;
           }},
         }}",
        state_name(run)
    ));
}

pub(super) fn state(run: &str, expression: &str) -> JsValue {
    js(&format!("globalThis.{}.{expression}", state_name(run)))
}

fn in_flight(scheduler: &Scheduler) -> f64 {
    Reflect::get(&scheduler.stats(), &"inFlight".into())
        .ok()
        .and_then(|n| n.as_f64())
        .unwrap_or(-1.0)
}

/// One hook kind. It hangs once; the attempt ends `hook_timeout` after `attemptTimeoutMs`
/// (the log's `retry_scheduled` entry says so) and frees its slot for another canvas. A hung
/// hook is not the request's own failure (it may be the network's or the host's), so even
/// with one attempt allowed nothing dead-letters: the operation is retried on its own and
/// delivered once, and the late answer changes nothing. With retries left, the same, and the
/// next operation on its canvas after it.
async fn a_hook_that_never_settles_is_bounded(hang: &str) {
    let run = unique(&format!("hang-{hang}"));
    install_state(&run, hang);
    let scheduler = open(&hanging_options(&run, 1)).await;
    scheduler.start().expect("start");
    let (a, b) = (format!("{run}-a"), format!("{run}-b"));
    scheduler
        .enqueue(intent(&a, &format!("{run}-ca")))
        .await
        .expect("durable");
    scheduler
        .enqueue(intent(&b, &format!("{run}-cb")))
        .await
        .expect("durable");
    // The slot is free (concurrency 1): the other canvas's operation is delivered too.
    wait_reason(&scheduler, &a, "applied").await;
    wait_reason(&scheduler, &b, "applied").await;
    assert_eq!(state(&run, "hung").as_f64(), Some(1.0), "{hang} was hung");
    let log = scheduler
        .events(js("{ limit: 1000 }"))
        .await
        .expect("events");
    let timed_out = Array::from(&log).iter().any(|entry| {
        text(&entry, "kind").as_deref() == Some("retry_scheduled")
            && text(&entry, "detail").is_some_and(|d| d.ends_with(" after hook_timeout"))
    });
    assert!(timed_out, "{hang}: a retry after hook_timeout is logged");
    let dead = Array::from(&state(&run, "events"))
        .iter()
        .any(|event| text(&event, "type").as_deref() == Some("dead_lettered"));
    assert!(!dead, "{hang}: a hung hook dead-letters nothing");
    // The hung call settles now, with an answer that would apply, reject or refuse: nothing
    // changes.
    state(&run, "late()");
    sleep(300).await;
    for id in [&a, &b] {
        assert_eq!(reason(&scheduler, id), "applied", "{hang}: {id}");
    }
    assert_each_applied_once(&run, hang);
    assert_eq!(in_flight(&scheduler), 0.0);
    scheduler.stop();

    // Retries left: retried on its own like any unresolved attempt, then the canvas is free.
    let run = unique(&format!("hang-retry-{hang}"));
    install_state(&run, hang);
    let scheduler = open(&hanging_options(&run, 20)).await;
    scheduler.start().expect("start");
    let (a, c) = (format!("{run}-a"), format!("{run}-c"));
    for id in [&a, &c] {
        scheduler
            .enqueue(intent(id, &format!("{run}-ca")))
            .await
            .expect("durable");
    }
    wait_reason(&scheduler, &a, "applied").await;
    wait_reason(&scheduler, &c, "applied").await;
    assert_eq!(state(&run, "hung").as_f64(), Some(1.0), "{hang} was hung");
    state(&run, "late()");
    sleep(300).await;
    for id in [&a, &c] {
        assert_eq!(reason(&scheduler, id), "applied", "{hang}: {id}");
    }
    assert_each_applied_once(&run, hang);
    scheduler.stop();
}

fn assert_each_applied_once(run: &str, hang: &str) {
    let applied = state(run, "applied");
    let counts = js_sys::Object::values(applied.unchecked_ref::<js_sys::Object>());
    assert!(counts.length() >= 1, "{hang}: something was applied");
    for value in counts.iter() {
        assert_eq!(
            value.as_f64(),
            Some(1.0),
            "{hang}: each request applied once"
        );
    }
}

#[wasm_bindgen_test]
async fn h5_a_headers_hook_that_never_settles_ends_the_attempt_hook_timeout() {
    a_hook_that_never_settles_is_bounded("headers").await;
}

#[wasm_bindgen_test]
async fn h5_an_authorize_hook_that_never_settles_ends_the_attempt_hook_timeout() {
    a_hook_that_never_settles_is_bounded("authorize").await;
}

#[wasm_bindgen_test]
async fn h5_a_classify_error_hook_that_never_settles_ends_the_attempt_hook_timeout() {
    a_hook_that_never_settles_is_bounded("classifyError").await;
}

#[wasm_bindgen_test]
async fn h5_a_transport_submit_that_never_settles_ends_the_attempt_hook_timeout() {
    a_hook_that_never_settles_is_bounded("submit").await;
}

#[wasm_bindgen_test]
async fn h5_a_transport_query_that_never_settles_ends_the_attempt_hook_timeout() {
    a_hook_that_never_settles_is_bounded("query").await;
}

/// Sets `globalThis[name]` to the scheduler as JS sees it (the exported class).
pub(super) fn expose(run: &str, scheduler: &Scheduler) {
    let _ = Reflect::set(
        &js_sys::global(),
        &format!("{}_scheduler", state_name(run)).into(),
        &JsValue::from(scheduler.clone()),
    );
}

/// JS that calls every scheduler method `s` from inside a hook and records, per method,
/// `ok`, or the error's code (`no code: ...` for anything that is not a coded error: a trap).
/// Promises are recorded when they settle. `stop()` is left to the caller.
fn call_everything(record: &str, s: &str, id: &str, extra_id: &str, canvas: &str) -> String {
    format!(
        "(() => {{
           const note = (name, f) => {{
             try {{
               const out = f();
               if (out && typeof out.then === 'function') {{
                 {record}[name] = 'pending';
                 out.then(() => ({record}[name] = 'ok'),
                          (e) => ({record}[name] = e && e.code ? e.code : 'no code: ' + e));
               }} else {{
                 {record}[name] = 'ok';
               }}
             }} catch (e) {{
               {record}[name] = e && e.code ? e.code : 'no code: ' + e;
             }}
           }};
           note('stats', () => {s}.stats());
           note('claims', () => {s}.claims());
           note('operation', () => {s}.operation('{id}'));
           note('explain', () => {s}.explain('{id}'));
           note('pending', () => {s}.pending());
           note('hold', () => {s}.hold()());
           note('events', () => {s}.events({{ limit: 5 }}));
           note('flush', () => {s}.flush('{id}'));
           note('enqueue', () => {s}.enqueue({{ id: '{extra_id}', operationType: 'shape.upsert', canvasIds: ['{canvas}'], payload: {{}} }}));
         }})()"
    )
}

fn record(run: &str, hook: &str) -> Vec<(String, String)> {
    let record = state(run, hook);
    js_sys::Object::entries(record.unchecked_ref::<js_sys::Object>())
        .iter()
        .map(|pair| {
            let pair = Array::from(&pair);
            (
                pair.get(0).as_string().unwrap_or_default(),
                pair.get(1).as_string().unwrap_or_default(),
            )
        })
        .collect()
}

#[wasm_bindgen_test]
async fn h6_compile_and_participants_may_call_the_scheduler_and_the_operation_is_still_sent() {
    let run = unique("reenter-compile");
    let name = state_name(&run);
    let (s, g) = (
        format!("globalThis.{name}_scheduler"),
        format!("globalThis.{name}"),
    );
    let (a, inner) = (format!("{run}-a"), format!("{run}-inner"));
    js(&format!(
        "globalThis.{name} = {{ compile: {{}}, participants: {{}}, applied: {{}}, calls: 0 }}"
    ));
    let inside_compile = call_everything(&format!("{g}.compile"), &s, &a, &inner, "ci");
    let inside_participants = call_everything(&format!("{g}.participants"), &s, &a, &inner, "ci");
    let scheduler = open(&format!(
        "{{ database: 'cs-hostile-{run}', owner: 'tab-{run}', retry: {{ baseMs: 1, maxMs: 5 }},
           participants: (intent) => {{
             if (intent.id === '{a}') {inside_participants};
             return intent.canvasIds;
           }},
           compile: (intent, requestId) => {{
             {g}.calls += 1;
             if (intent.id === '{a}') {inside_compile};
             return {{ kind: intent.operationType, payload: intent.payload, canvasIds: intent.canvasIds }};
           }},
           transport: {{
             submit: (request) => {{ {g}.applied[request.id] = 1; return {{ outcome: 'applied' }}; }},
             query: (request) => ({g}.applied[request.id] ? {{ outcome: 'applied' }} : {{ status: 404 }}),
           }} }}"
    ))
    .await;
    expose(&run, &scheduler);
    scheduler.start().expect("start");
    scheduler
        .enqueue(intent(&a, &format!("{run}-c")))
        .await
        .expect("durable");
    wait_reason(&scheduler, &a, "applied").await;
    wait_reason(&scheduler, &inner, "applied").await;
    sleep(50).await;
    for hook in ["compile", "participants"] {
        let seen = record(&run, hook);
        assert_eq!(seen.len(), 9, "{hook}: {seen:?}");
        for (method, result) in &seen {
            let allowed: &[&str] = match method.as_str() {
                // The synchronous reads answer, from the step as it stands.
                "stats" | "claims" | "operation" | "explain" | "pending" => &["ok"],
                // A hold would change the ledger mid-step: refused, coded.
                "hold" => &["invalid_state"],
                // Once the step is over; `a` may be in flight by then (a coded refusal).
                "flush" => &["ok", "invalid_state"],
                // Asynchronous: they run once the step is over (the same intent enqueued
                // twice is one operation).
                _ => &["ok"],
            };
            assert!(
                allowed.contains(&result.as_str()),
                "{hook}: {method}: {seen:?}"
            );
        }
    }
    // The module still works: the same scheduler answers, and sends what comes next.
    let last = format!("{run}-last");
    scheduler
        .enqueue(intent(&last, &format!("{run}-c")))
        .await
        .expect("durable");
    wait_reason(&scheduler, &last, "applied").await;
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn h6_stop_inside_compile_stops_after_the_step_and_traps_nothing() {
    let run = unique("reenter-stop");
    let name = state_name(&run);
    let (s, g) = (
        format!("globalThis.{name}_scheduler"),
        format!("globalThis.{name}"),
    );
    js(&format!("globalThis.{name} = {{ stopped: 'no' }}"));
    let scheduler = open(&format!(
        "{{ database: 'cs-hostile-{run}', owner: 'tab-{run}',
           compile: (intent) => {{
             try {{ {s}.stop(); {g}.stopped = 'ok'; }} catch (e) {{ {g}.stopped = e && e.code ? e.code : 'no code: ' + e; }}
             return {{ kind: intent.operationType, payload: intent.payload, canvasIds: intent.canvasIds }};
           }},
           transport: {{ submit: () => ({{ outcome: 'applied' }}), query: () => ({{ outcome: 'applied' }}) }} }}"
    ))
    .await;
    expose(&run, &scheduler);
    scheduler.start().expect("start");
    // Stopped before its write was durable, the enqueue itself may be refused: not looked at.
    let _ = scheduler.enqueue(intent(&format!("{run}-a"), "c")).await;
    wait_until("compile to have run", || {
        state(&run, "stopped").as_string().as_deref() != Some("no")
    })
    .await;
    assert_eq!(state(&run, "stopped").as_string().as_deref(), Some("ok"));
    sleep(20).await;
    let closed = scheduler.start().err().map(|e| code_of(&e));
    assert_eq!(closed.as_deref(), Some("scheduler_closed"));
    // The module is alive: a new scheduler on another ledger delivers.
    let other = unique("reenter-stop-after");
    let next = open(&format!(
        "{{ database: 'cs-hostile-{other}', owner: 'tab-{other}',
           transport: {{ submit: () => ({{ outcome: 'applied' }}), query: () => ({{ outcome: 'applied' }}) }} }}"
    ))
    .await;
    next.start().expect("start");
    let id = format!("{other}-a");
    next.enqueue(intent(&id, "c")).await.expect("durable");
    wait_reason(&next, &id, "applied").await;
    next.stop();
}

#[wasm_bindgen_test]
async fn h6_on_event_may_call_every_scheduler_method_stop_included() {
    let run = unique("reenter-event");
    let name = state_name(&run);
    let (s, g) = (
        format!("globalThis.{name}_scheduler"),
        format!("globalThis.{name}"),
    );
    let (a, inner) = (format!("{run}-a"), format!("{run}-inner"));
    js(&format!(
        "globalThis.{name} = {{ first: {{}}, stopped: 'no' }}"
    ));
    let everything = call_everything(&format!("{g}.first"), &s, &a, &inner, "ce");
    let scheduler = open(&format!(
        "{{ database: 'cs-hostile-{run}', owner: 'tab-{run}',
           onEvent: (e) => {{
             if (e.type !== 'settled') return;
             if (e.operationId === '{a}') {everything};
             if (e.operationId === '{inner}') {{
               {g}.inner = e.outcome;
               try {{ {s}.stop(); {g}.stopped = 'ok'; }} catch (e) {{ {g}.stopped = e && e.code ? e.code : 'no code: ' + e; }}
             }}
           }},
           transport: {{ submit: () => ({{ outcome: 'applied' }}), query: () => ({{ outcome: 'applied' }}) }} }}"
    ))
    .await;
    expose(&run, &scheduler);
    scheduler.start().expect("start");
    scheduler
        .enqueue(intent(&a, &format!("{run}-c")))
        .await
        .expect("durable");
    wait_until("onEvent to stop the scheduler", || {
        state(&run, "stopped").as_string().as_deref() != Some("no")
    })
    .await;
    sleep(50).await;
    assert_eq!(state(&run, "stopped").as_string().as_deref(), Some("ok"));
    let seen = record(&run, "first");
    assert_eq!(seen.len(), 9, "{seen:?}");
    for (method, result) in &seen {
        // `flush(a)` of a settled operation may be refused with its code; nothing traps.
        let allowed: &[&str] = if method == "flush" {
            &["ok", "invalid_state"]
        } else {
            &["ok"]
        };
        assert!(allowed.contains(&result.as_str()), "{method}: {seen:?}");
    }
    assert_eq!(state(&run, "inner").as_string().as_deref(), Some("applied"));
    let closed = scheduler.start().err().map(|e| code_of(&e));
    assert_eq!(closed.as_deref(), Some("scheduler_closed"));
}
