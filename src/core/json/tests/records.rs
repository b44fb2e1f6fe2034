//! The record macros, against the serde-derived structs they replace.

use super::*;

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
