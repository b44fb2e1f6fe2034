//! Browser tests in a dedicated Worker (no `window`). The shared tests live in `tests/web/`;
//! without the `run_in_*` line below `wasm-pack test --chrome` would silently skip this binary.
#![cfg(target_arch = "wasm32")]

wasm_bindgen_test::wasm_bindgen_test_configure!(run_in_dedicated_worker);

/// Constructor name of the global object these tests must run in.
const EXPECTED_GLOBAL: &str = "DedicatedWorkerGlobalScope";

mod web;
