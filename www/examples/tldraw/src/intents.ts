//! tldraw document records -> scheduler intents. Each store change of the user's document
//! (`store.listen(..., {source: "user", scope: "document"})`) becomes one `record.put` per added
//! or updated record and one `record.remove` per removed record, on one canvas. A put carries
//! the whole record (the reference server stores it as is) and a `coalesceKey` per record, so
//! an unsent put of a shape is replaced by the next one (a drag sends its latest position).
import type { OperationIntent } from "canvas-scheduler";
import type { HistoryEntry, TLRecord } from "tldraw";

export function recordIntents(entry: HistoryEntry<TLRecord>, canvasId: string): OperationIntent[] {
  const intents: OperationIntent[] = [];
  const put = (record: TLRecord) =>
    intents.push({
      id: crypto.randomUUID(),
      operationType: "record.put",
      canvasIds: [canvasId],
      payload: { record },
      coalesceKey: `record:${record.id}`,
    });
  for (const record of Object.values(entry.changes.added)) put(record);
  for (const [, record] of Object.values(entry.changes.updated)) put(record);
  for (const record of Object.values(entry.changes.removed)) {
    intents.push({ id: crypto.randomUUID(), operationType: "record.remove", canvasIds: [canvasId], payload: { id: record.id } });
  }
  return intents;
}
