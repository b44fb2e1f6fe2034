//! The database connection and its lifecycle: a `versionchange` from another connection (a
//! tab opening a newer schema, or deleting the database) makes us close at once so the other
//! side is not blocked; the `close` event (the browser closed us) is recorded too. Either
//! way later transactions fail with `storage_unavailable` until [`Connection::reopen`].

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use indexed_db_futures::database::Database;
use indexed_db_futures::internals::SystemRepr;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;

use canvas_scheduler_core::SafeError;

use super::errors::closed;
use super::schema::open_database;

type Handler = Closure<dyn FnMut(web_sys::Event)>;

#[derive(Default)]
struct State {
    /// Kept for the page's life once opened (one handle a connection): a batch's transaction
    /// borrows it beyond any one call (`apply.rs`: opened ahead, driven by a task of its own).
    db: Option<&'static Database>,
    closed: Option<String>,
    handlers: Vec<Handler>,
}

impl State {
    /// Closes the connection (if open) and records why.
    fn close(&mut self, reason: &str) {
        if let Some(db) = self.db.take() {
            db.clone().close();
        }
        if self.closed.is_none() {
            self.closed = Some(reason.to_owned());
        }
    }
}

/// One connection to a ledger database, replaced on reopen.
pub(super) struct Connection {
    name: String,
    state: Rc<RefCell<State>>,
    /// The raw database whose handlers are installed (to remove them before replacing it).
    raw: RefCell<Option<web_sys::IdbDatabase>>,
}

impl Connection {
    /// Opens `name` (creating or upgrading it) and watches for `versionchange` and `close`.
    pub(super) async fn open(name: &str) -> Result<Self, SafeError> {
        let connection = Self {
            name: name.to_owned(),
            state: Rc::default(),
            raw: RefCell::new(None),
        };
        connection.reopen().await?;
        Ok(connection)
    }

    /// The database name.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The open database, or `storage_unavailable` if it was closed under us.
    pub(super) fn db(&self) -> Result<Database, SafeError> {
        self.shared_db().cloned()
    }

    /// As [`Connection::db`], the handle kept for the page's life (a transaction that outlives
    /// the call opening it borrows this one).
    pub(super) fn shared_db(&self) -> Result<&'static Database, SafeError> {
        let state = self.state.borrow();
        match (state.db, &state.closed) {
            (Some(db), None) => Ok(db),
            (_, Some(reason)) => Err(closed(reason)),
            (None, None) => Err(closed("not open")),
        }
    }

    /// Whether a usable connection is held.
    pub(super) fn is_open(&self) -> bool {
        self.db().is_ok()
    }

    /// Closes the connection now, recording `reason` for later errors.
    pub(super) fn close(&self, reason: &str) {
        self.state.borrow_mut().close(reason);
    }

    /// Drops the current connection (if any) and opens a new one.
    pub(super) async fn reopen(&self) -> Result<(), SafeError> {
        self.detach();
        let db: &'static Database = Box::leak(Box::new(open_database(&self.name).await?));
        let raw: web_sys::IdbDatabase = db.as_sys().clone().unchecked_into();
        let weak = Rc::downgrade(&self.state);
        let on_change = handler(weak.clone(), "versionchange from another connection");
        let on_close = handler(weak, "closed by the browser");
        raw.set_onversionchange(Some(on_change.as_ref().unchecked_ref()));
        raw.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        let mut state = self.state.borrow_mut();
        *state = State {
            db: Some(db),
            closed: None,
            handlers: vec![on_change, on_close],
        };
        *self.raw.borrow_mut() = Some(raw);
        Ok(())
    }

    /// Closes the current connection and removes its handlers (they are dropped next).
    fn detach(&self) {
        if let Some(raw) = self.raw.borrow_mut().take() {
            raw.set_onversionchange(None);
            raw.set_onclose(None);
        }
        let mut state = self.state.borrow_mut();
        state.close("reopening");
        state.handlers.clear();
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.detach();
    }
}

fn handler(state: Weak<RefCell<State>>, reason: &'static str) -> Handler {
    Closure::new(move |_event: web_sys::Event| {
        if let Some(state) = state.upgrade() {
            if let Ok(mut state) = state.try_borrow_mut() {
                state.close(reason);
            }
        }
    })
}
