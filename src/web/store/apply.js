// One persist batch in one readwrite transaction: the hot path of every enqueue and every
// answer. In plain JS because every IndexedDB request made through the Rust bindings costs
// closures, listeners and a future wake-up (measured: an enqueue spent more time in that glue
// than in IndexedDB); here the whole transaction costs one call and one promise.
//
// `writes` is flat: [op, store, key, value, op, store, key, value, ...] with op 0 = put,
// 1 = delete, 2 = delete every key below `key`. `decide(storedLease)` runs when the lease read
// answers, before the commit: it returns `false` to refuse (the transaction is aborted and
// nothing lands), a value to put as the lease (a renewal), or `undefined`.
//
// Resolves (never rejects) to 0 (committed), 1 (refused at the lease read), or the
// DOMException (or other error) that aborted the transaction. Numbers, not strings: Rust reads
// them without copying text.
export function applyBatch(db, stores, leaseStore, leaseKey, writes, decide, abortInstead) {
  return new Promise((resolve) => {
    let tx;
    try {
      tx = db.transaction(stores, "readwrite", { durability: "strict" });
    } catch (error) {
      resolve(error);
      return;
    }
    let refused = false;
    tx.oncomplete = () => resolve(0);
    tx.onabort = () => resolve(refused ? 1 : (tx.error ?? new DOMException("transaction aborted", "AbortError")));
    try {
      const lease = tx.objectStore(leaseStore);
      const read = lease.get(leaseKey);
      // Issued behind the read without waiting for it: requests run in order, so the read
      // sees the lease as it was, and a refusal aborts the transaction with these in it.
      for (let i = 0; i < writes.length; i += 4) {
        const store = tx.objectStore(writes[i + 1]);
        const op = writes[i];
        if (op === 0) store.put(writes[i + 3], writes[i + 2]);
        else if (op === 1) store.delete(writes[i + 2]);
        else store.delete(IDBKeyRange.upperBound(writes[i + 2], true));
      }
      read.onsuccess = () => {
        try {
          const renewed = decide(read.result);
          if (renewed === false) {
            refused = true;
            tx.abort();
            return;
          }
          if (renewed !== undefined) lease.put(renewed, leaseKey);
          if (abortInstead) tx.abort();
          // Without commit() (older engines) the transaction commits by itself once these
          // requests are done.
          else if (typeof tx.commit === "function") tx.commit();
        } catch (error) {
          tx.abort();
        }
      };
    } catch (error) {
      try {
        tx.abort();
      } catch {
        // Already finished: onabort or oncomplete has resolved.
      }
      resolve(error);
    }
  });
}
