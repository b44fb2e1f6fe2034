//! Reads work inside hooks. `compile` and `participants` read `stats`,
//! `operation`, `explain`, `claims` and `pending` (the scheduler as it stands in its step)
//! and decide by what they read; the operation is still frozen, sent and applied. A call that
//! would change the ledger mid-step (`hold`, `start`) is refused `invalid_state`.
//!
//! Each test's state lives on `globalThis` under a name made from its run id (see
//! `hostile_hooks.rs`, whose helpers these are).

use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

use super::hostile_hooks::{expose, intent, open, state, state_name, unique, wait_reason};

fn field(value: &JsValue, path: &str) -> JsValue {
    path.split('.').fold(value.clone(), |value, key| {
        Reflect::get(&value, &key.into()).unwrap_or(JsValue::UNDEFINED)
    })
}

/// JS that reads the scheduler `s` from a hook about `intent`, into `{record}[intent.id]`:
/// what each read answered (or the code it threw), and whether `hold` and `start` were
/// refused. Evaluates to the record.
fn read_everything(record: &str, s: &str) -> String {
    format!(
        "(() => {{
           const code = (f) => {{ try {{ f(); return 'ok'; }} catch (e) {{ return e && e.code ? e.code : 'no code: ' + e; }} }};
           const seen = {{ errors: [] }};
           try {{
             const stats = {s}.stats();
             seen.idle = String(stats.idleReason);
             seen.leader = stats.leader;
             seen.claimed = Object.keys({s}.claims()).length;
             const why = {s}.explain(intent.id);
             seen.state = why.state;
             seen.reason = why.reason;
             seen.pending = {s}.pending().map((p) => p.id);
             seen.record = {s}.operation(intent.id).intent.id;
           }} catch (e) {{
             seen.errors.push(e && e.code ? e.code : 'no code: ' + e);
           }}
           seen.hold = code(() => {s}.hold());
           seen.start = code(() => {s}.start());
           {record}[intent.id] = seen;
           return seen;
         }})()"
    )
}

#[wasm_bindgen_test]
async fn issue37_compile_and_participants_read_the_scheduler_and_the_operation_is_sent() {
    let run = unique("hook-reads");
    let name = state_name(&run);
    let (s, g) = (
        format!("globalThis.{name}_scheduler"),
        format!("globalThis.{name}"),
    );
    js_sys::eval(&format!(
        "globalThis.{name} = {{ compile: {{}}, participants: {{}}, bodies: {{}} }}"
    ))
    .expect("state");
    let in_participants = read_everything(&format!("{g}.participants"), &s);
    let in_compile = read_everything(&format!("{g}.compile"), &s);
    let scheduler = open(&format!(
        "{{ database: 'cs-hook-reads-{run}', owner: 'tab-{run}',
           participants: (intent) => {{ {in_participants}; return intent.canvasIds; }},
           compile: (intent) => {{
             const seen = {in_compile};
             // Decides by what it read: a compile that could not read throws (compile_failed).
             if (seen.errors.length > 0) throw new Error('read failed: ' + seen.errors.join());
             return {{ kind: intent.operationType, canvasIds: intent.canvasIds,
                       payload: {{ ...intent.payload, claimedBefore: seen.claimed, readAs: seen.record,
                                   pendingSeen: seen.pending.length }} }};
           }},
           transport: {{
             submit: (request) => {{ {g}.bodies[request.operationIds[0]] = JSON.parse(request.body).payload; return {{ outcome: 'applied' }}; }},
             query: (request) => ({g}.bodies[request.operationIds[0]] ? {{ outcome: 'applied' }} : {{ status: 404 }}),
           }} }}"
    ))
    .await;
    expose(&run, &scheduler);
    scheduler.start().expect("start");
    let ids = [format!("{run}-a"), format!("{run}-b"), format!("{run}-c")];
    for (id, canvas) in ids.iter().zip(["c1", "c2", "c1"]) {
        scheduler
            .enqueue(intent(id, &format!("{run}-{canvas}")))
            .await
            .expect("durable");
    }
    for id in &ids {
        wait_reason(&scheduler, id, "applied").await;
    }
    for hook in ["participants", "compile"] {
        for id in &ids {
            let seen = state(&run, &format!("{hook}['{id}']"));
            let at = |key: &str| field(&seen, key);
            let what = format!("{hook} of {id}: {:?}", js_sys::JSON::stringify(&seen));
            assert_eq!(js_sys::Array::from(&at("errors")).length(), 0, "{what}");
            // Busy freezing, not idle; leading; this operation pending and ready.
            assert!(
                ["undefined", "null"]
                    .contains(&at("idle").as_string().unwrap_or_default().as_str()),
                "{what}"
            );
            assert_eq!(at("leader").as_bool(), Some(true), "{what}");
            assert_eq!(
                at("state").as_string().as_deref(),
                Some("pending"),
                "{what}"
            );
            assert_eq!(at("reason").as_string().as_deref(), Some("ready"), "{what}");
            assert_eq!(
                at("record").as_string().as_deref(),
                Some(id.as_str()),
                "{what}"
            );
            let pending = js_sys::Array::from(&at("pending"));
            assert!(pending.includes(&JsValue::from_str(id), 0), "{what}");
            assert!(at("claimed").as_f64().is_some(), "{what}");
            // What would change the ledger mid-step is refused with a code.
            assert_eq!(
                at("hold").as_string().as_deref(),
                Some("invalid_state"),
                "{what}"
            );
            assert_eq!(
                at("start").as_string().as_deref(),
                Some("invalid_state"),
                "{what}"
            );
        }
    }
    // The bodies sent carry what compile read.
    for id in &ids {
        let body = state(&run, &format!("bodies['{id}']"));
        assert_eq!(
            field(&body, "readAs").as_string().as_deref(),
            Some(id.as_str())
        );
        assert!(field(&body, "pendingSeen")
            .as_f64()
            .is_some_and(|n| n >= 1.0));
        assert!(field(&body, "claimedBefore").as_f64().is_some());
    }
    // Outside any hook the same reads say idle again, and nothing is claimed.
    let stats = scheduler.stats();
    assert_eq!(
        field(&stats, "idleReason").as_string().as_deref(),
        Some("no_work")
    );
    assert_eq!(js_sys::Object::keys(&scheduler.claims().into()).length(), 0);
    scheduler.stop();
}
