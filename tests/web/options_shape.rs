//! `SchedulerConfig`'s derive reads `Scheduler.open`'s data options as the module's
//! own reader does (`api/options.rs`: its derive behind a caught snapshot, ARCHITECTURE): the
//! same config from the same object, through `serde_wasm_bindgen`; and the option names that
//! reader's derive declares are the ones `types.rs` declares.

use canvas_scheduler::api::options::decode_options;
use canvas_scheduler_core::SchedulerConfig;
use wasm_bindgen::JsCast;
use wasm_bindgen_test::wasm_bindgen_test;

use super::support::js;

#[wasm_bindgen_test]
fn the_options_derive_reads_the_config_the_modules_reader_reads() {
    let cases = [
        "{}",
        "{ concurrency: 5, principal: 'user-1', leaseMs: 9000, coalesceMs: 16 }",
        "{ retry: {} }",
        "{ retry: { baseMs: 40000 } }",
        "{ retry: { baseMs: 100, maxMs: 2000, maxAttempts: 3, deadLetterAfterMs: 0 } }",
        "{ batch: {} }",
        "{ batch: { maxOperations: 8, kinds: ['shape.upsert', 'note.edit'] } }",
        "{ batch: { maxBytes: 1024 } }",
        "{ maxPayloadBytes: 1000, eventLogLimit: 10 }",
        "{ retain: { settled: 0 } }",
        "{ retain: { settled: 5, settledMs: 60000, tombstones: 7, tombstoneMs: 1 } }",
    ];
    for case in cases {
        let source = format!(
            "Object.assign({case}, {{ database: 'db', endpoint: 'http://127.0.0.1:9/v1', owner: 'tab-1', headers: () => ({{}}) }})"
        );
        let options = js(&format!("({source})"));
        let hand = decode_options(&options)
            .map_err(|e| e.message)
            .unwrap()
            .config;
        let derived: SchedulerConfig = serde_wasm_bindgen::from_value(options).unwrap();
        assert_eq!(derived, hand, "{case}");
        derived.validate().unwrap();
    }
}

/// The member names of a declared interface or object type body (between its braces),
/// each with its type's text: members end at a `;` outside any bracket, comments removed.
fn members(body: &str) -> Vec<(String, String)> {
    pieces(body)
        .into_iter()
        .filter_map(|member| {
            let member = member.trim();
            let name: String = member
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let (_, type_text) = member.split_once(':')?;
            (!name.is_empty()).then(|| (name, type_text.trim().to_owned()))
        })
        .collect()
}

/// A declaration body cut at each `;` outside any bracket.
fn pieces(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut member = String::new();
    for c in body.chars() {
        match c {
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            _ => {}
        }
        if c == ';' && depth == 0 {
            out.push(std::mem::take(&mut member));
        } else {
            member.push(c);
        }
    }
    out.push(member);
    out
}

/// The declarations without their comments.
fn declarations() -> String {
    let text = canvas_scheduler::api::types::API_TYPES_TS;
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .split_once("*/")
            .map_or("", |(_, after)| after);
    }
    out.push_str(rest);
    out.lines()
        .map(|line| line.split(" // ").next().unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text between the braces that follow `opening` (the first `{` after it).
fn braced<'a>(text: &'a str, opening: &str) -> &'a str {
    let at = text.find(opening).unwrap_or_else(|| panic!("no {opening}"));
    let start = at + text[at..].find('{').unwrap() + 1;
    let mut depth = 1;
    for (offset, c) in text[start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return &text[start..start + offset];
        }
    }
    panic!("unbalanced braces after {opening}")
}

fn sorted<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
    names.sort();
    names
}

/// Every option `Scheduler.open` reads is declared in `SchedulerOptions`, and nothing else
/// is: the same top-level names, and the same names inside each object option. A name added
/// on either side alone fails here.
#[wasm_bindgen_test]
fn the_declared_options_are_the_options_the_module_reads() {
    use canvas_scheduler::api::options::{nested_option_names, option_names};
    let text = declarations();
    let names = option_names();
    assert!(
        names.contains(&"database") && names.contains(&"onEvent"),
        "{names:?}"
    );
    let declared = members(braced(&text, "export interface SchedulerOptions<"));
    assert_eq!(
        sorted(declared.iter().map(|(name, _)| name.as_str())),
        sorted(names.iter().copied()),
        "SchedulerOptions (types.rs) and the option names read by api/options.rs differ"
    );
    for (option, keys) in nested_option_names() {
        let (_, type_text) = declared.iter().find(|(name, _)| name == option).unwrap();
        let inner = type_text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or_else(|| panic!("{option} is not declared as an object type: {type_text}"));
        assert_eq!(
            sorted(members(inner).iter().map(|(name, _)| name.as_str())),
            sorted(keys.iter().copied()),
            "the keys of {option} differ between types.rs and api/options.rs"
        );
    }
}

/// The hand-written `Scheduler` class declares exactly the methods the module's class has
/// (its own names starting with `__`, and `pageLifecycle`, which worker mode's `serve()`
/// calls, are not the host's to call).
#[wasm_bindgen_test]
async fn the_declared_class_has_the_methods_the_module_exports() {
    let text = declarations();
    let declared: Vec<String> = pieces(braced(&text, "export class Scheduler<"))
        .iter()
        .map(|member| {
            let member = member.trim();
            let member = member.strip_prefix("static ").unwrap_or(member);
            let member = member.strip_prefix("private ").unwrap_or(member);
            member
                .chars()
                .take_while(|c| c.is_alphanumeric())
                .collect::<String>()
        })
        .filter(|name| !name.is_empty() && name != "constructor")
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let options = js(
        "({ database: 'cs-declared-class', endpoint: 'http://127.0.0.1:9/v1', persist: false })",
    );
    let scheduler = canvas_scheduler::api::scheduler::Scheduler::open(options)
        .await
        .map_err(|e| super::support::code_of(&e))
        .unwrap();
    let value = wasm_bindgen::JsValue::from(scheduler.clone());
    let prototype = js_sys::Object::get_prototype_of(&value);
    let class: js_sys::Object = js_sys::Reflect::get(&prototype, &"constructor".into())
        .unwrap()
        .unchecked_into();
    let mut exported: Vec<String> = js_sys::Object::get_own_property_names(&prototype)
        .iter()
        .chain(js_sys::Object::get_own_property_names(&class).iter())
        .filter_map(|name| name.as_string())
        .filter(|name| {
            !name.starts_with("__")
                && ![
                    "constructor",
                    "pageLifecycle",
                    "length",
                    "name",
                    "prototype",
                ]
                .contains(&name.as_str())
        })
        .collect();
    exported.sort();
    exported.dedup();
    scheduler.stop();
    assert_eq!(
        declared, exported,
        "the Scheduler class declared in types.rs and the module's class differ"
    );
}
