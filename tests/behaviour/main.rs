//! The native behaviour tests, one binary (one build and link instead of one per file): each
//! module is what was a test file of its own. `cargo test --test behaviour NAME` runs one.
//! The simulation (`tests/simulation`) stays a binary of its own.

#[path = "../common/mod.rs"]
mod common;

mod authority_behaviour;
mod batch_abort;
mod batch_decline;
mod batching_behaviour;
mod coalesce_behaviour;
mod drain_behaviour;
mod durability_behaviour;
mod freeze_ahead_behaviour;
mod fuzz_inputs;
mod golden_codec;
mod hook_reads_behaviour;
mod hostile_answers;
mod kernel_behaviour;
mod known_behaviour;
mod operation_pages;
mod outage_behaviour;
mod pacing_behaviour;
mod partial_enqueue;
mod protocol_doc;
mod record_shapes;
mod retention_behaviour;
mod saved_behaviour;
mod scheduler_behaviour;
mod storage_recovery;
