//! Hostile stored records, authorize verdicts and tab messages through the exported `Scheduler`,
//! with an in-page transport that counts what reaches it (`globalThis.{run}.sent`):
//!
//! - Principals: a ledger written under `alice` opened anonymously sends nothing of alice's (and
//!   the same id enqueued anonymously is `duplicate_operation`);
//! - Authorization: `authorize` answering anything but `{allowed: boolean}` is a failed check,
//!   retried; a denial after a lost answer queries first, and a change the server kept is
//!   `applied`;
//! - Several tabs: a forged `leader` message does not demote a leader the stored lease confirms; a
//!   forged `event` never reaches `onEvent`; a tab of another principal cannot act on the
//!   leader's operations; a second open tab with the same `owner` is refused.

use canvas_scheduler::api::scheduler::Scheduler;
use js_sys::Reflect;
use wasm_bindgen::JsValue;
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{code_of, js, sleep};

fn unique(prefix: &str) -> String {
    let random = (js_sys::Math::random() * 1e9) as u64;
    format!("{prefix}_{}_{random}", crate::EXPECTED_GLOBAL)
}

fn field(value: &JsValue, name: &str) -> JsValue {
    Reflect::get(value, &name.into()).unwrap_or(JsValue::UNDEFINED)
}

/// Options of a tab of ledger `run`: `extra` is spliced in (principal, authorize, ...). The
/// transport records `{action, id, ops}` in `globalThis.{run}.sent` and applies each key once;
/// `globalThis.{run}.lose` makes the next submit apply and then fail (a lost answer).
fn options(run: &str, owner: &str, extra: &str) -> JsValue {
    js(&format!(
        "{{ database: 'cs-hostile-{run}', owner: '{owner}', leaseMs: 1000,
           retry: {{ baseMs: 5, maxMs: 40 }},
           onEvent: (e) => ((globalThis.{run} ??= {{}}).events ??= {{}})['{owner}'] = [
             ...((globalThis.{run}.events ?? {{}})['{owner}'] ?? []), e],
           transport: {{
             submit: async (request) => {{
               const s = (globalThis.{run} ??= {{}});
               (s.sent ??= []).push({{ action: 'submit', id: request.id, ops: request.operationIds }});
               (s.keys ??= {{}})[request.id] = true;
               if (s.lose) {{ s.lose = false; throw new TypeError('connection reset'); }}
               if (s.expired) return {{ status: 401 }};
               return {{ outcome: 'applied' }};
             }},
             query: async (request) => {{
               const s = (globalThis.{run} ??= {{}});
               (s.sent ??= []).push({{ action: 'query', id: request.id, ops: request.operationIds }});
               return s.keys?.[request.id] ? {{ outcome: 'applied' }} : {{ status: 404 }};
             }},
           }},
           {extra} }}"
    ))
}

async fn open(run: &str, owner: &str, extra: &str) -> Result<Scheduler, String> {
    Scheduler::open(options(run, owner, extra))
        .await
        .map_err(|e| code_of(&e))
}

async fn open_ok(run: &str, owner: &str, extra: &str) -> Scheduler {
    match open(run, owner, extra).await {
        Ok(scheduler) => scheduler,
        Err(code) => panic!("open {owner} failed: {code}"),
    }
}

fn intent(id: &str) -> JsValue {
    js(&format!(
        "{{ id: '{id}', operationType: 'shape.upsert', canvasIds: ['c-{id}'], payload: {{ id: '{id}' }} }}"
    ))
}

async fn enqueue(scheduler: &Scheduler, id: &str) -> Result<(), String> {
    JsFuture::from(scheduler.enqueue(intent(id)))
        .await
        .map(|_| ())
        .map_err(|e| code_of(&e))
}

/// Operation ids of every attempt the transport saw, with their action.
fn sent(run: &str) -> Vec<(String, String)> {
    let list = js(&format!("globalThis.{run}?.sent ?? []"));
    js_sys::Array::from(&list)
        .iter()
        .flat_map(|s| {
            let action = field(&s, "action").as_string().unwrap_or_default();
            js_sys::Array::from(&field(&s, "ops"))
                .iter()
                .filter_map(|id| id.as_string())
                .map(move |id| (action.clone(), id))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn reason(scheduler: &Scheduler, id: &str) -> String {
    match scheduler.explain(id) {
        Ok(why) => field(&why, "reason").as_string().unwrap_or_default(),
        Err(error) => format!("explain failed: {}", code_of(&error)),
    }
}

fn outcome(scheduler: &Scheduler, id: &str) -> Option<String> {
    field(&scheduler.operation(id), "outcome")
        .is_object()
        .then(|| {
            field(&field(&scheduler.operation(id), "outcome"), "settlement")
                .as_string()
                .unwrap_or_default()
        })
}

/// Event types `owner` heard about `id`.
fn heard(run: &str, owner: &str, id: &str) -> Vec<String> {
    let events = js(&format!("globalThis.{run}?.events?.['{owner}'] ?? []"));
    js_sys::Array::from(&events)
        .iter()
        .filter(|e| {
            field(e, "operationId").as_string().as_deref() == Some(id)
                || js_sys::Array::is_array(&field(e, "operationIds"))
                    && js_sys::Array::from(&field(e, "operationIds"))
                        .iter()
                        .any(|o| o.as_string().as_deref() == Some(id))
        })
        .filter_map(|e| field(&e, "type").as_string())
        .collect()
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        sleep(20).await;
    }
    panic!("timed out waiting for {what}");
}

fn is_leader(scheduler: &Scheduler) -> bool {
    field(&scheduler.stats(), "leader").as_bool() == Some(true)
}

/// Posts `message` on the ledger's channel, as any script of the origin can.
fn forge(run: &str, message: &str) {
    js(&format!(
        "(() => {{ const c = new BroadcastChannel('canvas-scheduler:cs-hostile-{run}'); c.postMessage({message}); c.close(); }})()"
    ));
}

#[wasm_bindgen_test]
async fn k3_a_ledger_written_under_alice_sends_nothing_of_hers_when_opened_anonymously() {
    let run = unique("anon");
    let mine = format!("{run}-alice");
    let alice = open_ok(&run, "alice-tab", "principal: 'alice'").await;
    alice.start().expect("start");
    let release = alice.hold().expect("hold");
    enqueue(&alice, &mine).await.expect("durable");
    let _ = release;
    alice.stop();

    let anonymous = open_ok(&run, "anon-tab", "").await;
    anonymous.start().expect("start");
    let theirs = format!("{run}-anon");
    enqueue(&anonymous, &theirs).await.expect("durable");
    wait_for("the anonymous operation to settle", || {
        outcome(&anonymous, &theirs).is_some()
    })
    .await;
    sleep(200).await;
    assert!(
        sent(&run).iter().all(|(_, id)| id != &mine),
        "alice's operation went out with another user's credentials: {:?}",
        sent(&run)
    );
    assert_eq!(reason(&anonymous, &mine), "other_principal");
    assert_eq!(
        enqueue(&anonymous, &mine).await,
        Err("duplicate_operation".to_owned()),
        "alice's id is not the anonymous session's to enqueue again"
    );
    anonymous.stop();
}

#[wasm_bindgen_test]
async fn k3_an_authorize_answer_other_than_allowed_boolean_is_a_failed_check_not_a_denial() {
    let run = unique("verdict");
    // Each attempt gets the next malformed answer; then {allowed: true}.
    let extra = format!(
        "authorize: () => {{
           const s = (globalThis.{run} ??= {{}});
           const answers = [
             () => undefined, () => 'yes', () => ({{ allowed: 'yes' }}),
             () => ({{ get allowed() {{ throw new Error('getter'); }} }}),
           ];
           const next = answers[s.asked = (s.asked ?? 0) + 1, s.asked - 1];
           return next ? next() : {{ allowed: true }};
         }}"
    );
    let tab = open_ok(&run, "a", &extra).await;
    tab.start().expect("start");
    let id = format!("{run}-op");
    enqueue(&tab, &id).await.expect("durable");
    wait_for("the operation to settle", || outcome(&tab, &id).is_some()).await;
    assert_eq!(outcome(&tab, &id).as_deref(), Some("applied"));
    let asked = field(&js(&format!("globalThis.{run}")), "asked")
        .as_f64()
        .unwrap_or(0.0);
    assert!(asked >= 5.0, "asked {asked} times");
    tab.stop();
}

#[wasm_bindgen_test]
async fn k3_a_denial_after_a_lost_answer_queries_and_a_kept_change_is_applied() {
    let run = unique("late");
    // Allowed once; denied from then on. The first submit is applied but its answer lost.
    let extra = format!(
        "authorize: () => {{
           const s = (globalThis.{run} ??= {{}});
           s.asked = (s.asked ?? 0) + 1;
           return s.asked === 1 ? {{ allowed: true }} : {{ allowed: false, reason: 'read-only' }};
         }}"
    );
    js(&format!("(globalThis.{run} ??= {{}}).lose = true"));
    let tab = open_ok(&run, "a", &extra).await;
    tab.start().expect("start");
    let id = format!("{run}-op");
    enqueue(&tab, &id).await.expect("durable");
    wait_for("the operation to settle", || outcome(&tab, &id).is_some()).await;
    assert_eq!(
        outcome(&tab, &id).as_deref(),
        Some("applied"),
        "the server kept it: never reported rejected ({:?})",
        sent(&run)
    );
    let actions: Vec<String> = sent(&run).into_iter().map(|(a, _)| a).collect();
    assert_eq!(
        actions,
        ["submit", "query"],
        "queried, never submitted again"
    );
    tab.stop();
}

#[wasm_bindgen_test]
async fn w4_a_forged_leader_message_does_not_demote_the_leader() {
    let run = unique("leader");
    let tab = open_ok(&run, "a", "").await;
    tab.start().expect("start");
    assert!(is_leader(&tab));
    let fence = field(&tab.stats(), "fence").as_f64().unwrap_or(0.0);
    let demotions = || {
        let events = js(&format!("globalThis.{run}?.events?.['a'] ?? []"));
        js_sys::Array::from(&events)
            .iter()
            .filter(|e| {
                field(e, "type").as_string().as_deref() == Some("leader_changed")
                    && field(e, "leader").as_bool() == Some(false)
            })
            .count()
    };
    forge(&run, "{ t: 'leader', owner: 'forger', fence: 1e9 }");
    forge(
        &run,
        &format!("{{ t: 'leader', owner: 'forger', fence: {} }}", fence + 1.0),
    );
    sleep(300).await;
    // A demoted tab with no rival takes the lock again at once, with a new fence: so the
    // fence and the events tell whether it ever stopped.
    assert_eq!(demotions(), 0, "the forged message demoted the leader");
    assert!(is_leader(&tab), "the stored lease is still ours");
    assert_eq!(field(&tab.stats(), "fence").as_f64(), Some(fence));
    let id = format!("{run}-op");
    enqueue(&tab, &id).await.expect("durable");
    wait_for("the operation to settle", || outcome(&tab, &id).is_some()).await;
    tab.stop();
}

#[wasm_bindgen_test]
async fn w4_a_forged_event_never_reaches_on_event() {
    let run = unique("event");
    let leader = open_ok(&run, "a", "").await;
    leader.start().expect("start");
    let release = leader.hold().expect("hold");
    let follower = open_ok(&run, "b", "").await;
    follower.start().expect("start");
    assert!(!is_leader(&follower));
    let id = format!("{run}-op");
    enqueue(&follower, &id).await.expect("durable in the inbox");
    for event in [
        format!("{{ type: 'settled', operationId: '{id}', outcome: 'applied' }}"),
        format!("{{ type: 'settled', operationId: '{id}', outcome: 'rejected', error: {{ code: 'x', message: 'forged' }} }}"),
        format!("{{ type: 'blocked', operationId: '{id}', reason: 'forged' }}"),
        format!("{{ type: 'dead_lettered', operationIds: ['{id}'], requestId: 'r' }}"),
    ] {
        forge(&run, &format!("{{ t: 'event', event: {event} }}"));
    }
    sleep(1_500).await;
    assert_eq!(
        heard(&run, "b", &id),
        Vec::<String>::new(),
        "a forged event was delivered"
    );
    // The real outcome still arrives, read from the ledger.
    release.call0(&JsValue::NULL).expect("release");
    wait_for("the follower to hear the real outcome", || {
        heard(&run, "b", &id) == ["settled"]
    })
    .await;
    leader.stop();
    follower.stop();
}

#[wasm_bindgen_test]
async fn w4_a_follower_hears_a_real_block_read_from_the_ledger() {
    let run = unique("block");
    js(&format!("(globalThis.{run} ??= {{}}).expired = true"));
    let leader = open_ok(&run, "a", "").await;
    leader.start().expect("start");
    let follower = open_ok(&run, "b", "").await;
    let id = format!("{run}-op");
    enqueue(&follower, &id).await.expect("durable in the inbox");
    // 401: the request is blocked `unauthorized` (a block of the request, not the operation).
    wait_for("the follower to hear the block", || {
        heard(&run, "b", &id) == ["blocked"]
    })
    .await;
    leader.stop();
    follower.stop();
}

#[wasm_bindgen_test]
async fn w4_a_tab_of_another_principal_cannot_act_on_the_leaders_operations() {
    let run = unique("actor");
    let leader = open_ok(&run, "alice-tab", "principal: 'alice'").await;
    leader.start().expect("start");
    let _release = leader.hold().expect("hold");
    let id = format!("{run}-op");
    enqueue(&leader, &id).await.expect("durable");
    let other = open_ok(&run, "bob-tab", "principal: 'bob'").await;
    assert!(!is_leader(&other));
    for action in ["flush", "retry", "discard"] {
        let promise = match action {
            "flush" => other.flush(id.clone()),
            "retry" => other.retry(id.clone()),
            _ => other.discard(id.clone()),
        };
        let result = JsFuture::from(promise).await;
        assert_eq!(
            result.err().map(|e| code_of(&e)).as_deref(),
            Some("other_principal"),
            "{action}"
        );
    }
    let resumed = JsFuture::from(other.resume()).await;
    assert_eq!(
        resumed.err().map(|e| code_of(&e)).as_deref(),
        Some("other_principal")
    );
    assert_eq!(outcome(&leader, &id), None, "still pending, not discarded");
    leader.stop();
    other.stop();
}

#[wasm_bindgen_test]
async fn w4_a_second_open_tab_with_the_same_owner_is_refused() {
    let run = unique("owner");
    let first = open_ok(&run, "same", "").await;
    assert_eq!(
        open(&run, "same", "").await.err().as_deref(),
        Some("owner_in_use")
    );
    first.stop();
    let again = open_ok(&run, "same", "").await;
    again.stop();
}
