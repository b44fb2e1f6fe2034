//! `enqueueMany`'s options and its partial form: `{ atomic: false }` stores
//! every valid intent and answers one result per intent. The options are checked strictly
//! (`invalid_options`: not an object, an unknown key, `atomic` not a boolean), before any
//! intent is read; the decision itself is the core's ([`canvas_scheduler_core::partial`]).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::JsValue;

use canvas_scheduler_core::{partial::Verdict, ErrorCode, SchedulerError};

use super::intent::{decode_intent, DecodedIntent};
use crate::web::json::{is_array, object_keys};

/// The only key `enqueueMany`'s options take.
const ATOMIC: &str = "atomic";

/// The most intents one partial `enqueueMany` takes.
pub const MAX_PARTIAL_INTENTS: u32 = 100_000;

/// How `enqueueMany` stores its intents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// All or none (the default): one refused intent rejects the call.
    Atomic,
    /// Every valid intent, with a result per intent.
    Partial,
}

fn bad(message: impl Into<String>) -> SchedulerError {
    SchedulerError::new(ErrorCode::InvalidOptions, message)
}

/// Reads `enqueueMany`'s options (`undefined` or `null`: the default), every read where a
/// throw (a getter, a Proxy) becomes `invalid_options`.
pub fn mode(options: &JsValue) -> Result<Mode, SchedulerError> {
    if options.is_undefined() || options.is_null() {
        return Ok(Mode::Atomic);
    }
    let what = "enqueueMany takes { atomic: boolean } as its options, or nothing";
    if !options.is_object() || is_array(options) {
        return Err(bad(what));
    }
    let keys = object_keys(options).map_err(|_| bad("enqueueMany: the options are unreadable"))?;
    if let Some(key) = keys
        .iter()
        .find(|key| key.as_string().as_deref() != Some(ATOMIC))
    {
        let key = key.as_string().unwrap_or_default();
        return Err(bad(format!(
            "enqueueMany: unknown option {}; {what}",
            canvas_scheduler_core::json_text::quoted(&key)
        )));
    }
    let atomic = Reflect::get(options, &ATOMIC.into())
        .map_err(|_| bad("enqueueMany: atomic is unreadable"))?;
    match atomic.as_bool() {
        Some(false) => Ok(Mode::Partial),
        Some(true) => Ok(Mode::Atomic),
        None if atomic.is_undefined() => Ok(Mode::Atomic),
        None => Err(bad("enqueueMany: atomic must be true or false")),
    }
}

/// The intents of a partial `enqueueMany`, each decoded or refused with its own error (read
/// one at a time, where a throw is caught). Only a call that is not an array of intents is
/// refused whole.
pub fn decode_slots(
    intents: &JsValue,
    max_payload_bytes: usize,
) -> Result<Vec<Result<DecodedIntent, SchedulerError>>, SchedulerError> {
    let not_array = || {
        SchedulerError::new(
            ErrorCode::InvalidIntent,
            "enqueueMany takes an array of intents",
        )
    };
    if !is_array(intents) {
        return Err(not_array());
    }
    let length = Reflect::get(intents, &"length".into())
        .ok()
        .and_then(|n| n.as_f64())
        .ok_or_else(not_array)?;
    // Each item gets a result, holes and all: a sparse array of 2^32 - 1 would hang here.
    if length > MAX_PARTIAL_INTENTS as f64 {
        return Err(SchedulerError::new(
            ErrorCode::InvalidIntent,
            format!(
                "enqueueMany with {{ atomic: false }} takes at most {MAX_PARTIAL_INTENTS} intents"
            ),
        ));
    }
    let mut slots = Vec::with_capacity(length as usize);
    for at in 0..length.max(0.0) as u32 {
        slots.push(match Reflect::get_u32(intents, at) {
            Ok(intent) => decode_intent(&intent, max_payload_bytes),
            Err(_) => Err(SchedulerError::new(
                ErrorCode::InvalidIntent,
                format!("intent {at} is unreadable"),
            )),
        });
    }
    Ok(slots)
}

/// The results of a partial `enqueueMany`, in call order: `{ ok: true }`, or
/// `{ ok: false, code, message }` with the code a lone `enqueue` of that intent would get.
pub fn results(verdicts: &[Verdict]) -> JsValue {
    let set = |object: &Object, key: &str, value: JsValue| {
        // Own properties of a fresh plain object: setting them cannot fail.
        let _ = Reflect::set(object, &key.into(), &value);
    };
    verdicts
        .iter()
        .map(|verdict| {
            let result = Object::new();
            set(&result, "ok", verdict.is_ok().into());
            if let Err(error) = verdict {
                set(&result, "code", error.code().into());
                set(&result, "message", error.message.as_str().into());
            }
            JsValue::from(result)
        })
        .collect::<Array>()
        .into()
}
