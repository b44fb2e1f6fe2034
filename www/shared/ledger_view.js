// Shared by the test pages (www/chaos/, www/tabs/): what a scheduler's view of the ledger says
// of some operations, for the end-to-end tests' final checks.

/** What the final checks read of one operation record. */
function view(scheduler, id, record) {
  return {
    sequence: record.intent.sequence,
    phase: record.phase,
    blockers: record.blockers,
    explain: record.phase === "pending" ? scheduler.explain(id) : undefined,
  };
}

/**
 * Sequence, phase, blockers (and for a pending one, `explain`) of each id in `ids`; null when
 * unknown or known only by its tombstone. An open reads no settled history: what
 * `operation(id)` does not have at hand is looked up with `known(ids)`, as docs/guide.md
 * ("After a reload: known()") tells a host to.
 */
export async function ledgerView(scheduler, ids) {
  const out = {};
  const asked = [];
  for (const id of ids) {
    const record = scheduler.operation(id);
    if (record?.intent) out[id] = view(scheduler, id, record);
    else asked.push(id);
  }
  for (let at = 0; at < asked.length; at += 10_000) {
    const chunk = asked.slice(at, at + 10_000);
    const found = await scheduler.known(chunk);
    chunk.forEach((id, i) => {
      out[id] = found[i]?.intent ? view(scheduler, id, found[i]) : null;
    });
  }
  return out;
}
