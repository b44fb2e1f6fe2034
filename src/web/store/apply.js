// @ts-check

// One persist batch in one readwrite transaction: the hot path of every enqueue and every
// answer. In plain JS because every IndexedDB request made through the Rust bindings costs
// closures, listeners and a future wake-up (measured: an enqueue spent more time in that glue
// than in IndexedDB); here the whole transaction costs one call and one promise.
//
// `writes` is flat: [kind, store, key, value, kind, store, key, value, ...], each kind a
// `Write` (below; `apply.rs`: `Write`).
//
// Resolves (never rejects) to 0 (committed), 1 (refused at the lease read), or the
// DOMException (or other error) that aborted the transaction. Numbers, not strings: Rust reads
// them without copying text.
/**
 * What one write of a batch does to `store`, with `key` (and `value` for a put):
 * - "put": puts `value` under `key`;
 * - "delete": deletes `key`;
 * - "deleteBelow": deletes every key below `key`;
 * - "tombstonesBelow" (on `tombstones`, pages and their hashes, see tombstones.rs): deletes
 *   every tombstone below `key` (single records keyed below it, and pages whose newest is);
 * - "keepNewestTombstones" (on `tombstones`): keeps only the newest `key` tombstones (cursors
 *   whose steps are issued from their callbacks, so such a batch commits by itself once they
 *   are done instead of calling commit());
 * - "keepNewestKeys" (on a store of number keys: the archive, `settled`): keeps only the
 *   newest `key` records (one cursor step, then a range delete; stepping as above).
 * @typedef {"put" | "delete" | "deleteBelow" | "tombstonesBelow" | "keepNewestTombstones" | "keepNewestKeys"} Write
 */

/**
 * @param {AheadSlot} slot the ledger's slot of the transaction opened ahead
 * @param {IDBDatabase} db
 * @param {string[]} stores
 * @param {string} leaseStore
 * @param {IDBValidKey} leaseKey
 * @param {any[]} writes
 * @param {(stored: unknown) => unknown} decide
 * @param {boolean} abortInstead
 * @param {boolean} relaxed the batch holds only what a query recovers: relaxed durability
 * @returns {Promise<unknown>}
 */
export function applyBatch(slot, db, stores, leaseStore, leaseKey, writes, decide, abortInstead, relaxed) {
  slot.took = false;
  return new Promise((resolve) => {
    // Only a batch with writes takes it: the first write is what tells a transaction of an
    // earlier turn (no longer active) from one of this turn. A batch without (a refusal, a
    // bare renewal) riding an earlier turn's transaction would be ordered before transactions
    // opened since.
    const opened = writes.length > 0 ? takeAhead(slot, db, stores, leaseStore, leaseKey) : null;
    if (opened !== null) {
      try {
        issue(opened.tx, opened.read, leaseStore, leaseKey, writes, decide, abortInstead, resolve);
        slot.took = true;
        return;
      } catch {
        // No longer active (its turn is over) or aborted under us: nothing of this batch
        // lands there. Quietly gone, and the batch takes a transaction of its own.
        forget(opened);
      }
    }
    let tx;
    try {
      tx = db.transaction(stores, "readwrite", { durability: relaxed ? "relaxed" : "strict" });
    } catch (error) {
      resolve(error);
      return;
    }
    try {
      issue(tx, tx.objectStore(leaseStore).get(leaseKey), leaseStore, leaseKey, writes, decide, abortInstead, resolve);
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

// Issues `writes` behind the lease `read` already issued on `tx` (requests run in order, so the
// read sees the lease as it was, and a refusal aborts the transaction with these in it), then
// listens. Throws, having issued nothing that can land, when `tx` takes no requests.
/**
 * @param {IDBTransaction} tx
 * @param {IDBRequest} read
 * @param {string} leaseStore
 * @param {IDBValidKey} leaseKey
 * @param {any[]} writes
 * @param {(stored: unknown) => unknown} decide
 * @param {boolean} abortInstead
 * @param {(outcome: unknown) => void} resolve
 */
function issue(tx, read, leaseStore, leaseKey, writes, decide, abortInstead, resolve) {
  let stepping = false;
  for (let i = 0; i < writes.length; i += 4) {
    const store = tx.objectStore(writes[i + 1]);
    const kind = /** @type {Write} */ (writes[i]);
    const key = writes[i + 2];
    switch (kind) {
      case "put":
        store.put(writes[i + 3], key);
        break;
      case "delete":
        store.delete(key);
        break;
      case "deleteBelow":
        store.delete(IDBKeyRange.upperBound(key, true));
        break;
      case "tombstonesBelow":
        store.delete(IDBKeyRange.upperBound(key, true));
        store.delete(IDBKeyRange.bound([], [key], false, true));
        tx.objectStore(HASHES).delete(IDBKeyRange.upperBound(key, true));
        break;
      case "keepNewestTombstones":
        keepNewest(store, tx.objectStore(HASHES), key);
        stepping = true;
        break;
      case "keepNewestKeys":
        keepNewestKeys(store, key);
        stepping = true;
        break;
      default:
        // Nothing of the batch lands: the caller aborts the transaction.
        throw new TypeError(`unknown write ${String(kind)}`);
    }
  }
  let refused = false;
  tx.oncomplete = () => resolve(0);
  tx.onabort = () => resolve(refused ? 1 : (tx.error ?? new DOMException("transaction aborted", "AbortError")));
  read.onerror = null;
  read.onsuccess = () => {
    try {
      const renewed = decide(read.result);
      if (renewed === false) {
        refused = true;
        tx.abort();
        return;
      }
      if (renewed !== undefined) tx.objectStore(leaseStore).put(renewed, leaseKey);
      if (abortInstead) tx.abort();
      // Without commit() (older engines) the transaction commits by itself once these
      // requests are done.
      else if (!stepping && typeof tx.commit === "function") tx.commit();
    } catch (error) {
      tx.abort();
    }
  };
}

// Deletes every record of `store` but the newest `keep`: a reverse key cursor steps over the
// ones kept in one `advance`, and everything from where it lands down goes in one range delete.
/**
 * @param {IDBObjectStore} store
 * @param {number} keep
 */
function keepNewestKeys(store, keep) {
  if (keep === 0) {
    store.clear();
    return;
  }
  const cursor = store.openKeyCursor(null, "prev");
  let stepped = false;
  cursor.onsuccess = () => {
    const at = cursor.result;
    if (at === null) return;
    if (!stepped) {
      stepped = true;
      at.advance(keep);
      return;
    }
    store.delete(IDBKeyRange.upperBound(at.key));
  };
}

// Deletes every tombstone but the newest `keep` (pages are kept whole): a reverse cursor over
// the pages' hashes adds up the ids each holds, and once `keep` are reached everything older
// goes in one range delete of each store. When every page stays, single records of version 7
// (number keys, below every page) are stepped over in one `advance` for what is left to keep.
/**
 * @param {IDBObjectStore} store
 * @param {IDBObjectStore} hashes
 * @param {number} keep
 */
function keepNewest(store, hashes, keep) {
  if (keep === 0) {
    store.clear();
    hashes.clear();
    return;
  }
  let left = keep;
  const pages = hashes.openCursor(null, "prev");
  pages.onsuccess = () => {
    const page = pages.result;
    if (page !== null) {
      left -= page.value?.length ?? 0;
      if (left > 0) {
        page.continue();
        return;
      }
      hashes.delete(IDBKeyRange.upperBound(page.key, true));
      store.delete(IDBKeyRange.upperBound([page.key], true));
      return;
    }
    let skipped = false;
    const singles = store.openKeyCursor(IDBKeyRange.upperBound([], true), "prev");
    singles.onsuccess = () => {
      const single = singles.result;
      if (single === null) return;
      if (skipped) {
        store.delete(IDBKeyRange.upperBound(single.key));
      } else {
        skipped = true;
        single.advance(left);
      }
    };
  };
}

/** The store of the tombstone pages' hashes (`schema.rs`: `TOMBSTONE_HASHES`). */
const HASHES = "tombstone_hashes";

// A transaction opened ahead of its batch (`openAhead`), while the scheduler still reads and
// admits the intents: the browser starts it and reads the lease meanwhile, which is most of an
// enqueue's wait. Usable only in the turn it was opened in (a transaction takes requests only
// until the microtasks after its task are done); any answer from it means that turn is over.
// It is kept in the ledger's own slot (`IdbLedger::ahead`, an object this file alone reads and
// writes): `entry`, the transaction opened ahead or none, and `took`, whether the last
// `applyBatch` wrote its batch there.
/**
 * @typedef {{ db: IDBDatabase, tx: IDBTransaction, read: IDBRequest, stores: string[],
 *   leaseStore: string, leaseKey: IDBValidKey }} Ahead
 * @typedef {{ entry?: Ahead | null, took?: boolean }} AheadSlot
 */

/**
 * Whether the last `applyBatch` of this slot wrote its batch in the transaction opened ahead.
 * @param {AheadSlot} slot
 */
export function tookAhead(slot) {
  return slot.took === true;
}

// Opens the transaction the next batch over `stores` on `db` will be written in, and issues its
// lease read, unless one is already open; true when it opened one. Never throws: a connection
// that cannot open one leaves the batch to open its own and report what fails.
/**
 * @param {AheadSlot} slot
 * @param {IDBDatabase} db
 * @param {string[]} stores
 * @param {string} leaseStore
 * @param {IDBValidKey} leaseKey
 */
export function openAhead(slot, db, stores, leaseStore, leaseKey) {
  if (slot.entry && slot.entry.db === db) return false;
  let tx, read;
  try {
    tx = db.transaction(stores, "readwrite", { durability: "strict" });
    read = tx.objectStore(leaseStore).get(leaseKey);
  } catch {
    return false;
  }
  const entry = { db, tx, read, stores, leaseStore, leaseKey };
  const expire = () => {
    if (slot.entry === entry) slot.entry = null;
  };
  read.onsuccess = expire;
  read.onerror = expire;
  tx.oncomplete = expire;
  tx.onabort = expire;
  slot.entry = entry;
  return true;
}

// The transaction opened ahead for a batch over `stores` on `db`, if there is one that covers
// them; one that does not is aborted (it has written nothing).
/**
 * @param {AheadSlot} slot
 * @param {IDBDatabase} db
 * @param {string[]} stores
 * @param {string} leaseStore
 * @param {IDBValidKey} leaseKey
 * @returns {Ahead | null}
 */
function takeAhead(slot, db, stores, leaseStore, leaseKey) {
  const entry = slot.entry;
  if (!entry || entry.db !== db) return null;
  slot.entry = null;
  if (entry.leaseStore !== leaseStore || entry.leaseKey !== leaseKey || !stores.every((store) => entry.stores.includes(store))) {
    forget(entry);
    return null;
  }
  return entry;
}

// Drops a transaction opened ahead: unheard, and aborted if it still can be.
/** @param {Ahead} entry */
function forget(entry) {
  entry.tx.oncomplete = null;
  entry.tx.onabort = null;
  entry.read.onsuccess = null;
  entry.read.onerror = null;
  try {
    entry.tx.abort();
  } catch {
    // Already finished.
  }
}
