//! `JsonText`: compaction, equality by value, checks, members and items, against serde_json.
//! Property tests run a fixed number of cases from a fixed seed.
#![cfg(any(not(target_arch = "wasm32"), target_os = "wasi"))]

use super::*;

use std::fmt::Debug;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde_json::{Number, Value};

/// Runs a property for `cases` cases from a fixed seed (no persistence file).
fn check_cases<S>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let mut runner = TestRunner::new(Config {
        cases,
        rng_seed: RngSeed::Fixed(0x6a73_6f6e_7465_7374),
        failure_persistence: None,
        max_shrink_iters: 1_024,
        ..Config::default()
    });
    if let Err(failure) = runner.run(&strategy, test) {
        panic!("{failure}");
    }
}

/// serde_json's compact text of a value.
fn serde_text<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).expect("serde_json writes every Value")
}

fn any_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => any::<char>(),
            3 => (0u8..0x80).prop_map(char::from),
            2 => prop::sample::select(vec!['"', '\\', '/', '\u{7f}', '\u{2028}', '\n', '\t', '\u{0}']),
        ],
        0..10,
    )
    .prop_map(String::from_iter)
}

fn any_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<u64>().prop_map(Number::from),
        any::<i64>().prop_map(Number::from),
        any::<f64>().prop_filter_map("finite", Number::from_f64),
        (-1_000_000i32..1_000_000)
            .prop_filter_map("finite", |i| Number::from_f64(f64::from(i) / 100.0)),
    ]
}

/// Trees of at most four levels and a few dozen nodes.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any_number().prop_map(Value::Number),
        any_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any_string(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

fn nested_arrays(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

#[test]
fn compact_drops_layout_and_nothing_else() {
    let spaced = " { \"a\" : \"x \\\" y\\\\\" ,\n\t\"b\":[ 1 , 2e3 ,{ } ] , \"c d\" : \" \" } ";
    let compact = JsonText::compact(spaced).expect("JSON");
    assert_eq!(
        compact.text(),
        r#"{"a":"x \" y\\","b":[1,2e3,{}],"c d":" "}"#
    );
    for broken in ["", "{", "[1,]", "{} {}", "nul", "\"\\x\""] {
        assert!(JsonText::compact(broken).is_none(), "{broken:?}");
    }
    // Pretty-printed trees come back as serde_json's compact text.
    check_cases(300, any_value(), |value| {
        let pretty = serde_json::to_string_pretty(&value).expect("serializes");
        let compact = JsonText::compact(&pretty).expect("JSON");
        prop_assert_eq!(compact.text(), serde_text(&value));
        Ok(())
    });
}

#[test]
fn strings_objects_and_defaults() {
    assert_eq!(JsonText::string("a\"b\n").text(), r#""a\"b\n""#);
    assert_eq!(JsonText::default().text(), "null");
    assert!(JsonText::default().is_null() && !JsonText::string("null").is_null());
    let object = JsonText::from_json(&serde_json::json!({"k": "v", "n": 3}));
    assert_eq!(object.text(), r#"{"k":"v","n":3}"#);
}

/// Two texts are equal exactly when serde_json reads them as equal trees (numbers written
/// one way: serde_json's own text of each tree).
#[test]
fn equality_agrees_with_serde_json_trees() {
    check_cases(300, (any_value(), any_value()), |(a, b)| {
        let text_a = JsonText::compact(&serde_json::to_string_pretty(&a).expect("a")).expect("a");
        let text_b: JsonText = serde_json::from_str(&serde_text(&b)).expect("b");
        prop_assert_eq!(
            text_a == text_b,
            a == b,
            "{} / {}",
            serde_text(&a),
            serde_text(&b)
        );
        prop_assert!(text_a == JsonText::from_json(&a), "{}", serde_text(&a));
        Ok(())
    });
}

#[test]
fn members_read_an_object_as_a_map_would() {
    let text = r#"{"a":1,"s":"x\u0041","a":2,"n":null,"f":1.5,"neg":-1,"o":{"p":[]}}"#;
    let members = Members::of(text).expect("an object");
    assert_eq!(members.get("a"), Some("2"), "a later duplicate wins");
    assert_eq!(members.get("n"), Some("null"));
    assert_eq!(members.present("n"), None);
    assert_eq!(members.present("o"), Some(r#"{"p":[]}"#));
    assert_eq!(members.get("missing"), None);
    assert_eq!(members.str("s").as_deref(), Some("xA"));
    assert_eq!(members.str("a"), None, "not a string");
    assert_eq!(members.u64("a"), Some(2));
    assert_eq!(members.u64("f"), None, "not an integer");
    assert_eq!(members.u64("neg"), None, "not unsigned");
    for not_an_object in ["[]", "\"{}\"", "1", "{", "{} x", ""] {
        assert!(Members::of(not_an_object).is_none(), "{not_an_object:?}");
    }
    assert_eq!(
        items(" [1, {\"a\":[2]} ,\"x\"] "),
        Some(vec!["1", "{\"a\":[2]}", "\"x\""])
    );
    assert_eq!(items("[]"), Some(Vec::new()));
    for not_an_array in ["{}", "[1,]", "[1] 2", "null"] {
        assert!(items(not_an_array).is_none(), "{not_an_array:?}");
    }
}

#[test]
fn integers_js_would_change_are_found_outside_strings_only() {
    let max = (1u64 << 53) - 1;
    for fine in [
        format!("[{max},-{max},0,-0]"),
        format!("{{\"a\":\"{}\"}}", u64::MAX),
        format!("[\"\\\"{}\"]", u64::MAX),
        "[1e300,9007199254740993.0,-1.5e-7]".to_owned(),
        "{}".to_owned(),
    ] {
        assert!(!exceeds_js_integers(&fine), "{fine}");
    }
    for beyond in [
        format!("[{}]", max + 1),
        format!("{{\"a\":{{\"b\":-{}}}}}", max + 1),
        format!("[\"x\",{}]", u64::MAX),
        "123456789012345678901234567890".to_owned(),
    ] {
        assert!(exceeds_js_integers(&beyond), "{beyond}");
    }
}

#[test]
fn only_the_integers_js_would_change_are_quoted() {
    let max = (1u64 << 53) - 1;
    for fine in [
        format!("[{max},-{max},0,-0]"),
        format!("[\"\\\"{}\"]", u64::MAX),
        "[1e300,9007199254740993.0,-1.5e-7]".to_owned(),
    ] {
        assert_eq!(quote_js_integers(&fine), fine);
    }
    let text = format!(
        "{{\"a\":{},\"b\":[-{},\"{}\",1.5],\"c\":123456789012345678901234567890}}",
        max + 1,
        u64::MAX,
        u64::MAX
    );
    let quoted = quote_js_integers(&text);
    assert_eq!(
        quoted,
        format!(
            "{{\"a\":\"{}\",\"b\":[\"-{}\",\"{}\",1.5],\"c\":\"123456789012345678901234567890\"}}",
            max + 1,
            u64::MAX,
            u64::MAX
        )
    );
    assert!(!exceeds_js_integers(&quoted));
    assert!(serde_json::from_str::<serde_json::Value>(&quoted).is_ok());
}

/// What `RawValue` alone lets through, a kept text refuses: a lone surrogate escape and
/// nesting past serde_json's limit; a payload check also refuses depth past its own limit and
/// `__proto__` keys.
#[test]
fn kept_text_is_checked_as_serde_json_reads_strings() {
    for bad in [r#""\ud800""#, r#"["\udc00"]"#, r#"{"a":"\ud800x"}"#] {
        assert!(serde_json::from_str::<JsonText>(bad).is_err(), "{bad}");
        assert!(JsonText::compact(bad).is_none(), "{bad}");
    }
    let pair = r#""\ud83d\ude00""#;
    assert_eq!(
        serde_json::from_str::<JsonText>(pair)
            .expect("a pair")
            .text(),
        pair
    );
    assert!(serde_json::from_str::<JsonText>(&nested_arrays(MAX_DEPTH)).is_ok());
    assert!(serde_json::from_str::<JsonText>(&nested_arrays(MAX_DEPTH + 1)).is_err());
    assert!(check(&nested_arrays(3), 3, false).is_ok());
    assert!(matches!(
        check(&nested_arrays(4), 3, false),
        Err(ShapeError::TooDeep)
    ));
    assert!(
        matches!(check("[[1]]", 2, false), Err(ShapeError::TooDeep)),
        "scalars count"
    );
    let proto = r#"{"a":{"__proto__":1}}"#;
    assert!(check(proto, 8, false).is_ok());
    assert!(matches!(check(proto, 8, true), Err(ShapeError::ProtoKey)));
    assert!(matches!(
        check("[1,]", 8, true),
        Err(ShapeError::NotJson(_))
    ));
    assert!(matches!(check("1 2", 8, true), Err(ShapeError::NotJson(_))));
    // Layout is kept as read.
    let spaced = "{ \"a\" : [1, 2] }";
    assert_eq!(
        serde_json::from_str::<JsonText>(spaced)
            .expect("JSON")
            .text(),
        spaced
    );
}

/// A view's writer flags an integer JS cannot hold, whether the view wrote it or it is inside
/// JSON kept as text; storage's writer flags only the former.
#[test]
fn a_view_is_flagged_for_integers_beyond_js_in_its_kept_text_too() {
    #[derive(serde::Serialize)]
    struct View {
        sequence: u64,
        payload: JsonText,
    }
    let kept = |text: &str| JsonText::from_json(&serde_json::from_str::<&RawValue>(text).unwrap());
    let plain = View {
        sequence: 7,
        payload: kept(r#"{"x":1,"big":"12345678901234567890"}"#),
    };
    assert!(
        !write_view_flagging(&plain).unwrap().1,
        "a string of digits is not a number"
    );
    let in_text = View {
        sequence: 7,
        payload: kept(r#"{"x":12345678901234567890}"#),
    };
    let (text, flagged) = write_view_flagging(&in_text).unwrap();
    assert!(flagged);
    assert_eq!(
        quote_js_integers(&text),
        r#"{"sequence":7,"payload":{"x":"12345678901234567890"}}"#
    );
    assert!(
        !write_flagging(&in_text).unwrap().1,
        "storage keeps kept text as it is"
    );
    let written = View {
        sequence: 1 << 60,
        payload: kept("{}"),
    };
    assert!(write_view_flagging(&written).unwrap().1);
    assert!(write_flagging(&written).unwrap().1);
}
