//! Operations for tests and benches, built with only what the ledger requires.

use crate::core::model::{Intent, Operation};

/// A pending `shape.upsert` of one canvas: no dependencies, a `null` payload, nothing else.
pub fn pending_upsert(id: &str, sequence: u64, canvas: &str) -> Operation {
    Operation::new(Intent {
        id: id.into(),
        sequence,
        operation_type: "shape.upsert".into(),
        canvas_ids: vec![canvas.into()],
        dependencies: Vec::new(),
        payload: Default::default(),
        expected_versions: Default::default(),
        run_id: None,
        coalesce_key: None,
        blob: None,
        revision: 0,
        principal: None,
    })
}
