//! Defaults that drain: an editor's ordinary faults — the server busy (503),
//! rate limited (429, `Retry-After: 0`), answers lost after the change was applied — must not
//! leave work pending for minutes with the default retry options. The day's model runs one
//! scheduler against the protocol model (`SimServer`) on the virtual clock, with a seeded mix
//! of faults and a 40 ms round trip per attempt (`crate::common::flaky`), and measures the virtual
//! time until nothing is pending. The other tests here pin how the backoff follows the
//! endpoint: a verdict, the network coming back and `retryAllNow()` bring waiting retries
//! forward; a query's "never received" in an outage resets nothing.

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, CountingHost, Millis, RetryAction, RetryPolicy, SafeError,
    SchedulerConfig,
};

use crate::common::edit;
use crate::common::flaky::{deliver, edits_over, FlakyMix};
use canvas_scheduler_testing::Harness;

/// One round trip on the wire.
const RTT_MS: Millis = 40;

/// What one run came to.
#[derive(Debug)]
struct Drained {
    /// Virtual time from the first enqueue until nothing was pending (or the limit).
    ms: Millis,
    pending: usize,
    dead_lettered: usize,
}

/// `count` edits on one canvas (one canvas per page, as an editor has), enqueued at once,
/// sent through the fault mix until none is pending or `limit_ms` of virtual time passed.
fn drain(retry: RetryPolicy, seed: u64, count: usize, limit_ms: Millis) -> Drained {
    let config = SchedulerConfig {
        retry,
        ..SchedulerConfig::default()
    };
    let run = deliver(
        config,
        edits_over(count, 1),
        FlakyMix::BAD_DAY,
        seed,
        RTT_MS,
        limit_ms,
        &mut |_, _, _| None,
    );
    Drained {
        ms: run.drained_ms.unwrap_or(limit_ms),
        pending: count - run.latencies.len() - run.dead_lettered,
        dead_lettered: run.dead_lettered,
    }
}

/// How much longer than the tuned options the defaults may take to drain the fault mix.
const DEFAULTS_WITHIN: f64 = 1.5;
/// The longest the day's 91 edits may take to drain with the defaults: 40 s of virtual time.
const DAY_DRAINS_WITHIN_MS: Millis = 40_000;

fn tuned() -> RetryPolicy {
    RetryPolicy {
        base_ms: 100,
        max_ms: 2_000,
        ..RetryPolicy::default()
    }
}

/// The run, on the model: 91 edits on one canvas through the fault mix (30 % 503, 20 %
/// 429 `Retry-After: 0`, 20 % of submits' answers lost after the change was applied, 40 ms
/// round trips). Before the backoff followed the endpoint, the defaults left 23 to 72 edits
/// pending after 15 minutes in every seed; when every failure while others were answered
/// kept its backoff step (a random 503 read as poison), the day took 19 to 34 minutes. Now a
/// failure is bad luck until the endpoint's failures are longer than random loss makes them,
/// and bad luck is retried after about one round trip: every seed drains in 21–27 s with the
/// defaults (0.23–0.29 s an edit), the same time as with the tuned options (1.00–1.02×: the
/// curve is hardly used), and nothing dead-letters.
#[test]
fn s10_the_defaults_drain_an_ordinary_fault_mix() {
    let mut ratios = Vec::new();
    for seed in 1..=8 {
        let tuned = drain(tuned(), seed, 91, 2_700_000);
        let defaults = drain(RetryPolicy::default(), seed, 91, 2_700_000);
        println!("seed {seed}: defaults {defaults:?}, tuned {tuned:?}");
        assert_eq!(
            defaults.dead_lettered, 0,
            "seed {seed}: random loss is not poison"
        );
        assert_eq!(
            tuned.dead_lettered, 0,
            "seed {seed}: random loss is not poison"
        );
        assert_eq!(defaults.pending, 0, "seed {seed}: the defaults drain");
        assert_eq!(tuned.pending, 0, "seed {seed}: the tuned options drain");
        assert!(
            defaults.ms <= DAY_DRAINS_WITHIN_MS,
            "seed {seed}: the day drained in {} ms with the defaults",
            defaults.ms
        );
        ratios.push(defaults.ms as f64 / tuned.ms as f64);
    }
    println!("defaults / tuned drain time: {ratios:.2?}");
    assert!(
        ratios.iter().all(|&r| r <= DEFAULTS_WITHIN),
        "the defaults drain within {DEFAULTS_WITHIN}x the tuned options' time: {ratios:.2?}"
    );
}

/// A scheduler whose endpoint has answered 64 requests properly (so three failures in a row
/// are longer than its bad luck: an outage), with one edit on each of `canvases` on the wire.
fn one_canvas_each(canvases: &[&str]) -> Harness<CountingHost> {
    let config = SchedulerConfig {
        concurrency: canvases.len(),
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("drain"));
    h.start();
    for i in 0..64 {
        h.enqueue(vec![edit(&format!("warm-{i}"), &["warm"])])
            .expect("enqueue");
        while h
            .answer_first(AttemptStatus::outcome(AttemptOutcome::Applied))
            .is_some()
        {}
    }
    let edits = canvases
        .iter()
        .map(|c| edit(&format!("on-{c}"), &[c]))
        .collect();
    h.enqueue(edits).expect("enqueue");
    h
}

fn busy() -> AttemptStatus {
    AttemptStatus {
        error: Some(SafeError::new("http_503", "busy")),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

fn not_found() -> AttemptStatus {
    AttemptStatus {
        error: Some(SafeError::new("not_found", "never received")),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

fn due_of(h: &Harness<CountingHost>, operation: &str) -> Option<Millis> {
    let request = h
        .scheduler
        .ledger()
        .operation(operation)?
        .request_id
        .clone()?;
    h.scheduler.ledger().request(&request)?.retry_at
}

/// How long `operation`'s retry waits from now.
fn wait_of(h: &Harness<CountingHost>, operation: &str) -> Millis {
    due_of(h, operation).expect("a retry is scheduled") - h.now
}

/// Whether a wait is a backoff step of `step_ms` in an outage `age_ms` old: no shorter than
/// the step or the age, and at most a quarter longer (jitter).
fn is_step(wait: Millis, step_ms: Millis, age_ms: Millis) -> bool {
    let step = step_ms.max(age_ms);
    (step..=step + step / 4).contains(&wait)
}

/// The longest wait after bad luck here: one and a half times the pace, whose floor is 20 ms
/// (the harness answers within the tick it sent).
const PACE_MAX_MS: Millis = 30;

/// Waits until `request`'s retry is sent and answers it `status`; returns its action.
fn attempt(h: &mut Harness<CountingHost>, request: &str, status: AttemptStatus) -> RetryAction {
    let due = h
        .scheduler
        .ledger()
        .request(request)
        .and_then(|r| r.retry_at);
    h.advance(due.map_or(0, |due| due.saturating_sub(h.now)));
    let action = h
        .wire
        .iter()
        .find(|o| o.request.id == request)
        .map(|o| o.action)
        .expect("the retry was sent when due");
    h.answer(request, status);
    action
}

/// A query that finds nothing after a failed submit is not a proper answer from
/// the endpoint (a server whose write path is down answers it too). After bad luck the same
/// request goes again at once; once the endpoint's failures are longer than bad luck makes
/// them (an outage), it goes again after the step its failure earned, never sooner, and the
/// step is not reset; the 503s, with nothing else answered, count no failure toward the dead
/// letter.
#[test]
fn k1_a_query_that_finds_nothing_after_a_failed_submit_resets_no_backoff() {
    let mut h = one_canvas_each(&["a"]);
    let request = h.wire_ids()[0].clone();
    let failing_since = h.now;
    h.answer(&request, busy());
    assert!(
        wait_of(&h, "on-a") <= PACE_MAX_MS,
        "bad luck: about a round trip"
    );
    assert_eq!(attempt(&mut h, &request, not_found()), RetryAction::Query);
    assert_eq!(
        wait_of(&h, "on-a"),
        1,
        "bad luck: the resubmit goes at once"
    );
    for _ in 0..2 {
        assert_eq!(attempt(&mut h, &request, busy()), RetryAction::Submit);
        assert_eq!(attempt(&mut h, &request, not_found()), RetryAction::Query);
    }
    // The third 503 in a row, nothing else answered: the endpoint is judged down.
    let resubmit_wait = wait_of(&h, "on-a");
    assert!(
        is_step(resubmit_wait, 500, h.now - failing_since),
        "the resubmit waits the step the 503 earned: {resubmit_wait} ms"
    );
    h.advance(resubmit_wait - 1);
    assert!(h.wire.is_empty(), "not at once");
    h.advance(1);
    let resubmit = h.wire.first().expect("submitted again after the step");
    assert_eq!(resubmit.action, RetryAction::Submit);
    assert_eq!(resubmit.request.id, request, "the same frozen request");
    let failures = h.scheduler.ledger().request(&request).map(|r| r.failures);
    assert_eq!(failures, Some(0), "an outage counts no failure");
    // The next failure goes on from the step reached: the 404 reset nothing.
    h.answer(&request, busy());
    let wait = wait_of(&h, "on-a");
    assert!(
        is_step(wait, 1_000, h.now - failing_since),
        "the second step, or as long as the endpoint has been failing: {wait} ms"
    );
}

/// A verdict from the endpoint shows it is up: a request that waited on a long backoff on
/// another canvas is due at once, and its backoff starts again from the first step; a wait
/// the server asked for is left alone.
#[test]
fn s10_a_verdict_resets_backoff_and_brings_waiting_retries_forward() {
    let mut h = one_canvas_each(&["a", "b", "c"]);
    let [a, b, c] = [0, 1, 2].map(|i| h.wire_ids()[i].clone());
    // a fails four times in a row while nothing else is answered: after the third the
    // endpoint is judged down, and a backs off (500, then 1 000 ms, or as long as the
    // endpoint has been failing).
    let failing_since = h.now;
    h.answer(&a, busy());
    attempt(&mut h, &a, busy());
    attempt(&mut h, &a, busy());
    let wait = wait_of(&h, "on-a");
    assert!(is_step(wait, 500, h.now - failing_since), "{wait} ms");
    attempt(&mut h, &a, busy());
    let wait = wait_of(&h, "on-a");
    assert!(is_step(wait, 1_000, h.now - failing_since), "{wait} ms");
    // c is told to come back in a minute.
    h.answer(
        &c,
        AttemptStatus {
            retry_after_ms: Some(60_000),
            ..busy()
        },
    );
    // b is applied: the endpoint answers again.
    h.answer(&b, AttemptStatus::outcome(AttemptOutcome::Applied));
    assert_eq!(h.wire_ids(), [a.as_str()], "a goes again at once");
    assert_eq!(
        due_of(&h, "on-c"),
        Some(h.now + 60_000),
        "c keeps the server's wait"
    );
    // a failed three times in a row outside the outage while b was answered: on an endpoint
    // that never failed before, that is not bad luck. It backs off from the first step.
    h.answer(&a, busy());
    let wait = wait_of(&h, "on-a");
    assert!(
        is_step(wait, 500, 0),
        "from the first step again: {wait} ms"
    );
}

/// The network coming back (`online`) brings every backoff forward; `retryAllNow()`
/// brings every scheduled retry forward, a wait the server asked for included.
#[test]
fn s10_online_and_retry_all_now_bring_retries_forward() {
    let mut h = one_canvas_each(&["a", "b"]);
    let [a, b] = [0, 1].map(|i| h.wire_ids()[i].clone());
    h.answer(&a, busy());
    attempt(&mut h, &a, busy());
    attempt(&mut h, &a, busy());
    h.answer(
        &b,
        AttemptStatus {
            retry_after_ms: Some(60_000),
            ..busy()
        },
    );
    assert!(wait_of(&h, "on-a") >= 500, "a backs off");
    h.scheduler.set_online(h.now, false);
    h.scheduler.set_online(h.now, true);
    h.drain();
    assert_eq!(
        h.wire_ids(),
        [a.as_str()],
        "a goes as soon as the network is back"
    );
    assert_eq!(
        due_of(&h, "on-b"),
        Some(h.now + 60_000),
        "b keeps the server's wait"
    );
    h.answer(&a, busy());
    h.scheduler.retry_all_now(h.now);
    h.drain();
    let mut on_wire = h.wire_ids();
    on_wire.sort();
    let mut both = vec![a, b];
    both.sort();
    assert_eq!(on_wire, both, "retryAllNow sends both now");
}
