//! Operations for the core's unit tests, built with only what the ledger requires.

use crate::model::{Intent, Operation};

/// A pending `shape.upsert` of one canvas: no dependencies, a `null` payload, nothing else.
pub(crate) fn pending_upsert(id: &str, sequence: u64, canvas: &str) -> Operation {
    let mut intent = Intent::new(id.into(), sequence, "shape.upsert".into());
    intent.canvas_ids = vec![canvas.into()];
    Operation::new(intent)
}
