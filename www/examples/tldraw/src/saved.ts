//! "Is everything saved?": the badge ("Saving… / All changes saved / N not saved (why)"), the
//! `beforeunload` warning, and `whenSaved()`. This is the only file that depends on the saved
//! state API (`scheduler.whenSaved()`, `scheduler.pending()`, events `pending` and
//! `saved`). Until a scheduler has them, it keeps the same answers itself from what every
//! version has: the ids it enqueued, and the `settled` / `blocked` / `dead_lettered` events.
import type { SchedulerEvent } from "canvas-scheduler";

export interface PendingOperation {
  id: string;
  state: "queued" | "in_flight" | "retrying" | "blocked";
  reason?: string | null;
}
/** The part of the scheduler this file uses (page and worker mode have it alike). */
export interface SavedApi {
  whenSaved?: () => Promise<{ settled: number; blocked: string[] }>;
  pending?: () => PendingOperation[];
  /** `pending`: how many operations are unsettled, kept as they change (no list is built). */
  stats?: () => { pending: number };
}

export class SavedState {
  /** Unsettled ids in enqueue order -> the reason it is blocked (null while it may be sent). */
  private unsettled = new Map<string, string | null>();
  /** Events can come before `enqueue` resolves (a superseded intent settles `discarded` as its
   * replacement is stored): ids settled (true) or blocked (reason) before they were known. */
  private early = new Map<string, true | string>();
  private waiters: { ids: Set<string>; done: () => void }[] = [];
  private api: SavedApi | null = null;

  constructor(private badge: HTMLElement) {
    addEventListener("beforeunload", (event) => {
      if (this.count() > 0) event.preventDefault();
    });
  }

  attach(api: SavedApi) {
    this.api = api;
    this.render();
  }

  /** Call once `enqueue`/`enqueueMany` resolved for these ids. */
  enqueued(ids: string[]) {
    for (const id of ids) {
      const early = this.early.get(id);
      this.early.delete(id);
      if (early === true) continue;
      this.unsettled.set(id, early ?? null);
    }
    this.scheduleRender();
  }

  onEvent(event: SchedulerEvent | { type: string }) {
    const e = event as SchedulerEvent;
    if (e.type === "blocked" || e.type === "dead_lettered") this.blockedAt = -Infinity; // read them again
    if (e.type === "settled") this.forget([e.operationId]);
    else if (e.type === "dead_lettered") this.forget(e.operationIds);
    else if (e.type === "blocked") {
      if (this.unsettled.has(e.operationId)) this.unsettled.set(e.operationId, e.reason);
      else this.early.set(e.operationId, e.reason);
      this.forget([e.operationId], false);
    }
    if (event.type === "pending" || event.type === "saved") this.scheduleRender();
  }

  /** The unsettled operations, in enqueue order. */
  pending(): PendingOperation[] {
    if (this.api?.pending) return this.api.pending();
    return [...this.unsettled].map(([id, reason]) => ({ id, state: reason ? "blocked" : "queued", reason }));
  }

  /** How many operations are unsaved: a counter the scheduler keeps, read every frame. */
  count(): number {
    if (this.api?.stats) return this.api.stats().pending;
    return this.pending().length;
  }

  /** The blocked operations as last read, and when (-Infinity: read them at the next render;
   * Infinity: none blocked, and no `blocked` event since). `pending()` builds a list of every
   * unsettled operation (about 3 ms with 2,000 of them, as in a drag of 2,000 shapes), so the
   * badge reads it only while something may be blocked: after a `blocked` or `dead_lettered`
   * event or an open (work blocked before a reload), then at most every BLOCKED_EVERY_MS. */
  private blocked: PendingOperation[] = [];
  private blockedAt = -Infinity;

  private blockedNow(count: number): PendingOperation[] {
    if (count === 0) {
      this.blocked = [];
      this.blockedAt = Infinity;
    } else if (performance.now() - this.blockedAt >= BLOCKED_EVERY_MS) {
      this.blocked = this.pending().filter((operation) => operation.state === "blocked");
      this.blockedAt = this.blocked.length > 0 ? performance.now() : Infinity;
    }
    return this.blocked;
  }

  /** Resolves once everything enqueued before the call is settled or blocked. */
  whenSaved(): Promise<unknown> {
    if (this.api?.whenSaved) return this.api.whenSaved();
    const ids = new Set([...this.unsettled].filter(([, reason]) => reason === null).map(([id]) => id));
    if (ids.size === 0) return Promise.resolve({ settled: 0 });
    return new Promise((done) => this.waiters.push({ ids, done: () => done({ settled: ids.size }) }));
  }

  private forget(ids: string[], remove = true) {
    for (const id of ids) {
      if (remove && !this.unsettled.delete(id)) this.early.set(id, true);
      for (const waiter of this.waiters) waiter.ids.delete(id);
    }
    const ready = this.waiters.filter((waiter) => waiter.ids.size === 0);
    this.waiters = this.waiters.filter((waiter) => waiter.ids.size > 0);
    for (const waiter of ready) waiter.done();
    this.scheduleRender();
  }

  private frame = 0;
  private scheduleRender() {
    if (this.frame === 0) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.render()));
  }

  /** When the operations now unsaved started to be (0: everything is saved). */
  private unsavedSince = 0;
  private recheck: ReturnType<typeof setTimeout> | undefined;

  render() {
    const count = this.count();
    const blocked = this.blockedNow(count);
    let text = "All changes saved";
    if (count === 0) this.unsavedSince = 0;
    else if (this.unsavedSince === 0) this.unsavedSince = performance.now();
    if (blocked.length > 0) {
      const why = [...new Set(blocked.map((operation) => operation.reason ?? "blocked"))].join(", ");
      text = `${blocked.length} not saved (${why})`;
    } else if (count > 0) {
      // "Saving…" once a save takes longer than SAVING_AFTER_MS: a drag saves every frame,
      // and a badge switching text each frame costs the page a layout, a paint and a
      // layerization a frame (about 1.5 ms a move in the drag of the example's e2e test).
      const waited = performance.now() - this.unsavedSince;
      if (waited >= SAVING_AFTER_MS) text = "Saving…";
      else {
        // Until then it keeps saying saved if it did (anything else becomes "Saving…").
        if (this.badge.textContent !== text) text = "Saving…";
        clearTimeout(this.recheck);
        this.recheck = setTimeout(() => this.scheduleRender(), SAVING_AFTER_MS - waited);
      }
    }
    // Written only when it changes: each write of a text node lays the badge out again.
    if (this.badge.textContent !== text) this.badge.textContent = text;
  }
}

/** How long a save may take before the badge says "Saving…". */
const SAVING_AFTER_MS = 500;
/** While some operation is blocked, how often the badge reads which ones (and why) again. */
const BLOCKED_EVERY_MS = 250;
