//! Upload blobs stored beside the ledger (W1): the `Blob` itself (IndexedDB stores it by
//! structured clone, no copy through wasm memory) plus its media type and size.

use crate::core::json::quoted;
use wasm_bindgen::{JsCast, JsValue};

use super::errors::js_error;
use super::requests::get;
use super::schema::BLOBS;
use super::IdbLedger;
use crate::core::safe_error::SafeError;

impl IdbLedger {
    /// Stores `blob` under `id` (replacing any blob there) in one strict-durability
    /// transaction, with its `mediaType` and `size`.
    ///
    /// # Errors
    ///
    /// A storage error (`QuotaExceededError`, `storage_unavailable`, ...); nothing stored.
    pub async fn put_blob(
        &self,
        id: &str,
        blob: &web_sys::Blob,
        media_type: &str,
    ) -> Result<(), SafeError> {
        let entry = js_sys::Object::new();
        let fields: [(&str, JsValue); 3] = [
            ("blob", blob.clone().into()),
            ("mediaType", JsValue::from_str(media_type)),
            ("size", JsValue::from_f64(blob.size())),
        ];
        for (name, value) in fields {
            js_sys::Reflect::set(&entry, &JsValue::from_str(name), &value)
                .map_err(|e| js_error(&e))?;
        }
        let db = self.db()?;
        let tx = self.begin(&db, &[BLOBS], true)?;
        let store = tx.store(BLOBS).map_err(|e| js_error(&e))?;
        store
            .put_with_key(&entry, &JsValue::from_str(id))
            .map_err(|e| js_error(&e))?;
        self.finish(tx).await
    }

    /// The blob stored under `id`, if any.
    ///
    /// # Errors
    ///
    /// A storage error, or `corrupt_record` when the record holds no `Blob`.
    pub async fn get_blob(&self, id: &str) -> Result<Option<web_sys::Blob>, SafeError> {
        let db = self.db()?;
        let tx = self.begin(&db, &[BLOBS], false)?;
        let store = tx.store(BLOBS).map_err(|e| js_error(&e))?;
        let entry = get(&store, &JsValue::from_str(id))
            .await
            .map_err(|e| js_error(&e))?;
        let Some(entry) = entry else {
            return Ok(None);
        };
        let blob =
            js_sys::Reflect::get(&entry, &JsValue::from_str("blob")).map_err(|e| js_error(&e))?;
        blob.dyn_into::<web_sys::Blob>().map(Some).map_err(|_| {
            SafeError::new(
                "corrupt_record",
                &format!("blob record {} holds no Blob", quoted(id)),
            )
        })
    }
}
