//! `probeStorage` as JavaScript sees it: a plain report object, or a coded `Error`.

use canvas_scheduler::api::error::{ERROR_NAME, ERROR_TYPES_TS};
use canvas_scheduler::api::probe::probe_storage;
use canvas_scheduler::web::probe::{ProbeError, ProbeRecord};
use js_sys::{Object, Reflect};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::{delete_database, unique_name};

fn get(value: &JsValue, path: &str) -> JsValue {
    path.split('.').fold(value.clone(), |v, key| {
        Reflect::get(&v, &JsValue::from_str(key)).expect("property lookup")
    })
}

#[wasm_bindgen_test]
async fn resolves_to_a_plain_report_of_what_it_did() {
    let name = unique_name("api");
    let report: JsValue = probe_storage(name.clone()).await.expect("probe");

    let plain = Object::get_prototype_of(&Object::new());
    let prototype = Object::get_prototype_of(&report);
    assert!(Object::is(&prototype, &plain), "not a plain object");
    assert_eq!(get(&report, "database").as_string(), Some(name.clone()));
    assert_eq!(get(&report, "store").as_string().as_deref(), Some("probe"));
    assert_eq!(get(&report, "schemaVersion").as_f64(), Some(1.0));
    assert!(get(&report, "elapsedMs")
        .as_f64()
        .is_some_and(|ms| ms >= 0.0));
    let nonce = get(&report, "written.nonce")
        .as_string()
        .expect("written.nonce");
    assert_eq!(get(&report, "read.nonce").as_string(), Some(nonce.clone()));
    assert_eq!(
        get(&report, "read.key").as_string().as_deref(),
        Some("probe")
    );
    // Exactly these members, in this order, and the records plain objects too.
    let keys = |value: &JsValue| -> Vec<String> {
        Object::keys(value.unchecked_ref::<Object>())
            .iter()
            .filter_map(|key| key.as_string())
            .collect()
    };
    assert_eq!(
        keys(&report),
        [
            "database",
            "store",
            "schemaVersion",
            "written",
            "read",
            "elapsedMs"
        ]
    );
    for record in ["written", "read"] {
        let record = get(&report, record);
        assert_eq!(keys(&record), ["key", "nonce", "writtenAtMs"]);
        assert!(Object::is(&Object::get_prototype_of(&record), &plain));
        assert!(Reflect::get(&record, &"writtenAtMs".into())
            .expect("writtenAtMs")
            .as_f64()
            .is_some_and(|ms| ms > 0.0));
    }

    // A second probe writes a fresh nonce: a stale record cannot pass for a new one.
    let again: JsValue = probe_storage(name.clone()).await.expect("probe again");
    assert_ne!(get(&again, "read.nonce").as_string(), Some(nonce));
    delete_database(&name).await;
}

#[wasm_bindgen_test]
async fn rejects_with_an_error_object_carrying_a_stable_code() {
    let error = probe_storage(String::new()).await.expect_err("must reject");
    assert!(
        error.is_instance_of::<js_sys::Error>(),
        "not an Error: {error:?}"
    );
    let error: js_sys::Error = error.unchecked_into();
    assert_eq!(String::from(error.name()), ERROR_NAME);
    assert_eq!(
        get(&error, "code").as_string().as_deref(),
        Some("invalid_database_name")
    );
    assert!(String::from(error.message()).contains("database name"));
}

#[wasm_bindgen_test]
fn every_probe_error_code_is_declared_in_typescript() {
    let record = ProbeRecord {
        key: "probe".into(),
        nonce: "n".into(),
        written_at_ms: 0.0,
    };
    let errors = [
        ProbeError::InvalidDatabaseName,
        ProbeError::Unavailable(String::new()),
        ProbeError::WriteFailed(String::new()),
        ProbeError::ReadFailed(String::new()),
        ProbeError::Mismatch {
            written: record,
            read: None,
        },
    ];
    for error in errors {
        let code = format!("\"{}\"", error.code());
        assert!(
            ERROR_TYPES_TS.contains(&code),
            "{code} missing from ErrorCode"
        );
    }
}

#[wasm_bindgen_test]
fn every_core_error_code_is_declared() {
    use canvas_scheduler_core::ErrorCode;
    for code in ErrorCode::ALL {
        let quoted = format!("\"{}\"", code.as_str());
        assert!(
            ERROR_TYPES_TS.contains(&quoted),
            "{quoted} missing from ErrorCode"
        );
    }
}
