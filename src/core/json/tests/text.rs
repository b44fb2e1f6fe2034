//! `JsonText`: compaction, equality by value, members and items, against serde_json.

use super::*;

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
    check(300, any_value(), |value| {
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
    let object = JsonText::object(|o| {
        o.member("k", "v");
        o.member("n", &3u64);
    });
    assert_eq!(object.text(), r#"{"k":"v","n":3}"#);
    assert_eq!(JsonText::object(|_| {}).text(), "{}");
}

/// Two texts are equal exactly when serde_json reads them as equal trees (numbers written
/// one way: serde_json's own text of each tree).
#[test]
fn equality_agrees_with_serde_json_trees() {
    check(300, (any_value(), any_value()), |(a, b)| {
        let text_a = JsonText::compact(&serde_json::to_string_pretty(&a).expect("a")).expect("a");
        let text_b: JsonText = from_str(&serde_text(&b)).expect("b");
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
