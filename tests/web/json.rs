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
