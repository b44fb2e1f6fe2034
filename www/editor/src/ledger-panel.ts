// The ledger panel: every operation the editor has not seen settle, grouped as pending,
// in flight, retrying, blocked or dead-lettered with the scheduler's own `explain()`; the
// canvas claims; the statistics with the idle reason; and the persisted event log.

import type { Explanation, LedgerEvent, Scheduler, SchedulerStats } from "/pkg/web/canvas_scheduler.js";
import type { PendingOp } from "./model.js";

/** What the panel reads: the page's Scheduler, or worker mode's proxy (the same methods). */
export type SchedulerView = Pick<Scheduler, "stats" | "claims" | "explain" | "events">;

export type Category = "not enqueued" | "pending" | "in flight" | "retrying" | "blocked" | "dead-lettered" | "settled";

export const CATEGORIES: Category[] = ["not enqueued", "pending", "in flight", "retrying", "blocked", "dead-lettered", "settled"];

export function categorize(explanation: Explanation | null): Category {
  if (explanation === null) return "not enqueued";
  switch (explanation.state) {
    case "resolved":
      return "settled";
    case "in_flight":
      return "in flight";
    case "blocked":
      return explanation.reason === "dead_letter" || explanation.blockers.includes("dead_letter")
        ? "dead-lettered"
        : "blocked";
    default:
      // A pending operation whose request exists and is not being sent waits for a retry
      // (a resubmit, or a query of an `accepted` run).
      return explanation.requestId !== undefined && explanation.reason !== "waiting_canvas" ? "retrying" : "pending";
  }
}

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function describeExplanation(e: Explanation): string {
  const parts = [`${e.state}: ${e.reason || "—"}`];
  if (e.canvasId) parts.push(`canvas ${e.canvasId}`);
  if (e.requestId) parts.push(`request ${e.requestId}`);
  if (e.dependencyId) parts.push(`after ${e.dependencyId}`);
  if (e.attempt !== undefined) parts.push(`attempt ${e.attempt}`);
  if (e.dueAt !== undefined) parts.push(`due in ${Math.max(0, Math.round((e.dueAt - Date.now()) / 100) / 10)} s`);
  if (e.blockers.length) parts.push(`blockers ${e.blockers.join(",")}`);
  return parts.join(" · ");
}

export interface PanelElements {
  stats: HTMLElement;
  claims: HTMLElement;
  operations: HTMLElement;
  events: HTMLElement;
}

/** Renders the panel; only touches the DOM when the text changed (buttons stay clickable). */
export class LedgerPanel {
  private lastSeq = 0;
  private log: LedgerEvent[] = [];
  private reading = false;
  private html = { stats: "", claims: "", operations: "", events: "" };
  /** Counts per category from the last refresh (the e2e tests read them). */
  counts: Record<string, number> = {};

  constructor(private readonly el: PanelElements) {}

  private put(key: keyof PanelElements, html: string): void {
    if (this.html[key] === html) return;
    this.html[key] = html;
    this.el[key].innerHTML = html;
  }

  refresh(scheduler: SchedulerView | null, pending: PendingOp[]): void {
    if (scheduler === null) {
      this.put("stats", "<em>no scheduler yet</em>");
      return;
    }
    let stats: SchedulerStats;
    try {
      stats = scheduler.stats();
    } catch (error) {
      this.put("stats", `<em>stats unavailable: ${escape(String(error))}</em>`);
      return;
    }
    this.put(
      "stats",
      `<b>idle reason:</b> ${escape(String(stats.idleReason ?? "working"))} · leader ${stats.leader ? "this tab" : escape(stats.leaderOwner ?? "unknown")}` +
        ` (fence ${stats.fence ?? "—"}) · pending ${stats.pending} · in flight ${stats.inFlight}` +
        ` · retry scheduled ${stats.retryScheduled} · sent ${stats.sent} · settled ${stats.settled}`,
    );
    const claims = Object.entries(scheduler.claims());
    this.put(
      "claims",
      claims.length === 0
        ? "<em>no canvas claimed</em>"
        : claims.map(([canvas, request]) => `<li><b>${escape(canvas)}</b> ← ${escape(request)}</li>`).join(""),
    );
    const counts: Record<string, number> = {};
    const rows = pending.map((op) => {
      let explanation: Explanation | null = null;
      let problem = "";
      if (op.enqueued) {
        try {
          explanation = scheduler.explain(op.id);
        } catch (error) {
          problem = String((error as { code?: string }).code ?? error);
        }
      }
      const category = categorize(explanation);
      counts[category] = (counts[category] ?? 0) + 1;
      const actions =
        category === "blocked" || category === "dead-lettered"
          ? `<button data-action="retry" data-op="${escape(op.id)}">retry</button>` +
            `<button data-action="discard" data-op="${escape(op.id)}">discard</button>`
          : category === "pending" || category === "retrying"
            ? `<button data-action="flush" data-op="${escape(op.id)}">flush</button>`
            : "";
      return (
        `<tr class="op ${category.replace(/ /g, "-")}" data-op-row="${escape(op.id)}">` +
        `<td class="category">${category}</td><td>${escape(op.kind)}</td><td>${escape(op.canvasId)}</td>` +
        `<td class="explain">${escape(explanation ? describeExplanation(explanation) : problem || "waiting for the ledger")}</td>` +
        `<td>${actions}</td></tr>`
      );
    });
    this.counts = counts;
    const summary = CATEGORIES.filter((c) => counts[c]).map((c) => `${c} ${counts[c]}`).join(" · ");
    this.put(
      "operations",
      rows.length === 0
        ? "<p><em>nothing unsettled: every edit reached the server</em></p>"
        : `<p>${summary}</p><table><tr><th>state</th><th>kind</th><th>canvas</th><th>explain()</th><th></th></tr>${rows.join("")}</table>`,
    );
    void this.readEvents(scheduler);
  }

  private async readEvents(scheduler: SchedulerView): Promise<void> {
    if (this.reading) return;
    this.reading = true;
    try {
      for (let page = 0; page < 10; page += 1) {
        const batch = await scheduler.events({ after: this.lastSeq, limit: 200 });
        if (batch.length === 0) break;
        this.log.push(...batch);
        this.lastSeq = batch[batch.length - 1]?.seq ?? this.lastSeq;
        if (batch.length < 200) break;
      }
      this.log = this.log.slice(-60);
      this.put(
        "events",
        this.log
          .slice()
          .reverse()
          .map((e) => {
            const time = new Date(e.at).toLocaleTimeString();
            const what = [e.operationId, e.requestId, e.attempt !== undefined ? `attempt ${e.attempt}` : "", e.detail ?? ""]
              .filter(Boolean)
              .join(" ");
            return `<li><span class="seq">#${e.seq}</span> ${time} <b>${e.kind}</b> ${escape(what)}</li>`;
          })
          .join(""),
      );
    } catch (error) {
      this.put("events", `<li><em>events unavailable: ${escape(String(error))}</em></li>`);
    } finally {
      this.reading = false;
    }
  }
}
