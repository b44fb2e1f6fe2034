//! Host hooks bounded in time (`attemptTimeoutMs`): `headers`, `authorize`, `classifyError` and
//! a custom transport's `submit` and `query` are called through `boundary.js`'s `bounded`, which
//! settles within the limit whatever the hook does. A hook that never settles thus holds no
//! slot, lane or canvas; its late answer lands in a promise nobody reads.

use js_sys::{Array, Function, Promise};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

use canvas_scheduler_core::AttemptStatus;

#[wasm_bindgen(module = "/src/api/boundary.js")]
extern "C" {
    /// See `boundary.js`: settles with `[0, value]`, `[1, thrown]` or `[2]` (timed out).
    fn bounded(hook: &Function, args: &Array, ms: u32) -> Promise;
}

/// How a bounded hook ended.
pub enum Settled {
    /// It returned, or its promise resolved with, this value.
    Value(JsValue),
    /// It threw, or its promise rejected with, this value.
    Threw(JsValue),
    /// It had not settled within the limit.
    TimedOut,
}

/// Calls `hook(...args)`, waiting at most `timeout_ms` for it to settle (0: no limit).
pub async fn call(hook: &Function, args: &[&JsValue], timeout_ms: u32) -> Settled {
    let args: Array = args.iter().copied().collect();
    let answer = match JsFuture::from(bounded(hook, &args, timeout_ms)).await {
        Ok(answer) => answer,
        Err(thrown) => return Settled::Threw(thrown),
    };
    let answer: Array = answer.unchecked_into();
    match answer.get(0).as_f64().map(|kind| kind as u8) {
        Some(0) => Settled::Value(answer.get(1)),
        Some(1) => Settled::Threw(answer.get(1)),
        _ => Settled::TimedOut,
    }
}

/// The status of an attempt whose `hook` did not settle within `timeout_ms`.
pub fn timed_out(hook: &str, timeout_ms: u32) -> AttemptStatus {
    AttemptStatus::hook_timeout(hook, timeout_ms)
}
