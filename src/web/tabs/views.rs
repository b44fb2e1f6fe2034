//! [`OperationViews`]: what a following tab knows of the operations it enqueued.

use wasm_bindgen::JsValue;

/// The latest record of each operation this tab enqueued while following, as the leader
/// relayed it (or as stored when it was enqueued). A JS `Map`: constant-time lookups however
/// many operations a follower enqueued offline, and no tree code in the `.wasm` for one more
/// key/value type.
pub(super) struct OperationViews(js_sys::Map);

impl OperationViews {
    pub(super) fn new() -> Self {
        OperationViews(js_sys::Map::new())
    }

    /// Records `view` as the latest of `id`.
    pub(super) fn set(&self, id: &str, view: &JsValue) {
        self.0.set(&JsValue::from_str(id), view);
    }

    /// Records `view` unless `id` already has one (a relayed record is newer than the
    /// enqueue's own view).
    pub(super) fn set_if_absent(&self, id: &str, view: &JsValue) {
        let key = JsValue::from_str(id);
        if !self.0.has(&key) {
            self.0.set(&key, view);
        }
    }

    /// The latest record of `id`, if this tab has one.
    pub(super) fn get(&self, id: &str) -> Option<JsValue> {
        let key = JsValue::from_str(id);
        self.0.has(&key).then(|| self.0.get(&key))
    }
}
