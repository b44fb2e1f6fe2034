//! The reader accepts and refuses what serde_json does.

use super::*;

/// Texts serde_json reads as a `Value`.
pub(super) const ACCEPTED: &[&str] = &[
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
pub(super) const REJECTED: &[&str] = &[
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
