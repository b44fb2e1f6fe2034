//! `SchedulerConfig`'s derive (issue 40) reads `Scheduler.open`'s data options as the module's
//! own reader does (`api/options.rs`, kept for its refusals and its size: ARCHITECTURE): the
//! same config from the same object, through `serde_wasm_bindgen`.

use canvas_scheduler::api::options::decode_options;
use canvas_scheduler::core::config::SchedulerConfig;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::js;

#[wasm_bindgen_test]
fn the_options_derive_reads_the_config_the_modules_reader_reads() {
    let cases = [
        "{}",
        "{ concurrency: 5, principal: 'user-1', leaseMs: 9000, coalesceMs: 16 }",
        "{ retry: {} }",
        "{ retry: { baseMs: 40000 } }",
        "{ retry: { baseMs: 100, maxMs: 2000, maxAttempts: 3, deadLetterAfterMs: 0 } }",
        "{ batch: {} }",
        "{ batch: { maxOperations: 8, kinds: ['shape.upsert', 'note.edit'] } }",
        "{ batch: { maxBytes: 1024 } }",
        "{ maxPayloadBytes: 1000, eventLogLimit: 10 }",
        "{ retain: { settled: 0 } }",
        "{ retain: { settled: 5, settledMs: 60000, tombstones: 7, tombstoneMs: 1 } }",
    ];
    for case in cases {
        let source = format!(
            "Object.assign({case}, {{ database: 'db', endpoint: 'http://127.0.0.1:9/v1', owner: 'tab-1', headers: () => ({{}}) }})"
        );
        let options = js(&format!("({source})"));
        let hand = decode_options(&options)
            .map_err(|e| e.message)
            .unwrap()
            .config;
        let derived: SchedulerConfig = serde_wasm_bindgen::from_value(options).unwrap();
        assert_eq!(derived, hand, "{case}");
        derived.validate().unwrap();
    }
}
