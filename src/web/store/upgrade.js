// @ts-check
// Opens database `name` at `version`, runs `upgrade(db, oldVersion)` (Rust: the schema steps)
// in `upgradeneeded`, and closes the connection once it is open. The caller then opens the
// database at whatever version it is (indexed_db_futures, no upgrade handler). In plain JS
// because the library's upgrade listener formats its errors with Rust's float printing
// (~20 KB of the .wasm) for a message no one reads.
//
// Resolves (never rejects) to "done", or the DOMException (or other error) that failed the
// open: a `VersionError` when the database is already at a higher version, the upgrade's
// own error when it threw (the upgrade transaction is then aborted: nothing changes).
/**
 * @param {string} name
 * @param {number} version
 * @param {(db: IDBDatabase, oldVersion: number) => void} upgrade
 * @returns {Promise<unknown>}
 */
export function openUpgraded(name, version, upgrade) {
  return new Promise((resolve) => {
    const factory = globalThis.indexedDB;
    if (!factory) {
      // Node, a worker without storage, a browser with storage disabled: said plainly.
      const message = "IndexedDB is not available in this environment (no indexedDB global)";
      resolve(typeof DOMException === "function" ? new DOMException(message, "NotSupportedError") : new Error(message));
      return;
    }
    let request;
    try {
      request = factory.open(name, version);
    } catch (error) {
      resolve(error);
      return;
    }
    /** @type {unknown} */
    let failure;
    request.onupgradeneeded = (event) => {
      try {
        upgrade(request.result, event.oldVersion);
      } catch (error) {
        failure = error;
        request.transaction?.abort();
      }
    };
    request.onsuccess = () => {
      request.result.close();
      resolve("done");
    };
    request.onerror = (event) => {
      event.preventDefault(); // handled here, not an uncaught error of the page
      resolve(failure ?? request.error ?? new DOMException("open failed", "UnknownError"));
    };
    // `blocked`: another connection still has the older version open; the open waits until
    // it closes (this build's connections close on `versionchange`).
  });
}
