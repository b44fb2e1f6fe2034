//! Operations for tests and benches, built with only what the ledger requires.

use canvas_scheduler_core::{Intent, Operation};

/// A pending `shape.upsert` of one canvas: no dependencies, a `null` payload, nothing else.
pub fn pending_upsert(id: &str, sequence: u64, canvas: &str) -> Operation {
    let mut intent = Intent::new(id.into(), sequence, "shape.upsert".into());
    intent.canvas_ids = vec![canvas.into()];
    Operation::new(intent)
}
