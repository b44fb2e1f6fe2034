// @ts-check
// IndexedDB requests for the Rust store: in plain JS because each request made through the
// Rust bindings costs closures, listeners and their code in the .wasm.

// One page of a store: up to `limit` keys and records after key `after` (from the start when
// `after` is undefined; every record when `limit` is 0), in key order, as [keys, values].
// A load reads hundreds of pages.
//
// Uses `getAllRecords` (keys and records in one request) where the browser has it — about a
// third faster than two requests for 100 000 records in chromium — else `getAllKeys` and
// `getAll` over the same range and count, issued together. Rejects with the request's error
// (the transaction then aborts, as for any failed request).
/**
 * @param {IDBObjectStore & { getAllRecords?: (options: object) => IDBRequest }} store
 * @param {IDBValidKey | undefined} after
 * @param {number} limit
 * @returns {Promise<[any[], any[]]>}
 */
export function readPage(store, after, limit) {
  return new Promise((resolve, reject) => {
    const query = after === undefined ? null : IDBKeyRange.lowerBound(after, true);
    const count = limit === 0 ? undefined : limit;
    const failed = (/** @type {Event} */ event) => reject(/** @type {IDBRequest} */ (event.target).error);
    if (typeof store.getAllRecords === "function") {
      const request = store.getAllRecords({ query, count });
      request.onsuccess = () => {
        const records = request.result;
        const keys = new Array(records.length);
        const values = new Array(records.length);
        for (let i = 0; i < records.length; i++) {
          keys[i] = records[i].key;
          values[i] = records[i].value;
        }
        resolve([keys, values]);
      };
      request.onerror = failed;
    } else {
      const keys = store.getAllKeys(query, count);
      const values = store.getAll(query, count);
      // Requests of a transaction answer in order: the keys are in when the values are.
      values.onsuccess = () => resolve([keys.result, values.result]);
      keys.onerror = failed;
      values.onerror = failed;
    }
  });
}

// The result of a request already made (a `get`, an index's `getAll`), or its error. The
// continuation runs in the success event's microtask checkpoint: the transaction is still
// active for the requests that follow.
/** @param {IDBRequest} request */
export function settle(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

// A strict-durability transaction over `stores` and how it ends: [tx, ended], where `ended`
// resolves to null when it completes, or to the error that aborted it (never rejects). Throws
// what `db.transaction` throws (a closed connection, an unknown store).
/**
 * @param {IDBDatabase} db
 * @param {string[]} stores
 * @param {boolean} write
 * @returns {[IDBTransaction, Promise<unknown>]}
 */
export function begin(db, stores, write) {
  const tx = db.transaction(stores, write ? "readwrite" : "readonly", { durability: "strict" });
  const ended = new Promise((resolve) => {
    tx.oncomplete = () => resolve(null);
    tx.onabort = () => resolve(tx.error ?? new DOMException("transaction aborted", "AbortError"));
  });
  return [tx, ended];
}

// ---- Tombstone pages (retention), for tombstones.rs and apply.js. In this file rather than
// one of their own: the browser-test runner (wasm-bindgen-test-runner) intermittently hangs
// the page load with one more snippet file to serve (2-core machine; 7 of 7 loads with this
// layout, about half hung with a separate file).
//
// Each batch that compacts writes its tombstones as one page: in `tombstones` under the key
// `[time]` (the newest tombstone key in the page; arrays sort above every number), the JSON
// text of the tombstones; in `tombstone_hashes` under `time`, a `Uint32Array` of a 32-bit hash
// of each id. No index row is written per tombstone: an id is found through the hashes.
// Single records of version 7 (a number key each, an index `by_id` on `id`) stay readable
// below the pages. Both kinds grow with time, so every trim deletes a prefix.
//
// The index of pages (time → sorted hashes) lives in an object of the store's own
// (`newIndex`), synced at each look-up in the look-up's transaction: pages above the last one
// it knows are added, pages below the first one stored are dropped (trims delete from the
// oldest). Another tab's pages are therefore seen before they are needed.
//
// It is `complete` from the count after a load (which syncs it in a transaction that sees what
// the load saw) while this ledger writes every page (`notePage`, as its batches are made): only
// the lease holder writes pages, so an enqueue of the leader can tell from memory that no page
// holds its ids (`mayHold`) and skip the look-up's transaction. A page noted for a batch that
// failed, or trimmed since, only costs a look-up; the next load and count start it over.

/**
 * @typedef {{ pages: Map<number, Uint32Array>, last: number, legacy: number | null, complete: boolean }} PageIndex
 */

/** The store of the pages (`schema.rs`: `TOMBSTONES`). */
export const TOMBSTONES = "tombstones";
/** The store of the pages' hashes (`schema.rs`: `TOMBSTONE_HASHES`). */
export const HASHES = "tombstone_hashes";

/**
 * The 32-bit hash of an operation id (FNV-1a over its UTF-16 code units) a page's hashes hold.
 * @param {string} id
 */
function idHash(id) {
  let hash = 0x811c9dc5;
  for (let at = 0; at < id.length; at++) {
    hash ^= id.charCodeAt(at);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/**
 * Puts the page of one batch's tombstones (`json`, the JSON text of their array) and its
 * hashes, under `time` (the newest tombstone key in the page), in the caller's transaction.
 * @param {IDBObjectStore} store `tombstones`
 * @param {IDBObjectStore} hashes `tombstone_hashes`
 * @param {number} time
 * @param {string} json
 */
export function putPage(store, hashes, time, json) {
  const ids = JSON.parse(json).map((/** @type {{id: string}} */ t) => idHash(String(t.id)));
  store.put(json, [time]);
  hashes.put(Uint32Array.from(ids), time);
}

/** @returns {PageIndex} An empty index: nothing known, single records not yet counted. */
export function newIndex() {
  return { pages: new Map(), last: -Infinity, legacy: null, complete: false };
}

/**
 * Notes the page of `ids` a batch of this ledger writes under `time`. `last` stays: the next
 * sync still reads every stored page above the last one it read.
 * @param {PageIndex} index
 * @param {number} time
 * @param {string[]} ids
 */
export function notePage(index, time, ids) {
  index.pages.set(time, Uint32Array.from(ids, idHash).sort());
}

/**
 * False only when `index` is complete and none of its pages holds the hash of one of `ids`:
 * then no tombstone of them is stored, and a look-up would find none.
 * @param {PageIndex} index
 * @param {string[]} ids
 */
export function mayHold(index, ids) {
  if (!index.complete || index.legacy !== 0) return true;
  return pagesHolding(index, ids.map(idHash)).length > 0;
}

/**
 * The times of the pages of `index` holding one of the hashes `wanted`. Whichever side is
 * shorter is walked: a few ids search each page, many ids (known() of a whole history) are a
 * set each page's hashes are checked against.
 * @param {PageIndex} index
 * @param {number[]} wanted
 */
function pagesHolding(index, wanted) {
  const set = new Set(wanted);
  const times = [];
  for (const [time, sorted] of index.pages) {
    const any =
      sorted.length < wanted.length
        ? sorted.some((hash) => set.has(hash))
        : wanted.some((hash) => holds(sorted, hash));
    if (any) times.push(time);
  }
  return times;
}

/**
 * Brings `index` up to date with the `hashes` store, in the caller's transaction.
 * @param {IDBObjectStore} hashes
 * @param {PageIndex} index
 */
async function sync(hashes, index) {
  const [first, [times, added]] = await Promise.all([
    settle(hashes.openKeyCursor()),
    readPage(hashes, index.last, 0),
  ]);
  const floor = first === null ? Infinity : first.key;
  for (const time of index.pages.keys()) {
    if (time < floor) index.pages.delete(time);
  }
  times.forEach((/** @type {number} */ time, /** @type {number} */ at) => {
    index.pages.set(time, Uint32Array.from(added[at]).sort());
    index.last = Math.max(index.last, time);
  });
}

/**
 * @param {Uint32Array} sorted
 * @param {number} hash
 */
function holds(sorted, hash) {
  let low = 0;
  let high = sorted.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (sorted[mid] < hash) low = mid + 1;
    else high = mid;
  }
  return low < sorted.length && sorted[low] === hash;
}

/**
 * The stored tombstones of `ids`, oldest first, each as `[json, whole]`: the JSON text of the
 * tombstone and, when `archive` names the archive store and it still holds the operation under
 * the tombstone's key, the JSON text of the operation whole (else `undefined`). The single
 * records of version 7 under each id (index `byId`) come first, then those of `ids` in every
 * page holding one of the hashes.
 * @param {IDBTransaction} tx over `tombstones`, `tombstone_hashes` and `archive`
 * @param {string} byId
 * @param {PageIndex} index
 * @param {string[]} ids
 * @param {string | null} archive
 * @returns {Promise<[string, string | undefined][]>}
 */
export async function lookUpTombstones(tx, byId, index, ids, archive) {
  const store = tx.objectStore(TOMBSTONES);
  const wanted = ids.map(idHash);
  const source = store.index(byId);
  const records =
    index.legacy === 0 ? [] : Promise.all(ids.map((id) => settle(source.get(id))));
  await sync(tx.objectStore(HASHES), index);
  const times = pagesHolding(index, wanted);
  const pages = await Promise.all(times.map((time) => settle(store.get([time]))));
  const asked = new Set(ids);
  /** @type {{json: string, key: unknown}[]} */
  const found = [];
  for (const record of await records) {
    if (typeof record?.json !== "string") continue;
    let key;
    try {
      key = JSON.parse(record.json)?.key;
    } catch {
      key = undefined;
    }
    found.push({ json: record.json, key });
  }
  for (const page of pages) {
    if (typeof page !== "string") continue;
    for (const tombstone of JSON.parse(page)) {
      if (asked.has(tombstone?.id)) found.push({ json: JSON.stringify(tombstone), key: tombstone.key });
    }
  }
  const shelf = archive === null ? null : tx.objectStore(archive);
  const wholes = await Promise.all(
    found.map(({ key }) => (shelf !== null && typeof key === "number" ? settle(shelf.get(key)) : undefined)),
  );
  return found.map(({ json }, at) => [json, typeof wholes[at] === "string" ? wholes[at] : undefined]);
}

/**
 * How many tombstones are stored (pages counted by their hashes, single records by
 * IndexedDB's count, which walks their keys); syncs `index` on the way.
 * @param {IDBTransaction} tx over `tombstones` and `tombstone_hashes`
 * @param {PageIndex} index
 */
export async function countTombstones(tx, index) {
  // Issued right after a load: until it is done, look-ups read the store.
  index.complete = false;
  const [legacy] = await Promise.all([
    settle(tx.objectStore(TOMBSTONES).count(IDBKeyRange.upperBound([], true))),
    sync(tx.objectStore(HASHES), index),
  ]);
  index.legacy = legacy;
  index.complete = typeof legacy === "number";
  let count = legacy;
  for (const sorted of index.pages.values()) count += sorted.length;
  return count;
}

/**
 * The highest key stored (of an array key, its first member), 0 when none: one step of a
 * reverse key cursor (`tombstones`).
 * @param {IDBObjectStore} store
 */
export async function lastKey(store) {
  const last = await settle(store.openKeyCursor(null, "prev"));
  if (last === null) return 0;
  return Array.isArray(last.key) ? last.key[0] : last.key;
}
