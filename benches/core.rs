//! `cargo bench`: operations per second through the core with an instant in-memory world, and
//! `start()` recovery time for 10 000 and 100 000 pending operations. Each figure is printed
//! beside a baseline measured in the same run (these machines are shared and noisy), and the
//! bench never fails on a slow machine.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use canvas_scheduler_core::{
    intent::IntentInput, AttemptOutcome, AttemptStatus, CountingHost, Effect, Lease, LedgerMeta,
    LedgerSnapshot, Scheduler, SchedulerConfig, ACTIVE_MS,
};
use canvas_scheduler_testing::{pending_upsert, MemoryStore};
use serde_json::json;

/// The payload of operation `i`, as the editor would give it.
fn payload(i: u64) -> serde_json::Value {
    json!({ "shapeId": format!("s{i}"), "x": i, "y": i * 2, "fill": "#336699" })
}

fn intent(i: u64, canvases: u64) -> IntentInput {
    IntentInput {
        id: format!("op{i}"),
        sequence: None,
        operation_type: "shape.upsert".into(),
        canvas_ids: vec![format!("c{}", i % canvases)],
        dependencies: Vec::new(),
        payload: payload(i).into(),
        expected_versions: None,
        run_id: None,
        coalesce_key: None,
        blob: None,
    }
}

/// Drives the scheduler until idle: every persist applied and every send applied at once.
fn run_to_idle(
    scheduler: &mut Scheduler<CountingHost>,
    store: &mut MemoryStore,
    now: u64,
) -> (u64, u64) {
    let mut in_store = Duration::ZERO;
    run_timed(scheduler, store, now, &mut in_store)
}

/// As [`run_to_idle`], adding the time spent in the test store to `in_store`.
fn run_timed(
    scheduler: &mut Scheduler<CountingHost>,
    store: &mut MemoryStore,
    now: u64,
    in_store: &mut Duration,
) -> (u64, u64) {
    let (mut sends, mut batches) = (0, 0);
    while let Some(effect) = scheduler.poll_effect() {
        match effect {
            Effect::Persist(batch) => {
                batches += 1;
                let applying = Instant::now();
                let result = store.apply(&batch);
                *in_store += applying.elapsed();
                scheduler.on_persisted(now, batch.no, result);
            }
            Effect::Send(order) => {
                sends += 1;
                scheduler.on_sent(now, order.attempt);
                scheduler.on_answer(
                    now,
                    order.attempt,
                    AttemptStatus::outcome(AttemptOutcome::Applied),
                );
            }
            Effect::SetTimer(Some(at)) if at <= now => scheduler.on_timer(now),
            _ => {}
        }
    }
    (sends, batches)
}

/// Operations a second through the core and the test store, the same without the store's time
/// (the test store checks every record as the browser's would, a cost of the test world), and
/// the store transactions.
fn throughput(total: u64, chunk: u64) -> (f64, f64, u64) {
    let config = SchedulerConfig {
        concurrency: 8,
        ..SchedulerConfig::default()
    };
    let mut store = MemoryStore::default();
    store.durable_only = true;
    let now = 1_000_000;
    store.acquire(&config.owner, now, config.lease_ms).ok();
    let mut scheduler =
        Scheduler::new(config, CountingHost::new("b"), store.snapshot()).expect("config");
    scheduler.start(now).expect("start");
    let started = Instant::now();
    let mut in_store = Duration::ZERO;
    let mut sends = 0;
    let mut i = 0;
    while i < total {
        let batch: Vec<IntentInput> = (i..(i + chunk).min(total))
            .map(|n| intent(n, 100))
            .collect();
        i += batch.len() as u64;
        scheduler.enqueue(now, batch).expect("enqueue");
        sends += run_timed(&mut scheduler, &mut store, now, &mut in_store).0;
    }
    assert_eq!(sends, total, "every operation sent once");
    let elapsed = started.elapsed();
    (
        total as f64 / elapsed.as_secs_f64(),
        total as f64 / (elapsed - in_store).as_secs_f64(),
        store.writes,
    )
}

/// Baseline: the least any durable scheduler must do per operation: serialize a body and put
/// the operation and the request into ordered maps.
fn baseline_throughput(total: u64) -> f64 {
    let started = Instant::now();
    let mut operations = BTreeMap::new();
    let mut requests = BTreeMap::new();
    for i in 0..total {
        let input = intent(i, 100);
        let body = serde_json::to_string(&payload(i)).expect("json");
        operations.insert(input.id.clone(), input);
        requests.insert(format!("b-{i}"), body);
    }
    assert_eq!(operations.len() + requests.len(), 2 * total as usize);
    total as f64 / started.elapsed().as_secs_f64()
}

fn pending_snapshot(count: u64) -> LedgerSnapshot {
    let operations = (0..count)
        .map(|i| {
            let input = intent(i, 1_000);
            let mut op = pending_upsert(&input.id, i + 1, &input.canvas_ids[0]);
            if i % 10 == 9 {
                op.intent.dependencies = vec![format!("op{}", i - 1)];
            }
            op.intent.payload = input.payload;
            op
        })
        .collect();
    LedgerSnapshot {
        operations,
        requests: Vec::new(),
        lease: Some(Lease {
            owner: "dispatcher".into(),
            fence: 1,
            expires_at: u64::MAX,
        }),
        events: Vec::new(),
        meta: LedgerMeta {
            last_sequence: count,
            last_event_seq: 0,
        },
        ..LedgerSnapshot::default()
    }
}

fn recovery(count: u64) -> (f64, f64) {
    let snapshot = pending_snapshot(count);
    let baseline = {
        let started = Instant::now();
        let copy = snapshot.clone();
        let elapsed = started.elapsed().as_secs_f64();
        assert_eq!(copy.operations.len() as u64, count);
        elapsed
    };
    let started = Instant::now();
    let mut scheduler =
        Scheduler::new(SchedulerConfig::default(), CountingHost::new("r"), snapshot)
            .expect("config");
    scheduler.start(1_000_000).expect("start");
    let elapsed = started.elapsed().as_secs_f64();
    assert_eq!(scheduler.stats().pending as u64, count);
    (elapsed, baseline)
}

/// The tldraw example's drag, as the core sees it: `records` records created, then moved
/// `moves` times while nothing is sent (each move replaces every unsent update: coalesced),
/// then drained. What follows is the quiet compaction of the settled operations (the first
/// versions applied, the rest superseded): its core time, the batches it takes, and the core
/// time of the drain before it, as the baseline.
fn drag_compaction(records: u64, moves: u64) -> (f64, f64, u64, usize) {
    let config = SchedulerConfig {
        concurrency: 2,
        ..SchedulerConfig::default()
    };
    let mut store = MemoryStore::default();
    store.durable_only = true;
    let mut now = 1_000_000;
    store.acquire(&config.owner, now, config.lease_ms).ok();
    let mut scheduler =
        Scheduler::new(config, CountingHost::new("d"), store.snapshot()).expect("config");
    scheduler.start(now).expect("start");
    let record = |i: u64, move_no: u64| IntentInput {
        id: format!("r{i}-{move_no}"),
        coalesce_key: Some(format!("record:{i}")),
        ..intent(i, 1)
    };
    scheduler.set_online(now, false);
    for move_no in 0..=moves {
        scheduler
            .enqueue(now, (0..records).map(|i| record(i, move_no)).collect())
            .expect("enqueue");
        run_to_idle(&mut scheduler, &mut store, now);
        now += 16;
    }
    let started = Instant::now();
    scheduler.set_online(now, true);
    run_to_idle(&mut scheduler, &mut store, now);
    let drain = started.elapsed().as_secs_f64();
    // The user pauses: maintenance waits for that (ACTIVE_MS after the last enqueue).
    now += ACTIVE_MS;
    let started = Instant::now();
    let mut batches = 0;
    for _ in 0..100_000 {
        now += 10;
        scheduler.on_timer(now);
        let more = run_to_idle(&mut scheduler, &mut store, now).1;
        batches += more;
        if more == 0 {
            break;
        }
    }
    let compaction = started.elapsed().as_secs_f64();
    (compaction, drain, batches, scheduler.stats().settled_kept)
}

fn main() {
    // `cargo test --benches` runs this in test mode; keep that quick.
    let quick = std::env::args().any(|a| a == "--test") || std::env::var("BENCH_QUICK").is_ok();
    let total = if quick { 2_000 } else { 50_000 };
    println!("canvas-scheduler core benchmark (instant in-memory world)");
    let baseline = baseline_throughput(total);
    for chunk in [1, 100] {
        let (ops, core_ops, writes) = throughput(total, chunk);
        println!(
            "  throughput, enqueue chunks of {chunk:>3}: {ops:>10.0} ops/s ({writes} store transactions for {total} ops); baseline {baseline:.0} ops/s; ratio {:.3}; the core alone (the test store's time left out) {core_ops:.0} ops/s, ratio {:.3}",
            ops / baseline,
            core_ops / baseline
        );
    }
    let (records, moves) = match std::env::var("BENCH_DRAG") {
        Ok(size) => (size.parse().unwrap_or(2_000), 20),
        Err(_) if quick => (200, 5),
        Err(_) => (2_000, 20),
    };
    let (compaction, drain, batches, left) = drag_compaction(records, moves);
    println!(
        "  quiet compaction after a coalesced drag ({records} records x {moves} moves): {:.1} ms in {batches} batches ({:.2} µs per operation, {left} left whole); the drain before it {:.1} ms; ratio {:.2}",
        compaction * 1e3,
        compaction * 1e6 / (records * (moves + 1)) as f64,
        drain * 1e3,
        compaction / drain.max(1e-9)
    );
    for count in if quick {
        vec![1_000, 10_000]
    } else {
        vec![10_000, 100_000]
    } {
        let (elapsed, baseline) = recovery(count);
        println!(
            "  start() recovery of {count:>6} pending operations: {:>8.1} ms ({:.2} µs/op); baseline (clone the snapshot) {:.1} ms; ratio {:.1}",
            elapsed * 1e3,
            elapsed * 1e6 / count as f64,
            baseline * 1e3,
            elapsed / baseline.max(1e-9)
        );
    }
}
