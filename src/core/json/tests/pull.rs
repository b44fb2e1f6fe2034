//! The pull API: raw spans, skipping, borrowed strings.

use super::reader::{ACCEPTED, REJECTED};
use super::*;

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
