//! What host code threw, read safely: an `Error`'s `name` and `message` are host values too (an
//! own getter, a Proxy), so they are read in `boundary.js` where a throw is caught.

use js_sys::Array;
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// See `boundary.js`: `[name, message]` or `null`.
    #[wasm_bindgen(js_name = thrownText)]
    fn thrown_text(thrown: &JsValue) -> JsValue;
}

/// The readable parts of a thrown value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Thrown {
    /// An `Error`'s `name` (`TypeError`, ...).
    pub name: Option<String>,
    /// An `Error`'s `message`, or the thrown string.
    pub message: Option<String>,
}

impl Thrown {
    /// Reads `thrown`; nothing readable is an empty [`Thrown`].
    pub fn read(thrown: &JsValue) -> Thrown {
        let parts = thrown_text(thrown);
        if parts.is_null() {
            return Thrown::default();
        }
        let parts: Array = parts.unchecked_into();
        Thrown {
            name: parts.get(0).as_string(),
            message: parts.get(1).as_string(),
        }
    }
}
