//! A host that breaks the globals the scheduler reads: `Date.now` and `crypto.randomUUID`
//! replaced by functions that throw (or answer nonsense) while the scheduler works. Nothing
//! traps and nothing stays borrowed: once they are back, every call answers and the work is
//! sent, each operation applied once.

use js_sys::{Array, Reflect};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::hostile_hooks::{open, state_name, unique, wait_reason};
use super::support::{code_of, js, sleep};

fn field(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

/// Replaces `Date.now` and `crypto.randomUUID` (kept under `{g}.saved`) by `how`:
/// `throw` or `nonsense`.
fn break_globals(g: &str, how: &str) {
    js(&format!(
        "(() => {{
           {g}.saved = {{ now: Date.now, uuid: crypto.randomUUID }};
           const bad = {how:?} === 'throw' ? () => {{ throw new Error('broken by the host'); }} : () => 'nonsense';
           Date.now = bad;
           try {{ crypto.randomUUID = bad; }} catch {{}}
           Object.defineProperty(crypto, 'randomUUID', {{ configurable: true, writable: true, value: bad }});
         }})()"
    ));
}

fn restore_globals(g: &str) {
    js(&format!(
        "(() => {{ Date.now = {g}.saved.now; Object.defineProperty(crypto, 'randomUUID', {{ configurable: true, writable: true, value: {g}.saved.uuid }}); }})()"
    ));
}

async fn survives(how: &str) {
    let run = unique(&format!("globals-{how}"));
    let g = format!("globalThis.{}", state_name(&run));
    js_sys::eval(&format!("{g} = {{ applied: {{}} }}")).expect("state");
    let scheduler = open(&format!(
        "{{ database: 'cs-globals-{run}', owner: 'tab-{run}', retry: {{ baseMs: 10, maxMs: 50 }},
           transport: {{
             submit: (request) => {{ for (const id of request.operationIds) {g}.applied[id] = ({g}.applied[id] ?? 0) + 1; return {{ outcome: 'applied' }}; }},
             query: (request) => ({g}.applied[request.operationIds[0]] ? {{ outcome: 'applied' }} : {{ status: 404 }}),
           }} }}"
    ))
    .await;
    scheduler.start().expect("start");
    let intent = |id: &str| {
        js(&format!(
            "{{ id: '{run}-{id}', operationType: 'shape.upsert', canvasIds: ['{run}-c'], payload: {{ id: '{id}' }} }}"
        ))
    };
    break_globals(&g, how);
    // Every call while the globals are broken answers (a value or a coded error), none traps.
    let during = JsFuture::from(scheduler.enqueue(intent("during"))).await;
    if let Err(error) = &during {
        assert!(!code_of(error).is_empty(), "a coded error: {error:?}");
    }
    let _ = scheduler.stats();
    let _ = scheduler.pending_js();
    sleep(100).await;
    restore_globals(&g);
    // Nothing stayed borrowed: every call answers again, and the work is sent.
    JsFuture::from(scheduler.enqueue(intent("after")))
        .await
        .unwrap_or_else(|e| panic!("enqueue after: {}", code_of(&e)));
    wait_reason(&scheduler, &format!("{run}-after"), "applied").await;
    if during.is_ok() {
        wait_reason(&scheduler, &format!("{run}-during"), "applied").await;
    }
    let applied = Array::from(&js(&format!("Object.values({g}.applied)")));
    assert!(applied.iter().all(|n| n.as_f64() == Some(1.0)), "each once");
    assert!(field(&scheduler.stats(), "leader")
        .as_bool()
        .unwrap_or(false));
    scheduler.stop();
}

#[wasm_bindgen_test]
async fn h10_date_now_and_random_uuid_that_throw_trap_nothing() {
    survives("throw").await;
}

#[wasm_bindgen_test]
async fn h10_date_now_and_random_uuid_that_answer_nonsense_trap_nothing() {
    survives("nonsense").await;
}
