//! Logins and principals on a virtual clock: a principal is always compared (an omitted one is
//! anonymous, never a wildcard), and the authorization step is an effect whose verdict the core
//! reads.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, Authorization, CountingHost, ErrorCode, RetryAction,
    SchedulerConfig, Settlement,
};

use crate::common::edit;
use canvas_scheduler_testing::{Harness, MemoryStore, ServerFaults, SimServer};

fn as_principal(principal: Option<&str>, owner: &str) -> SchedulerConfig {
    SchedulerConfig {
        principal: principal.map(str::to_owned),
        owner: owner.into(),
        ..SchedulerConfig::default()
    }
}

/// A ledger where `principal` froze and sent `id` once, with no answer (the tab closed).
fn ledger_with_sent(principal: Option<&str>, id: &str) -> (MemoryStore, u64) {
    let mut h = Harness::new(as_principal(principal, "first"), CountingHost::new("a"));
    h.start();
    h.enqueue(vec![edit(id, &["x"])]).unwrap();
    assert_eq!(h.wire_operations(), [id]);
    (h.store.clone(), h.now + 10_000)
}

/// A ledger where `principal` enqueued `id` while held (never frozen).
fn ledger_with_pending(principal: Option<&str>, id: &str) -> (MemoryStore, u64) {
    let mut h = Harness::new(as_principal(principal, "first"), CountingHost::new("a"));
    h.start();
    let _hold = h.scheduler.hold(h.now).unwrap();
    h.enqueue(vec![edit(id, &["x"])]).unwrap();
    assert!(h.wire.is_empty());
    (h.store.clone(), h.now + 10_000)
}

fn reopen(store: MemoryStore, now: u64, principal: Option<&str>) -> Harness<CountingHost> {
    let mut h = Harness::over(
        as_principal(principal, "second"),
        CountingHost::new("b"),
        store,
        now,
    );
    h.start();
    h.advance(60_000);
    h
}

#[test]
fn k3_an_anonymous_session_never_sends_a_named_principals_work() {
    // Frozen and sent once (recovery re-offers it) and never frozen (pump would freeze it).
    for (store, now) in [
        ledger_with_sent(Some("alice"), "alices"),
        ledger_with_pending(Some("alice"), "alices"),
    ] {
        let mut h = reopen(store, now, None);
        h.enqueue(vec![edit("anons", &["y"])]).unwrap();
        assert_eq!(h.wire_operations(), ["anons"], "alice's work is not sent");
        assert_eq!(
            h.scheduler.explain(h.now, "alices").unwrap().reason,
            "other_principal"
        );
    }
}

#[test]
fn k3_a_named_session_never_sends_anonymous_work() {
    for (store, now) in [
        ledger_with_sent(None, "anons"),
        ledger_with_pending(None, "anons"),
    ] {
        let mut h = reopen(store, now, Some("alice"));
        h.enqueue(vec![edit("alices", &["y"])]).unwrap();
        assert_eq!(h.wire_operations(), ["alices"]);
        assert_eq!(
            h.scheduler.explain(h.now, "anons").unwrap().reason,
            "other_principal"
        );
    }
}

#[test]
fn k3_a_ledger_that_stored_no_principal_keeps_working_anonymously() {
    for (store, now) in [
        ledger_with_sent(None, "old"),
        ledger_with_pending(None, "old"),
    ] {
        let h = reopen(store, now, None);
        assert_eq!(
            h.wire_operations(),
            ["old"],
            "resent or sent by the next session"
        );
    }
}

#[test]
fn k3_the_same_id_under_another_principal_is_a_duplicate_not_the_same_intent() {
    let (store, now) = ledger_with_pending(Some("alice"), "shared");
    for principal in [None, Some("bob")] {
        let mut h = reopen(store.clone(), now, principal);
        let error = h.enqueue(vec![edit("shared", &["x"])]).unwrap_err();
        assert_eq!(error.code, ErrorCode::DuplicateOperation, "{principal:?}");
        assert!(h.wire.is_empty());
    }
    // Alice enqueueing it again is still the harmless repeat it always was.
    let mut h = reopen(store, now, Some("alice"));
    h.enqueue(vec![edit("shared", &["x"])]).unwrap();
    assert_eq!(h.wire_operations(), ["shared"]);
}

fn authorizing() -> Harness<CountingHost> {
    let config = SchedulerConfig {
        principal: Some("alice".into()),
        authorize: true,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("r"));
    h.start();
    h
}

fn settlement(h: &Harness<CountingHost>, id: &str) -> Option<(Settlement, String)> {
    let outcome = h.scheduler.ledger().operation(id)?.outcome.clone()?;
    Some((
        outcome.settlement,
        outcome.error.map(|e| e.code).unwrap_or_default(),
    ))
}

#[test]
fn k3_nothing_is_sent_before_the_authorization_verdict() {
    let mut h = authorizing();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    assert!(h.wire.is_empty(), "waits for the verdict");
    assert_eq!(h.authorizing.len(), 1);
    assert_eq!(
        h.scheduler.explain(h.now, "a").unwrap().reason,
        "authorizing"
    );
    h.authorize_first(Authorization::Allowed);
    assert_eq!(h.wire_operations(), ["a"]);
}

#[test]
fn k3_a_failed_check_is_retried_and_a_first_denial_rejects() {
    let mut h = authorizing();
    h.enqueue(vec![edit("a", &["x"]), edit("b", &["y"])])
        .unwrap();
    h.authorize_first(Authorization::Unavailable("threw TypeError".into()));
    assert!(h.wire.is_empty());
    let a = h.scheduler.explain(h.now, "a").unwrap();
    assert_eq!(
        (a.reason.as_str(), a.due_at.is_some()),
        ("retry_scheduled", true)
    );
    h.authorize_first(Authorization::Denied("read-only".into()));
    assert!(h.wire.is_empty(), "a first submit denied is never sent");
    assert_eq!(
        settlement(&h, "b"),
        Some((Settlement::Rejected, "authorization_denied".into()))
    );
}

/// Alice's edit went out once and the answer was lost; then her right to edit was revoked.
fn denied_after_a_lost_answer(server: &mut SimServer, apply: bool) -> Harness<CountingHost> {
    let mut h = authorizing();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    h.authorize_first(Authorization::Allowed);
    let first = h.wire.remove(0);
    let faults = ServerFaults {
        drop_before_apply: !apply,
        drop_after_apply: apply,
        ..ServerFaults::default()
    };
    let lost = server.handle(first.action, &first.request, faults);
    h.scheduler.on_answer(h.now, first.attempt, lost);
    h.drain();
    h.advance(60_000);
    let retry = h.authorize_first(Authorization::Denied("read-only".into()));
    assert!(retry.is_some(), "the retry asked for authorization");
    h
}

#[test]
fn k3_a_denial_after_a_send_queries_and_a_kept_change_is_applied_not_rejected() {
    let mut server = SimServer::default();
    let mut h = denied_after_a_lost_answer(&mut server, true);
    let query = h.wire.remove(0);
    assert_eq!(query.action, RetryAction::Query, "asks before settling");
    let answer = server.handle(query.action, &query.request, ServerFaults::default());
    h.scheduler.on_answer(h.now, query.attempt, answer);
    h.drain();
    assert_eq!(settlement(&h, "a").map(|s| s.0), Some(Settlement::Applied));
}

/// The request `a` was carried by, whether it is blocked and the code of its error.
fn blocked(h: &Harness<CountingHost>, id: &str) -> (Option<String>, String) {
    let ledger = h.scheduler.ledger();
    let request_id = ledger.operation(id).unwrap().request_id.clone().unwrap();
    let request = ledger.request(&request_id).unwrap();
    let code = request
        .error
        .as_ref()
        .map(|e| e.code.clone())
        .unwrap_or_default();
    (request.blocked.clone(), code)
}

#[test]
fn k3_a_denial_after_a_send_waits_for_the_host_when_the_server_has_not_received_it() {
    let mut server = SimServer::default();
    let mut h = denied_after_a_lost_answer(&mut server, false);
    let query = h.wire.remove(0);
    assert_eq!(query.action, RetryAction::Query);
    let answer = server.handle(query.action, &query.request, ServerFaults::default());
    h.scheduler.on_answer(h.now, query.attempt, answer);
    h.drain();
    // A 404 does not prove a late copy of the first submit will not arrive: the denial
    // blocks the request for the host (`unauthorized`, with the denial's reason), never
    // rejects it, and the denied body is not sent again.
    assert_eq!(settlement(&h, "a"), None);
    assert_eq!(
        blocked(&h, "a"),
        (Some("unauthorized".into()), "authorization_denied".into())
    );
    assert_eq!(server.submits, 0, "the denied body was never sent again");
    h.advance(60_000);
    assert!(h.wire.is_empty() && h.authorizing.is_empty(), "waits");
    // The host gives up on it: discarded, on the host's word.
    h.scheduler.discard(h.now, "a").unwrap();
    h.drain();
    assert_eq!(
        settlement(&h, "a").map(|s| s.0),
        Some(Settlement::Discarded)
    );
}

/// Simulation seed 3817: the first submit left and its answer never came (the copy was
/// still on its way: a tab paused past its lease). The retry was denied, the query that
/// asked first found nothing, and the request was settled rejected; then the late copy
/// applied. A change the server kept is never reported rejected.
#[test]
fn k3_a_denial_and_a_404_never_reject_a_request_a_late_copy_still_applies() {
    let mut server = SimServer::default();
    let mut h = authorizing();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    h.authorize_first(Authorization::Allowed);
    let late = h.wire.remove(0);
    h.scheduler.on_answer(
        h.now,
        late.attempt,
        AttemptStatus::transport_unknown("connection reset"),
    );
    h.drain();
    h.advance(60_000);
    h.authorize_first(Authorization::Denied("read-only".into()));
    let query = h.wire.remove(0);
    assert_eq!(query.action, RetryAction::Query, "asks before settling");
    let not_found = server.handle(query.action, &query.request, ServerFaults::default());
    h.scheduler.on_answer(h.now, query.attempt, not_found);
    h.drain();
    // The late copy arrives and applies.
    let applied = server.handle(late.action, &late.request, ServerFaults::default());
    assert_eq!(applied.outcome, AttemptOutcome::Applied);
    assert_ne!(
        settlement(&h, "a").map(|s| s.0),
        Some(Settlement::Rejected),
        "a change the server kept is never reported rejected"
    );
    assert_eq!(blocked(&h, "a").0.as_deref(), Some("unauthorized"));
    // The right to edit is back (a new login: resume): the check runs again, and the
    // server's own verdict settles it.
    h.scheduler.resume(h.now);
    h.drain();
    h.advance(60_000);
    h.authorize_first(Authorization::Allowed);
    while let Some(order) = (!h.wire.is_empty()).then(|| h.wire.remove(0)) {
        let answer = server.handle(order.action, &order.request, ServerFaults::default());
        h.scheduler.on_answer(h.now, order.attempt, answer);
        h.drain();
    }
    assert_eq!(settlement(&h, "a").map(|s| s.0), Some(Settlement::Applied));
    assert_eq!(server.applied.get("a"), Some(&1));
}

#[test]
fn k3_a_verdict_after_stop_or_a_hold_sends_nothing() {
    let mut h = authorizing();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    let hold = h.scheduler.hold(h.now).unwrap();
    h.drain();
    h.authorize_first(Authorization::Allowed);
    assert!(h.wire.is_empty(), "held while the host decided");
    h.scheduler.release(h.now, hold);
    h.drain();
    h.authorize_first(Authorization::Allowed);
    assert_eq!(h.wire_operations(), ["a"], "asked again once released");
    let mut h = authorizing();
    h.enqueue(vec![edit("a", &["x"])]).unwrap();
    h.scheduler.stop();
    h.drain();
    h.authorize_first(Authorization::Allowed);
    assert!(h.wire.is_empty());
}
