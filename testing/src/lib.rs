//! A simulated world for the core: an in-memory ledger store with the same lease/fence rules
//! as IndexedDB's, a protocol-v1 server model, and a step-by-step driver. Used by the unit
//! tests, the deterministic simulation (`tests/simulation/`) and `cargo bench`.

mod harness;
mod memory_store;
mod operations;
mod rng;
mod server;

pub use harness::{Authorizer, Harness, PartialEnqueue};
pub use memory_store::MemoryStore;
pub use operations::pending_upsert;
pub use rng::SimRng;
pub use server::{aborted_batch_answer, ServerFaults, SimServer};
