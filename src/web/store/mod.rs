//! The IndexedDB ledger store: the browser twin of
//! `MemoryStore` (the test world, `canvas_scheduler_testing`), with the same fence rules, each call one
//! readwrite transaction, strict unless a batch holds only what a query recovers (relaxed).
//!
//! - [`IdbLedger::acquire_and_load`] takes the lease and reads the whole ledger, validated
//!   page by page, in one transaction; corrupt records move to `quarantine`.
//! - [`IdbLedger::apply`] writes one [`PersistBatch`](canvas_scheduler_core::PersistBatch) (group
//!   commit) after checking the fence in the same transaction; on any failure nothing is
//!   written.
//! - Blobs for uploads live beside the ledger ([`IdbLedger::put_blob`]), as bytes where the
//!   engine refuses to store a `Blob`.
//! - Storage failures are [`SafeError`]s; a `versionchange` from another connection closes
//!   ours and later calls fail with `storage_unavailable` until [`IdbLedger::reopen`].

mod apply;
mod blobs;
pub(crate) mod codec;
mod connection;
pub(crate) mod errors;
pub(crate) mod events;
mod faults;
mod inbox;
mod inbox_partial;
mod known;
mod lease;
mod load;
mod open_batches;
pub mod requests;
pub mod schema;
mod tombstones;
pub mod upgrade;

use std::cell::{Cell, RefCell};

use indexed_db_futures::database::Database;

use errors::js_error;
use requests::Tx;

pub use errors::{unavailable, AcquireError};
pub use faults::StoreFault;
pub use inbox::{InboxEntry, InboxRecord, StoredOperation};
pub use inbox_partial::PartialAppend;
pub use load::LoadedLedger;

use canvas_scheduler_core::SafeError;
use connection::Connection;
use faults::FaultQueue;

/// A ledger stored in one IndexedDB database. Works in a Window and in a Worker.
pub struct IdbLedger {
    connection: Connection,
    faults: FaultQueue,
    transactions: Cell<u64>,
    /// Batches written in a transaction opened ahead ([`IdbLedger::open_ahead`]).
    written_ahead: Cell<u64>,
    /// Batches written in a transaction of relaxed durability (tests).
    relaxed: Cell<u64>,
    /// The engine refused a `Blob`: blobs are stored as bytes from then on (blobs.rs).
    blobs_refused: Cell<bool>,
    /// The next `Blob` put is refused the way WebKit refuses it ([`StoreFault::RefuseBlob`]).
    refuse_blob: Cell<bool>,
    /// Where the tombstone pages are and which id hashes each holds (tombstones.rs).
    tombstone_index: RefCell<tombstones::PageIndex>,
    /// The transaction opened ahead for the next batch, if any.
    ahead: RefCell<Option<apply::Ahead>>,
    /// Batch transactions begun and not yet over.
    open_batches: open_batches::OpenBatches,
}

impl IdbLedger {
    /// Opens the ledger database `name`, creating it or upgrading an older schema.
    ///
    /// # Errors
    ///
    /// `storage_unavailable` when IndexedDB cannot open it (see [`schema::open_database`]).
    pub async fn open(name: &str) -> Result<IdbLedger, SafeError> {
        Ok(Self {
            connection: Connection::open(name).await?,
            faults: FaultQueue::default(),
            transactions: Cell::new(0),
            written_ahead: Cell::new(0),
            relaxed: Cell::new(0),
            blobs_refused: Cell::new(false),
            refuse_blob: Cell::new(false),
            tombstone_index: RefCell::default(),
            ahead: RefCell::new(None),
            open_batches: open_batches::OpenBatches::default(),
        })
    }

    /// The database name.
    pub fn name(&self) -> &str {
        self.connection.name()
    }

    /// Whether the connection is usable (not closed by a `versionchange` or the browser).
    pub fn is_open(&self) -> bool {
        self.connection.is_open()
    }

    /// Opens a fresh connection, e.g. after another tab upgraded or the browser closed ours.
    ///
    /// # Errors
    ///
    /// As [`IdbLedger::open`].
    pub async fn reopen(&self) -> Result<(), SafeError> {
        self.connection.reopen().await
    }

    /// Closes the connection; later calls fail with `storage_unavailable` until reopened.
    pub fn close(&self) {
        self.connection.close("closed by its owner");
    }

    /// Aborts every batch transaction still open, the one opened ahead included, and returns
    /// how many were: the page is being paused (kept in the back/forward cache, or frozen),
    /// and a transaction it kept open would hold up other tabs' (`open_batches.rs`). What an
    /// aborted batch carried is lost as in a crash; the dispatcher was stopped first, so its
    /// answer is ignored.
    pub fn abort_open_batches(&self) -> usize {
        self.ahead.borrow_mut().take();
        self.open_batches.abort_all()
    }

    /// Injects a fault (tests). `CloseConnection` acts now, `RefuseBlob` hits the next
    /// `Blob` put; the others hit the next write transaction.
    pub fn inject(&self, fault: StoreFault) {
        match fault {
            StoreFault::CloseConnection => self.connection.close("closed by the browser"),
            StoreFault::RefuseBlob => self.refuse_blob.set(true),
            other => self.faults.push(other),
        }
    }

    /// Transactions this handle has started (tests: proves group commit).
    pub fn transactions(&self) -> u64 {
        self.transactions.get()
    }

    /// Batches this handle wrote in a transaction opened ahead (tests: proves an enqueue's
    /// batch takes the transaction its call opened).
    pub fn batches_written_ahead(&self) -> u64 {
        self.written_ahead.get()
    }

    /// Batches this handle wrote in a transaction of relaxed durability (tests: proves which
    /// relaxed batches a power loss may drop).
    pub fn relaxed_batches(&self) -> u64 {
        self.relaxed.get()
    }

    fn db(&self) -> Result<Database, SafeError> {
        self.connection.db()
    }

    /// The connection's handle kept for the page's life (`connection.rs`).
    fn shared_db(&self) -> Result<&'static Database, SafeError> {
        self.connection.shared_db()
    }

    /// Starts a transaction over `stores`, counting it.
    fn begin<'db>(
        &self,
        db: &'db Database,
        stores: &[&str],
        write: bool,
    ) -> Result<Tx<'db>, SafeError> {
        self.transactions.set(self.transactions.get() + 1);
        Tx::begin(db, stores, write).map_err(|e| js_error(&e))
    }

    /// Commits `tx`, or aborts it when a fault is injected. A failed commit reports the
    /// transaction's own error (`QuotaExceededError`, ...) when the browser gives one.
    async fn finish(&self, tx: Tx<'_>) -> Result<(), SafeError> {
        if let Some(fault) = self.faults.take() {
            tx.abort().await;
            return Err(fault.error());
        }
        tx.commit().await.map_err(|e| js_error(&e))
    }
}
