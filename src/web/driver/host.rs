//! The browser's [`Host`]: request ids from `crypto.randomUUID()` (a Window and a Worker both
//! have it on their global), and the host's optional synchronous `compile` and `participants`
//! hooks. A hook that throws, returns a Promise or returns the wrong shape blocks only that
//! operation, with a message.

use canvas_scheduler_core::ExpectedVersions;

use js_sys::{Function, Reflect};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};

use crate::web::host_code;
use crate::web::thrown::Thrown;

use canvas_scheduler_core::{
    default_compile, json_text::JsonText, CompiledRequest, Host, Intent, Payload, SafeError,
    Scheduler,
};

/// Request ids that are unique across tabs, reloads and restarts, and the JS hooks.
#[derive(Debug, Default, Clone)]
pub struct WebHost {
    /// `compile(intent, requestId)`, synchronous.
    pub compile: Option<Function>,
    /// `participants(intent)`, synchronous.
    pub participants: Option<Function>,
    /// `coalesce(older, newer)`, synchronous: the replacement's payload.
    pub coalesce: Option<Function>,
    /// Names this scheduler for the reads its hooks make (`host_code::read`); the driver
    /// sets it.
    pub key: u64,
}

fn random_uuid() -> Option<String> {
    let crypto = Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).ok()?;
    let make = Reflect::get(&crypto, &JsValue::from_str("randomUUID")).ok()?;
    let id = make
        .dyn_into::<Function>()
        .ok()?
        .call0(&crypto)
        .ok()?
        .as_string()?;
    // What a replacement answers is used only if it looks like what the platform's does.
    let uuid_like = id.len() == 36
        && id.bytes().enumerate().all(|(at, b)| {
            matches!(at, 8 | 13 | 18 | 23) == (b == b'-') && (b == b'-' || b.is_ascii_hexdigit())
        });
    uuid_like.then_some(id)
}

impl WebHost {
    /// A fresh unique id (`crypto.randomUUID()`, or time and randomness where it is missing).
    pub fn fresh_id() -> String {
        random_uuid().unwrap_or_else(|| {
            use crate::web::clock::{random, wall_now};
            thread_local! {
                /// Ids made here in this module instance: unique even if `random` is broken.
                static MADE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
            }
            let made = MADE.with(|n| {
                n.set(n.get() + 1);
                n.get()
            });
            let one = (random() * 1e15) as u64;
            let two = (random() * 1e15) as u64;
            format!("r-{:x}-{one:x}-{two:x}-{made:x}", wall_now() as u64)
        })
    }
}

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// See `boundary.js`: `instanceof Promise`, false where it throws.
    #[wasm_bindgen(js_name = isPromise)]
    fn is_promise(value: &JsValue) -> bool;
}

fn hook_error(hook: &str, thrown: &JsValue) -> SafeError {
    let message = Thrown::read(thrown).message.unwrap_or_default();
    SafeError::with_fallback("compile_failed", &message, "compile_failed")
        .with_details(JsonText::member("hook", hook))
}

fn reject_promise(hook: &str, value: &JsValue) -> Result<(), SafeError> {
    if is_promise(value) {
        return Err(SafeError::new(
            "compile_failed",
            &format!("{hook} must return synchronously"),
        ));
    }
    Ok(())
}

/// The intent as `compile` and `participants` see it: a plain object (its payload is stored
/// as JSON text, which only a JSON serializer writes as the value it is).
fn intent_js(intent: &Intent) -> JsValue {
    crate::web::json::to_js(intent)
}

fn string_list(value: &JsValue, what: &str) -> Result<Vec<String>, SafeError> {
    let limit = canvas_scheduler_core::intent::MAX_LIST_LEN;
    crate::web::json::string_items(value, limit)
        .map_err(|wrong| SafeError::new("compile_failed", &format!("{what} {wrong}")))
}

fn decode_compiled(value: &JsValue) -> Result<CompiledRequest, SafeError> {
    if !value.is_object() {
        return Err(SafeError::new(
            "compile_failed",
            "compile must return an object",
        ));
    }
    let get =
        |key: &str| Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED);
    let optional_string = |key: &str| -> Result<Option<String>, SafeError> {
        let v = get(key);
        if v.is_undefined() || v.is_null() {
            return Ok(None);
        }
        match crate::web::json::exact_text(&v) {
            Some(Ok(text)) => Ok(Some(text)),
            _ => Err(SafeError::new(
                "compile_failed",
                &format!("compiled {key} must be a string (without lone surrogates)"),
            )),
        }
    };
    let payload = crate::web::json::to_json(&get("payload"), "compiled payload")
        .map_err(|m| SafeError::new("compile_failed", &m))?;
    let versions = get("expectedVersions");
    let mut expected_versions = ExpectedVersions::new();
    if !versions.is_undefined() && !versions.is_null() {
        let text = crate::web::json::to_json(&versions, "compiled expectedVersions");
        match text.as_ref().ok().and_then(JsonText::members) {
            Some(map) => {
                for (canvas, version) in map.iter() {
                    let version = serde_json::from_str::<u64>(version).map_err(|_| {
                        SafeError::new(
                            "compile_failed",
                            "compiled expectedVersions must hold integers",
                        )
                    })?;
                    expected_versions.insert(canvas.to_owned(), version);
                }
            }
            None => {
                return Err(SafeError::new(
                    "compile_failed",
                    "compiled expectedVersions must be an object",
                ))
            }
        }
    }
    let protocol = get("protocolVersion");
    let protocol_version = if protocol.is_undefined() {
        None
    } else {
        match protocol.as_f64() {
            Some(n) if n.fract() == 0.0 && (0.0..=1_000.0).contains(&n) => Some(n as u32),
            _ => {
                return Err(SafeError::new(
                    "compile_failed",
                    "compiled protocolVersion must be a small integer",
                ))
            }
        }
    };
    Ok(CompiledRequest {
        kind: optional_string("kind")?,
        owner_canvas_id: optional_string("ownerCanvasId")?,
        run_id: optional_string("runId")?,
        protocol_version,
        payload,
        canvas_ids: string_list(&get("canvasIds"), "compiled canvasIds")?,
        expected_versions,
    })
}

impl Host for WebHost {
    fn participants_are_declared(&self) -> bool {
        self.participants.is_none()
    }

    fn participants(
        &self,
        intent: &Intent,
        reads: &Scheduler<Self>,
    ) -> Result<Vec<String>, SafeError> {
        let Some(hook) = &self.participants else {
            return Ok(intent.canvas_ids.clone());
        };
        // Host code (the hook, and any getter or trap of what it returns) inside the core's
        // step, its synchronous reads answered from `reads`: see `host_code`.
        host_code::run(Some(reads), || {
            let value = hook
                .call1(&JsValue::NULL, &intent_js(intent))
                .map_err(|e| hook_error("participants", &e))?;
            reject_promise("participants", &value)?;
            string_list(&value, "participants")
        })
    }

    fn compile(
        &self,
        intent: &Intent,
        request_id: &str,
        reads: &Scheduler<Self>,
    ) -> Result<CompiledRequest, SafeError> {
        let Some(hook) = &self.compile else {
            return Ok(default_compile(intent));
        };
        // Host code (the hook, and any getter or trap of what it returns) inside the core's
        // step, its synchronous reads answered from `reads`: see `host_code`.
        host_code::run(Some(reads), || {
            let value = hook
                .call2(
                    &JsValue::NULL,
                    &intent_js(intent),
                    &JsValue::from_str(request_id),
                )
                .map_err(|e| hook_error("compile", &e))?;
            reject_promise("compile", &value)?;
            decode_compiled(&value)
        })
    }

    fn coalesce(
        &self,
        older: &Intent,
        newer: &Intent,
        reads: &Scheduler<Self>,
    ) -> Result<Option<Payload>, SafeError> {
        let Some(hook) = &self.coalesce else {
            return Ok(None);
        };
        host_code::run(Some(reads), || {
            let value = hook
                .call2(&JsValue::NULL, &intent_js(older), &intent_js(newer))
                .map_err(|e| hook_error("coalesce", &e))?;
            reject_promise("coalesce", &value)?;
            crate::web::json::to_json(&value, "coalesced payload")
                .map(Some)
                .map_err(|m| SafeError::new("coalesce_failed", &m))
        })
    }

    fn create_request_id(&mut self) -> String {
        // `crypto.randomUUID` is the host's global: it may have replaced it.
        host_code::run(None, Self::fresh_id)
    }
}
