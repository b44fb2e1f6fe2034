//! SPEC K3 on a virtual clock: a principal is always compared (an omitted one is anonymous,
//! never a wildcard), and the authorization step is an effect whose verdict the core reads.

mod common;

use canvas_scheduler::core::config::SchedulerConfig;
use canvas_scheduler::core::error::ErrorCode;
use canvas_scheduler::core::host::CountingHost;
use canvas_scheduler::testing::{Harness, MemoryStore};
use common::edit;

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
