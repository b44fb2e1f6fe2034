//! JS values to JSON text (`web::json`): written straight from the JS value, compact, keys
//! sorted, numbers as serde_json writes them; anything that is not plain JSON refused with the
//! path of the first bad value.

use canvas_scheduler::web::json::to_json;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::js;

fn text(source: &str) -> Result<String, String> {
    to_json(&js(source), "payload").map(|text| text.text().to_owned())
}

#[wasm_bindgen_test]
fn a_plain_js_value_becomes_canonical_json_text() {
    let cases = [
        (
            "({ b: 1, a: [true, null, 'x'], c: { e: 1.5, d: -0 } })",
            r#"{"a":[true,null,"x"],"b":1,"c":{"d":0,"e":1.5}}"#,
        ),
        (
            "({ big: 2 ** 53, safe: 2 ** 53 - 1, small: 1e-7, neg: -3, u: undefined })",
            r#"{"big":9007199254740992.0,"neg":-3,"safe":9007199254740991,"small":1e-7}"#,
        ),
        ("'é\\u0000\"\\n'", r#""é\u0000\"\n""#),
        ("[[], {}, [[1]]]", "[[],{},[[1]]]"),
        (
            "Object.assign(Object.create(null), { z: 1, y: 2 })",
            r#"{"y":2,"z":1}"#,
        ),
        (
            "({ 'B': 1, 'a': 2, 'é': 3, '10': 4, '9': 5 })",
            r#"{"10":4,"9":5,"B":1,"a":2,"é":3}"#,
        ),
        ("null", "null"),
    ];
    for (source, expected) in cases {
        assert_eq!(text(source).as_deref(), Ok(expected), "{source}");
    }
}

#[wasm_bindgen_test]
fn anything_but_plain_json_is_refused_with_its_path() {
    let cases = [
        (
            "({ a: 1, b: [0, NaN] })",
            "payload.b[1] is not a finite number",
        ),
        (
            "({ a: { b: Infinity } })",
            "payload.a.b is not a finite number",
        ),
        (
            "JSON.parse('{\"x\":{\"__proto__\":1}}')",
            "payload.x has a __proto__ key",
        ),
        ("({ f() {} })", "payload.f is not JSON"),
        ("({ d: new Date(0) })", "payload.d is not JSON"),
        ("({ n: 1n })", "payload.n is not JSON"),
        (
            "(() => { const a = []; a.push(a); return a; })()",
            "nests deeper than 64",
        ),
        ("({ z: NaN, a: NaN })", "payload.z is not"),
    ];
    for (source, expected) in cases {
        let error = text(source).expect_err(source);
        assert!(error.contains(expected), "{source}: {error}");
    }
}

/// Views reach JS through their serde derives (`web::json::to_js`): each is, as JSON text, the
/// very text the module's stored codec writes for it: the same members, in the same order,
/// absent and `null` where the codec has them, a JSON text member as the value it holds.
#[wasm_bindgen_test]
fn views_reach_js_as_the_text_the_modules_codec_writes() {
    use canvas_scheduler::web::json::to_js;
    use canvas_scheduler_core::{
        json_text::{self as json, JsonText},
        Compacted, Explanation, Known, SafeError, *,
    };

    fn same<T: serde::Serialize + ?Sized>(value: &T) {
        let seen = js_sys::JSON::stringify(&to_js(value)).unwrap();
        assert_eq!(seen.as_string().unwrap(), json::to_string(value));
    }
    let mut intent = Intent::new("op-1".into(), 7, "shape.upsert".into());
    intent.canvas_ids = vec!["c1".into()];
    intent.payload = JsonText::compact(r#"{"s":"é\"q","x":[1,-2,0.5],"n":null}"#).unwrap();
    intent.expected_versions.insert("c1".into(), 3);
    intent.coalesce_key = Some("k".into());
    let bare = Operation::new(intent.clone());
    let mut op = Operation::new(intent);
    op.phase = OperationPhase::Resolved;
    op.request_id = Some("req".into());
    op.outcome = Some(Box::new(OperationOutcome {
        settlement: Settlement::Rejected,
        request_id: Some("req".into()),
        error: Some(
            SafeError::new("conflict", "no")
                .with_details(JsonText::compact(r#"{"a":[1,2]}"#).unwrap()),
        ),
        canonical: Some(JsonText::compact(r#"{"v":2}"#).unwrap()),
        at: 99,
    }));
    same(&op);
    same(&bare);
    same(&[op.clone(), bare][..]);
    let compacted = Compacted {
        id: "op-1".into(),
        compacted: true,
        outcome: Settlement::Applied,
        settled_at: 5,
        principal: None,
        replaced_by: Some("op-2".into()),
    };
    same(&compacted);
    for full in [true, false] {
        same(&Explanation {
            operation_id: "op-1".into(),
            state: "blocked",
            reason: "dead_letter".into(),
            canvas_id: full.then(|| "c1".into()),
            request_id: None,
            dependency_id: full.then(|| "op-0".into()),
            due_at: full.then_some(12),
            attempt: full.then_some(3),
            blockers: vec!["b".into()],
            held_canvas_ids: full.then(|| vec!["c1".into()]),
            release: full.then(|| vec!["retry".into()]),
        });
        same(&EventRecord {
            seq: 1,
            at: 2,
            kind: EventKind::RetryScheduled,
            request_id: Some("r".into()),
            operation_id: None,
            attempt: full.then_some(1),
            fence: Some(4),
            detail: full.then(|| "x".into()),
        });
    }
    // `operation(id)`: the record, or the tombstone's view, with nothing around either.
    let known = to_js(&Known::Tombstone(compacted.clone()));
    assert_eq!(
        js_sys::JSON::stringify(&known)
            .unwrap()
            .as_string()
            .unwrap(),
        json::to_string(&compacted)
    );
    // An integer a JS number cannot hold becomes the string of its digits, the object kept.
    let big = to_js(&JsonText::compact(r#"{"big":12345678901234567891,"ok":1}"#).unwrap());
    assert_eq!(
        js_sys::JSON::stringify(&big).unwrap().as_string().unwrap(),
        r#"{"big":"12345678901234567891","ok":1}"#
    );
}
