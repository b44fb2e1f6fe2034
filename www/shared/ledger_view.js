// Shared by the test pages (www/chaos/, www/tabs/): what a scheduler's view of the ledger says
// of some operations, for the end-to-end tests' final checks.

/** Sequence, phase, blockers (and for a pending one, `explain`) of each id in `ids`; null when unknown. */
export function ledgerView(scheduler, ids) {
  const out = {};
  for (const id of ids) {
    const record = scheduler.operation(id);
    out[id] = record
      ? { sequence: record.intent.sequence, phase: record.phase, blockers: record.blockers, explain: record.phase === "pending" ? scheduler.explain(id) : undefined }
      : null;
  }
  return out;
}
