//! `known()`, `operation()` and `explain()` through every step of compaction, on a virtual
//! clock: records dragged with coalescing and batching (most versions replaced by the next
//! one), every id ever enqueued asked at every step, with the read of `known()` under way
//! while the step happens (a batch lands, an answer comes, a timer fires).

use canvas_scheduler_core::{
    intent::IntentInput,
    retention::{RetentionPolicy, MEMORY_LIMIT},
    AttemptOutcome, AttemptStatus, BatchLimits, CountingHost, Known, OperationPhase,
    SchedulerConfig, Settlement,
};

use crate::common::edit;
use canvas_scheduler_testing::Harness;

/// The example editor's options with `batch` 32: coalescing holds a version for two frames.
fn config() -> SchedulerConfig {
    SchedulerConfig {
        concurrency: 4,
        batch: BatchLimits {
            max_operations: 32,
            ..BatchLimits::default()
        },
        coalesce_ms: 32,
        group_commit: true,
        ..SchedulerConfig::default()
    }
}

fn harness(config: SchedulerConfig) -> Harness<CountingHost> {
    let mut h = Harness::new(config, CountingHost::new("k"));
    h.auto_persist = false;
    h.start();
    h
}

/// Version `version` of a record: it replaces the record's last version not sent yet.
fn version(record: usize, version: usize) -> IntentInput {
    IntentInput {
        coalesce_key: Some(format!("shape:{record}")),
        ..edit(
            &format!("s{record}-v{version}"),
            &[&format!("page{}", record % 8)],
        )
    }
}

/// One thing happens: a batch lands, an attempt is answered (applied), or the clock moves to
/// the next timer (at most a frame). False when nothing is left to do.
fn step(h: &mut Harness<CountingHost>) -> bool {
    if h.persist_next() {
        h.drain();
        return true;
    }
    if h.answer_first(AttemptStatus::outcome(AttemptOutcome::Applied))
        .is_some()
    {
        return true;
    }
    match h.timer {
        Some(at) => {
            h.advance(at.saturating_sub(h.now).clamp(1, 16));
            true
        }
        None => false,
    }
}

/// Drags `records` records: created in one call, then moved `versions - 1` times, a move a
/// frame. `check` runs in place of each step (it must make the step happen, and say whether
/// anything did), with every id enqueued so far; then everything settles and is compacted,
/// each step checked the same. Returns every id.
fn drag(
    h: &mut Harness<CountingHost>,
    records: usize,
    versions: usize,
    mut check: impl FnMut(&mut Harness<CountingHost>, &[String]) -> bool,
) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for v in 0..versions {
        let intents: Vec<IntentInput> = (0..records).map(|r| version(r, v)).collect();
        ids.extend(intents.iter().map(|i| i.id.clone()));
        h.enqueue(intents).expect("enqueued");
        let frame_end = h.now + 16;
        while h.now < frame_end {
            if !check(h, &ids) {
                h.advance(frame_end - h.now);
            }
        }
    }
    let mut steps = 0;
    while check(h, &ids) {
        steps += 1;
        assert!(steps < 1_000_000, "it settles");
    }
    // Quiet: the rest is compacted (all but the one holding the highest sequence).
    h.advance(10_000);
    while check(h, &ids) {}
    ids
}

/// What went wrong, by call: the ids each did not know.
#[derive(Default)]
struct Misses {
    checks: u64,
    known: Vec<String>,
    operation: Vec<String>,
    explain: Vec<String>,
}

impl Misses {
    fn assert_none(mut self, what: &str) {
        for list in [&mut self.known, &mut self.operation, &mut self.explain] {
            list.sort();
            list.dedup();
        }
        assert!(
            self.known.is_empty() && self.operation.is_empty() && self.explain.is_empty(),
            "{what}, {} checks: known() missed {} ids (e.g. {:?}), operation() {} (e.g. {:?}), \
             explain() {} (e.g. {:?})",
            self.checks,
            self.known.len(),
            self.known.first(),
            self.operation.len(),
            self.operation.first(),
            self.explain.len(),
            self.explain.first(),
        );
    }

    /// `known(ids)` with a step happening during its read: every id answered.
    fn known_during_a_step(&mut self, h: &mut Harness<CountingHost>, ids: &[String]) -> bool {
        let mut stepped = false;
        let answers = h.known_while(ids, |h| stepped = step(h));
        for (id, answer) in ids.iter().zip(answers) {
            self.checks += 1;
            if answer.is_none() {
                self.known.push(id.clone());
            }
        }
        stepped
    }

    /// `operation(id)` and `explain(id)` of each of `ids`, as the synchronous calls answer.
    fn at_hand(&mut self, h: &Harness<CountingHost>, ids: &[String]) {
        for id in ids {
            if h.scheduler.known(id).is_none() {
                self.operation.push(id.clone());
            }
            if h.scheduler.explain(h.now, id).is_err() {
                self.explain.push(id.clone());
            }
        }
    }
}

#[test]
fn known_operation_and_explain_answer_every_id_at_every_step_of_compaction() {
    // 1,600 intents: fewer than memory keeps, so the synchronous calls know every one too,
    // compacted or not, whole in the archive (its newest 1,000) or not.
    let mut h = harness(config());
    let mut misses = Misses::default();
    let mut steps = 0;
    let ids = drag(&mut h, 100, 16, |h, ids| {
        steps += 1;
        let stepped = misses.known_during_a_step(h, ids);
        misses.at_hand(h, ids);
        stepped
    });
    let compacted = h.store.tombstones().count();
    assert!(compacted >= ids.len() - 1, "{compacted} compacted");
    assert!(
        h.store.archived().count() < compacted,
        "some compacted whole, some not"
    );
    // Each answer as the ledger has it: the last version of each record applied, the others
    // discarded, replaced by the next version (named before and after compaction alike).
    for (id, answer) in ids.iter().zip(h.known(&ids)) {
        let (record, v) = id[1..].split_once("-v").expect("an id of the drag");
        let outcome = match answer.expect("known") {
            Known::Operation(op) => {
                assert_eq!(op.phase, OperationPhase::Resolved, "{id}");
                let outcome = op.outcome.expect("settled");
                let next = outcome.error.as_ref().and_then(|e| e.details.as_ref());
                let next =
                    next.and_then(|d| d.members()?.str("replacedBy").map(|s| s.into_owned()));
                (outcome.settlement, next)
            }
            Known::Tombstone(t) => (t.outcome, t.replaced_by),
        };
        let expected = if v == "15" {
            (Settlement::Applied, None)
        } else {
            (
                Settlement::Discarded,
                Some(format!("s{record}-v{}", v.parse::<u32>().unwrap() + 1)),
            )
        };
        // A version sent before the next one came is applied on its own.
        assert!(
            outcome == expected || outcome == (Settlement::Applied, None),
            "{id}: {outcome:?}"
        );
    }
    misses.assert_none(&format!("{steps} steps"));
}

#[test]
fn with_little_memory_known_still_answers_every_id_and_keeps_what_it_answered_at_hand() {
    // Memory keeps 64 tombstones: nearly every compacted id is only in storage, and each batch
    // that compacts pushes tombstones out while a read is under way.
    let mut h = harness(config());
    h.scheduler.set_memory_limit(64);
    let mut misses = Misses::default();
    let mut steps = 0;
    let mut at = 0;
    drag(&mut h, 40, 16, |h, ids| {
        steps += 1;
        let stepped = misses.known_during_a_step(h, ids);
        // Then a host's reconcile: `known()` of a few ids, and the synchronous calls of each.
        let chunk: Vec<String> = (0..48).map(|i| ids[(at + i) % ids.len()].clone()).collect();
        at += 48;
        let _ = h.known(&chunk);
        misses.at_hand(h, &chunk);
        stepped
    });
    assert!(h.scheduler.ledger().tombstone_count() > 600);
    misses.assert_none(&format!("{steps} steps"));
}

#[test]
fn the_tldraw_drag_every_id_is_known_right_after_it() {
    // 2,000 records created, then dragged twice (9 moves each): 38,000 intents, nearly all of
    // them replaced by the next version of their record. Memory keeps 4,096 tombstones.
    let mut h = harness(config());
    let records = 2_000;
    let mut look_ups = 0;
    let mut misses = Misses::default();
    let mut compacting = 0_u64;
    let ids = drag(&mut h, records, 19, |h, ids| {
        // Every id, once the drag is over, with the look-up begun while a batch that compacts
        // is on its way (every twelfth such batch: each look-up asks 38,000 ids).
        let slice = h.persists.front().is_some_and(|b| !b.tombstones.is_empty());
        if ids.len() < records * 19 || !slice {
            return step(h);
        }
        compacting += 1;
        if compacting % 12 != 1 {
            return step(h);
        }
        look_ups += 1;
        misses.known_during_a_step(h, ids)
    });
    assert_eq!(ids.len(), 38_000);
    assert!(h.store.tombstones().count() > MEMORY_LIMIT * 8);
    assert!(
        look_ups >= 8,
        "{look_ups} look-ups during {compacting} batches that compact"
    );
    let answers = h.known(&ids);
    assert_eq!(answers.iter().filter(|a| a.is_none()).count(), 0);
    misses.assert_none(&format!("{look_ups} look-ups of 38,000 ids"));
}

#[test]
fn a_compacted_superseded_operation_names_its_replacement_as_its_record_did() {
    // Nothing kept whole: compacted as it settles.
    let mut h = harness(SchedulerConfig {
        retain: RetentionPolicy {
            settled: 0,
            ..RetentionPolicy::default()
        },
        ..config()
    });
    h.auto_persist = true;
    let hold = h.scheduler.hold(h.now).unwrap();
    let ids: Vec<String> = (0..4).map(|v| format!("s0-v{v}")).collect();
    for v in 0..4 {
        h.enqueue(vec![version(0, v)]).unwrap();
    }
    h.enqueue(vec![edit("last", &["other"])]).unwrap();
    h.scheduler.release(h.now, hold);
    h.drain();
    for _ in 0..100 {
        h.advance(100);
        while h
            .answer_first(AttemptStatus::outcome(AttemptOutcome::Applied))
            .is_some()
        {}
    }
    let stored = h.store.tombstones_of(ids.iter().map(String::as_str));
    assert_eq!(stored.len(), 4, "all compacted");
    // The direct replacement, as the record said; the end of the chain beside it.
    let v0 = stored.iter().find(|t| t.id == "s0-v0").unwrap();
    assert_eq!(v0.replaced_by.as_deref(), Some("s0-v1"));
    assert_eq!(v0.chain_end.as_deref(), Some("s0-v3"));
    let answers = h.known(&ids);
    let replaced: Vec<Option<String>> = answers
        .into_iter()
        .map(|a| match a {
            Some(Known::Tombstone(t)) => t.replaced_by,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        replaced,
        [
            Some("s0-v1".into()),
            Some("s0-v2".into()),
            Some("s0-v3".into()),
            None
        ]
    );
    let text =
        canvas_scheduler_core::json_text::to_string(&canvas_scheduler_core::Compacted::from(v0));
    assert!(text.contains(r#""replacedBy":"s0-v1""#), "{text}");
}

#[test]
fn a_tombstone_an_earlier_build_wrote_reads_with_its_chain_end_as_its_replacement() {
    // Earlier builds stored the end of the chain as `replacedBy`, and no `chainEnd`.
    let old: canvas_scheduler_core::retention::Tombstone = serde_json::from_str(
        r#"{"key":5,"id":"a1","digest":"d","sequence":1,"outcome":"discarded","settledAt":9,"replacedBy":"a3"}"#,
    )
    .expect("reads");
    assert_eq!(old.replaced_by.as_deref(), Some("a3"));
    assert_eq!(old.chain_end, None);
    assert_eq!(old.chain_end(), Some("a3"));
    let plain: canvas_scheduler_core::retention::Tombstone = serde_json::from_str(
        r#"{"key":6,"id":"b","digest":"d","sequence":2,"outcome":"applied","settledAt":9}"#,
    )
    .expect("reads");
    assert_eq!(plain.chain_end(), None);
}
