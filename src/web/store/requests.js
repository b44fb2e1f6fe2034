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
export function readPage(store, after, limit) {
  return new Promise((resolve, reject) => {
    const query = after === undefined ? null : IDBKeyRange.lowerBound(after, true);
    const count = limit === 0 ? undefined : limit;
    const failed = (event) => reject(event.target.error);
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
export function settle(request) {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = (event) => reject(event.target.error);
  });
}

// A strict-durability transaction over `stores` and how it ends: [tx, ended], where `ended`
// resolves to null when it completes, or to the error that aborted it (never rejects). Throws
// what `db.transaction` throws (a closed connection, an unknown store).
export function begin(db, stores, write) {
  const tx = db.transaction(stores, write ? "readwrite" : "readonly", { durability: "strict" });
  const ended = new Promise((resolve) => {
    tx.oncomplete = () => resolve(null);
    tx.onabort = () => resolve(tx.error ?? new DOMException("transaction aborted", "AbortError"));
  });
  return [tx, ended];
}
