// The saved badge: "Saving…", "All changes saved" or "N not saved (why)",
// from the scheduler's `pending()` (O(unsettled), no storage read: cheap on every event) plus
// the edits this page holds that are not in the ledger yet (refused by storage, or whose
// `enqueue` has not resolved). A dead letter names the canvases it holds and offers the two
// ways to release them, `retry` and `discard`, as its `pending()` entry says. While anything is
// unsaved, leaving the page asks first (`beforeunload`).

import type { PendingOperation } from "/pkg/web/canvas_scheduler.js";

/** What the badge shows, for the page and the end-to-end tests. */
export interface SavedView {
  state: "saved" | "saving" | "not_saved";
  text: string;
  /** Unsettled operations in the ledger plus this page's edits not in it yet. */
  unsaved: number;
  /** Blocked ones that hold canvases, with how to release them. */
  held: { id: string; reason: string; canvasIds: string[]; release: string[] }[];
}

/** Renders a SavedView into `element` (buttons carry `data-action` and `data-op`). */
export class SavedBadge {
  view: SavedView = { state: "saved", text: "All changes saved", unsaved: 0, held: [] };

  constructor(private readonly element: HTMLElement) {
    addEventListener("beforeunload", (event) => {
      if (this.view.unsaved === 0) return;
      event.preventDefault();
      // Older engines show the prompt only when returnValue is set.
      event.returnValue = "";
    });
  }

  /** `pending`: the scheduler's list (empty before it opened); `outside`: page-only edits. */
  update(pending: PendingOperation[], outside: number, why: string | null): SavedView {
    const blocked = pending.filter((op) => op.state === "blocked");
    const unsaved = pending.length + outside;
    const held = blocked
      .filter((op) => op.release && op.release.length > 0)
      .map((op) => ({ id: op.id, reason: op.reason, canvasIds: op.heldCanvasIds ?? op.canvasIds, release: op.release ?? [] }));
    let view: SavedView;
    if (unsaved === 0) {
      view = { state: "saved", text: "All changes saved", unsaved, held };
    } else if (blocked.length > 0 || why !== null) {
      const reasons = [...new Set(blocked.map((op) => op.reason))];
      if (why !== null) reasons.push(why);
      view = { state: "not_saved", text: `${unsaved} not saved (${reasons.join(", ")})`, unsaved, held };
    } else {
      const retrying = pending.find((op) => op.state === "retrying");
      view = { state: "saving", text: `Saving… ${unsaved}${retrying ? ` (retrying: ${retrying.reason})` : ""}`, unsaved, held };
    }
    this.view = view;
    this.render();
    return view;
  }

  private render(): void {
    const { element, view } = this;
    element.dataset.state = view.state;
    const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
    const holds = view.held
      .map(
        (h) =>
          `<span class="held" data-op="${escape(h.id)}">${escape(h.reason)} holds ${escape(h.canvasIds.join(", "))}: ` +
          h.release.map((action) => `<button data-action="${escape(action)}" data-op="${escape(h.id)}">${escape(action)}</button>`).join(" ") +
          "</span>",
      )
      .join(" ");
    element.innerHTML = `<span class="text">${escape(view.text)}</span>${holds ? ` ${holds}` : ""}`;
  }
}
