//! Reading the lease without taking it: a tab that does not dispatch watches it to see
//! who leads and whether the leader still renews.

use wasm_bindgen::JsValue;

use canvas_scheduler_core::{Lease, SafeError};

use super::codec::decode;
use super::errors::js_error;
use super::requests::get;
use super::schema::{LEASE, LEASE_KEY};
use super::IdbLedger;

impl IdbLedger {
    /// The stored lease, `None` when there is none or it is unreadable (one readonly
    /// transaction; nothing is written).
    ///
    /// # Errors
    ///
    /// A storage error.
    pub async fn read_lease(&self) -> Result<Option<Lease>, SafeError> {
        let db = self.db()?;
        let tx = self.begin(&db, &[LEASE], false)?;
        let store = tx.store(LEASE).map_err(|e| js_error(&e))?;
        let stored = get(&store, &JsValue::from_str(LEASE_KEY))
            .await
            .map_err(|e| js_error(&e))?;
        Ok(stored.and_then(|value| decode(&value).ok()))
    }
}
