//! The driver's loop: every effect the core asks for, carried out (persist, send, authorize,
//! abort, timers, reports), then the waiters it decided woken.

use web_sys::AbortController;

use canvas_scheduler_core::{
    AttemptStatus, Clock, Effect, Millis, PersistBatch, PersistFailure, PersistResult, Secrets,
    SendOrder, UPLOAD_KIND,
};

use super::Driver;
use crate::web::clock::BrowserClock;
use crate::web::task::{next_task, spawn};

impl Driver {
    /// Carries out every queued effect, then wakes waiters and delivers reports.
    pub(super) fn run(&self) {
        let mut reports = Vec::new();
        let mut commit_soon = false;
        loop {
            let effect = self.state.borrow_mut().scheduler.poll_effect();
            let Some(effect) = effect else { break };
            match effect {
                Effect::Persist(batch) => self.persist(batch),
                Effect::Send(order) => self.send(*order),
                Effect::Authorize(order) => self.authorize(*order),
                Effect::Abort(attempt) => {
                    if let Some(controller) = self.state.borrow_mut().controllers.remove(&attempt) {
                        controller.abort();
                    }
                }
                Effect::SetTimer(at) => self.arm(at),
                Effect::Report(report) => reports.push(report),
                Effect::CommitSoon => commit_soon = true,
            }
        }
        let woke_enqueues = self.wake_waiters();
        if commit_soon {
            let this = self.clone();
            if woke_enqueues {
                // Enqueues just became durable: their callers' next enqueues (made once their
                // promises resolve, a few microtasks on) go into this commit, not the one
                // after it.
                next_task(Box::new(move || this.with(|s, now| s.commit(now))));
            } else {
                // A microtask: runs after the current turn's synchronous code.
                spawn(async move { this.with(|s, now| s.commit(now)) });
            }
        }
        let sink = self.state.borrow().sink.clone();
        if let Some(sink) = sink {
            for report in &reports {
                sink(report); // The sink is the API layer's; it swallows host exceptions.
            }
        }
    }

    /// Wakes the waiters whose barrier or settle is decided; true when a barrier waiter woke
    /// (an enqueue became durable, or was refused).
    pub(super) fn wake_waiters(&self) -> bool {
        let (barriers, settled) = {
            let mut state = self.state.borrow_mut();
            let waiters = std::mem::take(&mut state.barrier_waiters);
            let (done, pending): (Vec<_>, Vec<_>) = waiters
                .into_iter()
                .partition(|(b, _)| state.scheduler.barrier_state(*b).is_some());
            state.barrier_waiters = pending;
            let settled = if state.scheduler.in_flight() == 0 {
                std::mem::take(&mut state.settle_waiters)
            } else {
                Vec::new()
            };
            (done, settled)
        };
        let woke = !barriers.is_empty();
        for (_, signal) in barriers {
            signal.resolve();
        }
        for signal in settled {
            signal.resolve();
        }
        let saved = std::mem::take(&mut self.state.borrow_mut().saved_waiters);
        for signal in saved {
            signal.resolve();
        }
        woke
    }

    /// Writes a batch and hands the result to the core.
    fn persist(&self, batch: PersistBatch) {
        let store = self.state.borrow().store.clone();
        let (this, no) = (self.clone(), batch.no);
        if store.is_open() {
            // The transaction opens here, in this turn's group commit; only its answer is
            // awaited.
            let applied = store.apply(&batch);
            spawn(async move {
                let result = applied.await;
                this.with(|s, now| s.on_persisted(now, no, result));
            });
            return;
        }
        // A connection the browser closed (or another tab's upgrade) is opened again first, so
        // the core's next try of failing storage can succeed with no host call.
        spawn(async move {
            let result = match store.reopen().await {
                Ok(()) => store.apply(&batch).await,
                Err(error) => PersistResult::Failed(PersistFailure::Storage(error)),
            };
            this.with(|s, now| s.on_persisted(now, no, result));
        });
    }

    pub(super) fn arm(&self, at: Option<Millis>) {
        let mut state = self.state.borrow_mut();
        // Re-arming is a clearTimeout and a setTimeout (about 2 % of an enqueue, whose write
        // toggles the lease-renewal wake-up). A timer already armed for no later than `at`,
        // or armed when none is wanted, is kept: an early `on_timer` is harmless (the core
        // does what is due and asks again). `stop()` clears it.
        match (&state.timer, at) {
            (Some((_, due)), Some(at)) if *due <= at => return,
            (Some(_), None) => return,
            _ => {}
        }
        if let Some((handle, _)) = state.timer.take() {
            state.clock.clear_timer(handle);
        }
        if let Some(at) = at {
            let delay = at.saturating_sub(state.clock.now());
            let this = self.clone();
            let handle = state.clock.set_timer(
                delay,
                Box::new(move || {
                    this.state.borrow_mut().timer = None;
                    this.with(|s, now| s.on_timer(now));
                }),
            );
            state.timer = Some((handle, at));
        }
    }

    /// Runs the host's `authorize` (outside any borrow) and hands its verdict to the core.
    pub(super) fn authorize(&self, order: SendOrder) {
        let hooks = self.state.borrow().send_hooks.clone();
        let this = self.clone();
        spawn(async move {
            let verdict = hooks.authorize(&order.request).await;
            this.with(|s, now| s.on_authorized(now, order.attempt, verdict));
        });
    }

    pub(super) fn send(&self, order: SendOrder) {
        let Ok(controller) = AbortController::new() else {
            let status = AttemptStatus::transport_unknown("AbortController unavailable");
            self.with(|s, now| s.on_answer(now, order.attempt, status));
            return;
        };
        let blob_id = if order.request.kind == UPLOAD_KIND {
            let state = self.state.borrow();
            order
                .request
                .operation_ids
                .first()
                .and_then(|id| state.scheduler.ledger().operation(id))
                .and_then(|op| op.intent.blob.as_ref().map(|b| b.id.clone()))
        } else {
            None
        };
        let (store, transport, hooks, js_transport) = {
            let mut state = self.state.borrow_mut();
            state.controllers.insert(order.attempt, controller.clone());
            (
                state.store.clone(),
                state.transport.clone(),
                state.send_hooks.clone(),
                state.js_transport.clone(),
            )
        };
        let this = self.clone();
        spawn(async move {
            let blob = match blob_id {
                Some(id) => store.get_blob(&id).await.ok().flatten(),
                None => None,
            };
            let clock = BrowserClock::new();
            let status = match hooks.headers().await {
                Err(status) => status,
                Ok(headers) => {
                    let signal = controller.signal();
                    let sent = || this.with(|s, now| s.on_sent(now, order.attempt));
                    let mut status = match &js_transport {
                        Some(custom) => {
                            let timeout = transport.timeout_ms();
                            let limit = transport.max_answer_bytes();
                            custom
                                .send(&order, blob, &signal, timeout, limit, || clock.now(), sent)
                                .await
                        }
                        None => {
                            transport
                                .send(&order, &headers, blob, &signal, || clock.now(), sent)
                                .await
                        }
                    };
                    // Nothing headers() returned is stored or reported from here on.
                    Secrets::of_headers(&headers).scrub_status(&mut status);
                    hooks.classify(&mut status).await;
                    status
                }
            };
            this.state.borrow_mut().controllers.remove(&order.attempt);
            if status
                .error
                .as_ref()
                .is_some_and(|e| e.code == "hook_timeout")
            {
                // The host's transport may still be working on it: tell it to stop.
                controller.abort();
            }
            this.with(|s, now| s.on_answer(now, order.attempt, status));
        });
    }
}
