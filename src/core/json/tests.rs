//! The hand-written JSON against serde_json, which it replaces: the writer's bytes equal
//! `serde_json::to_string`'s, the reader accepts and refuses what `serde_json::from_str`
//! does (with the same values), and records from [`json_record!`] read and write as the
//! equivalent serde-derived structs did. Property tests run a fixed number of cases from a
//! fixed seed, so every run checks the same inputs.
#![cfg(not(target_arch = "wasm32"))]

use super::*;

use std::fmt::Debug;

use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{json, Number};

// ---------------------------------------------------------------------------------------------
// Helpers.

/// Runs a property for `cases` cases from a fixed seed (no persistence file).
fn check<S>(cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
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

/// Whether two numbers agree: the same kind (unsigned, negative, float), integers equal,
/// floats equal to the bit or at most two units in the last place from serde_json's. Its
/// default float parser is not correctly rounded: on 3 million random decimal texts it was
/// one unit off for a quarter and two units off for 0.14%, never more. Ours is (Rust's
/// `str::parse`), checked in [`verdicts_agree`] where the number's text is known.
fn same_number(ours: &Number, theirs: &Number) -> bool {
    if ours.is_f64() != theirs.is_f64() || ours.is_u64() != theirs.is_u64() {
        return false;
    }
    match (ours.as_f64(), theirs.as_f64()) {
        (Some(a), Some(b)) if ours.is_f64() => {
            let (a, b) = (a.to_bits(), b.to_bits());
            a == b || (a >> 63 == b >> 63 && a.abs_diff(b) <= 2)
        }
        _ => ours == theirs,
    }
}

/// Whether two trees agree, numbers as [`same_number`] and keys in the same order.
fn same_value(ours: &Value, theirs: &Value) -> bool {
    match (ours, theirs) {
        (Value::Number(a), Value::Number(b)) => same_number(a, b),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
        }
        _ => ours == theirs,
    }
}

/// Whether [`parse`] and `serde_json::from_str::<Value>` agree on `text`: both refuse it, or
/// both read it as the same tree. A float read alone is also checked against Rust's
/// correctly rounded parse of the text.
fn verdicts_agree(text: &str) -> Result<(), String> {
    let ours = parse(text);
    let theirs = serde_json::from_str::<Value>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) if same_value(a, b) => {}
        (Err(_), Err(_)) => {}
        _ => return Err(format!("{text:?}: ours {ours:?}, serde_json {theirs:?}")),
    }
    if let Ok(Value::Number(number)) = &ours {
        if number.is_f64() {
            let expected = text
                .trim()
                .parse::<f64>()
                .map_err(|e| format!("{text:?}: {e}"))?;
            let read = number.as_f64().unwrap_or(f64::NAN);
            if read.to_bits() != expected.to_bits() {
                return Err(format!(
                    "{text:?}: read {read:e}, correctly rounded {expected:e}"
                ));
            }
        }
    }
    Ok(())
}

#[track_caller]
fn assert_verdicts_agree(text: &str) {
    if let Err(message) = verdicts_agree(text) {
        panic!("{message}");
    }
}

/// Whether [`Reader::raw`] agrees with serde_json's `RawValue` on `text` (a whole text):
/// the same span when both take it; ours may refuse more (lone surrogates, nesting deeper
/// than [`MAX_DEPTH`]: what a `Value` refuses), never less.
fn raw_agrees(text: &str) -> Result<(), String> {
    let mut reader = Reader::new(text);
    let ours = reader.raw().and_then(|raw| reader.end().map(|()| raw));
    let theirs = serde_json::from_str::<Box<RawValue>>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) if *a == b.get() => Ok(()),
        (Err(_), Err(_)) => Ok(()),
        (Err(_), Ok(_)) if serde_json::from_str::<Value>(text).is_err() => Ok(()),
        _ => Err(format!("{text:?}: ours {ours:?}, serde_json {theirs:?}")),
    }
}

/// Reads `text` as a `T` with both [`from_str`] and serde_json (a derived or std
/// `Deserialize`) and checks they agree; returns ours.
#[track_caller]
fn typed_parity<T>(text: &str) -> Result<T, JsonError>
where
    T: FromJson + DeserializeOwned + PartialEq + Debug,
{
    let ours = from_str::<T>(text);
    let theirs = serde_json::from_str::<T>(text);
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{text:?}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{text:?}: ours {ours:?}, serde_json {theirs:?}"),
    }
    ours
}

fn nested_arrays(depth: usize) -> String {
    "[".repeat(depth) + &"]".repeat(depth)
}

fn nested_objects(depth: usize) -> String {
    "{\"a\":".repeat(depth) + "1" + &"}".repeat(depth)
}

// ---------------------------------------------------------------------------------------------
// Strategies.

/// Characters a string is made of: any, ASCII (so control characters often), and the ones
/// escaping cares about.
fn any_char() -> impl Strategy<Value = char> {
    prop_oneof![
        3 => any::<char>(),
        3 => (0u8..0x80).prop_map(char::from),
        2 => prop::sample::select(vec![
            '"', '\\', '/', '\u{7f}', '\u{80}', '\u{2028}', '\u{feff}', 'é', '😀', '\u{10ffff}',
            '\u{0}', '\u{1f}', '\n', '\t',
        ]),
    ]
}

fn any_string() -> impl Strategy<Value = String> {
    prop::collection::vec(any_char(), 0..10).prop_map(String::from_iter)
}

/// Finite floats: random bit patterns (every exponent, subnormals), proptest's floats, the
/// usual suspects, and short decimals.
fn any_float() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        any::<f64>(),
        prop::sample::select(vec![
            0.0,
            -0.0,
            1.5,
            0.1,
            1e21,
            1e20,
            1e-7,
            1e-6,
            1e15,
            1e16,
            1e17,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            5e-324,
            -5e-324,
            9007199254740993.0,
            123456789.0,
        ]),
        (-1_000_000i32..1_000_000).prop_map(|i| f64::from(i) / 100.0),
    ]
    .prop_filter("finite", |f| f.is_finite())
}

fn any_number() -> impl Strategy<Value = Number> {
    prop_oneof![
        any::<u64>().prop_map(Number::from),
        any::<i64>().prop_map(Number::from),
        (0u64..1_000).prop_map(Number::from),
        prop::sample::select(vec![u64::MAX, 0, i64::MAX as u64, 1 << 53]).prop_map(Number::from),
        prop::sample::select(vec![i64::MIN, -1]).prop_map(Number::from),
        any_float().prop_filter_map("finite", Number::from_f64),
    ]
}

/// Trees of bounded size (at most four levels, a few dozen nodes).
fn any_value() -> impl Strategy<Value = Value> {
    value_of_size(4, 48)
}

/// Trees of at most `depth` levels and about `size` nodes.
fn value_of_size(depth: u32, size: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any_number().prop_map(Value::Number),
        any_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(depth, size, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any_string(), inner), 0..6)
                .prop_map(|members| Value::Object(members.into_iter().collect())),
        ]
    })
}

// ---------------------------------------------------------------------------------------------
// 1. The writer writes serde_json's bytes.

#[track_caller]
fn assert_writes_like_serde(value: &Value) {
    assert_eq!(to_string(value), serde_text(value), "{value:?}");
}

#[test]
fn writer_escapes_every_control_character_as_serde_json_does() {
    for byte in 0u8..0x20 {
        let text = format!("a{}b", char::from(byte));
        assert_writes_like_serde(&Value::String(text.clone()));
        let mut escaped = String::new();
        escape_into(&mut escaped, &text);
        assert_eq!(escaped, serde_text(&text), "byte {byte:#04x}");
    }
    let all: String = (0u8..0x20).map(char::from).collect();
    assert_writes_like_serde(&Value::String(all.clone()));
    assert_eq!(
        to_string(&Value::String(all)),
        "\"\\u0000\\u0001\\u0002\\u0003\\u0004\\u0005\\u0006\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b\\u001c\\u001d\\u001e\\u001f\""
    );
}

#[test]
fn writer_strings_match_serde_json() {
    let strings = [
        "",
        "plain",
        "\"",
        "\\",
        "\"\\\"",
        "a\"b\\c/d",
        "\u{7f}",
        "\u{80}\u{9f}\u{a0}",
        "é",
        "日本語",
        "😀",
        "a😀b\u{10ffff}",
        "\u{2028}\u{2029}",
        "\u{feff}",
        "</script>",
        "tab\there\r\nnext",
        "\u{0}",
    ];
    for text in strings {
        assert_writes_like_serde(&Value::String(text.to_owned()));
        assert_eq!(to_string(text), serde_text(text), "{text:?}");
        // The same escapes in keys.
        assert_writes_like_serde(&json!({ text: text }));
    }
    // Every ASCII character and a few others, alone.
    for code in (0u32..0x100).chain([0x2028, 0xfffd, 0x1f600, 0x10ffff]) {
        let text = char::from_u32(code).map(String::from).unwrap_or_default();
        assert_writes_like_serde(&Value::String(text));
    }
}

#[test]
fn writer_numbers_match_serde_json() {
    let floats = [
        1.5,
        -1.5,
        1e21,
        1e20,
        1e-7,
        1e-6,
        0.1,
        0.0,
        -0.0,
        1.0,
        -1.0,
        100_000.0,
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::EPSILON,
        1.7976931348623157e308,
        9007199254740993.0,
        0.30000000000000004,
        123_456_789.123_456_79,
        1e16,
        1e15,
        12345678901234567890.0,
    ];
    for float in floats {
        let value = Value::Number(Number::from_f64(float).expect("finite"));
        assert_writes_like_serde(&value);
    }
    assert_eq!(to_string(&json!(-0.0)), "-0.0");
    assert_eq!(to_string(&json!(1e21)), "1e+21");
    assert_eq!(to_string(&json!(1.5)), "1.5");
    for int in [
        0,
        1,
        9,
        10,
        99,
        100,
        u64::from(u32::MAX),
        i64::MAX as u64,
        u64::MAX,
    ] {
        assert_writes_like_serde(&json!(int));
        assert_eq!(to_string(&int), serde_text(&int));
    }
    for int in [i64::MIN, i64::MIN + 1, -1, -9, -10, -1_000_000_007] {
        assert_writes_like_serde(&json!(int));
    }
    assert_eq!(to_string(&json!(u64::MAX)), "18446744073709551615");
    assert_eq!(to_string(&json!(i64::MIN)), "-9223372036854775808");
    for small in [0u32, 7, u32::MAX] {
        assert_eq!(to_string(&small), serde_text(&small));
    }
}

#[test]
fn writer_trees_match_serde_json() {
    let trees = [
        json!(null),
        json!(true),
        json!(false),
        json!([]),
        json!({}),
        json!([[]]),
        json!([{}]),
        json!({"a": {}}),
        json!({"a": []}),
        json!([[], {}, [[]], [{}], {"x": [{}]}]),
        json!([null, true, false, 0, -1, 1.5, "s", [1, [2, [3]]], {"k": {"k": {"k": null}}}]),
        json!({"z": 1, "a": 2, "m": [3], "": 4, "\u{0}": 5, "é": 6, "😀": 7}),
        json!({"nested": {"deeper": {"deepest": [1, 2, {"x": "y"}]}}, "after": true}),
    ];
    for tree in &trees {
        assert_writes_like_serde(tree);
    }
    let mut deep = json!(1);
    for level in 0..100 {
        deep = if level % 2 == 0 {
            json!([deep])
        } else {
            json!({ "k": deep })
        };
    }
    assert_writes_like_serde(&deep);
}

#[test]
fn writer_api_separates_members_and_keys() {
    let mut writer = Writer::new();
    writer.object();
    writer.key("a");
    writer.raw("[1, 2]");
    writer.key("b");
    writer.array();
    writer.u64(1);
    writer.i64(-2);
    writer.i64(i64::MIN);
    writer.i64(3);
    writer.null();
    writer.bool(true);
    writer.bool(false);
    writer.str("s\"");
    writer.number(&Number::from_f64(0.5).expect("finite"));
    writer.array();
    writer.end_array();
    writer.object();
    writer.end_object();
    writer.value(&json!({"x": [1]}));
    writer.end_array();
    writer.key("c");
    writer.object();
    writer.key("d");
    writer.null();
    writer.end_object();
    writer.key("e");
    writer.value(&json!([]));
    writer.end_object();
    assert_eq!(
        writer.finish(),
        r#"{"a":[1, 2],"b":[1,-2,-9223372036854775808,3,null,true,false,"s\"",0.5,[],{},{"x":[1]}],"c":{"d":null},"e":[]}"#
    );

    // Top-level scalars, and several top-level values back to back (no separator).
    let mut writer = Writer::new();
    writer.u64(0);
    assert_eq!(writer.finish(), "0");
    assert_eq!(Writer::new().finish(), "");
}

#[test]
fn to_json_impls_match_serde_json() {
    let text = String::from("x\u{1}");
    assert_eq!(to_string(&text), serde_text(&text));
    assert_eq!(to_string(&&text), serde_text(&&text));
    assert_eq!(to_string(&Box::new(7u64)), serde_text(&Box::new(7u64)));
    assert_eq!(to_string(&true), serde_text(&true));
    assert_eq!(to_string(&Some(3u32)), serde_text(&Some(3u32)));
    assert_eq!(to_string(&None::<u32>), serde_text(&None::<u32>));
    let list = vec![Some(1u64), None, Some(u64::MAX)];
    assert_eq!(to_string(&list), serde_text(&list));
    assert_eq!(to_string(list.as_slice()), serde_text(list.as_slice()));
    assert_eq!(
        to_string(&Vec::<u64>::new()),
        serde_text(&Vec::<u64>::new())
    );
    let map: BTreeMap<String, Vec<String>> = [
        ("b".to_owned(), vec!["1".to_owned()]),
        ("a".to_owned(), vec![]),
        ("\"".to_owned(), vec!["\n".to_owned()]),
    ]
    .into_iter()
    .collect();
    assert_eq!(to_string(&map), serde_text(&map));
    assert_eq!(
        to_string(&BTreeMap::<String, u64>::new()),
        serde_text(&BTreeMap::<String, u64>::new())
    );
    assert!(None::<u64>.absent());
    assert!(!Some(0u64).absent());
    assert!(BTreeMap::<String, u64>::new().absent());
    assert!(!map.absent());
    assert!(<&Option<u64> as ToJson>::absent(&&None));
    assert!(!Vec::<u64>::new().absent());
    assert_eq!(to_string(&usize::MAX), serde_text(&usize::MAX));
    let members = [("b", json!(1)), ("a", json!([2])), ("b", json!(3))];
    assert_eq!(object(members), json!({"a": [2], "b": 3}));
}

#[test]
fn random_trees_write_like_serde_json_and_read_back() {
    check(500, any_value(), |value| {
        let ours = to_string(&value);
        prop_assert_eq!(&ours, &serde_text(&value));
        let read = parse(&ours);
        prop_assert_eq!(read.as_ref(), Ok(&value));
        // Equal as text too (tells -0.0 from 0.0 and the number kinds apart).
        prop_assert_eq!(to_string(&read.unwrap_or(Value::Null)), ours.clone());
        let pretty = serde_json::to_string_pretty(&value).expect("serde_json writes every Value");
        prop_assert_eq!(parse(&pretty), Ok(value.clone()));
        Ok(())
    });
}

#[test]
fn random_floats_write_like_serde_json_and_read_back_exactly() {
    check(3_000, any_float(), |float| {
        let value = Value::Number(Number::from_f64(float).expect("finite"));
        let text = to_string(&value);
        prop_assert_eq!(&text, &serde_text(&value));
        let read = parse(&text).ok().and_then(|v| v.as_f64());
        prop_assert_eq!(read.map(f64::to_bits), Some(float.to_bits()), "{}", text);
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// 2. The reader accepts and refuses what serde_json does.

/// Texts serde_json reads as a `Value`.
const ACCEPTED: &[&str] = &[
    "0",
    "-0",
    "0.0",
    "-0.0",
    "-0e0",
    "-0E-0",
    "0e0",
    "0E+0",
    "1",
    "-1",
    "1.5",
    "-1.5",
    "1e5",
    "1E5",
    "1e+5",
    "1e-5",
    "1E-5",
    "1.25e3",
    "1.5e300",
    "123456789012345678",
    "9007199254740993",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775809",
    "-18446744073709551615",
    "-18446744073709551616",
    "-99999999999999999999999999999",
    "1e-400",
    "-1e-400",
    "0e400",
    "0.0e99999",
    "2.2250738585072014e-308",
    "2.2250738585072011e-308",
    "5e-324",
    "4.9e-324",
    "2e-324",
    "1.7976931348623157e308",
    "-1.7976931348623157e308",
    "0.1",
    "0.30000000000000004",
    "1.00000000000000000000000000000000000001",
    "true",
    "false",
    "null",
    "\"\"",
    "\"abc\"",
    r#""\"\\\/\b\f\n\r\t""#,
    r#""\u0041\u00e9\u20AC\uFFFF""#,
    r#""\ud83d\ude00""#,
    r#""\uD83D\uDE00""#,
    r#""\ud800\udc00""#,
    r#""\udbff\udfff""#,
    r#""\u0000""#,
    r#""a\u001fb""#,
    "\"é😀\u{7f}\u{2028}\"",
    "[]",
    "{}",
    "[[]]",
    "[{}]",
    "{\"a\":{}}",
    " \t\n\r[ \t\n\r1 \t\n\r, \t\n\r{ \t\n\r\"a\" \t\n\r: \t\n\rnull \t\n\r} \t\n\r] \t\n\r",
    " 1 ",
    "\n\"x\"\n",
    "[1,\"2\",[3],{\"4\":5},true,false,null,-0.5]",
    "{\"a\":1,\"a\":2}",
    "{\"a\":[1],\"b\":0,\"a\":{\"c\":null}}",
    "{\"\\u0061\":1,\"a\":2}",
    "{\"b\":1,\"a\":2,\"c\":[true,false,null]}",
    "{\"\":0}",
    "{\"é\":\"😀\"}",
];

/// Texts serde_json refuses.
const REJECTED: &[&str] = &[
    "",
    " ",
    "\n\t",
    "[1,]",
    "{\"a\":1,}",
    "[,1]",
    "{,}",
    "[,]",
    "[1,,2]",
    "{\"a\":1,,\"b\":2}",
    "{\"a\":1,\"b\"}",
    "01",
    "-01",
    "00",
    "-00",
    "[01]",
    "-",
    "[-]",
    "--1",
    "+1",
    "1.",
    "-1.",
    "[1.]",
    ".5",
    "-.5",
    "1.e5",
    "1e",
    "1e+",
    "1e-",
    "1E",
    "[1e]",
    "1ee5",
    "1e5.0",
    "1.5.2",
    "0x10",
    "1_000",
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "[1e400]",
    "1e99999999999999999999",
    "1.7976931348623159e308",
    "tru",
    "nul",
    "nulll",
    "True",
    "NULL",
    "truefalse",
    "[nul]",
    r#""\ud800""#,
    r#""\udc00""#,
    r#""\udfff""#,
    r#""\ud800\u0041""#,
    r#""\ud800\ud800""#,
    r#""\ude00\ud83d""#,
    r#""\ud800\n""#,
    r#""\ud800x""#,
    r#""\ud800\""#,
    r#""\ud800\u""#,
    r#""\ud800\udc0""#,
    r#""\x""#,
    r#""\u12""#,
    r#""\u12"x"#,
    r#""\uZZZZ""#,
    r#""\u00g0""#,
    r#""\u+123""#,
    r#""\U0041""#,
    r#""\'""#,
    r#""\a""#,
    r#""\0""#,
    "\"\\",
    "\"abc",
    "\"",
    "\"\\u",
    "\"\\u00",
    "1 2",
    "{} x",
    "[] ]",
    "[]]",
    "{}}",
    "\"a\" \"b\"",
    "null,",
    "[1 2]",
    "{\"a\" 1}",
    "{\"a\":1 \"b\":2}",
    "{1:2}",
    "{a:1}",
    "{'a':1}",
    "{\"a\"}",
    "{\"a\":}",
    "{\"a\"::1}",
    "{\"a\",1}",
    "[1:2]",
    "[",
    "]",
    "{",
    "}",
    "[1",
    "[1,",
    "{\"a\":1",
    "{\"a\"",
    "[}",
    "{]",
    "[1}",
    "{\"a\":1]",
    "\u{feff}1",
    "\u{a0}1",
    "\u{c}1",
    "1\u{c}",
    "\u{b}1",
    "/*c*/1",
    "[1]//",
    "'a'",
    "\"a\tb\"",
    "\"a\nb\"",
    "\"\u{0}\"",
    "\"\u{1f}\"",
];

#[test]
fn reader_accepts_what_serde_json_accepts() {
    for text in ACCEPTED {
        assert!(
            serde_json::from_str::<Value>(text).is_ok(),
            "corpus: serde_json refuses {text:?}"
        );
        assert_verdicts_agree(text);
        // Inside an array and as an object member too.
        assert_verdicts_agree(&format!("[{text}]"));
        assert_verdicts_agree(&format!("[0,{text},0]"));
        assert_verdicts_agree(&format!("{{\"k\":{text}}}"));
    }
}

#[test]
fn reader_refuses_what_serde_json_refuses() {
    for text in REJECTED {
        assert!(
            serde_json::from_str::<Value>(text).is_err(),
            "corpus: serde_json reads {text:?}"
        );
        assert!(
            parse(text).is_err(),
            "ours reads {text:?}: {:?}",
            parse(text)
        );
        assert_verdicts_agree(&format!("[{text}]"));
        assert_verdicts_agree(&format!("{{\"k\":{text}}}"));
        assert_verdicts_agree(&format!("[0,{text}]"));
    }
}

#[test]
fn raw_control_characters_are_refused_and_escaped_ones_read() {
    for byte in 0u8..0x20 {
        let raw = format!("\"a{}b\"", char::from(byte));
        assert!(parse(&raw).is_err(), "{raw:?}");
        assert_verdicts_agree(&raw);
        let escaped = format!("\"a\\u{byte:04x}b\"");
        assert_eq!(
            parse(&escaped),
            Ok(Value::String(format!("a{}b", char::from(byte))))
        );
        assert_verdicts_agree(&escaped);
        // A raw control character in a key is refused too.
        assert_verdicts_agree(&format!("{{\"k{}\":1}}", char::from(byte)));
    }
    assert_eq!(parse("\"\u{7f}\""), Ok(json!("\u{7f}")));
}

#[test]
fn reader_values_are_serde_json_values() {
    assert_eq!(parse("-0").map(|v| to_string(&v)), Ok("-0.0".to_owned()));
    assert!(parse("-0").is_ok_and(|v| v.is_f64()));
    assert_eq!(parse("0"), Ok(json!(0)));
    assert!(parse("0").is_ok_and(|v| v.is_u64()));
    assert_eq!(parse("1E5"), Ok(json!(100_000.0)));
    assert_eq!(parse("18446744073709551615"), Ok(json!(u64::MAX)));
    assert_eq!(
        parse("18446744073709551616"),
        Ok(json!(18446744073709551616.0))
    );
    assert_eq!(parse("-9223372036854775808"), Ok(json!(i64::MIN)));
    assert_eq!(
        parse("-9223372036854775809"),
        Ok(json!(-9223372036854775809.0))
    );
    assert_eq!(parse("1e-400"), Ok(json!(0.0)));
    assert_eq!(parse(r#""\ud83d\ude00""#), Ok(json!("😀")));
    assert_eq!(parse("{\"a\":1,\"a\":2}"), Ok(json!({"a": 2})));
    let text = "{\"b\":[1],\"a\":0,\"b\":{}}";
    assert_eq!(parse(text), Ok(json!({"a": 0, "b": {}})));
    assert_eq!(parse(text).ok(), serde_json::from_str::<Value>(text).ok());
    assert_eq!(
        parse(" { \"k\" : [ 1 , true , null ] } "),
        Ok(json!({"k": [1, true, null]}))
    );
}

#[test]
fn number_texts_read_as_serde_json_reads_them() {
    let mut texts: Vec<String> = Vec::new();
    // Long mantissas, long fractions, big and small exponents.
    texts.push("1".repeat(400));
    texts.push(format!("-{}", "9".repeat(30)));
    texts.push(format!("0.{}1", "0".repeat(400)));
    texts.push(format!("1{}e-400", "0".repeat(400)));
    texts.push(format!("0.{}e400", "1".repeat(50)));
    texts.push(format!("{}.{}", "1".repeat(20), "1".repeat(20)));
    for exponent in [
        -330, -325, -324, -323, -308, -307, 0, 1, 15, 16, 22, 23, 307, 308, 309,
    ] {
        texts.push(format!("1e{exponent}"));
        texts.push(format!("-9.99e{exponent}"));
    }
    for text in &texts {
        assert_verdicts_agree(text);
    }
}

#[test]
fn random_number_texts_read_as_serde_json_reads_them() {
    let valid = "-?(0|[1-9][0-9]{0,24})(\\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?";
    let junk = "[-+0-9.eE]{1,12}";
    check(1_000, prop_oneof![3 => valid, 1 => junk], |text| {
        verdicts_agree(&text).map_err(TestCaseError::fail)?;
        verdicts_agree(&format!("[{text}]")).map_err(TestCaseError::fail)
    });
}

#[test]
fn nesting_is_limited_as_in_serde_json() {
    // serde_json's recursion budget of 128 refuses the 128th level: 127 levels read.
    assert_eq!(MAX_DEPTH, 127);
    for depth in [1, 2, 126, 127, 128, 129, 1_000, 100_000] {
        assert_verdicts_agree(&nested_arrays(depth));
        assert_verdicts_agree(&nested_objects(depth));
        // Unclosed.
        assert_verdicts_agree(&"[".repeat(depth));
        assert_verdicts_agree(&"{\"a\":".repeat(depth));
    }
    assert!(parse(&nested_arrays(MAX_DEPTH)).is_ok());
    assert!(parse(&nested_objects(MAX_DEPTH)).is_ok());
    assert!(parse(&nested_arrays(MAX_DEPTH + 1)).is_err());
    assert!(parse(&nested_objects(MAX_DEPTH + 1)).is_err());
    // Mixed arrays and objects.
    let mixed = |depth: usize| "[{\"a\":".repeat(depth / 2) + "1" + &"}]".repeat(depth / 2);
    for depth in [126, 128, 130] {
        assert_verdicts_agree(&mixed(depth));
    }
    // Closing a container gives its level back: siblings each nearly as deep as the limit.
    let sibling = nested_arrays(MAX_DEPTH - 1);
    let member = nested_arrays(MAX_DEPTH - 2);
    let siblings = format!("[{sibling},{sibling},{{\"a\":{member},\"b\":{member}}}]");
    assert!(parse(&siblings).is_ok());
    assert_verdicts_agree(&siblings);
    let too_deep = format!("[{sibling},[{sibling}]]");
    assert!(parse(&too_deep).is_err());
    assert_verdicts_agree(&too_deep);
}

/// Characters a mutation inserts: JSON's punctuation, pieces of numbers, literals and
/// escapes, whitespace (allowed and not), control characters, non-ASCII.
const MUTATION_CHARS: &[char] = &[
    '{', '}', '[', ']', ',', ':', '"', '\\', '/', '0', '1', '9', '-', '+', '.', 'e', 'E', 't', 'f',
    'n', 'u', 'l', 'a', 'd', '8', 'x', ' ', '\n', '\t', '\r', '\u{0}', '\u{1f}', '\u{7f}', '\u{c}',
    'é', '😀', '\u{a0}', '\u{feff}',
];

/// One edit of a text, at an index drawn from its length.
#[derive(Clone, Debug)]
enum Edit {
    Insert(Index, char),
    Delete(Index),
    Replace(Index, char),
    /// Copies a short run of characters elsewhere.
    Copy(Index, Index, usize),
    Truncate(Index),
}

fn any_edit() -> impl Strategy<Value = Edit> {
    let mutation_char = prop::sample::select(MUTATION_CHARS);
    prop_oneof![
        4 => (any::<Index>(), mutation_char.clone()).prop_map(|(at, c)| Edit::Insert(at, c)),
        3 => any::<Index>().prop_map(Edit::Delete),
        4 => (any::<Index>(), mutation_char).prop_map(|(at, c)| Edit::Replace(at, c)),
        1 => (any::<Index>(), any::<Index>(), 1usize..8)
            .prop_map(|(from, to, len)| Edit::Copy(from, to, len)),
        1 => any::<Index>().prop_map(Edit::Truncate),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for edit in edits {
        let len = chars.len();
        match *edit {
            Edit::Insert(ref at, c) => chars.insert(at.index(len + 1), c),
            Edit::Delete(ref at) if len > 0 => {
                chars.remove(at.index(len));
            }
            Edit::Replace(ref at, c) if len > 0 => chars[at.index(len)] = c,
            Edit::Copy(ref from, ref to, run) if len > 0 => {
                let from = from.index(len);
                let piece: Vec<char> = chars[from..(from + run).min(len)].to_vec();
                let to = to.index(len + 1);
                chars.splice(to..to, piece);
            }
            Edit::Truncate(ref at) => chars.truncate(at.index(len + 1)),
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// Valid texts to mutate: the accepted corpus, random (small) trees written compact and
/// pretty.
fn any_valid_text() -> impl Strategy<Value = String> {
    prop_oneof![
        1 => prop::sample::select(ACCEPTED).prop_map(str::to_owned),
        2 => value_of_size(3, 16).prop_map(|v| serde_text(&v)),
        1 => value_of_size(3, 16)
            .prop_map(|v| serde_json::to_string_pretty(&v).expect("serde_json writes every Value")),
    ]
}

#[test]
fn mutated_texts_get_serde_json_verdicts() {
    let strategy = (any_valid_text(), prop::collection::vec(any_edit(), 1..4))
        .prop_map(|(text, edits)| apply(&text, &edits));
    check(2_000, strategy, |text| {
        verdicts_agree(&text).map_err(TestCaseError::fail)?;
        raw_agrees(&text).map_err(TestCaseError::fail)
    });
}

#[test]
fn error_reports_where_and_what() {
    let error = parse("[1,]").expect_err("a trailing comma");
    assert_eq!(error.at, 3);
    assert_eq!(error.to_string(), format!("{} at byte 3", error.message));
    assert!(parse("1 2").is_err_and(|e| e.message == "trailing characters" && e.at == 2));
    assert!(parse("").is_err_and(|e| e.at == 0));
}

// ---------------------------------------------------------------------------------------------
// 3. The pull API: raw spans, skipping, borrowed strings.

#[test]
fn raw_is_the_exact_span_of_the_next_value() {
    let text =
        " { \"a\" : [1, 2 ,{\"x\" :\"}\"}] , \"b\": \"x\\\"y\" , \"c\":-1.5e3,\"d\" :null } ";
    let mut reader = Reader::new(text);
    reader.object().expect("an object");
    assert_eq!(reader.key().expect("a key").as_deref(), Some("a"));
    assert_eq!(reader.raw(), Ok("[1, 2 ,{\"x\" :\"}\"}]"));
    assert_eq!(reader.key().expect("a key").as_deref(), Some("b"));
    assert_eq!(reader.raw(), Ok("\"x\\\"y\""));
    assert_eq!(reader.key().expect("a key").as_deref(), Some("c"));
    assert_eq!(reader.raw(), Ok("-1.5e3"));
    assert_eq!(reader.key().expect("a key").as_deref(), Some("d"));
    assert_eq!(reader.raw(), Ok("null"));
    assert_eq!(reader.key(), Ok(None));
    assert_eq!(reader.end(), Ok(()));

    let mut reader = Reader::new("  [1 , {\"a\":[]}]  ");
    assert_eq!(reader.raw(), Ok("[1 , {\"a\":[]}]"));
    assert_eq!(reader.end(), Ok(()));

    let mut reader = Reader::new("[true,false ,\"\"]");
    reader.array().expect("an array");
    let mut items = Vec::new();
    while reader.item().expect("an item or the end") {
        items.push(reader.raw().expect("a value"));
    }
    assert_eq!(items, ["true", "false", "\"\""]);
    assert_eq!(reader.end(), Ok(()));

    // Raw checks what it spans.
    for bad in ["[1,]", "{\"a\":01}", "[1 2]", "\"\\ud800\"", "\"a", "", "]"] {
        assert!(Reader::new(bad).raw().is_err(), "{bad:?}");
    }
}

#[test]
fn raw_agrees_with_serde_json_raw_value() {
    for text in ACCEPTED.iter().chain(REJECTED) {
        if let Err(message) = raw_agrees(text) {
            panic!("{message}");
        }
    }
    for depth in [127, 128, 129] {
        raw_agrees(&nested_arrays(depth)).unwrap_or_else(|m| panic!("{m}"));
    }
}

#[test]
fn skip_validates_and_stops_after_the_value() {
    for text in ACCEPTED {
        let mut reader = Reader::new(text);
        // Range is not checked when skipping (as serde_json's ignored values): 1e400 skips.
        assert_eq!(reader.skip(), Ok(()), "{text:?}");
        assert_eq!(reader.end(), Ok(()), "{text:?}");
    }
    for text in REJECTED {
        let mut reader = Reader::new(text);
        let skipped = reader.skip().and_then(|()| reader.end());
        let out_of_range = serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok();
        assert!(skipped.is_err() || out_of_range, "{text:?}");
    }
    assert!(Reader::new("1e400").skip().is_ok());
    let mut reader = Reader::new("[{\"a\":[1,{}]},2] 3");
    assert_eq!(reader.skip(), Ok(()));
    assert_eq!(reader.u64(), Ok(3));
    assert_eq!(reader.end(), Ok(()));
    for bad in [
        "[1,]",
        "{\"a\"}",
        "{\"a\":1,}",
        "[\"\\x\"]",
        "tru",
        "-",
        "{\"a\":[}",
    ] {
        assert!(Reader::new(bad).skip().is_err(), "{bad:?}");
    }
    assert!(Reader::new(&nested_arrays(MAX_DEPTH + 1)).skip().is_err());
    assert!(Reader::new(&nested_arrays(MAX_DEPTH)).skip().is_ok());
}

#[test]
fn str_borrows_unless_it_unescapes() {
    let cases: &[(&str, &str, bool)] = &[
        ("\"abc\"", "abc", true),
        ("\"\"", "", true),
        ("\"é😀\u{7f}\"", "é😀\u{7f}", true),
        ("  \"x y\"", "x y", true),
        ("\"a\\nb\"", "a\nb", false),
        ("\"\\\"\"", "\"", false),
        ("\"\\u00e9\"", "é", false),
        ("\"\\ud83d\\ude00!\"", "😀!", false),
        ("\"a\\\\b\\/c\\td\"", "a\\b/c\td", false),
        ("\"\\b\\f\\r\"", "\u{8}\u{c}\r", false),
    ];
    for &(text, expected, borrowed) in cases {
        let mut reader = Reader::new(text);
        let read = reader.str().expect("a string");
        assert_eq!(read, expected, "{text:?}");
        assert_eq!(matches!(read, Cow::Borrowed(_)), borrowed, "{text:?}");
        if let Cow::Borrowed(slice) = read {
            // A slice of the text itself.
            let range = text.as_bytes().as_ptr_range();
            assert!(
                range.contains(&slice.as_ptr()) || slice.is_empty(),
                "{text:?}"
            );
        }
        assert_eq!(reader.end(), Ok(()));
        assert_eq!(Reader::new(text).string().as_deref(), Ok(expected));
    }
    // Keys borrow the same way.
    let mut reader = Reader::new("{\"plain\":1,\"esc\\u0061ped\":2}");
    reader.object().expect("an object");
    let key = reader.key().expect("a key").expect("a member");
    assert!(matches!(key, Cow::Borrowed("plain")));
    assert_eq!(reader.u64(), Ok(1));
    let key = reader.key().expect("a key").expect("a member");
    assert!(matches!(&key, Cow::Owned(k) if k == "escaped"));
    assert_eq!(reader.u64(), Ok(2));
    assert_eq!(reader.key(), Ok(None));
    for bad in ["abc", "\"abc", "\"\\q\"", "\"\\udc00\"", "1", "\"a\u{1}\""] {
        assert!(Reader::new(bad).str().is_err(), "{bad:?}");
    }
}

#[test]
fn scalar_reads() {
    let mut reader = Reader::new(" null true false 7 4294967295 -2.5 ");
    assert_eq!(reader.null(), Ok(true));
    assert_eq!(reader.null(), Ok(false));
    assert_eq!(reader.bool(), Ok(true));
    assert_eq!(reader.bool(), Ok(false));
    assert_eq!(reader.u64(), Ok(7));
    assert_eq!(reader.u32(), Ok(u32::MAX));
    assert_eq!(reader.number(), Ok(Number::from_f64(-2.5).expect("finite")));
    assert_eq!(reader.peek(), None);
    assert_eq!(reader.end(), Ok(()));
    assert!(Reader::new("nul").null().is_err());
    assert!(Reader::new("1").bool().is_err());
    assert!(Reader::new("4294967296").u32().is_err());
    for bad in [
        "1.5",
        "-1",
        "-0",
        "1e2",
        "1.0",
        "18446744073709551616",
        "\"1\"",
        "+1",
    ] {
        assert!(Reader::new(bad).u64().is_err(), "{bad:?}");
    }
}

#[test]
fn typed_reads_agree_with_serde_json() {
    let texts = [
        "0",
        "1",
        "-0",
        "-1",
        "1.5",
        "1.0",
        "1e2",
        "4294967295",
        "4294967296",
        "18446744073709551615",
        "18446744073709551616",
        "true",
        "false",
        "null",
        "\"s\"",
        "\"\\u00e9\\n\"",
        "\"\\ud800\"",
        "[]",
        "[1,2]",
        "[1,null]",
        "[1,]",
        "[\"a\",\"b\"]",
        "{}",
        "{\"a\":1,\"b\":2}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":null}",
        "{\"a\":1,}",
        "{\"a\":[\"x\"]}",
        "1 2",
        "",
    ];
    for text in texts {
        let _ = typed_parity::<String>(text);
        let _ = typed_parity::<u64>(text);
        let _ = typed_parity::<u32>(text);
        let _ = typed_parity::<bool>(text);
        let _ = typed_parity::<Option<u64>>(text);
        let _ = typed_parity::<Option<String>>(text);
        let _ = typed_parity::<Vec<u32>>(text);
        let _ = typed_parity::<Vec<Option<u64>>>(text);
        let _ = typed_parity::<Vec<String>>(text);
        let _ = typed_parity::<BTreeMap<String, u64>>(text);
        let _ = typed_parity::<BTreeMap<String, Vec<String>>>(text);
        let _ = typed_parity::<Box<String>>(text);
    }
    assert_eq!(
        from_str::<BTreeMap<String, u64>>("{\"a\":1,\"a\":2}"),
        Ok([("a".to_owned(), 2)].into())
    );
}

// ---------------------------------------------------------------------------------------------
// 4. The record macros, against the serde-derived structs they replace.

/// An enum stored as strings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
enum Mode {
    #[default]
    Fast,
    SlowAndSteady,
}

crate::json_enum!(Mode {
    Fast => "fast",
    SlowAndSteady => "slowAndSteady",
});

/// A record nested in another.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Inner {
    id: String,
    #[serde(default)]
    weight: u64,
}

crate::json_record!(Inner {
    id: "id" required,
    weight: "weight" default,
});

/// Every kind of field: `required`, `default` and `skip`. serde's equivalent of `skip` is
/// `default` plus `skip_serializing_if` what [`ToJson::absent`] says (`None`, an empty map);
/// a `skip` field of another type (the `Vec` here) is always written.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Sample {
    record_id: String,
    retry_count: u32,
    #[serde(default)]
    total_bytes: u64,
    #[serde(default)]
    note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    label: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    counts: BTreeMap<String, u64>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    aliases: Vec<String>,
    inner: Inner,
    #[serde(default)]
    mode: Mode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    parent: Option<Inner>,
    #[serde(default)]
    flag: bool,
    #[serde(default)]
    payload: Value,
    #[serde(default)]
    limit: u32,
}

crate::json_record!(Sample {
    record_id: "recordId" required,
    retry_count: "retryCount" required,
    total_bytes: "totalBytes" default,
    note: "note" default,
    label: "label" skip,
    counts: "counts" skip,
    tags: "tags" default,
    aliases: "aliases" skip,
    inner: "inner" required,
    mode: "mode" default,
    parent: "parent" skip,
    flag: "flag" default,
    payload: "payload" default,
    limit: "limit" skip,
});

/// A record refusing unknown members.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Strict {
    kind: Mode,
    #[serde(default)]
    count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

crate::json_record!(Strict deny_unknown {
    kind: "kind" required,
    count: "count" default,
    note: "note" skip,
});

/// Fields named like the macro's own locals: hygiene keeps them apart.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Tricky {
    key: String,
    #[serde(default)]
    reader: u64,
    #[serde(default)]
    writer: bool,
    #[serde(default)]
    text: Option<String>,
}

crate::json_record!(Tricky {
    key: "key" required,
    reader: "reader" default,
    writer: "writer" default,
    text: "text" default,
});

fn full_sample() -> Sample {
    Sample {
        record_id: "r\"1\n".to_owned(),
        retry_count: u32::MAX,
        total_bytes: u64::MAX,
        note: Some("n".to_owned()),
        label: Some("😀".to_owned()),
        counts: [("b".to_owned(), 2), ("a".to_owned(), 1)].into(),
        tags: vec!["t1".to_owned(), String::new()],
        aliases: vec!["x".to_owned()],
        inner: Inner {
            id: "i".to_owned(),
            weight: 3,
        },
        mode: Mode::SlowAndSteady,
        parent: Some(Inner {
            id: "p".to_owned(),
            weight: 0,
        }),
        flag: true,
        payload: json!({"k": [1, -2, 0.5, null, "s"]}),
        limit: 9,
    }
}

const MINIMAL: &str = r#"{"recordId":"r","retryCount":1,"inner":{"id":"i"}}"#;

#[test]
fn records_write_like_serde_derive() {
    let full = full_sample();
    assert_eq!(to_string(&full), serde_text(&full));
    let empty = Sample::default();
    assert_eq!(to_string(&empty), serde_text(&empty));
    // Absent `skip` fields are left out, the always-written ones are not.
    assert_eq!(
        to_string(&empty),
        r#"{"recordId":"","retryCount":0,"totalBytes":0,"note":null,"tags":[],"aliases":[],"inner":{"id":"","weight":0},"mode":"fast","flag":false,"payload":null,"limit":0}"#
    );
    for mode in [Mode::Fast, Mode::SlowAndSteady] {
        assert_eq!(to_string(&mode), serde_text(&mode));
        let strict = Strict {
            kind: mode,
            count: 4,
            note: None,
        };
        assert_eq!(to_string(&strict), serde_text(&strict));
    }
    let tricky = Tricky {
        key: "k".to_owned(),
        reader: 1,
        writer: true,
        text: None,
    };
    assert_eq!(to_string(&tricky), serde_text(&tricky));
    assert_eq!(from_str::<Tricky>(&to_string(&tricky)), Ok(tricky));
    // Records in containers.
    let list = vec![full.clone(), empty];
    assert_eq!(to_string(&list), serde_text(&list));
    let map: BTreeMap<String, Sample> = [("x".to_owned(), full)].into();
    assert_eq!(to_string(&map), serde_text(&map));
}

#[test]
fn records_read_back_what_they_write() {
    for sample in [full_sample(), Sample::default()] {
        assert_eq!(from_str::<Sample>(&to_string(&sample)), Ok(sample.clone()));
        assert_eq!(
            typed_parity::<Sample>(&serde_text(&sample)),
            Ok(sample.clone())
        );
        let pretty = serde_json::to_string_pretty(&sample).expect("serde_json writes it");
        assert_eq!(typed_parity::<Sample>(&pretty), Ok(sample));
    }
}

#[test]
fn missing_fields_are_errors_or_defaults() {
    let minimal = typed_parity::<Sample>(MINIMAL).expect("the minimal record");
    assert_eq!(
        minimal,
        Sample {
            record_id: "r".to_owned(),
            retry_count: 1,
            inner: Inner {
                id: "i".to_owned(),
                weight: 0,
            },
            ..Sample::default()
        }
    );
    let cases = [
        (r#"{"retryCount":1,"inner":{"id":"i"}}"#, "recordId"),
        (r#"{"recordId":"r","inner":{"id":"i"}}"#, "retryCount"),
        (r#"{"recordId":"r","retryCount":1}"#, "inner"),
        (r#"{"recordId":"r","retryCount":1,"inner":{}}"#, "id"),
        ("{}", "recordId"),
    ];
    for (text, field) in cases {
        let error = typed_parity::<Sample>(text).expect_err(text);
        assert!(
            error.message.contains(&format!("missing field `{field}`")),
            "{text}: {error}"
        );
    }
    let error = typed_parity::<Strict>("{}").expect_err("kind is required");
    assert_eq!(error.message, "missing field `kind`");
}

#[test]
fn record_members_read_as_serde_derive_reads_them() {
    let member = |json: &str| MINIMAL.replacen('{', &format!("{{{json},"), 1);
    let accepted = [
        // null for an Option: None.
        r#""note":null"#,
        r#""label":null"#,
        r#""parent":null"#,
        r#""note":"x""#,
        r#""label":"y""#,
        r#""parent":{"id":"p","weight":2}"#,
        r#""counts":{"a":1,"a":2,"b":0}"#,
        r#""counts":{}"#,
        r#""tags":[]"#,
        r#""tags":["a","b"]"#,
        r#""mode":"slowAndSteady""#,
        r#""mode":"fast""#,
        r#""totalBytes":18446744073709551615"#,
        r#""limit":4294967295"#,
        r#""flag":true"#,
        r#""payload":{"x":[1,{"y":null}],"z":"s"}"#,
        r#""payload":null"#,
        // Unknown members are skipped, whatever they hold (also twice).
        r#""unknown":{"a":[1,2,{"b":null}],"c":"\u00e9"}"#,
        r#""unknown":1,"unknown":2"#,
        r#""recordid":5"#,
        r#""RecordId":null"#,
        // An escaped key is its unescaped name.
        r#""not\u0065":"escaped key""#,
    ];
    for json in accepted {
        let text = member(json);
        assert!(typed_parity::<Sample>(&text).is_ok(), "{text}");
    }
    let read = typed_parity::<Sample>(&member(r#""counts":{"a":1,"a":2}"#)).expect("a record");
    assert_eq!(read.counts, [("a".to_owned(), 2)].into());
    let read = typed_parity::<Sample>(&member(r#""note":null"#)).expect("a record");
    assert_eq!(read.note, None);
    let read = typed_parity::<Sample>(&member(r#""not\u0065":"e""#)).expect("a record");
    assert_eq!(read.note.as_deref(), Some("e"));

    let refused = [
        // null for a required or non-Option field.
        (r#""recordId":null"#, ""),
        (r#""tags":null"#, ""),
        (r#""counts":null"#, ""),
        (r#""totalBytes":null"#, ""),
        (r#""mode":null"#, ""),
        // Duplicates.
        (r#""recordId":"again""#, "duplicate field `recordId`"),
        (r#""note":null,"note":null"#, "duplicate field `note`"),
        (r#""tags":[],"tags":[]"#, "duplicate field `tags`"),
        // Enums.
        (r#""mode":"medium""#, "unknown variant `medium`"),
        (r#""mode":"Fast""#, "unknown variant `Fast`"),
        (r#""mode":1"#, ""),
        // Integers out of range or not integers.
        (r#""retryCount":4294967296"#, ""),
        (r#""limit":4294967296"#, ""),
        (r#""limit":-1"#, ""),
        (r#""totalBytes":1.5"#, ""),
        (r#""totalBytes":-1"#, ""),
        (r#""totalBytes":-0"#, ""),
        (r#""totalBytes":1e2"#, ""),
        (r#""totalBytes":1.0"#, ""),
        (r#""totalBytes":18446744073709551616"#, ""),
        (r#""totalBytes":"1""#, ""),
        (r#""flag":1"#, ""),
        (r#""tags":[1]"#, ""),
        (r#""counts":{"a":-1}"#, ""),
        // Nested records are checked too.
        (r#""parent":{"weight":1}"#, "missing field `id`"),
        (r#""parent":{"id":"p","id":"q"}"#, "duplicate field `id`"),
        // Malformed unknown members are still refused.
        (r#""unknown":[1,]"#, ""),
        (r#""unknown":"\x""#, ""),
        (r#""unknown":01"#, ""),
    ];
    for (json, message) in refused {
        let text = member(json);
        let error = typed_parity::<Sample>(&text).expect_err(&text);
        assert!(error.message.contains(message), "{text}: {error}");
    }
    // A u32 given 2^32, alone.
    let text = MINIMAL.replace("\"retryCount\":1", "\"retryCount\":4294967296");
    assert!(typed_parity::<Sample>(&text).is_err());
    // A required String given null, alone.
    let text = MINIMAL.replace("\"recordId\":\"r\"", "\"recordId\":null");
    assert!(typed_parity::<Sample>(&text).is_err());
    let text = MINIMAL.replace(
        "\"recordId\":\"r\"",
        "\"recordId\":\"a\",\"recordId\":\"b\"",
    );
    let error = typed_parity::<Sample>(&text).expect_err("a duplicate");
    assert_eq!(error.message, "duplicate field `recordId`");
}

#[test]
fn records_refuse_malformed_objects() {
    let texts = [
        "",
        "null",
        "[]",
        "\"x\"",
        "1",
        "{",
        r#"{"recordId":"r","retryCount":1,"inner":{"id":"i"},}"#,
        r#"{,"recordId":"r","retryCount":1,"inner":{"id":"i"}}"#,
        r#"{"recordId":"r","retryCount":1,"inner":{"id":"i"}} x"#,
        r#"{"recordId":"r" "retryCount":1,"inner":{"id":"i"}}"#,
        r#"{"recordId":"r","retryCount":1,"inner":{"id":"i"}"#,
        r#"{"recordId":"r","retryCount":1,"inner":{"id":"i"}]"#,
    ];
    for text in texts {
        assert!(typed_parity::<Sample>(text).is_err(), "{text}");
    }
    let spaced =
        " \n{ \"recordId\" : \"r\" ,\t\"retryCount\" :1 , \"inner\" : { \"id\" : \"i\" } }\r\n";
    assert!(typed_parity::<Sample>(spaced).is_ok());
    // The depth limit counts the record's own level.
    for depth in [125, 126, 127] {
        let text = MINIMAL.replacen('{', &format!("{{\"payload\":{},", nested_arrays(depth)), 1);
        let _ = typed_parity::<Sample>(&text);
    }
}

#[test]
fn deny_unknown_refuses_unknown_members() {
    assert_eq!(
        typed_parity::<Strict>(r#"{"kind":"fast"}"#),
        Ok(Strict {
            kind: Mode::Fast,
            count: 0,
            note: None,
        })
    );
    assert!(typed_parity::<Strict>(r#"{"kind":"slowAndSteady","count":2,"note":null}"#).is_ok());
    for text in [
        r#"{"kind":"fast","other":1}"#,
        r#"{"other":1,"kind":"fast"}"#,
        r#"{"kind":"fast","Kind":"fast"}"#,
    ] {
        let error = typed_parity::<Strict>(text).expect_err(text);
        assert!(
            error.message.starts_with("unknown field `"),
            "{text}: {error}"
        );
    }
    let error = typed_parity::<Strict>(r#"{"kind":"fast","count":1,"x":1}"#).expect_err("x");
    assert_eq!(error.message, "unknown field `x`");
    assert!(typed_parity::<Strict>(r#"{"kind":"fast","kind":"fast"}"#).is_err());
    assert!(typed_parity::<Strict>(r#"{"kind":"turbo"}"#).is_err());
}

#[test]
fn enums_read_as_serde_derive_reads_them() {
    for text in [
        "\"fast\"",
        "\"slowAndSteady\"",
        "\"slow\\u0041ndSteady\"",
        "\"slowandsteady\"",
        "\"\"",
        "\"fast \"",
        "null",
        "0",
        "[]",
        "\"fast\" 1",
    ] {
        let _ = typed_parity::<Mode>(text);
    }
    assert_eq!(
        from_str::<Mode>("\"slow\\u0041ndSteady\""),
        Ok(Mode::SlowAndSteady)
    );
    let error = from_str::<Mode>("\"medium\"").expect_err("an unknown variant");
    assert_eq!(error.message, "unknown variant `medium`");
}

fn any_inner() -> impl Strategy<Value = Inner> {
    (any_string(), any::<u64>()).prop_map(|(id, weight)| Inner { id, weight })
}

fn any_sample() -> impl Strategy<Value = Sample> {
    let strings = || prop::collection::vec(any_string(), 0..3);
    (
        (any_string(), any::<u32>(), any::<u64>()),
        (
            prop::option::of(any_string()),
            prop::option::of(any_string()),
        ),
        prop::collection::btree_map(any_string(), any::<u64>(), 0..3),
        (strings(), strings()),
        (any_inner(), prop::option::of(any_inner())),
        (any::<bool>(), any::<bool>(), any::<u32>()),
        any_value(),
    )
        .prop_map(
            |(
                (record_id, retry_count, total_bytes),
                (note, label),
                counts,
                (tags, aliases),
                (inner, parent),
                (slow, flag, limit),
                payload,
            )| Sample {
                record_id,
                retry_count,
                total_bytes,
                note,
                label,
                counts,
                tags,
                aliases,
                inner,
                mode: if slow {
                    Mode::SlowAndSteady
                } else {
                    Mode::Fast
                },
                parent,
                flag,
                payload,
                limit,
            },
        )
}

#[test]
fn random_records_write_like_serde_derive_and_read_back() {
    check(200, any_sample(), |sample| {
        let text = to_string(&sample);
        prop_assert_eq!(&text, &serde_text(&sample));
        prop_assert_eq!(from_str::<Sample>(&text), Ok(sample.clone()));
        let theirs = serde_json::from_str::<Sample>(&text).map_err(|e| e.to_string());
        prop_assert!(theirs.is_ok(), "{:?}", theirs);
        Ok(())
    });
}
