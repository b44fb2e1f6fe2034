//! The writer writes serde_json's bytes.

use super::*;

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

/// `to_js` scans the text for integers beyond 2^53 only when some of it was written as it
/// came: the writer checks the integers it writes itself.
#[test]
fn the_writer_says_whether_raw_text_or_a_large_integer_was_written() {
    let mut own = Writer::new();
    own.array();
    own.u64((1 << 53) - 1);
    own.str("12345678901234567890");
    own.end_array();
    assert!(!own.wrote_raw() && !own.beyond_js(), "{}", own.text());
    let mut large = Writer::new();
    large.u64(1 << 53);
    assert!(large.beyond_js() && !large.wrote_raw());
    let mut raw = Writer::new();
    raw.raw("{\"big\":12345678901234567890}");
    assert!(raw.wrote_raw() && !raw.beyond_js());
    assert!(crate::core::json::exceeds_js_integers(raw.text()));
}
