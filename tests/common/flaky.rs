//! A flaky endpoint on the protocol model: a seeded fault mix drawn for every attempt, and a
//! wire on which each attempt's answer arrives one round trip after it was sent (attempts in
//! flight together are answered in the order they were sent, each at its own time).

use std::collections::BTreeMap;

use canvas_scheduler_core::{
    intent::IntentInput, AttemptStatus, CountingHost, FrozenRequest, Millis, Report, RetryAction,
    SchedulerConfig, SendOrder,
};
use canvas_scheduler_testing::{Harness, ServerFaults, SimRng, SimServer};

/// The share of attempts that meet each fault, in percent of all attempts; the rest are
/// answered as the server decides.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlakyMix {
    /// Answered 503, nothing applied.
    pub busy: u64,
    /// Answered 429 `Retry-After: 0`, nothing applied.
    pub rate_limited: u64,
    /// A submit applied, then its answer lost (the client sees a transport error). A query
    /// applies nothing, so its share is answered as usual.
    pub lost: u64,
}

impl FlakyMix {
    /// An editor's bad day: 30 % 503, 20 % 429 `Retry-After: 0`, 20 % of submits' answers
    /// lost after the change was applied.
    pub(crate) const BAD_DAY: FlakyMix = FlakyMix {
        busy: 30,
        rate_limited: 20,
        lost: 20,
    };

    /// The fate of one attempt.
    pub(crate) fn faults(&self, rng: &mut SimRng, action: RetryAction) -> ServerFaults {
        let roll = rng.below(100);
        let busy = roll < self.busy;
        let rate_limited = (self.busy..self.busy + self.rate_limited).contains(&roll);
        let lost = (self.busy + self.rate_limited..self.busy + self.rate_limited + self.lost)
            .contains(&roll);
        ServerFaults {
            server_error: busy,
            too_many: rate_limited.then_some(0),
            drop_after_apply: action == RetryAction::Submit && lost,
            ..ServerFaults::default()
        }
    }
}

/// What the endpoint does to one attempt: `None` answers as the flaky mix draws; `Some`
/// answers that instead (an outage, a poisoned request).
pub(crate) type Override = dyn FnMut(Millis, RetryAction, &FrozenRequest) -> Option<AttemptStatus>;

/// One attempt as it left, and how it was answered.
#[derive(Clone, Debug)]
pub(crate) struct Sent {
    /// Virtual time since the start of the run.
    pub at: Millis,
    /// The request's canvases.
    pub canvases: Vec<String>,
    /// The request id.
    pub request: String,
    /// Submit or query.
    pub action: RetryAction,
    /// The attempt.
    pub attempt: u64,
    /// What it was answered: the error's code, or the outcome.
    pub answer: Option<String>,
}

/// What a run came to.
#[derive(Debug, Default)]
pub(crate) struct Delivery {
    /// Virtual time from the first enqueue until nothing was pending (`None`: not within
    /// the run's limit).
    pub drained_ms: Option<Millis>,
    /// Operation id → ms from its enqueue until it settled.
    pub latencies: BTreeMap<String, Millis>,
    /// Operations dead-lettered.
    pub dead_lettered: usize,
    /// Every attempt, in the order sent.
    pub sent: Vec<Sent>,
    /// The server at the end.
    pub server: SimServer,
}

impl Delivery {
    /// The enqueue-to-settled latencies, sorted.
    pub(crate) fn sorted_latencies(&self) -> Vec<Millis> {
        let mut all: Vec<Millis> = self.latencies.values().copied().collect();
        all.sort_unstable();
        all
    }

    /// The median enqueue-to-settled latency.
    pub(crate) fn median(&self) -> Millis {
        let all = self.sorted_latencies();
        all.get(all.len() / 2).copied().unwrap_or(0)
    }

    /// The longest enqueue-to-settled latency.
    pub(crate) fn slowest(&self) -> Millis {
        self.sorted_latencies().last().copied().unwrap_or(0)
    }
}

/// `edits` (time since the start → intents enqueued then) through the flaky `mix` drawn from
/// `seed`, each attempt answered `rtt_ms` after it left, until nothing is pending after the
/// last edit or `limit_ms` of virtual time passed. `endpoint` may answer an attempt instead
/// of the mix.
pub(crate) fn deliver(
    config: SchedulerConfig,
    edits: Vec<(Millis, Vec<IntentInput>)>,
    mix: FlakyMix,
    seed: u64,
    rtt_ms: Millis,
    limit_ms: Millis,
    endpoint: &mut Override,
) -> Delivery {
    let mut h = Harness::new(config, CountingHost::new("flaky"));
    let mut rng = SimRng::new(seed);
    let mut run = Delivery::default();
    let mut flights: Vec<(Millis, SendOrder)> = Vec::new();
    let mut enqueued: BTreeMap<String, Millis> = BTreeMap::new();
    let mut edits = edits.into_iter().peekable();
    h.start();
    let start = h.now;
    loop {
        let elapsed = h.now - start;
        while let Some((_, intents)) = edits.next_if(|(at, _)| *at <= elapsed) {
            for intent in &intents {
                enqueued.insert(intent.id.clone(), elapsed);
            }
            h.enqueue(intents).expect("enqueue");
        }
        for order in std::mem::take(&mut h.wire) {
            run.sent.push(Sent {
                at: elapsed,
                canvases: order.request.canvas_ids.clone(),
                request: order.request.id.clone(),
                action: order.action,
                attempt: order.attempt,
                answer: None,
            });
            flights.push((h.now + rtt_ms, order));
        }
        for report in h.reports.drain(..) {
            match report {
                Report::Settled { operation_id, .. } => {
                    let since = enqueued.get(&operation_id).copied().unwrap_or(0);
                    run.latencies.insert(operation_id, elapsed - since);
                }
                Report::DeadLettered { operation_ids, .. } => {
                    run.dead_lettered += operation_ids.len();
                }
                _ => {}
            }
        }
        if edits.peek().is_none() && h.scheduler.stats().pending == 0 {
            run.drained_ms = Some(elapsed);
            break;
        }
        let next_answer = flights.iter().map(|(at, _)| *at).min();
        let next_edit = edits.peek().map(|(at, _)| start + at);
        let next = [next_answer, h.timer, next_edit]
            .into_iter()
            .flatten()
            .min();
        let Some(next) = next.filter(|at| *at - start <= limit_ms) else {
            break;
        };
        if Some(next) == next_answer && h.timer.is_none_or(|t| t >= next) {
            h.now = h.now.max(next);
            let index = flights
                .iter()
                .position(|(at, _)| *at == next)
                .expect("the flight due now");
            let (_, order) = flights.remove(index);
            let elapsed = h.now - start;
            let answer = endpoint(elapsed, order.action, &order.request).unwrap_or_else(|| {
                let faults = mix.faults(&mut rng, order.action);
                run.server.handle(order.action, &order.request, faults)
            });
            let said = answer
                .error
                .as_ref()
                .map(|e| e.code.clone())
                .unwrap_or_else(|| format!("{:?}", answer.outcome));
            if let Some(sent) = run.sent.iter_mut().find(|s| s.attempt == order.attempt) {
                sent.answer = Some(said);
            }
            h.scheduler.on_answer(h.now, order.attempt, answer);
            h.drain();
        } else {
            h.advance(next.saturating_sub(h.now));
        }
    }
    assert!(
        run.server.applied.values().all(|&n| n == 1),
        "exactly once through the flaky mix"
    );
    run
}

/// `count` edits spread over `canvases` in turn, all enqueued at the start.
pub(crate) fn edits_over(count: usize, canvases: usize) -> Vec<(Millis, Vec<IntentInput>)> {
    let intents = (0..count)
        .map(|i| {
            let canvas = format!("canvas-{}", i % canvases);
            super::edit(&format!("e{i}"), &[canvas.as_str()])
        })
        .collect();
    vec![(0, intents)]
}

/// Requests sent per canvas, as times since the start.
pub(crate) fn sends_by_canvas(sent: &[Sent]) -> BTreeMap<String, Vec<Millis>> {
    let mut by: BTreeMap<String, Vec<Millis>> = BTreeMap::new();
    for one in sent {
        for canvas in &one.canvases {
            by.entry(canvas.clone()).or_default().push(one.at);
        }
    }
    by
}
