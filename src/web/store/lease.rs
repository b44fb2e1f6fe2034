//! Reading the lease without taking it (W4): a tab that does not dispatch watches it to see
//! who leads and whether the leader still renews.

use indexed_db_futures::prelude::*;
use indexed_db_futures::transaction::TransactionMode;
use wasm_bindgen::JsValue;

use super::codec::decode;
use super::errors::storage_error;
use super::schema::{LEASE, LEASE_KEY};
use super::IdbLedger;
use crate::core::model::Lease;
use crate::core::safe_error::SafeError;

impl IdbLedger {
    /// The stored lease, `None` when there is none or it is unreadable (one readonly
    /// transaction; nothing is written).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn read_lease(&self) -> Result<Option<Lease>, SafeError> {
        let db = self.db()?;
        let tx = self.begin(&db, &[LEASE], TransactionMode::Readonly)?;
        let store = tx.object_store(LEASE).map_err(|e| storage_error(&e))?;
        let stored: Option<JsValue> = store
            .get(LEASE_KEY)
            .primitive()
            .map_err(|e| storage_error(&e))?
            .await
            .map_err(|e| storage_error(&e))?;
        Ok(stored.and_then(|value| decode(&value).ok()))
    }
}
