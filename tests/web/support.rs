//! Test helpers: unique database names, raw database setup and cleanup, sleeping, evaluating
//! JS expressions and reading error codes.

use indexed_db_futures::database::Database;
use indexed_db_futures::prelude::*;

/// A database name no other test (or earlier run) uses.
pub(super) fn unique_name(test: &str) -> String {
    let random = (js_sys::Math::random() * 1e12) as u64;
    format!("canvas-scheduler-test:{test}:{random}")
}

/// Creates `name` at `version`, with `stores` created on upgrade, and closes it.
pub(super) async fn create_database(name: &str, version: u32, stores: &'static [&'static str]) {
    let db = Database::open(name)
        .with_version(version)
        .with_on_upgrade_needed(move |_, db| {
            for store in stores {
                db.create_object_store(store).build()?;
            }
            Ok(())
        })
        .await
        .expect("test setup: open database");
    db.close();
}

/// Deletes `name`; tests call it last so reruns start clean.
pub(super) async fn delete_database(name: &str) {
    Database::delete_by_name(name)
        .expect("test cleanup: delete request")
        .await
        .expect("test cleanup: delete database");
}

/// Waits `ms` on the global `setTimeout` (a Window's or a Worker's).
pub(super) async fn sleep(ms: u32) {
    use wasm_bindgen::JsCast;
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        let global = js_sys::global();
        let set_timeout = js_sys::Reflect::get(&global, &"setTimeout".into())
            .ok()
            .and_then(|f| f.dyn_into::<js_sys::Function>().ok())
            .expect("a global setTimeout");
        let _ = set_timeout.call2(&global, &resolve, &ms.into());
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Evaluates a JS expression (test inputs JSON cannot express: NaN, functions, cycles).
pub(super) fn js(expression: &str) -> wasm_bindgen::JsValue {
    js_sys::Function::new_no_args(&format!("return ({expression});"))
        .call0(&wasm_bindgen::JsValue::NULL)
        .expect("expression evaluates")
}

/// The `code` of a thrown scheduler error.
pub(super) fn code_of(error: &wasm_bindgen::JsValue) -> String {
    js_sys::Reflect::get(error, &"code".into())
        .ok()
        .and_then(|c| c.as_string())
        .unwrap_or_else(|| format!("no code: {error:?}"))
}

/// An endpoint behind a proxy that answers HTML 400 (the hostile server `scripts/test` starts):
/// a 4xx without a protocol body dead-letters a request at once (docs/protocol.md), where an
/// unreachable endpoint never does (an outage dead-letters nothing).
pub(super) fn proxy_400() -> String {
    match option_env!("CANVAS_SCHEDULER_TEST_HOSTILE") {
        Some(url) if !url.is_empty() => format!("{url}/status/400/-"),
        _ => panic!(
            "CANVAS_SCHEDULER_TEST_HOSTILE is not set: run the browser tests with scripts/test"
        ),
    }
}
