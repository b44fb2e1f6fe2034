//! Deterministic simulation (FoundationDB/TigerBeetle style) of the scheduler core against a
//! seeded world: a server that applies at most once per idempotency key and may lose answers,
//! fail with 5xx/429, answer 401 (an expired login) or 409 (still receiving), reject stale
//! version guards, or 404 a query; a store that fails writes; crashes that restart from the
//! durable state only; a second "tab" taking over after the first pauses past its lease; a
//! second user logging in after a crash (each user's work is sent only under their
//! login); and an editor that holds, goes offline, resumes, flushes, retries, discards and
//! revises.
//! Retention is on in half the seeds (a tiny policy: settled operations are compacted to
//! tombstones soon after they settle, and the same intents are now and then enqueued again):
//! nothing unsettled is ever compacted, a compacted operation enqueued again within the
//! tombstone horizon is never sent, and a blob is never deleted while its upload can still
//! be sent.
//! One enqueue in five is partial, with an invalid intent among the others:
//! that one is refused alone and never stored, and the rest are acknowledged as any enqueue.
//! Some enqueues go through the shared inbox, the intake store outside the fence:
//! any awake tab appends (a follower, the leader, or a leader whose lease another has taken
//! over), acknowledged once appended; the dispatching tab adopts the entries in intake order
//! (at its open before it starts, on a wake and on its timer) and clears them in a later step,
//! so crashes and power losses fall between an append and its adoption and between an adoption
//! and its clearing. Every appended intent ends in the ledger or set aside with its reason,
//! under the principal that appended it, in each tab's intake order.
//! Invariants are checked after every step. A failing seed is printed; replay it with
//! `SIM_SEED=<seed> cargo test --test simulation`. `SIM_SEEDS=<n>` runs more seeds (from
//! `SIM_FIRST_SEED`, 1 unless set), `SIM_STEPS=<n>` more steps per seed.
//!
//! This file holds the world's state and the seed loop; `world` makes the world and draws each
//! step, `tabs` opens, crashes and pauses tabs, `editor` enqueues and acts as the host,
//! `effects` carries out what a tab asks, `intake` is the shared inbox, `invariants` the
//! checks, and `finish` the end of a seed.

#[path = "../common/mod.rs"]
mod common;
mod editor;
mod effects;
mod finish;
mod intake;
mod invariants;
mod known;
mod tabs;
mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use canvas_scheduler_core::{
    intent::{check_batch, IntentInput},
    retention::{RetentionPolicy, LOOKUP_ROUNDS},
    AttemptOutcome, AttemptStatus, Authorization, BlobRef, CountingHost, Effect, ErrorCode,
    FrozenRequest, HoldId, Millis, Operation, OperationPhase, PersistBatch, PersistResult, Report,
    RequestPhase, RetryAction, RetryPolicy, SafeError, Scheduler, SchedulerConfig, SendOrder,
    Settlement, UPLOAD_KIND,
};
use canvas_scheduler_testing::{MemoryStore, ServerFaults, SimRng, SimServer};
use common::{edit, of_kind, upload, ENQUEUE_CODES};

const CANVASES: [&str; 6] = ["c0", "c1", "c2", "c3", "c4", "c5"];
const LEASE_MS: Millis = 2_000;

/// One entry of the shared inbox (the intake store): one tab's enqueue, written
/// outside the fence in a strict transaction of its own, so durable once appended.
#[derive(Clone)]
struct IntakeEntry {
    /// The appending tab's owner id.
    origin: String,
    /// The principal of the appending session (the operations are sent only under it).
    principal: Option<String>,
    intents: Vec<IntentInput>,
}

/// An adoption pass of the dispatching tab, as `Driver::adopt_inbox` runs it: the entries it
/// admitted (durable after `barrier`) and those it refused; cleared from the intake in a
/// later step, once `durable` (the driver clears them in a transaction of its own).
struct AdoptionPass {
    barrier: Option<u64>,
    /// Each entry admitted, with the ids this pass added to the ledger (not those already in
    /// it: adopted before, or the same intent enqueued again meanwhile).
    adopted: Vec<(u64, Vec<String>)>,
    /// Each entry refused, with the refusal's code.
    refused: Vec<(u64, &'static str)>,
    durable: bool,
}

/// One scheduler instance ("tab") and what it has asked the world to do.
struct Tab {
    scheduler: Scheduler<CountingHost>,
    persists: Vec<PersistBatch>,
    wire: Vec<SendOrder>,
    timer: Option<Millis>,
    paused_until: Millis,
    storage_failed: bool,
    /// Enqueue barriers not yet known durable: barrier → operation ids.
    pending_acks: Vec<(u64, Vec<String>)>,
    /// `discard(id)` calls whose promise has not resolved yet: their barrier, the id.
    pending_discards: Vec<(u64, String)>,
    /// Holds the host took: nothing may be sent while one is held.
    holds: Vec<HoldId>,
    /// What the host last told the scheduler about the network: nothing is sent offline.
    online: bool,
    /// Attempts waiting for the host's authorization verdict.
    authorizing: Vec<SendOrder>,
    /// Attempts that left (the host reported them sent).
    left: u64,
    /// `whenSaved()` calls not yet resolved: the ids each covers, settled so far.
    saved_watches: Vec<(Vec<String>, usize)>,
    /// Its adoption pass of the intake not yet cleared (one at a time).
    adoption: Option<AdoptionPass>,
    /// Attempts launched while its writes failed (sent with no write first).
    unwritten_attempts: BTreeSet<u64>,
}

struct World {
    rng: SimRng,
    seed: u64,
    now: Millis,
    store: MemoryStore,
    server: SimServer,
    tabs: Vec<Tab>,
    next_op: u64,
    next_tab: u64,
    config: SchedulerConfig,
    with_dependencies: bool,
    /// Operations whose enqueue was acknowledged durable.
    acknowledged: BTreeSet<String>,
    /// Operations whose `discard()` was acknowledged durable: discarded for good, whatever
    /// crashes or power losses follow.
    discarded: BTreeSet<String>,
    /// Operation → (its sequence, the principal it was enqueued under).
    sequence_of: BTreeMap<String, (u64, &'static str)>,
    /// Operations the host revised: their first intent is another one now.
    revised: BTreeSet<String>,
    faults_on: bool,
    /// Its server aborts some batches as a whole (every member `batch_aborted`), faults on.
    aborts_batches: bool,
    /// What happened, counted (the seed's figures; summed over seeds for the report).
    counts: Tally,
    /// Who is logged in: tabs open under this principal.
    principal: &'static str,
    /// Operations the host re-armed with `retry()`.
    host_retried: BTreeSet<String>,
    /// Every intent enqueued, to enqueue the same again (retention: known by its tombstone).
    intents: Vec<IntentInput>,
    /// The shared inbox (durable: every append is a strict commit), by its auto-increment key.
    intake: BTreeMap<u64, IntakeEntry>,
    next_intake: u64,
    /// Per appending tab, its last entry cleared as adopted: its key and its highest sequence.
    intake_order: BTreeMap<String, (u64, u64)>,
    /// Keys whose adoption became durable (a pass adopting one again: a crash between an
    /// adoption and its clearing).
    adopted_durable: BTreeSet<u64>,
    /// Operations of entries the dispatcher refused and set aside (quarantined), with the
    /// refusal's code: acknowledged, never admitted, and said so.
    quarantined: BTreeMap<String, &'static str>,
    /// Every write fails until then (a full disk), faults on.
    storage_full_until: Millis,
    /// A `known(ids)` under way, and the stream that decides when one begins and answers.
    look_up: Option<known::KnownLookUp>,
    look_up_rng: SimRng,
}

/// The operation that superseded `op` (its outcome's `replacedBy`), if any.
fn replaced_by(op: &Operation) -> Option<String> {
    op.outcome
        .as_ref()
        .and_then(|o| o.error.as_ref())
        .filter(|e| e.code == "superseded")
        .and_then(|e| e.details.as_ref())
        .and_then(|d| d.members())
        .and_then(|m| m.str("replacedBy").map(|s| s.into_owned()))
}

fn is_discarded(op: &Operation) -> bool {
    op.outcome
        .as_ref()
        .is_some_and(|o| o.settlement.as_str() == "discarded")
}

/// The ledger as a scheduler holds it: every operation and request.
fn ledger_state(scheduler: &Scheduler<CountingHost>) -> (Vec<Operation>, Vec<FrozenRequest>) {
    (
        scheduler.ledger().operations().cloned().collect(),
        scheduler.ledger().requests().cloned().collect(),
    )
}

/// What one seed's world exercised.
/// A seed's figures, and their sum over the seeds run.
#[derive(Default)]
struct Tally {
    steps: u64,
    acknowledged: usize,
    /// Sends of requests that carry several operations.
    batched: u64,
    /// Batches a server without batches declined (each operation then went alone).
    declined: u64,
    /// Batches the server aborted as a whole (each member then went alone, paced).
    aborted: u64,
    /// Operations superseded by a later coalesced intent.
    superseded: u64,
    /// Operations folded from their own records into pages, in batches that became durable.
    folded: u64,
    /// Host actions taken, and how many of them the scheduler refused with an error.
    host_actions: u64,
    refused: u64,
    /// Answers that blocked a request until the host's `resume()` (401: an expired login).
    unauthorized: u64,
    /// Operations rejected for a stale version guard.
    conflicts: u64,
    /// Logins as another user (after a crash now and then, and at the end for what is left).
    principal_switches: u64,
    /// Authorization verdicts: denials of a request the server may already have (answered by a
    /// query first), and checks that failed (retried).
    late_denials: u64,
    failed_checks: u64,
    /// Operations compacted to tombstones, and enqueues of compacted intents again.
    compacted: u64,
    enqueued_again: u64,
    /// Partial enqueues that admitted something (each also refused its invalid intent).
    partial_enqueues: u64,
    /// `whenSaved()` watches that resolved.
    saved_resolved: u64,
    /// Power losses, and the relaxed commits they dropped.
    power_losses: u64,
    relaxed_lost: u64,
    intake_appends: u64,
    /// Appends by a tab that still takes itself for the leader after another took the lease.
    stale_appends: u64,
    readopted: u64,
    intake_refused: u64,
    /// Storage: times it started failing, and recovered by itself; sends made while it was
    /// failing; operations whose enqueue was refused because its write failed.
    storage_failures: u64,
    storage_recoveries: u64,
    unwritten_sends: u64,
    refused_enqueues: u64,
    /// Ids a `known(ids)` had to answer (stored when its look-up began and when it answered).
    known_checked: u64,
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        self.steps += other.steps;
        self.acknowledged += other.acknowledged;
        self.batched += other.batched;
        self.declined += other.declined;
        self.aborted += other.aborted;
        self.superseded += other.superseded;
        self.folded += other.folded;
        self.host_actions += other.host_actions;
        self.refused += other.refused;
        self.unauthorized += other.unauthorized;
        self.conflicts += other.conflicts;
        self.principal_switches += other.principal_switches;
        self.late_denials += other.late_denials;
        self.failed_checks += other.failed_checks;
        self.compacted += other.compacted;
        self.enqueued_again += other.enqueued_again;
        self.partial_enqueues += other.partial_enqueues;
        self.saved_resolved += other.saved_resolved;
        self.power_losses += other.power_losses;
        self.relaxed_lost += other.relaxed_lost;
        self.intake_appends += other.intake_appends;
        self.stale_appends += other.stale_appends;
        self.readopted += other.readopted;
        self.intake_refused += other.intake_refused;
        self.storage_failures += other.storage_failures;
        self.storage_recoveries += other.storage_recoveries;
        self.unwritten_sends += other.unwritten_sends;
        self.refused_enqueues += other.refused_enqueues;
        self.known_checked += other.known_checked;
    }
}

fn run_seed(seed: u64, steps: u64) -> Tally {
    let mut world = World::new(seed);
    for _ in 0..steps {
        world.step();
    }
    world.finish();
    Tally {
        acknowledged: world.acknowledged.len(),
        declined: world.server.declined,
        aborted: world.server.aborted,
        ..world.counts
    }
}

#[test]
fn simulation_invariants_hold_across_seeds() {
    let steps: u64 = std::env::var("SIM_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let seeds: Vec<u64> = match std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => vec![seed],
        None => {
            let count: u64 = std::env::var("SIM_SEEDS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1_000);
            let first: u64 = std::env::var("SIM_FIRST_SEED")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(1);
            (first..first + count).collect()
        }
    };
    let mut total = Tally::default();
    for seed in &seeds {
        total.add(&run_seed(*seed, steps));
    }
    // Written to the stderr handle itself (not captured by the test harness), so CI logs show it.
    let _ = writeln!(
        std::io::stderr(),
        "simulation: {} seeds, {} steps, {} acknowledged operations, {} batched sends ({} declined, {} aborted as a whole), {} superseded, {} folded into pages, {} host actions ({} refused), {} unauthorized answers, {} version conflicts, {} logins as another user, {} denials after a send, {} failed authorization checks, {} compacted, {} compacted intents enqueued again, {} partial enqueues, {} whenSaved resolved, {} power losses dropping {} relaxed commits, {} intake appends ({} by a leader whose lease was taken over), {} adopted again after a crash before clearing, {} set aside, storage failing {} times and recovering by itself {} times ({} sends meanwhile, {} enqueued operations refused), {} ids known() had to answer",
        seeds.len(),
        total.steps,
        total.acknowledged,
        total.batched,
        total.declined,
        total.aborted,
        total.superseded,
        total.folded,
        total.host_actions,
        total.refused,
        total.unauthorized,
        total.conflicts,
        total.principal_switches,
        total.late_denials,
        total.failed_checks,
        total.compacted,
        total.enqueued_again,
        total.partial_enqueues,
        total.saved_resolved,
        total.power_losses,
        total.relaxed_lost,
        total.intake_appends,
        total.stale_appends,
        total.readopted,
        total.intake_refused,
        total.storage_failures,
        total.storage_recoveries,
        total.unwritten_sends,
        total.refused_enqueues,
        total.known_checked,
    );
    assert!(total.acknowledged > 0);
    assert!(
        seeds.len() < 100
            || (total.batched > 0
                && total.declined > 0
                && total.aborted > 0
                && total.superseded > 0
                && total.folded > 0
                && total.refused > 0
                && total.refused < total.host_actions
                && total.unauthorized > 0
                && total.conflicts > 0
                && total.principal_switches > 0
                && total.late_denials > 0
                && total.failed_checks > 0
                && total.compacted > 0
                && total.enqueued_again > 0
                && total.partial_enqueues > 0
                && total.saved_resolved > 0
                && total.relaxed_lost > 0
                && total.intake_appends > 0
                && total.stale_appends > 0
                && total.readopted > 0
                && total.storage_recoveries > 0
                && total.unwritten_sends > 0
                && total.refused_enqueues > 0
                && total.known_checked > 0),
        "batching (declined and aborted as a whole too), coalescing, folding, host actions (taken and refused) expired logins, version conflicts, a second user, power losses dropping relaxed commits, intake appends (by a stale leader too) and adoptions again after a crash, and storage failing and recovering by itself, and known() under way must be exercised"
    );
}
