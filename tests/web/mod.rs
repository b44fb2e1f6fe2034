//! Shared browser tests, compiled into each `tests/web_*.rs` binary (page, dedicated worker).
//! Each binary names the global scope it expects in `crate::EXPECTED_GLOBAL`.

mod api_partial_enqueue;
mod api_probe;
mod api_retention;
mod api_scheduler;
mod clock;
mod coalesce;
mod driver;
mod hook_reads;
mod hostile_globals;
mod hostile_hooks;
mod hostile_inputs;
mod hostile_net;
mod hostile_tabs;
mod json;
mod known;
mod ledger_fixture;
mod lifecycle;
mod options_shape;
mod probe;
mod security;
mod store;
mod store_ahead;
mod store_group_commit;
mod store_retention;
mod store_schema;
mod store_support;
mod support;
mod tabs;
mod transport;
mod transport_auth;
mod wake;

use wasm_bindgen_test::wasm_bindgen_test;

#[wasm_bindgen_test]
fn runs_in_the_global_scope_its_binary_configures() {
    let global = js_sys::global();
    let name = String::from(global.constructor().name());
    assert_eq!(name, crate::EXPECTED_GLOBAL);
}
