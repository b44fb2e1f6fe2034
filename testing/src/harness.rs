//! A step-by-step driver for one scheduler over a [`MemoryStore`] on a virtual clock. Persists
//! run automatically unless told otherwise; sends stay on the "wire" until answered.

use std::collections::VecDeque;

use canvas_scheduler_core::{
    intent::IntentInput, AttemptStatus, Authorization, Effect, Host, Millis, PersistBatch,
    PersistResult, Report, Scheduler, SchedulerConfig, SendOrder,
};

use super::memory_store::MemoryStore;

/// One scheduler, its store, its wire and its timer.
pub struct Harness<H: Host> {
    /// The scheduler under test.
    pub scheduler: Scheduler<H>,
    /// Durable state.
    pub store: MemoryStore,
    /// Virtual time.
    pub now: Millis,
    /// The armed wake-up.
    pub timer: Option<Millis>,
    /// Batches emitted and not yet applied (when `auto_persist` is off).
    pub persists: VecDeque<PersistBatch>,
    /// Attempts on the wire.
    pub wire: Vec<SendOrder>,
    /// Everything sent, in order.
    pub sent: Vec<SendOrder>,
    /// Reports to the host.
    pub reports: Vec<Report>,
    /// Aborted attempts.
    pub aborted: Vec<u64>,
    /// Apply batches as soon as they are emitted.
    pub auto_persist: bool,
    /// Fail this many upcoming batches with a storage error.
    pub fail_persists: u32,
    /// Attempts waiting for the authorization verdict (`config.authorize`), unless
    /// `authorizer` answers them at once.
    pub authorizing: Vec<SendOrder>,
    /// Answers every authorization step at once, when set.
    pub authorizer: Option<Authorizer>,
    /// This many upcoming sends fail before they leave (a `headers()` that throws): the host
    /// never reports them sent. They stay on the wire for a test to answer.
    pub fail_before_sending: u32,
}

/// What [`Harness::enqueue_partial`] returns: a verdict per intent, and the barrier of the
/// accepted ones (`None` when none was).
pub type PartialEnqueue = (
    Vec<canvas_scheduler_core::partial::Verdict>,
    Option<canvas_scheduler_core::BatchNo>,
);

/// A host's authorization step, for [`Harness::authorizer`].
pub type Authorizer = Box<dyn FnMut(&SendOrder) -> Authorization>;

impl<H: Host> Harness<H> {
    /// A harness over an empty store at t = 1 000 000.
    pub fn new(config: SchedulerConfig, host: H) -> Self {
        Self::over(config, host, MemoryStore::default(), 1_000_000)
    }

    /// A harness over an existing store (a restart).
    pub fn over(config: SchedulerConfig, host: H, mut store: MemoryStore, now: Millis) -> Self {
        if let Err(holder) = store.acquire(&config.owner, now, config.lease_ms) {
            panic!("lease held by {holder:?}");
        }
        let scheduler = match Scheduler::new(config, host, store.snapshot()) {
            Ok(scheduler) => scheduler,
            Err(error) => panic!("invalid test config: {error}"),
        };
        Self {
            scheduler,
            store,
            now,
            timer: None,
            persists: VecDeque::new(),
            wire: Vec::new(),
            sent: Vec::new(),
            reports: Vec::new(),
            aborted: Vec::new(),
            auto_persist: true,
            fail_persists: 0,
            authorizing: Vec::new(),
            authorizer: None,
            fail_before_sending: 0,
        }
    }

    /// Carries out every queued effect (persists too, when automatic).
    pub fn drain(&mut self) {
        loop {
            let mut commit = false;
            while let Some(effect) = self.scheduler.poll_effect() {
                match effect {
                    Effect::Persist(batch) => self.persists.push_back(batch),
                    Effect::Send(order) => {
                        if self.fail_before_sending > 0 {
                            self.fail_before_sending -= 1;
                        } else {
                            self.scheduler.on_sent(self.now, order.attempt);
                        }
                        self.sent.push((*order).clone());
                        self.wire.push(*order);
                    }
                    Effect::Authorize(order) => match self.authorizer.as_mut() {
                        Some(decide) => {
                            let verdict = decide(&order);
                            self.scheduler
                                .on_authorized(self.now, order.attempt, verdict);
                        }
                        None => self.authorizing.push(*order),
                    },
                    Effect::Abort(attempt) => {
                        self.aborted.push(attempt);
                        self.wire.retain(|o| o.attempt != attempt);
                    }
                    Effect::SetTimer(at) => self.timer = at,
                    Effect::Report(report) => self.reports.push(report),
                    Effect::CommitSoon => commit = true,
                }
            }
            if commit {
                // The turn ended: the group commit writes everything it changed.
                self.scheduler.commit(self.now);
                continue;
            }
            if !self.auto_persist || !self.persist_next() {
                break;
            }
        }
    }

    /// Applies (or fails) the oldest emitted batch; false when none is waiting.
    pub fn persist_next(&mut self) -> bool {
        let Some(batch) = self.persists.pop_front() else {
            return false;
        };
        let result = if self.fail_persists > 0 {
            self.fail_persists -= 1;
            MemoryStore::failure("QuotaExceededError")
        } else {
            self.store.apply(&batch)
        };
        self.scheduler.on_persisted(self.now, batch.no, result);
        true
    }

    /// Fails the oldest emitted batch with a given result.
    pub fn persist_with(&mut self, result: PersistResult) {
        if let Some(batch) = self.persists.pop_front() {
            self.scheduler.on_persisted(self.now, batch.no, result);
        }
    }

    /// Starts the scheduler and settles its first effects.
    pub fn start(&mut self) {
        if let Err(error) = self.scheduler.start(self.now) {
            panic!("start failed: {error}");
        }
        self.drain();
    }

    /// Looks up the tombstones of the ids `inputs` name that are not at hand, as the driver
    /// does: round after round while a round finds some (a replacement chain, link by link).
    pub fn learn_tombstones(&mut self, inputs: &[IntentInput]) {
        for _ in 0..canvas_scheduler_core::retention::LOOKUP_ROUNDS {
            let unknown = self.scheduler.unknown_ids(inputs);
            let found = self.store.tombstones_of(unknown.iter().map(String::as_str));
            if found.is_empty() {
                break;
            }
            self.scheduler.learn_tombstones(found);
        }
    }

    /// `known(ids)` as the driver runs it, with `during` happening while its read of storage
    /// is under way (batches land, answers come): the core names the ids to read, the store is
    /// read as it was when the look-up began (the least a read could see), and the core
    /// answers once `during` is done.
    pub fn known_while(
        &mut self,
        ids: &[String],
        during: impl FnOnce(&mut Self),
    ) -> Vec<Option<canvas_scheduler_core::Known>> {
        let unread = self.scheduler.begin_known(ids);
        let found = self.store.tombstones_of(unread.iter().map(String::as_str));
        during(self);
        self.scheduler.end_known(ids, found)
    }

    /// `known(ids)` as the driver runs it, with nothing happening meanwhile.
    pub fn known(&mut self, ids: &[String]) -> Vec<Option<canvas_scheduler_core::Known>> {
        self.known_while(ids, |_| {})
    }

    /// Enqueues and drains.
    pub fn enqueue(
        &mut self,
        inputs: Vec<IntentInput>,
    ) -> Result<u64, canvas_scheduler_core::SchedulerError> {
        // As the driver does: tombstones of ids not at hand are looked up by key first, and
        // none leaves memory until the enqueue has used them.
        self.scheduler.begin_look_up();
        self.learn_tombstones(&inputs);
        let result = self.scheduler.enqueue(self.now, inputs);
        self.scheduler.end_look_up();
        self.drain();
        result
    }

    /// A partial enqueue (`enqueueMany(intents, { atomic: false })`), then drains. `slots`
    /// may hold decoding errors in place, as the JS boundary hands them in.
    pub fn enqueue_partial(
        &mut self,
        slots: Vec<Result<IntentInput, canvas_scheduler_core::SchedulerError>>,
    ) -> Result<PartialEnqueue, canvas_scheduler_core::SchedulerError> {
        let decoded: Vec<IntentInput> = slots.iter().flatten().cloned().collect();
        self.scheduler.begin_look_up();
        self.learn_tombstones(&decoded);
        let result = self.scheduler.enqueue_partial(self.now, slots);
        self.scheduler.end_look_up();
        self.drain();
        result
    }

    /// Answers the attempt on the wire for `request_id`.
    pub fn answer(&mut self, request_id: &str, status: AttemptStatus) {
        let Some(index) = self.wire.iter().position(|o| o.request.id == request_id) else {
            panic!(
                "no attempt of {request_id} on the wire: {:?}",
                self.wire_ids()
            );
        };
        let order = self.wire.remove(index);
        self.scheduler.on_answer(self.now, order.attempt, status);
        self.drain();
    }

    /// Gives the oldest waiting authorization step its verdict.
    pub fn authorize_first(&mut self, verdict: Authorization) -> Option<SendOrder> {
        if self.authorizing.is_empty() {
            return None;
        }
        let order = self.authorizing.remove(0);
        self.scheduler
            .on_authorized(self.now, order.attempt, verdict);
        self.drain();
        Some(order)
    }

    /// Answers the oldest attempt on the wire.
    pub fn answer_first(&mut self, status: AttemptStatus) -> Option<SendOrder> {
        if self.wire.is_empty() {
            return None;
        }
        let order = self.wire.remove(0);
        self.scheduler.on_answer(self.now, order.attempt, status);
        self.drain();
        Some(order)
    }

    /// The operation whole as `operation(id)` answers it: in the ledger, or compacted with
    /// its archived copy at hand (retention).
    pub fn operation(&self, id: &str) -> Option<canvas_scheduler_core::Operation> {
        match self.scheduler.known(id)? {
            canvas_scheduler_core::Known::Operation(op) => Some(*op),
            canvas_scheduler_core::Known::Tombstone(_) => None,
        }
    }

    /// Moves time forward, firing the timer whenever it is due.
    pub fn advance(&mut self, delta: Millis) {
        let target = self.now + delta;
        while let Some(at) = self.timer.filter(|at| *at <= target) {
            self.now = self.now.max(at);
            self.timer = None;
            self.scheduler.on_timer(self.now);
            self.drain();
        }
        self.now = target;
    }

    /// Request ids on the wire, in send order.
    pub fn wire_ids(&self) -> Vec<String> {
        self.wire.iter().map(|o| o.request.id.clone()).collect()
    }

    /// Operation ids on the wire, in send order.
    pub fn wire_operations(&self) -> Vec<String> {
        self.wire
            .iter()
            .flat_map(|o| o.request.operation_ids.clone())
            .collect()
    }
}
