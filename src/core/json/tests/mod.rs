//! The hand-written JSON against serde_json, which it replaces: the writer's bytes equal
//! `serde_json::to_string`'s, the reader accepts and refuses what `serde_json::from_str`
//! does (with the same values), and records from [`json_record!`] read and write as the
//! equivalent serde-derived structs did. Property tests run a fixed number of cases from a
//! fixed seed, so every run checks the same inputs.
#![cfg(any(not(target_arch = "wasm32"), target_os = "wasi"))]

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

mod pull;
mod reader;
mod records;
mod text;
mod writer;
