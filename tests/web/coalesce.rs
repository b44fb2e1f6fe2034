//! Coalescing in the browser: the `coalesce(older, newer)` hook merges diffs, a replaced
//! intent is stored without its payload and is still the same intent when enqueued again, and
//! a hook that throws replaces nothing (both sent in order, an `error` event with
//! `coalesce_failed`).

use js_sys::{Array, Reflect, JSON};
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::hostile_hooks::{open, state, state_name, unique, wait_reason};
use super::support::{code_of, js};

fn field(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &key.into()).unwrap_or(JsValue::UNDEFINED)
}

fn text(value: &JsValue) -> String {
    JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

fn nudge(run: &str, id: &str, dx: i32, extra: &str) -> String {
    format!(
        "{{ id: '{run}-{id}', operationType: 'shape.nudge', canvasIds: ['{run}-c'],
           coalesceKey: 'nudge:s', payload: {{ shapeId: 's', dx: {dx}{extra} }} }}"
    )
}

#[wasm_bindgen_test]
async fn issue37_coalesce_merges_diffs_and_a_replaced_intent_keeps_no_payload() {
    let run = unique("coalesce-hook");
    let g = format!("globalThis.{}", state_name(&run));
    js_sys::eval(&format!("{g} = {{ sent: [], errors: [], calls: 0 }}")).expect("state");
    // One operation a request: the bodies sent are read one payload each.
    let scheduler = open(&format!(
        "{{ database: 'cs-coalesce-{run}', owner: 'tab-{run}', batch: {{ maxOperations: 1 }},
           coalesce: (older, newer) => {{
             {g}.calls += 1;
             if (newer.payload.fail) throw new Error('cannot merge');
             return {{ shapeId: 's', dx: older.payload.dx + newer.payload.dx }};
           }},
           onEvent: (e) => {{ if (e.type === 'error') {g}.errors.push(e.code); }},
           transport: {{
             submit: (request) => {{ {g}.sent.push(JSON.parse(request.body)); return {{ outcome: 'applied' }}; }},
             query: () => ({{ status: 404 }}),
           }} }}"
    ))
    .await;
    // One call: all three are admitted in one step, before anything is frozen.
    let batch = js(&format!(
        "[{}, {}, {}]",
        nudge(&run, "n1", 5, ""),
        nudge(&run, "n2", 3, ""),
        nudge(&run, "n3", -1, "")
    ));
    JsFuture::from(scheduler.enqueue_many(batch))
        .await
        .expect("durable");
    scheduler.start().expect("start");
    let n3 = format!("{run}-n3");
    wait_reason(&scheduler, &n3, "applied").await;
    let sent = state(&run, "sent");
    assert_eq!(Array::from(&sent).length(), 1, "{}", text(&sent));
    let body = Array::from(&sent).get(0);
    assert_eq!(
        text(&field(&body, "payload")),
        r#"{"dx":7,"shapeId":"s"}"#,
        "the merged diff"
    );
    assert_eq!(state(&run, "calls").as_f64(), Some(2.0));
    // The replaced ones: settled discarded (superseded), stored without a payload.
    for id in ["n1", "n2"] {
        let id = format!("{run}-{id}");
        wait_reason(&scheduler, &id, "discarded").await;
        let record = scheduler.operation(&id);
        assert!(
            field(&field(&record, "intent"), "payload").is_null(),
            "{}",
            text(&record)
        );
    }
    // Enqueued again as given, each is the same intent; with another payload it is refused.
    for (id, dx) in [("n1", 5), ("n3", -1)] {
        JsFuture::from(scheduler.enqueue(js(&nudge(&run, id, dx, ""))))
            .await
            .unwrap_or_else(|e| panic!("{id} as given: {}", code_of(&e)));
    }
    let other = JsFuture::from(scheduler.enqueue(js(&nudge(&run, "n1", 6, ""))))
        .await
        .expect_err("another intent");
    assert_eq!(code_of(&other), "duplicate_operation");
    // A merge that throws replaces nothing: both are sent, in order.
    let release = scheduler.hold().expect("hold");
    let pair = js(&format!(
        "[{}, {}]",
        nudge(&run, "m1", 2, ""),
        nudge(&run, "m2", 4, ", fail: true")
    ));
    JsFuture::from(scheduler.enqueue_many(pair))
        .await
        .expect("durable");
    release.call0(&JsValue::NULL).expect("release");
    wait_reason(&scheduler, &format!("{run}-m2"), "applied").await;
    let sent = Array::from(&state(&run, "sent"));
    let dxs: Vec<String> = (1..sent.length())
        .map(|i| text(&field(&field(&sent.get(i), "payload"), "dx")))
        .collect();
    assert_eq!(dxs, ["2", "4"]);
    assert_eq!(
        text(&state(&run, "errors")),
        r#"["coalesce_failed"]"#,
        "the host hears of the failed merge"
    );
    scheduler.stop();
}
