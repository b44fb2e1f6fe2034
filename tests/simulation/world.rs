//! The world's making, and one step of it: what happens next is drawn from the seed.

use super::*;

impl World {
    pub(super) fn new(seed: u64) -> Self {
        let mut rng = SimRng::new(seed);
        let concurrency = 1 + rng.below(3) as usize;
        let with_dependencies = rng.chance(50);
        let config = SchedulerConfig {
            concurrency,
            retry: RetryPolicy {
                base_ms: 50,
                max_ms: 2_000,
                max_attempts: 30,
                dead_letter_after_ms: 0,
            },
            lease_ms: LEASE_MS,
            group_commit: rng.chance(50),
            // Several tabs renew the lease even when idle, as the browser's tab layer always
            // configures them; a single-instance host may let an idle lease lapse.
            keep_lease: rng.chance(50),
            // Half the worlds have an authorization step before every send.
            authorize: rng.chance(50),
            // Fold loose records often (or never), so that folds meet crashes and faults.
            fold_records_at: [0, 2, 3, 5, 8][rng.below(5) as usize],
            batch: canvas_scheduler_core::BatchLimits {
                max_operations: 1 + rng.below(4) as usize,
                max_bytes: 200,
                kinds: None,
            },
            // Retention in half the seeds: compacted within a few settlements or a few
            // hundred ms of settling; tombstones outlive the run (the horizon).
            // Half the worlds hold coalescable intents back (`coalesceMs`).
            coalesce_ms: [0, 0, 20, 150][rng.below(4) as usize],
            retain: if rng.chance(50) {
                RetentionPolicy {
                    settled: rng.below(4) as usize,
                    settled_ms: rng.below(1_000),
                    ..RetentionPolicy::default()
                }
            } else {
                RetentionPolicy::default()
            },
            ..SchedulerConfig::default()
        };
        let mut world = Self {
            rng,
            seed,
            now: 1_000_000,
            store: MemoryStore::default(),
            server: SimServer::default(),
            tabs: Vec::new(),
            next_op: 0,
            next_tab: 0,
            config,
            with_dependencies,
            acknowledged: BTreeSet::new(),
            discarded: BTreeSet::new(),
            sequence_of: BTreeMap::new(),
            revised: BTreeSet::new(),
            faults_on: true,
            aborts_batches: false,
            counts: Tally::default(),
            host_retried: BTreeSet::new(),
            principal: "user-1",
            intents: Vec::new(),
            intake: BTreeMap::new(),
            next_intake: 0,
            intake_order: BTreeMap::new(),
            adopted_durable: BTreeSet::new(),
            quarantined: BTreeMap::new(),
            storage_full_until: 0,
            look_up: None,
            look_up_rng: SimRng::new(seed ^ 0x6b6e_6f77_6e28_2900),
        };
        // A quarter of the worlds' servers take no batches: they decline each one, and the
        // scheduler falls back to one operation a request.
        world.server.declines_batches = world.rng.chance(25);
        // A third of the others abort a batch as a whole now and then (a serialization
        // failure: every member `batch_aborted`, none to blame); its members go again alone.
        world.aborts_batches = !world.server.declines_batches && world.rng.chance(33);
        let _ = world.open_tab();
        world
    }

    pub(super) fn fail(&self, message: &str) -> ! {
        panic!(
            "seed {} step {}: {message}\nreplay: SIM_SEED={} cargo test --test simulation",
            self.seed, self.counts.steps, self.seed
        );
    }

    pub(super) fn random_intents(&mut self) -> Vec<IntentInput> {
        let count = 1 + self.rng.below(3);
        let mut intents = Vec::new();
        for _ in 0..count {
            self.next_op += 1;
            let id = format!("op{}", self.next_op);
            let roll = self.rng.below(100);
            let mut intent = if roll < 10 {
                IntentInput {
                    blob: Some(BlobRef {
                        id: format!("blob-{id}"),
                        size: 1,
                        media_type: "image/png".into(),
                        name: None,
                    }),
                    ..upload(&id)
                }
            } else if roll < 15 {
                of_kind(&id, "run.start", &[CANVASES[self.rng.below(6) as usize]])
            } else {
                let first = CANVASES[self.rng.below(6) as usize];
                let second = CANVASES[self.rng.below(6) as usize];
                if self.rng.chance(25) && first != second {
                    edit(&id, &[first, second])
                } else {
                    edit(&id, &[first])
                }
            };
            if intent.operation_type == "shape.upsert"
                && intent.canvas_ids.len() == 1
                && self.rng.chance(20)
            {
                // A drag: later absolute updates of the same shape supersede earlier ones.
                intent.coalesce_key = Some(format!("drag:{}", intent.canvas_ids[0]));
            }
            if intent.canvas_ids.len() == 1 && self.rng.chance(5) {
                // A version guard, usually stale: the server rejects it with its versions.
                let mut versions = BTreeMap::new();
                versions.insert(intent.canvas_ids[0].clone(), self.rng.below(3));
                intent.expected_versions = Some(versions);
            }
            if self.with_dependencies && self.next_op > 1 && self.rng.chance(30) {
                intent.dependencies = vec![format!("op{}", 1 + self.rng.below(self.next_op - 1))];
            }
            intents.push(intent);
        }
        intents
    }

    pub(super) fn leader(&self) -> Option<usize> {
        self.tabs
            .iter()
            .rposition(|t| t.paused_until <= self.now && !t.scheduler.is_closed())
    }

    pub(super) fn step(&mut self) {
        self.counts.steps += 1;
        if self.tabs.is_empty() && !self.open_tab() {
            // Every tab crashed; the dead leader's lease must lapse before another takes over.
            self.now += self.rng.below(LEASE_MS);
            return;
        }
        let roll = self.rng.below(100);
        let t = self.rng.below(self.tabs.len() as u64) as usize;
        let awake = self.tabs[t].paused_until <= self.now;
        match roll {
            // An enqueue through the intake, by whichever tab is awake; the leader is woken.
            0..=3 if awake && !self.tabs[t].scheduler.is_closed() => {
                self.append_intake(t);
                if let Some(l) = self.leader() {
                    if self.rng.chance(50) {
                        self.intake_turn(l);
                    }
                }
            }
            0..=14 => {
                if let Some(l) = self.leader() {
                    let again = !self.intents.is_empty() && self.rng.chance(15);
                    let intents = if again {
                        // The same intent again (a reload that lost track of it): compacted or
                        // whole, it is known, and never sent twice.
                        let pick = self.rng.below(self.intents.len() as u64) as usize;
                        let intent = self.intents[pick].clone();
                        let compacted = self.store.tombstones_of([intent.id.as_str()]);
                        self.counts.enqueued_again += compacted.len() as u64;
                        vec![intent]
                    } else {
                        self.random_intents()
                    };
                    if !again {
                        for intent in &intents {
                            if let Some(blob) = &intent.blob {
                                // Stored before the enqueue, as the API does.
                                self.store.blobs.insert(blob.id.clone());
                            }
                        }
                    }
                    // Now and then a partial enqueue, with an intent it must refuse among them.
                    let admitted = if !again && self.rng.chance(20) {
                        self.enqueue_partial(l, intents)
                    } else if again {
                        self.enqueue_again(l, &intents[0])
                            .map(|barrier| (barrier, intents))
                    } else {
                        self.enqueue(l, intents.clone())
                            .map(|barrier| (barrier, intents))
                    };
                    if let Ok((barrier, intents)) = admitted {
                        if !again {
                            self.intents.extend(intents.iter().cloned());
                        }
                        let ids: Vec<String> = intents.iter().map(|i| i.id.clone()).collect();
                        for id in &ids {
                            if let Some(op) = self.tabs[l].scheduler.ledger().operation(id) {
                                let user = if op.intent.principal.as_deref() == Some("user-2") {
                                    "user-2"
                                } else {
                                    "user-1"
                                };
                                self.sequence_of
                                    .insert(id.clone(), (op.intent.sequence, user));
                                if std::env::var("SIM_TRACE").is_ok() {
                                    eprintln!(
                                        "step {} tab {} enqueue {id} seq {} leader {}",
                                        self.counts.steps,
                                        self.tabs[l].scheduler.config().owner,
                                        op.intent.sequence,
                                        self.tabs[l].scheduler.is_leader()
                                    );
                                }
                            }
                        }
                        self.tabs[l].pending_acks.push((barrier, ids));
                    }
                    self.collect(l);
                }
            }
            15..=44 if awake && !self.tabs[t].persists.is_empty() => {
                if self.faults_on && self.rng.chance(1) {
                    // The disk fills up for a while: every write fails until then; the
                    // scheduler recovers by itself once it is over (no resume()).
                    self.storage_full_until = self.now + self.rng.below(4_000);
                }
                let full = self.faults_on && self.now < self.storage_full_until;
                let fail = full || (self.faults_on && self.rng.chance(3));
                self.answer_persist(t, fail);
            }
            45..=74
                if awake
                    && !self.tabs[t].authorizing.is_empty()
                    && (self.tabs[t].wire.is_empty() || self.rng.chance(50)) =>
            {
                let i = self.rng.below(self.tabs[t].authorizing.len() as u64) as usize;
                let order = self.tabs[t].authorizing.remove(i);
                let verdict = self.random_verdict(&order);
                self.tabs[t]
                    .scheduler
                    .on_authorized(self.now, order.attempt, verdict);
                self.collect(t);
            }
            45..=74 if awake && !self.tabs[t].wire.is_empty() => {
                let i = self.rng.below(self.tabs[t].wire.len() as u64) as usize;
                let order = self.tabs[t].wire.remove(i);
                let faults = self.random_faults();
                let status = self.server.handle(order.action, &order.request, faults);
                self.counts.unauthorized += u64::from(status.blocked.is_some());
                self.tabs[t]
                    .scheduler
                    .on_answer(self.now, order.attempt, status);
                self.collect(t);
            }
            75..=86 => {
                self.now += self.rng.below(400);
                // The leader's rescan of the intake.
                if let Some(l) = self.leader() {
                    self.intake_turn(l);
                }
                for t in 0..self.tabs.len() {
                    let mut fired = 0;
                    while self.tabs[t]
                        .timer
                        .is_some_and(|at| at <= self.now && self.tabs[t].paused_until <= self.now)
                    {
                        fired += 1;
                        if fired > 1_000 {
                            self.fail("timer storm: the scheduler re-arms without progress");
                        }
                        self.tabs[t].timer = None;
                        self.tabs[t].scheduler.on_timer(self.now);
                        self.collect(t);
                    }
                }
            }
            // The host's "try now" while storage fails (the scheduler also tries on its own).
            87..=89 if self.tabs[t].storage_failed && self.rng.chance(30) => {
                self.tabs[t].scheduler.resume(self.now);
                self.collect(t);
            }
            90..=91 if self.faults_on && self.rng.chance(15) => self.power_loss(),
            90..=91 if self.faults_on => self.crash(t),
            92 if self.faults_on && self.tabs.len() < 3 => {
                // A pause longer than the lease; another tab takes over once it has lapsed.
                self.tabs[t].paused_until = self.now + LEASE_MS * 2;
            }
            // Another tab asks for the lease (Web Locks would queue it); it gets it once lapsed.
            // Only where tabs keep their lease alive: an idle single-instance host lets it
            // lapse and would not notice another instance taking over.
            93..=95 if self.tabs.len() < 3 && self.config.keep_lease => {
                let _ = self.open_tab();
            }
            96..=99 if self.faults_on => {
                if let Some(l) = self.leader() {
                    self.host_action(l);
                }
            }
            _ => {}
        }
        self.tabs.retain(|tab| {
            !(tab.scheduler.is_closed() && tab.wire.is_empty() && tab.persists.is_empty())
        });
        self.known_turn();
        self.check_invariants();
        self.check_saved();
    }

    /// The host's authorization step: mostly allowed; now and then the check fails or the
    /// user lost the right to edit (once the world heals, always allowed).
    pub(super) fn random_verdict(&mut self, order: &SendOrder) -> Authorization {
        if !self.faults_on {
            return Authorization::Allowed;
        }
        match self.rng.below(100) {
            0..=5 => {
                self.counts.failed_checks += 1;
                Authorization::Unavailable("policy service down".into())
            }
            6..=9 => {
                let late = order.action == RetryAction::Query || order.request.attempt > 1;
                self.counts.late_denials += u64::from(late);
                Authorization::Denied("read-only".into())
            }
            _ => Authorization::Allowed,
        }
    }

    pub(super) fn random_faults(&mut self) -> ServerFaults {
        if !self.faults_on {
            return ServerFaults::default();
        }
        let roll = self.rng.below(100);
        ServerFaults {
            drop_before_apply: roll < 5,
            drop_after_apply: (5..10).contains(&roll),
            server_error: (10..15).contains(&roll),
            too_many: (15..18).contains(&roll).then_some(100),
            unauthorized: (18..20).contains(&roll),
            in_progress: (20..22).contains(&roll),
            abort_batch: self.aborts_batches && (22..42).contains(&roll),
        }
    }
}
