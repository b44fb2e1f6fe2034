//! IndexedDB transactions and requests through indexed_db_futures: a strict-durability
//! transaction of the library (dropped without [`Tx::commit`], it aborts), a store read page
//! by page (`getAllKeys` and `getAll` over the same key range and count, issued together and
//! asked before they are needed, so the browser reads while wasm decodes the page before),
//! single reads issued first and awaited later ([`Answer`]), and writes whose requests are
//! not awaited: a failed one aborts the transaction, which the commit reports.
//!
//! Inside a transaction only its own requests are awaited: a transaction commits by itself
//! once no request of it is pending at a microtask checkpoint, and a request's continuation
//! runs in its success event's checkpoint, while the transaction still takes requests.

use indexed_db_futures::cursor::CursorDirection;
use indexed_db_futures::database::Database;
use indexed_db_futures::error::Error;
use indexed_db_futures::future::{BasicRequest, GetAllPrimitiveRequest, VoidRequest};
use indexed_db_futures::index::Index;
use indexed_db_futures::internals::{QuerySourceInternal, SystemRepr};
use indexed_db_futures::object_store::ObjectStore;
use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::{
    Transaction, TransactionDurability, TransactionMode, TransactionOptions,
};
use indexed_db_futures::KeyRange;
use wasm_bindgen::prelude::*;

use super::errors::describe;

/// A library error as the JS value callers map ([`super::errors::js_error`]): a
/// `DOMException` stays one, a thrown value stays itself.
pub fn error_value(error: Error) -> JsValue {
    match error {
        Error::DomException(dom) => dom.as_sys().clone().into(),
        Error::Unknown(thrown) => thrown.as_ref().clone(),
        other => JsValue::from_str(&describe(&other)),
    }
}

/// A strict-durability transaction over the stores it was begun with. Dropped without
/// [`Tx::commit`], it is aborted: nothing it wrote lands.
pub struct Tx<'db> {
    tx: Transaction<'db>,
}

impl<'db> Tx<'db> {
    /// Begins a transaction over `stores`, read-write or read-only.
    ///
    /// # Errors
    ///
    /// The browser's error (`InvalidStateError` on a closed connection, `NotFoundError`).
    pub fn begin(db: &'db Database, stores: &[&str], write: bool) -> Result<Self, JsValue> {
        let tx = transaction(db, stores, write, TransactionDurability::Strict);
        tx.map(|tx| Self { tx }).map_err(error_value)
    }

    /// One of the transaction's stores.
    ///
    /// # Errors
    ///
    /// `NotFoundError` for a store outside the transaction, `InvalidStateError` once it ended.
    pub fn store(&self, name: &str) -> Result<Store<'_>, JsValue> {
        self.tx.object_store(name).map(Store).map_err(error_value)
    }

    /// Commits and waits for the outcome.
    ///
    /// # Errors
    ///
    /// The error that aborted the transaction instead (`QuotaExceededError`, `AbortError`, ...):
    /// the transaction's own error when the browser gives one.
    pub async fn commit(self) -> Result<(), JsValue> {
        let raw: web_sys::IdbTransaction = self.tx.as_sys().clone().into();
        match self.tx.commit().await {
            Ok(()) => Ok(()),
            Err(error) => Err(match raw.error() {
                Some(dom) => dom.into(),
                None => match error {
                    Error::DomException(_) | Error::Unknown(_) => error_value(error),
                    // Aborted with no error of its own.
                    _ => aborted(),
                },
            }),
        }
    }

    /// Aborts (nothing it wrote lands) and waits until it has ended.
    pub async fn abort(self) {
        let _ = self.tx.abort().await;
    }
}

/// A transaction of the library over `stores`, read-write with `write`, of `durability`.
///
/// # Errors
///
/// The browser's error (`InvalidStateError` on a closed connection, `NotFoundError`).
pub fn transaction<'db>(
    db: &'db Database,
    stores: &[&str],
    write: bool,
    durability: TransactionDurability,
) -> Result<Transaction<'db>, Error> {
    let mode = if write {
        TransactionMode::Readwrite
    } else {
        TransactionMode::Readonly
    };
    db.transaction(stores)
        .with_mode(mode)
        .with_options(TransactionOptions::new().with_durability(durability))
        .build()
}

/// An `AbortError` for a transaction that ended without an error of its own.
fn aborted() -> JsValue {
    web_sys::DomException::new_with_message_and_name("transaction aborted", "AbortError")
        .map_or_else(
            |_| JsValue::from_str("AbortError: transaction aborted"),
            Into::into,
        )
}

/// A store of a live transaction.
pub struct Store<'a>(ObjectStore<'a>);

/// A read issued and not yet awaited: the record under a key, `None` when there is none.
pub struct Answer(BasicRequest<Option<JsValue>>);

impl Answer {
    /// The record, `None` when there is none.
    ///
    /// # Errors
    ///
    /// The request's error (a `DOMException`).
    pub async fn value(self) -> Result<Option<JsValue>, JsValue> {
        self.0.await.map_err(error_value)
    }
}

/// A list read issued and not yet awaited (`getAll`, `getAllKeys`).
pub struct ListAnswer(GetAllPrimitiveRequest<JsValue>);

impl ListAnswer {
    /// The keys or records, in key order.
    ///
    /// # Errors
    ///
    /// The request's error (a `DOMException`).
    pub async fn values(self) -> Result<Vec<JsValue>, JsValue> {
        self.0
            .await
            .map_err(error_value)?
            .collect::<Result<Vec<JsValue>, _>>()
            .map_err(error_value)
    }
}

/// A write issued and not yet awaited.
pub struct Written(VoidRequest);

impl Written {
    /// Waits for the request's answer.
    ///
    /// # Errors
    ///
    /// The request's error (a `DOMException`).
    pub async fn done(self) -> Result<(), JsValue> {
        self.0.await.map_err(error_value)
    }
}

impl<'a> Store<'a> {
    /// Issues a read of the record under `key`.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it (`TransactionInactiveError`, `DataError`).
    pub fn get(&self, key: &JsValue) -> Result<Answer, JsValue> {
        get_from(&self.0, key)
    }

    /// Issues a put of `value` under `key`.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it (`DataCloneError`, `ReadOnlyError`, ...).
    pub fn put(&self, value: &JsValue, key: &JsValue) -> Result<Written, JsValue> {
        self.0
            .put(value.clone())
            .with_key(key.clone())
            .without_key_type()
            .primitive()
            .map(Written)
            .map_err(error_value)
    }

    /// Issues an add of `value` under the store's next generated key.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it.
    pub fn add(&self, value: &JsValue) -> Result<Written, JsValue> {
        self.0
            .add(value.clone())
            .without_key_type()
            .primitive()
            .map(Written)
            .map_err(error_value)
    }

    /// Issues a delete of the record under `key`.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it.
    pub fn delete(&self, key: &JsValue) -> Result<Written, JsValue> {
        self.0
            .delete::<JsValue, _>(key.clone())
            .primitive()
            .map(Written)
            .map_err(error_value)
    }

    /// Issues a count of the records with a key below `bound` (`bound` itself excluded).
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it.
    pub fn count_below(&self, bound: &JsValue) -> Result<BasicRequest<u32>, JsValue> {
        self.0
            .count()
            .with_query::<JsValue, _>(KeyRange::UpperBound(bound.clone(), true))
            .primitive()
            .map_err(error_value)
    }

    /// The first key of the store (the last with `last`), `None` when it is empty: one step
    /// of a key cursor.
    ///
    /// # Errors
    ///
    /// The request's error.
    pub async fn edge_key(&self, last: bool) -> Result<Option<JsValue>, JsValue> {
        let direction = if last {
            CursorDirection::Prev
        } else {
            CursorDirection::Next
        };
        let cursor = self
            .0
            .open_key_cursor()
            .with_direction(direction)
            .primitive()
            .map_err(error_value)?
            .await
            .map_err(error_value)?;
        match cursor {
            Some(mut cursor) => cursor.next_key::<JsValue>().await.map_err(error_value),
            None => Ok(None),
        }
    }

    /// One of the store's indexes.
    ///
    /// # Errors
    ///
    /// `NotFoundError` for an index the store does not have.
    pub fn index(&self, name: &str) -> Result<StoreIndex<'_>, JsValue> {
        self.0.index(name).map(StoreIndex).map_err(error_value)
    }

    /// The library's store.
    pub fn library(&self) -> &ObjectStore<'a> {
        &self.0
    }
}

/// An index of a store of a live transaction.
pub struct StoreIndex<'a>(Index<'a>);

impl StoreIndex<'_> {
    /// Issues a read of the first record under `key`.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it.
    pub fn get(&self, key: &JsValue) -> Result<Answer, JsValue> {
        get_from(&self.0, key)
    }

    /// Issues a read of every record under `key`, in primary-key order.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it.
    pub fn get_all(&self, key: &JsValue) -> Result<ListAnswer, JsValue> {
        self.list(key, false)
    }

    /// Issues a read of the primary keys of every record under `key`, in order.
    ///
    /// # Errors
    ///
    /// What the browser throws as it issues it.
    pub fn get_all_keys(&self, key: &JsValue) -> Result<ListAnswer, JsValue> {
        self.list(key, true)
    }

    /// `getAllKeys` (with `keys`) or `getAll` of the records under `key`.
    fn list(&self, key: &JsValue, keys: bool) -> Result<ListAnswer, JsValue> {
        let issued = if keys {
            let read = self.0.get_all_keys::<JsValue>();
            read.with_query::<JsValue, _>(key.clone()).primitive()
        } else {
            let read = self.0.get_all::<JsValue>();
            read.with_query::<JsValue, _>(key.clone()).primitive()
        };
        issued.map(ListAnswer).map_err(error_value)
    }
}

/// Issues a read of the first record under `key` in a store or an index.
fn get_from<Q, S>(source: &Q, key: &JsValue) -> Result<Answer, JsValue>
where
    Q: SystemRepr<Repr = S>,
    S: QuerySourceInternal,
{
    source
        .get::<JsValue, JsValue, _>(key.clone())
        .primitive()
        .map(Answer)
        .map_err(error_value)
}

/// The record under `key`, `None` when there is none.
///
/// # Errors
///
/// The request's error (a `DOMException`).
pub async fn get(store: &Store<'_>, key: &JsValue) -> Result<Option<JsValue>, JsValue> {
    store.get(key)?.value().await
}

/// Puts `value` under `key` and waits for the request's answer. (WebKit prepares a `Blob`'s
/// data before it issues the put: a commit that does not wait for it ends the transaction
/// without the record and without an error.)
///
/// # Errors
///
/// The request's error (a `DOMException`).
pub async fn put(store: &Store<'_>, value: &JsValue, key: &JsValue) -> Result<(), JsValue> {
    store.put(value, key)?.done().await
}

/// Every record `index` holds under `key`, in primary-key order.
///
/// # Errors
///
/// The request's error (a `DOMException`).
pub async fn index_get_all(
    store: &Store<'_>,
    index: &str,
    key: &JsValue,
) -> Result<Vec<JsValue>, JsValue> {
    store.index(index)?.get_all(key)?.values().await
}

/// A page already asked of a store, to be awaited later.
pub struct PageRead(Result<(ListAnswer, ListAnswer), JsValue>);

impl PageRead {
    /// Asks `store` (a store of a live transaction) for up to `limit` keys and records after
    /// `after` (from the start when `None`; every record when `limit` is 0), in key order:
    /// `getAllKeys` and `getAll` over the same range and count, issued before this returns.
    pub fn issue(store: &Store<'_>, after: Option<&JsValue>, limit: u32) -> Self {
        Self(issue_page(&store.0, after, limit).map_err(error_value))
    }

    /// The page's keys and records, in key order. The continuation runs in the success
    /// event's microtask checkpoint, while the transaction is still active.
    ///
    /// # Errors
    ///
    /// The request's error (a `DOMException`).
    pub async fn keys_and_values(self) -> Result<(Vec<JsValue>, Vec<JsValue>), JsValue> {
        let (keys, values) = self.0?;
        // Requests of a transaction answer in order: the keys are in when the values are.
        let keys = keys.values().await?;
        let values = values.values().await?;
        Ok((keys, values))
    }
}

fn issue_page(
    store: &ObjectStore<'_>,
    after: Option<&JsValue>,
    limit: u32,
) -> Result<(ListAnswer, ListAnswer), Error> {
    let range = |after: &JsValue| KeyRange::LowerBound(after.clone(), true);
    let keys = store.get_all_keys::<JsValue>();
    let values = store.get_all::<JsValue>();
    let (keys, values) = match (after, limit) {
        (None, 0) => (keys.primitive()?, values.primitive()?),
        (None, limit) => (
            keys.with_limit(limit).primitive()?,
            values.with_limit(limit).primitive()?,
        ),
        (Some(after), 0) => (
            keys.with_query::<JsValue, _>(range(after)).primitive()?,
            values.with_query::<JsValue, _>(range(after)).primitive()?,
        ),
        (Some(after), limit) => (
            keys.with_query::<JsValue, _>(range(after))
                .with_limit(limit)
                .primitive()?,
            values
                .with_query::<JsValue, _>(range(after))
                .with_limit(limit)
                .primitive()?,
        ),
    };
    Ok((ListAnswer(keys), ListAnswer(values)))
}
