//! Retry pacing that tells an outage from bad luck, on the protocol model with the default
//! retry policy, one operation a request and batched: a flaky endpoint (30 % 503, 20 % 429 `Retry-After: 0`, 20 % of submits'
//! answers lost after the change was applied, 40 ms round trips) drains at the network's pace,
//! with no edit far behind the others and nothing dead-lettered; a ten-minute write outage in
//! the middle of the same mix backs off to one request per `maxMs` per canvas and dead-letters
//! nothing; `Retry-After: 0` on a healthy endpoint neither hammers nor stalls. Every run is
//! seeded, so each figure below is what these seeds give, every time.

use std::collections::BTreeMap;

use canvas_scheduler_core::{
    AttemptOutcome, AttemptStatus, Millis, RetryAction, RetryPolicy, SafeError, SchedulerConfig,
};

use crate::common::flaky::{deliver, edits_over, sends_by_canvas, FlakyMix};

const RTT_MS: Millis = 40;
/// The seeds each figure is taken over.
const SEEDS: std::ops::RangeInclusive<u64> = 1..=20;
/// 40 edits on one canvas drain within this, on every seed.
const ONE_CANVAS_MS: Millis = 20_000;
/// 40 edits over ten canvases drain within this, on every seed.
const TEN_CANVASES_MS: Millis = 10_000;
/// No edit waits longer than this many times the median edit (enqueue to settled).
const TAIL_WITHIN_MEDIANS: u64 = 5;
/// With batching the median edit settles within a few round trips; no edit waits longer
/// than this then.
const BATCHED_TAIL_MS: Millis = 2_500;

/// One operation a request, nothing held back: each edit's own retries are what is paced.
fn one_at_a_time() -> SchedulerConfig {
    crate::common::unbatched()
}

/// The default options: batches of up to 32 operations, a 32 ms coalescing hold.
fn batching() -> SchedulerConfig {
    let config = SchedulerConfig::default();
    assert_eq!(config.batch.max_operations, 32, "the defaults batch");
    config
}

/// 40 edits over `canvases` through the bad day on every seed; asserts each drained within
/// `limit_ms` with no dead letter and no edit waiting more than five times the median (or
/// `tail_floor_ms`, when batching makes the median one round trip), and prints the figures.
fn drains_at_the_network_pace(
    config: fn() -> SchedulerConfig,
    canvases: usize,
    limit_ms: Millis,
    tail_floor_ms: Millis,
) {
    let mut drained = Vec::new();
    for seed in SEEDS {
        let run = deliver(
            config(),
            edits_over(40, canvases),
            FlakyMix::BAD_DAY,
            seed,
            RTT_MS,
            600_000,
            &mut |_, _, _| None,
        );
        let ms = run.drained_ms.expect("drained within ten minutes");
        assert_eq!(
            run.dead_lettered, 0,
            "seed {seed}: random loss is not poison"
        );
        assert_eq!(run.latencies.len(), 40, "seed {seed}: every edit settled");
        assert!(
            ms <= limit_ms,
            "seed {seed}: 40 edits on {canvases} canvases drained in {ms} ms, over {limit_ms} ms"
        );
        assert!(
            run.slowest() <= (TAIL_WITHIN_MEDIANS * run.median()).max(tail_floor_ms),
            "seed {seed}: an edit waited {} ms, the median {} ms",
            run.slowest(),
            run.median()
        );
        drained.push((
            ms,
            run.slowest() as f64 / run.median() as f64,
            run.sent.len(),
        ));
    }
    drained.sort_by_key(|(ms, _, _)| *ms);
    let worst_tail = drained.iter().map(|(_, tail, _)| *tail).fold(0.0, f64::max);
    let attempts: Vec<usize> = drained.iter().map(|(_, _, n)| *n).collect();
    println!(
        "40 edits on {canvases} canvas(es), {} seeds: drained in {}–{} ms (median {} ms); slowest edit at most {worst_tail:.1}x the median; {}–{} attempts",
        drained.len(),
        drained[0].0,
        drained[drained.len() - 1].0,
        drained[drained.len() / 2].0,
        attempts.iter().min().unwrap_or(&0),
        attempts.iter().max().unwrap_or(&0),
    );
}

/// One operation a request (`batch` off, no coalescing hold), so each edit's own retries are
/// paced. Before: 388–862 s on seeds 1–8 (every failure while the endpoint answered was read as
/// poison and kept its backoff step). Now: 7.9–12.0 s on seeds 1–20 (median 10.7 s), the
/// slowest edit at most 2.6x the median.
#[test]
fn s10_forty_edits_on_one_canvas_drain_a_flaky_endpoint_at_its_pace() {
    drains_at_the_network_pace(one_at_a_time, 1, ONE_CANVAS_MS, 0);
}

/// One operation a request. Before: 32–316 s on seeds 1–8, one request waiting minutes. Now: 2.5–4.6 s on seeds 1–20
/// (median 3.3 s), the slowest edit at most 2.7x the median.
#[test]
fn s10_forty_edits_over_ten_canvases_drain_a_flaky_endpoint_at_its_pace() {
    drains_at_the_network_pace(one_at_a_time, 10, TEN_CANVASES_MS, 0);
}

/// The same with the default options (batches of up to 32 operations, a 32 ms hold): the edits a canvas has waiting share a
/// request, so most settle with the first answer and the median edit waits a few round
/// trips; the tail is bounded by [`BATCHED_TAIL_MS`] instead. On seeds 1–20: one canvas
/// 0.1–1.9 s, ten canvases 0.7–2.2 s.
#[test]
fn s10_batched_edits_drain_a_flaky_endpoint_at_its_pace() {
    drains_at_the_network_pace(batching, 1, ONE_CANVAS_MS, BATCHED_TAIL_MS);
    drains_at_the_network_pace(batching, 10, TEN_CANVASES_MS, BATCHED_TAIL_MS);
}

/// The figures over many seeds (`cargo test --release --test behaviour pacing_behaviour -- --ignored`):
/// 1 000 seeds of each case, the same bounds as above.
#[test]
#[ignore = "a sweep of 4 000 runs: run it in release when the pacing changes"]
fn s10_the_bounds_hold_over_a_thousand_seeds() {
    for (name, config, canvases, limit, floor) in [
        (
            "one canvas",
            one_at_a_time as fn() -> SchedulerConfig,
            1,
            ONE_CANVAS_MS,
            0,
        ),
        ("ten canvases", one_at_a_time, 10, TEN_CANVASES_MS, 0),
        (
            "one canvas, batched",
            batching,
            1,
            ONE_CANVAS_MS,
            BATCHED_TAIL_MS,
        ),
        (
            "ten canvases, batched",
            batching,
            10,
            TEN_CANVASES_MS,
            BATCHED_TAIL_MS,
        ),
    ] {
        let mut drained = Vec::new();
        let mut over = Vec::new();
        for seed in 1..=1_000 {
            let run = deliver(
                config(),
                edits_over(40, canvases),
                FlakyMix::BAD_DAY,
                seed,
                RTT_MS,
                600_000,
                &mut |_, _, _| None,
            );
            let ms = run.drained_ms.unwrap_or(Millis::MAX);
            let tail_ok = run.slowest() <= (TAIL_WITHIN_MEDIANS * run.median()).max(floor);
            if ms > limit || !tail_ok || run.dead_lettered > 0 {
                over.push((seed, ms, run.slowest(), run.median()));
            }
            drained.push(ms);
        }
        drained.sort_unstable();
        println!(
            "{name}: drained p50 {} ms, p90 {} ms, p99 {} ms, max {} ms; outside the bounds: {over:?}",
            drained[500], drained[900], drained[990], drained[999]
        );
        assert!(
            over.is_empty(),
            "{name}: {} seeds of 1 000 outside the bounds",
            over.len()
        );
    }
}

const OUTAGE_FROM_MS: Millis = 1_000;
const OUTAGE_MS: Millis = 600_000;

fn unavailable() -> AttemptStatus {
    AttemptStatus {
        error: Some(SafeError::new("http_503", "service unavailable")),
        retry_after_ms: Some(0),
        ..AttemptStatus::outcome(AttemptOutcome::Unresolved)
    }
}

/// An outage on a flaky endpoint: one second into the bad day's 40 edits over ten canvases, the write
/// path goes down for ten minutes (every submit 503 `Retry-After: 0`; queries still meet the
/// mix: 404 for what never arrived, 503 and 429 at random). The failures go at the network's
/// pace only until they are longer than the mix's bad luck makes them; once the outage is
/// `maxMs` old every canvas sends at most one request per `maxMs`, and no two canvases in the
/// same millisecond (jitter). Nothing dead-letters, and everything drains within three
/// backoff steps of recovery: the endpoint is still flaky then, only a submit can show that
/// the write path is back (a query's 404 says nothing), 30 % of submits succeed, and each
/// canvas probes once per `maxMs`. One operation a request, so that every canvas has a
/// request waiting through the outage (batched, most edits are applied before it). On seeds
/// 1–5: at most 28–30 requests on one canvas in the
/// ten minutes, drained 17–55 s after recovery.
#[test]
fn k1_a_ten_minute_write_outage_on_a_flaky_endpoint_backs_off_to_max_ms() {
    let policy = RetryPolicy::default();
    for seed in 1..=5 {
        let run = deliver(
            one_at_a_time(),
            edits_over(40, 10),
            FlakyMix::BAD_DAY,
            seed,
            RTT_MS,
            OUTAGE_FROM_MS + OUTAGE_MS + 120_000,
            &mut |elapsed, action, _| {
                let down = (OUTAGE_FROM_MS..OUTAGE_FROM_MS + OUTAGE_MS).contains(&elapsed);
                (down && action == RetryAction::Submit).then(unavailable)
            },
        );
        assert_eq!(run.dead_lettered, 0, "seed {seed}: an outage is not poison");
        assert_eq!(run.latencies.len(), 40, "seed {seed}: every edit settled");
        let recovered = OUTAGE_FROM_MS + OUTAGE_MS;
        let drained = run.drained_ms.expect("drained");
        assert!(
            drained <= recovered + 3 * policy.max_ms,
            "seed {seed}: drained {} ms after recovery",
            drained.saturating_sub(recovered)
        );
        let steady = OUTAGE_FROM_MS + policy.max_ms..recovered;
        let mut most = 0;
        let mut instants: BTreeMap<Millis, usize> = BTreeMap::new();
        for (canvas, times) in sends_by_canvas(&run.sent) {
            let during: Vec<Millis> = times
                .into_iter()
                .filter(|t| (OUTAGE_FROM_MS..recovered).contains(t))
                .collect();
            for pair in during.windows(2).filter(|p| steady.contains(&p[0])) {
                assert!(
                    pair[1] - pair[0] >= policy.max_ms,
                    "seed {seed}, {canvas}: two requests {} ms apart, {} ms into the outage",
                    pair[1] - pair[0],
                    pair[0] - OUTAGE_FROM_MS
                );
            }
            for t in during.iter().filter(|t| steady.contains(t)) {
                *instants.entry(*t).or_default() += 1;
            }
            most = most.max(during.len());
        }
        assert!(
            instants.values().all(|n| *n == 1),
            "seed {seed}: canvases retry in lockstep"
        );
        // One request per maxMs over ten minutes is 20; the first minute adds the attempts at
        // the network's pace and the curve's first steps.
        assert!(
            most <= 20 + 30,
            "seed {seed}: {most} requests on one canvas in ten minutes"
        );
        println!(
            "seed {seed}: at most {most} requests on one canvas during the outage; drained {} ms after recovery",
            drained.saturating_sub(recovered)
        );
    }
}

/// A healthy endpoint that answers half the attempts `429 Retry-After: 0` is
/// neither hammered (after each 429 the request waits at least half a round trip, the pace's
/// least, before it goes again) nor stalled (40 edits on one canvas drain within 10 s; on seeds
/// 1–20 in 5.3–9.3 s).
#[test]
fn s10_retry_after_0_on_a_healthy_endpoint_neither_hammers_nor_stalls() {
    let mix = FlakyMix {
        busy: 0,
        rate_limited: 50,
        lost: 0,
    };
    for config in [one_at_a_time as fn() -> SchedulerConfig, batching] {
        let mut figures = Vec::new();
        let mut rate_limited = 0;
        for seed in SEEDS {
            let run = deliver(
                config(),
                edits_over(40, 1),
                mix,
                seed,
                RTT_MS,
                600_000,
                &mut |_, _, _| None,
            );
            let drained = run.drained_ms.expect("drained");
            assert!(drained <= 10_000, "seed {seed}: stalled, {drained} ms");
            assert_eq!(run.dead_lettered, 0);
            let mut retries_after_429 = Vec::new();
            for (i, sent) in run.sent.iter().enumerate() {
                if sent.answer.as_deref() != Some("http_429") {
                    continue;
                }
                let next = run.sent[i + 1..].iter().find(|s| s.request == sent.request);
                if let Some(next) = next {
                    retries_after_429.push(next.at - sent.at - RTT_MS);
                }
            }
            let least = retries_after_429
                .iter()
                .min()
                .copied()
                .unwrap_or(Millis::MAX);
            assert!(
                least >= RTT_MS / 2,
                "seed {seed}: a retry {least} ms after its 429"
            );
            rate_limited += retries_after_429.len();
            figures.push((drained, least));
        }
        assert!(rate_limited > 0, "the mix rate-limited something");
        println!("429 Retry-After: 0 on half the attempts, 40 edits on one canvas: (drained ms, least wait after a 429 ms) {figures:?}");
    }
}
