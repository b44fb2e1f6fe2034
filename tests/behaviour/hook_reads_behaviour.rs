//! `participants` and `compile` read the scheduler as it stands in the middle
//! of its step (stats, claims, explain, pending, known), and a hook that decides by what it
//! read still freezes and sends its operation.

use std::cell::RefCell;

use canvas_scheduler_core::{
    default_compile, AttemptOutcome, AttemptStatus, CompiledRequest, CountingHost, Host, Intent,
    SafeError, Scheduler, SchedulerConfig,
};

use crate::common::edit;
use canvas_scheduler_testing::Harness;
use serde_json::json;

/// What one hook call read.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    hook: &'static str,
    operation: String,
    claims: Vec<(String, String)>,
    in_flight: usize,
    idle_reason: Option<&'static str>,
    explained: String,
    pending: Vec<String>,
    earlier: Option<String>,
}

/// A host whose hooks read the scheduler, and whose compile puts what it read in the body.
struct ReadingHost {
    ids: CountingHost,
    seen: RefCell<Vec<Seen>>,
}

impl ReadingHost {
    fn read(&self, hook: &'static str, intent: &Intent, reads: &Scheduler<Self>) -> Seen {
        let stats = reads.stats();
        let explained = reads
            .explain(0, &intent.id)
            .expect("known to the scheduler");
        let seen = Seen {
            hook,
            operation: intent.id.clone(),
            claims: reads
                .claims()
                .iter()
                .map(|(canvas, request)| (canvas.to_owned(), request.clone()))
                .collect(),
            in_flight: stats.in_flight,
            idle_reason: stats.idle_reason,
            explained: format!("{}/{}", explained.state, explained.reason),
            pending: reads.pending(0).into_iter().map(|e| e.id).collect(),
            // The operation before it on the same canvas, as `operation(id)` answers it.
            earlier: reads.known("a").map(|known| format!("{known:?}")),
        };
        self.seen.borrow_mut().push(seen.clone());
        seen
    }
}

impl Host for ReadingHost {
    fn participants(
        &self,
        intent: &Intent,
        reads: &Scheduler<Self>,
    ) -> Result<Vec<String>, SafeError> {
        self.read("participants", intent, reads);
        Ok(intent.canvas_ids.clone())
    }

    fn compile(
        &self,
        intent: &Intent,
        _request_id: &str,
        reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        let seen = self.read("compile", intent, reads);
        let mut compiled = default_compile(intent);
        // Decides by what it read: the body says how many canvases were claimed before it.
        compiled.payload = json!({ "claimedBefore": seen.claims.len() }).into();
        Ok(compiled)
    }

    fn create_request_id(&mut self) -> String {
        self.ids.create_request_id()
    }
}

/// Each operation compiled for a request of its own (a batch compiles its members too).
fn harness() -> Harness<ReadingHost> {
    let mut h = Harness::new(
        SchedulerConfig {
            concurrency: 2,
            ..crate::common::unbatched()
        },
        ReadingHost {
            ids: CountingHost::new("r"),
            seen: RefCell::new(Vec::new()),
        },
    );
    h.start();
    h
}

fn seen(h: &Harness<ReadingHost>, hook: &str, operation: &str) -> Seen {
    let host = h.scheduler.host();
    let seen = host.seen.borrow();
    seen.iter()
        .rev()
        .find(|s| s.hook == hook && s.operation == operation)
        .cloned()
        .unwrap_or_else(|| panic!("{hook} never ran for {operation}: {seen:?}"))
}

#[test]
fn issue37_hooks_read_a_consistent_scheduler_and_the_operation_is_still_sent() {
    let mut h = harness();
    h.enqueue(vec![
        edit("a", &["c1"]),
        edit("b", &["c2"]),
        edit("c", &["c1"]),
    ])
    .unwrap();
    // `a`, first: nothing claimed, nothing in flight, the scheduler busy (not idle), `a`
    // itself ready and every operation still pending.
    let first = seen(&h, "compile", "a");
    assert_eq!(first.claims, []);
    assert_eq!(first.in_flight, 0);
    assert_eq!(first.idle_reason, None);
    assert_eq!(first.explained, "pending/ready");
    assert_eq!(first.pending, ["a", "b", "c"]);
    assert_eq!(seen(&h, "participants", "a").explained, "pending/ready");
    // `b` sees `a` frozen, claiming its canvas, and in flight.
    let second = seen(&h, "compile", "b");
    assert_eq!(second.claims, [("c1".to_owned(), "r-1".to_owned())]);
    assert_eq!(second.in_flight, 1);
    assert!(second.earlier.as_deref().is_some_and(|a| a.contains("r-1")));
    // Both slots taken: `c` may be frozen ahead, but `a` claims its canvas: its
    // participants are read, it waits, and it is not compiled.
    let ran = |h: &Harness<ReadingHost>| h.scheduler.host().seen.borrow().len();
    assert_eq!(ran(&h), 5);
    assert_eq!(seen(&h, "participants", "c").in_flight, 2);
    assert_eq!(h.wire_operations(), ["a", "b"]);
    // What compile decided from its reads is in the bodies sent.
    assert!(h.wire[0].request.body.contains(r#""claimedBefore":0"#));
    assert!(h.wire[1].request.body.contains(r#""claimedBefore":1"#));
    let applied = AttemptStatus::outcome(AttemptOutcome::Applied);
    h.answer_first(applied.clone()).expect("a on the wire");
    // `c`, once `a` settled: `a` reads as applied, only `b` claims a canvas.
    assert_eq!(seen(&h, "participants", "c").explained, "pending/ready");
    let third = seen(&h, "compile", "c");
    assert_eq!(third.claims, [("c2".to_owned(), "r-2".to_owned())]);
    assert!(third
        .earlier
        .as_deref()
        .is_some_and(|a| a.contains("Applied")));
    assert_eq!(third.pending, ["b", "c"]);
    while h.answer_first(applied.clone()).is_some() {}
    let sent: Vec<&str> = h
        .sent
        .iter()
        .flat_map(|o| &o.request.operation_ids)
        .map(String::as_str)
        .collect();
    assert_eq!(sent, ["a", "b", "c"]);
    assert!(h.sent[2].request.body.contains(r#""claimedBefore":1"#));
    assert!(h.scheduler.pending(h.now).is_empty());
    // Reads outside any hook say idle again.
    assert_eq!(h.scheduler.stats().idle_reason, Some("no_work"));
}
