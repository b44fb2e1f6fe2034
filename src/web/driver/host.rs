//! The browser's [`Host`]: request ids from `crypto.randomUUID()` (a Window and a Worker both
//! have it on their global), the default participants and compile.

use js_sys::{Function, Reflect};
use wasm_bindgen::{JsCast, JsValue};

use crate::core::host::Host;

/// Request ids that are unique across tabs, reloads and restarts.
#[derive(Debug, Default)]
pub struct WebHost {
    fallback: u64,
}

fn random_uuid() -> Option<String> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).ok()?;
    let make = Reflect::get(&crypto, &JsValue::from_str("randomUUID")).ok()?;
    make.dyn_into::<Function>()
        .ok()?
        .call0(&crypto)
        .ok()?
        .as_string()
}

impl Host for WebHost {
    fn create_request_id(&mut self) -> String {
        if let Some(uuid) = random_uuid() {
            return uuid;
        }
        // Insecure contexts lack randomUUID: time, a random part and a counter still never repeat.
        self.fallback += 1;
        let random = (js_sys::Math::random() * 1e15) as u64;
        format!(
            "r-{:x}-{random:x}-{}",
            js_sys::Date::now() as u64,
            self.fallback
        )
    }
}
