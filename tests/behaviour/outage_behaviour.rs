//! Outages and poison on the protocol model: the attempt bound is for poison, not for outages. Each
//! test runs one scheduler with the default retry options against `SimServer` on the virtual clock,
//! through ten minutes of a fault, and states the bound: nothing dead-letters during an outage,
//! every operation drains within one backoff step (`maxMs`) of recovery, the endpoint's
//! failures go at the network's pace only until they are longer than bad luck makes them
//! (at most `MAX_RUN` in a row), and once the outage is `maxMs` old each canvas sends at most
//! one request per `maxMs`; a request refused while others succeed keeps to its own curve and
//! dead-letters once `maxAttempts` counted failures are spread over `deadLetterAfterMs`.

use std::collections::BTreeMap;

use canvas_scheduler_core::{
    intent::IntentInput, AttemptOutcome, AttemptStatus, CountingHost, FrozenRequest, Millis,
    Report, RetryAction, RetryPolicy, SafeError, SchedulerConfig, MAX_RUN,
};

use crate::common::edit;
use canvas_scheduler_testing::{Harness, ServerFaults, SimServer};

/// The virtual clock's step; answers arrive within one step of being sent.
const TICK_MS: Millis = 50;
/// How long every fault lasts.
const OUTAGE_MS: Millis = 600_000;

/// What the endpoint does to one attempt at `elapsed` ms into the run.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    /// As the model server answers.
    Normal,
    /// 503 with this `Retry-After` (ms), nothing applied.
    Unavailable(Option<Millis>),
}

/// What a run came to.
struct Run {
    /// Request id → times of its submits.
    submits: BTreeMap<String, Vec<Millis>>,
    /// Canvas → times of every attempt (submits and queries) of its requests.
    sends: BTreeMap<String, Vec<Millis>>,
    /// Operation ids dead-lettered, with the time.
    dead: Vec<(Vec<String>, Millis)>,
    /// When nothing was pending any more (after the last edit).
    drained_at: Option<Millis>,
    /// The most failures any request had counted toward its dead letter when the fault ended.
    counted: u32,
    server: SimServer,
}

/// Runs `edits` (time → edits enqueued then) against `fault` for `limit_ms`.
fn run(
    limit_ms: Millis,
    edits: &[(Millis, Vec<IntentInput>)],
    fault: impl Fn(Millis, RetryAction, &FrozenRequest) -> Answer,
) -> Run {
    let config = SchedulerConfig {
        concurrency: 4,
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("outage"));
    let mut server = SimServer::default();
    h.start();
    let start = h.now;
    let mut submits: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    let mut sends: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    let mut dead = Vec::new();
    let mut drained_at = None;
    let mut counted = 0;
    let mut next_edit = 0;
    let last_edit = edits.last().map_or(0, |(at, _)| *at);
    while h.now - start < limit_ms {
        let elapsed = h.now - start;
        while next_edit < edits.len() && edits[next_edit].0 <= elapsed {
            h.enqueue(edits[next_edit].1.clone()).expect("enqueue");
            next_edit += 1;
        }
        while let Some(order) = (!h.wire.is_empty()).then(|| h.wire.remove(0)) {
            if order.action == RetryAction::Submit {
                submits
                    .entry(order.request.id.clone())
                    .or_default()
                    .push(elapsed);
            }
            for canvas in &order.request.canvas_ids {
                sends.entry(canvas.clone()).or_default().push(elapsed);
            }
            let answer = match fault(elapsed, order.action, &order.request) {
                Answer::Normal => {
                    server.handle(order.action, &order.request, ServerFaults::default())
                }
                Answer::Unavailable(retry_after_ms) => AttemptStatus {
                    error: Some(SafeError::new("http_503", "service unavailable")),
                    retry_after_ms,
                    ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
                },
            };
            h.scheduler.on_answer(h.now, order.attempt, answer);
            h.drain();
        }
        for report in h.reports.drain(..) {
            if let Report::DeadLettered { operation_ids, .. } = report {
                dead.push((operation_ids, elapsed));
            }
        }
        if drained_at.is_none() && elapsed >= last_edit && h.scheduler.stats().pending == 0 {
            drained_at = Some(elapsed);
        }
        if elapsed + TICK_MS == OUTAGE_MS {
            counted = submits
                .keys()
                .filter_map(|id| h.scheduler.ledger().request(id).map(|r| r.failures))
                .max()
                .unwrap_or(0);
        }
        h.advance(TICK_MS);
    }
    assert!(
        server.applied.values().all(|&n| n == 1),
        "exactly once through the fault"
    );
    Run {
        submits,
        sends,
        dead,
        drained_at,
        counted,
        server,
    }
}

/// Edits on three canvases: one each at the start, then one every 30 s in turn, for the
/// length of the outage.
fn editing() -> Vec<(Millis, Vec<IntentInput>)> {
    let mut edits = vec![(
        0,
        vec![edit("a0", &["a"]), edit("b0", &["b"]), edit("c0", &["c"])],
    )];
    for i in 1..20u64 {
        let canvas = ["a", "b", "c"][(i % 3) as usize];
        edits.push((i * 30_000, vec![edit(&format!("{canvas}{i}"), &[canvas])]));
    }
    edits
}

/// Through an outage from `from` to `until`: the attempts that went at the network's
/// pace (less than `baseMs` after the canvas's previous one) are at most twice `MAX_RUN` in all
/// (a submit and its query each time), and once the endpoint has been failing for `maxMs`,
/// consecutive attempts on each canvas are at least `maxMs` apart (up to the clock's step).
fn assert_backs_off(run: &Run, from: Millis, until: Millis) {
    let policy = RetryPolicy::default();
    let mut paced = 0;
    for (canvas, times) in &run.sends {
        let times: Vec<Millis> = times
            .iter()
            .copied()
            .filter(|t| (from..until).contains(t))
            .collect();
        paced += times
            .windows(2)
            .filter(|pair| pair[1] - pair[0] < policy.base_ms)
            .count();
        for pair in times.windows(2).filter(|p| p[0] >= from + policy.max_ms) {
            assert!(
                pair[1] - pair[0] + TICK_MS >= policy.max_ms,
                "{canvas}: an attempt {} ms after the one before, {} ms into the outage: {times:?}",
                pair[1] - pair[0],
                pair[0] - from
            );
        }
    }
    println!("attempts at the network's pace: {paced}");
    assert!(
        paced <= 2 * MAX_RUN as usize,
        "{paced} attempts at the network's pace, more than bad luck explains"
    );
}

/// Every operation is applied within one backoff step (`maxMs`) of recovery (and the round
/// trips of the edits queued behind it on its canvas: 2 s).
fn assert_drains_within_a_step(run: &Run, recovered_at: Millis, operations: usize) {
    let step = RetryPolicy::default().max_ms;
    let drained = run.drained_at.expect("everything drained");
    assert!(
        drained <= recovered_at + step + 2_000,
        "drained {} ms after recovery, more than one backoff step ({step} ms)",
        drained.saturating_sub(recovered_at)
    );
    assert_eq!(run.server.applied.len(), operations, "every edit applied");
}

#[test]
fn k1_a_ten_minute_write_outage_with_retry_after_0_dead_letters_nothing() {
    // The server: every submit 503 `Retry-After: 0`, queries answered (404).
    let run = run(OUTAGE_MS + 120_000, &editing(), |elapsed, action, _| {
        if elapsed < OUTAGE_MS && action == RetryAction::Submit {
            Answer::Unavailable(Some(0))
        } else {
            Answer::Normal
        }
    });
    assert!(run.dead.is_empty(), "dead-lettered: {:?}", run.dead);
    assert_eq!(run.counted, 0, "No failure of an outage counts");
    assert_backs_off(&run, 0, OUTAGE_MS);
    assert_drains_within_a_step(&run, OUTAGE_MS, 22);
    let first = run.submits.values().map(Vec::len).max().unwrap_or(0);
    assert!(
        first <= 30,
        "at most 30 submits of one request in 10 min, not hundreds: {first}"
    );
}

#[test]
fn k1_a_ten_minute_full_outage_dead_letters_nothing() {
    let run = run(OUTAGE_MS + 120_000, &editing(), |elapsed, _, _| {
        if elapsed < OUTAGE_MS {
            Answer::Unavailable(None)
        } else {
            Answer::Normal
        }
    });
    assert!(run.dead.is_empty(), "dead-lettered: {:?}", run.dead);
    assert_eq!(run.counted, 0, "No failure of an outage counts");
    assert_backs_off(&run, 0, OUTAGE_MS);
    assert_drains_within_a_step(&run, OUTAGE_MS, 22);
}

#[test]
fn k1_a_flapping_endpoint_dead_letters_nothing() {
    // Down 20 s, up 5 s, for ten minutes; then up.
    let down = |elapsed: Millis| elapsed < OUTAGE_MS && elapsed % 25_000 < 20_000;
    let run = run(OUTAGE_MS + 120_000, &editing(), |elapsed, _, _| {
        if down(elapsed) {
            Answer::Unavailable(None)
        } else {
            Answer::Normal
        }
    });
    assert!(run.dead.is_empty(), "dead-lettered: {:?}", run.dead);
    assert_eq!(run.counted, 0, "No failure of an outage counts");
    for phase in 0..OUTAGE_MS / 25_000 {
        assert_backs_off(&run, phase * 25_000, phase * 25_000 + 20_000);
    }
    assert_drains_within_a_step(&run, OUTAGE_MS, 22);
}

#[test]
fn k1_one_poisoned_request_among_healthy_ones_dead_letters_on_time() {
    // `poison` is refused with a 503 every time; edits on two other canvases every 5 s succeed.
    let mut edits = vec![(0, vec![edit("poison", &["p"])])];
    for i in 1..=140u64 {
        let canvas = if i % 2 == 0 { "h1" } else { "h2" };
        edits.push((i * 5_000, vec![edit(&format!("h{i}"), &[canvas])]));
    }
    let run = run(OUTAGE_MS + 120_000, &edits, |_, _, request| {
        if request.operation_ids.iter().any(|id| id == "poison") {
            Answer::Unavailable(None)
        } else {
            Answer::Normal
        }
    });
    let policy = RetryPolicy::default();
    assert_eq!(
        run.dead.len(),
        1,
        "only the poisoned request: {:?}",
        run.dead
    );
    let (operations, at) = &run.dead[0];
    assert_eq!(operations, &["poison".to_owned()]);
    assert!(
        *at >= policy.dead_letter_after_ms,
        "not before deadLetterAfterMs: {at} ms"
    );
    assert!(
        *at <= policy.dead_letter_after_ms + 2 * policy.max_ms,
        "on time: {at} ms, within two backoff steps of deadLetterAfterMs"
    );
    // Alone on the wire at first, it cannot tell its failures from an outage: they go at the
    // network's pace until they are longer than bad luck makes. From the first healthy answer
    // on it fails on its own and keeps to its curve: after the first minute, its submits (each
    // with its query between) are at least `maxMs` apart, not at the healthy edits' pace.
    let poisoned = run
        .submits
        .values()
        .max_by_key(|times| times.len())
        .cloned()
        .unwrap_or_default();
    for pair in poisoned.windows(2).filter(|pair| pair[0] >= 60_000) {
        assert!(
            pair[1] - pair[0] >= policy.max_ms,
            "the poisoned request keeps to its curve: {poisoned:?}"
        );
    }
    assert!(
        poisoned.len() <= MAX_RUN as usize / 2 + 20,
        "the poisoned request keeps to its curve, not to the healthy edits' pace: {poisoned:?}"
    );
    assert!(
        run.counted >= policy.max_attempts,
        "the poison's failures count"
    );
    assert_eq!(run.server.applied.len(), 140, "every healthy edit applied");
}

/// A wall clock set back by an hour while a retry waits. The driver's timers count real
/// time (`setTimeout`), as modelled here: the armed timer keeps what was left of its delay.
/// The retry must not wait the hour, nor come sooner: every wait stays what it was, whatever
/// `now` does.
#[test]
fn k1_a_wall_clock_set_back_an_hour_stalls_no_retry() {
    const BACK_MS: Millis = 3_600_000;
    const RECOVER_MS: Millis = 10_000;
    let mut h = Harness::new(SchedulerConfig::default(), CountingHost::new("clock"));
    h.now += 10 * BACK_MS; // a clock that can go back an hour
    let mut server = SimServer::default();
    h.start();
    h.enqueue(vec![edit("a0", &["a"])]).expect("enqueue");
    let mut real: Millis = 0;
    let mut set_back = false;
    let mut submits = Vec::new();
    while real < 120_000 && server.applied.is_empty() {
        while let Some(order) = (!h.wire.is_empty()).then(|| h.wire.remove(0)) {
            if order.action == RetryAction::Submit {
                submits.push(real);
            }
            let answer = if real < RECOVER_MS {
                AttemptStatus {
                    error: Some(SafeError::new("http_503", "service unavailable")),
                    ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
                }
            } else {
                server.handle(order.action, &order.request, ServerFaults::default())
            };
            h.scheduler.on_answer(h.now, order.attempt, answer);
            h.drain();
        }
        if !set_back && real >= 5_000 {
            // The clock goes back; the armed timer still fires after what was left of it.
            set_back = true;
            h.now -= BACK_MS;
            h.timer = h.timer.map(|at| at - BACK_MS);
        }
        h.advance(TICK_MS);
        real += TICK_MS;
    }
    let applied_at = real;
    assert!(set_back, "the clock was set back mid-outage");
    assert_eq!(server.applied.len(), 1, "applied once: {submits:?}");
    let step = RetryPolicy::default().max_ms;
    assert!(
        applied_at <= RECOVER_MS + step + 1_000,
        "applied {applied_at} ms into the run: more than one backoff step after recovery ({submits:?})"
    );
    // No storm either: the clock going back brings no retry forward. Before it the endpoint's
    // failures went at the network's pace until they were longer than bad luck makes (a submit
    // and its query each), then the curve.
    let after: Vec<Millis> = submits.iter().copied().filter(|t| *t >= 5_000).collect();
    assert!(after.len() <= 3, "no storm either: {submits:?}");
    assert!(
        submits.len() <= MAX_RUN as usize / 2 + 4,
        "no storm either: {submits:?}"
    );
}

/// A server whose answers outgrow `maxAnswerBytes` (a reference server that sent whole tldraw
/// documents): every answer is `answer_too_large`, and nothing else can be answered behind it
/// on its canvas. The endpoint works, the answer is the fault: each counts, and the
/// request dead-letters on time instead of being retried for ever (the example's hang).
#[test]
fn k1_answers_too_large_to_read_count_and_dead_letter_on_time() {
    let config = SchedulerConfig {
        retry: RetryPolicy {
            base_ms: 100,
            max_ms: 1_000,
            max_attempts: 5,
            dead_letter_after_ms: 10_000,
        },
        ..SchedulerConfig::default()
    };
    let mut h = Harness::new(config, CountingHost::new("big"));
    h.start();
    h.enqueue(vec![edit("a", &["c"]), edit("b", &["c"])])
        .expect("enqueue");
    let start = h.now;
    let mut dead_at = None;
    let mut attempts = 0;
    while h.now - start < 60_000 && dead_at.is_none() {
        while let Some(order) = (!h.wire.is_empty()).then(|| h.wire.remove(0)) {
            attempts += 1;
            h.scheduler.on_answer(
                h.now,
                order.attempt,
                AttemptStatus::answer_too_large(1 << 20),
            );
            h.drain();
        }
        if h.reports
            .iter()
            .any(|r| matches!(r, Report::DeadLettered { .. }))
        {
            dead_at = Some(h.now - start);
        }
        h.advance(TICK_MS);
    }
    let at = dead_at.expect("dead-lettered, not retried for ever");
    assert!((10_000..=13_000).contains(&at), "on time: {at} ms");
    assert!(attempts <= 20, "on the curve: {attempts} attempts");
}
