//! The `idb` mode of the example: the same app keeping each change's records durable itself,
//! one strict readwrite IndexedDB transaction a change, no scheduler. It is the floor any
//! page-mode persistence pays on the main thread (the e2e test's A/B for the drag measure:
//! the scheduler's cost over the plain app against this one's).
import type { HistoryEntry, TLRecord } from "tldraw";

export async function openOwnStore(name: string): Promise<(entry: HistoryEntry<TLRecord>) => void> {
  const db = await new Promise<IDBDatabase>((resolve, reject) => {
    const open = indexedDB.open(name, 1);
    open.onupgradeneeded = () => open.result.createObjectStore("records");
    open.onsuccess = () => resolve(open.result);
    open.onerror = () => reject(open.error);
  });
  return (entry) => {
    const tx = db.transaction("records", "readwrite", { durability: "strict" });
    const store = tx.objectStore("records");
    for (const record of Object.values(entry.changes.added)) store.put(record, record.id);
    for (const [, record] of Object.values(entry.changes.updated)) store.put(record, record.id);
    for (const record of Object.values(entry.changes.removed)) store.delete(record.id);
  };
}
