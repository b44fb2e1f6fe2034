//! The batch transactions of a ledger handle still open (begun, not yet committed or
//! aborted): [`IdbLedger::abort_open_batches`](super::IdbLedger::abort_open_batches) aborts
//! them when the page is paused.
//!
//! A batch commits only once its lease read has answered, and that answer is an event the
//! page must run. A page frozen (kept in the back/forward cache) before it runs keeps the
//! transaction open, and Chromium evicts a cached page whose transaction another tab's waits
//! for — which is what the tab taking the lead over does first. Aborted, the batch is what a
//! crash at that moment loses, which the ledger is built to survive.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::{Rc, Weak};

use web_sys::IdbTransaction;

/// The open batch transactions, by a number of their own.
#[derive(Default)]
pub(super) struct OpenBatches {
    open: Rc<RefCell<BTreeMap<u64, IdbTransaction>>>,
    next: std::cell::Cell<u64>,
}

/// A batch transaction's entry; dropped with the batch (committed, aborted or failed), it
/// leaves the set.
pub(super) struct OpenEntry {
    key: u64,
    open: Weak<RefCell<BTreeMap<u64, IdbTransaction>>>,
}

impl Drop for OpenEntry {
    fn drop(&mut self) {
        if let Some(open) = self.open.upgrade() {
            open.borrow_mut().remove(&self.key);
        }
    }
}

impl OpenBatches {
    /// Enters `tx` until the returned entry is dropped.
    pub(super) fn enter(&self, tx: IdbTransaction) -> OpenEntry {
        let key = self.next.get();
        self.next.set(key + 1);
        self.open.borrow_mut().insert(key, tx);
        OpenEntry {
            key,
            open: Rc::downgrade(&self.open),
        }
    }

    /// Aborts every open batch transaction; returns how many were open. One already
    /// committing (its `commit()` called) finishes on its own: its abort throws, ignored.
    pub(super) fn abort_all(&self) -> usize {
        let open = std::mem::take(&mut *self.open.borrow_mut());
        for tx in open.values() {
            let _ = tx.abort();
        }
        open.len()
    }
}
