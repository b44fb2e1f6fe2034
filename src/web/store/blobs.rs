//! Upload blobs stored beside the ledger, one record per blob in two shapes, both read:
//! - `{ blob, mediaType, size }`: the `Blob` (or `File`) itself, stored by structured clone
//!   (no copy through wasm memory);
//! - `{ bytes, mediaType, size, name }`: its bytes as an `ArrayBuffer`, where the engine
//!   refuses to store a `Blob` (WebKit's ephemeral sessions and Safari's private browsing fail
//!   the put with `UnknownError`, "Error preparing Blob/File data to be stored in object
//!   store"). Read back as a `File` of that name (a `Blob` without one) and media type, so the
//!   upload's multipart request is the same: same bytes, type, part names and file name.
//!
//! The second shape needs no schema change: the store holds whatever record it is given, and
//! a ledger written before it (every record a `Blob`) reads as before.

use canvas_scheduler_core::json_text::quoted;
use js_sys::{Array, ArrayBuffer, Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use super::errors::js_error;
use super::requests::{get, put};
use super::schema::BLOBS;
use super::{IdbLedger, StoreFault};
use canvas_scheduler_core::SafeError;

/// Whether a failed `Blob` put is the engine refusing `Blob`s (retried as bytes), not a full
/// disk or a closed connection (which the bytes would meet too).
fn refuses_blobs(error: &SafeError) -> bool {
    matches!(error.code.as_str(), "UnknownError" | "DataCloneError")
}

/// A record object with these fields.
fn record(fields: &[(&str, JsValue)]) -> Result<Object, SafeError> {
    let entry = Object::new();
    for (name, value) in fields {
        Reflect::set(&entry, &JsValue::from_str(name), value).map_err(|e| js_error(&e))?;
    }
    Ok(entry)
}

/// `File.name` when `blob` is a `File`.
fn file_name(blob: &web_sys::Blob) -> Option<String> {
    blob.dyn_ref::<web_sys::File>().map(web_sys::File::name)
}

impl IdbLedger {
    /// Stores `blob` under `id` (replacing any blob there) in one strict-durability
    /// transaction, with its `mediaType` and `size`; where the engine refuses `Blob`s, its
    /// bytes instead (a second transaction; this handle then stores bytes straight away).
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
        let size = JsValue::from_f64(blob.size());
        let media = JsValue::from_str(media_type);
        if !self.blobs_refused.get() {
            let entry = record(&[
                ("blob", blob.clone().into()),
                ("mediaType", media.clone()),
                ("size", size.clone()),
            ])?;
            let refuse = self.refuse_blob.replace(false);
            match self.put_record(id, &entry, refuse).await {
                Err(error) if refuses_blobs(&error) => self.blobs_refused.set(true),
                done => return done,
            }
        }
        let bytes = JsFuture::from(blob.array_buffer())
            .await
            .map_err(|e| js_error(&e))?;
        let name = file_name(blob).map_or(JsValue::NULL, |n| JsValue::from_str(&n));
        let entry = record(&[
            ("bytes", bytes),
            ("mediaType", media),
            ("size", size),
            ("name", name),
        ])?;
        self.put_record(id, &entry, false).await
    }

    /// Puts `entry` under `id` in its own transaction; `refuse` aborts it the way WebKit
    /// refuses a `Blob` (the injected [`StoreFault::RefuseBlob`]).
    async fn put_record(&self, id: &str, entry: &Object, refuse: bool) -> Result<(), SafeError> {
        let db = self.db()?;
        let tx = self.begin(&db, &[BLOBS], true)?;
        let store = tx.store(BLOBS).map_err(|e| js_error(&e))?;
        put(&store, entry, &JsValue::from_str(id))
            .await
            .map_err(|e| js_error(&e))?;
        if refuse {
            tx.abort().await;
            return Err(StoreFault::RefuseBlob.error());
        }
        self.finish(tx).await
    }

    /// The blob stored under `id`, if any (rebuilt from its bytes when stored as bytes).
    ///
    /// # Errors
    ///
    /// A storage error, or `corrupt_record` when the record holds neither a `Blob` nor bytes.
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
        let corrupt = || {
            SafeError::new(
                "corrupt_record",
                &format!("blob record {} holds no Blob", quoted(id)),
            )
        };
        let field = |name: &str| Reflect::get(&entry, &JsValue::from_str(name)).ok();
        if let Some(blob) = field("blob").and_then(|b| b.dyn_into::<web_sys::Blob>().ok()) {
            return Ok(Some(blob));
        }
        let bytes = field("bytes")
            .and_then(|b| b.dyn_into::<ArrayBuffer>().ok())
            .ok_or_else(corrupt)?;
        let options = web_sys::FilePropertyBag::new();
        let media_type = field("mediaType").and_then(|t| t.as_string());
        options.set_type(media_type.as_deref().unwrap_or(""));
        let parts = Array::of1(&bytes);
        let blob = match field("name").and_then(|n| n.as_string()) {
            Some(name) => {
                web_sys::File::new_with_buffer_source_sequence_and_options(&parts, &name, &options)
                    .map(Into::into)
            }
            None => {
                let options = web_sys::BlobPropertyBag::new();
                options.set_type(media_type.as_deref().unwrap_or(""));
                web_sys::Blob::new_with_buffer_source_sequence_and_options(&parts, &options)
            }
        };
        blob.map(Some).map_err(|e| js_error(&e))
    }
}
