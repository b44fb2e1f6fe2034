//! Strict decoding of intents from the host. Unknown operation types are allowed; ids,
//! sequences, canvas ids, versions and payload shape are checked. Nothing here touches the
//! ledger: a batch is validated whole before any of it is admitted.

use super::model::ExpectedVersions;
use std::collections::{BTreeMap, BTreeSet};

use super::error::{ErrorCode, SchedulerError};
use super::json_text::{check, ShapeError};
use super::model::{BlobRef, Intent};
use super::payload::Payload;

/// Longest id (operation, canvas, run, blob) accepted.
pub const MAX_ID_CHARS: usize = 128;
/// Longest operation type accepted.
pub const MAX_KIND_CHARS: usize = 64;
/// Deepest payload nesting accepted.
pub const MAX_PAYLOAD_DEPTH: usize = 64;
/// Most canvases or dependencies one intent may name.
pub const MAX_LIST_LEN: usize = 1_024;
/// Largest integer JS can hold exactly.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// An intent as the host hands it in; `sequence` is assigned when absent.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IntentInput {
    /// Operation id.
    #[serde(rename = "id")]
    pub id: String,
    /// Optional explicit sequence (must exceed every sequence in the ledger).
    #[serde(rename = "sequence", default)]
    pub sequence: Option<u64>,
    /// Kind of operation.
    #[serde(rename = "operationType")]
    pub operation_type: String,
    /// Canvases touched.
    #[serde(rename = "canvasIds", default)]
    pub canvas_ids: Vec<String>,
    /// Operations that must resolve first.
    #[serde(rename = "dependencies", default)]
    pub dependencies: Vec<String>,
    /// Opaque JSON body.
    #[serde(rename = "payload", default)]
    pub payload: Payload,
    /// Version guards.
    #[serde(rename = "expectedVersions", default)]
    pub expected_versions: Option<ExpectedVersions>,
    /// Run id.
    #[serde(rename = "runId", default)]
    pub run_id: Option<String>,
    /// Coalescing key.
    #[serde(rename = "coalesceKey", default)]
    pub coalesce_key: Option<String>,
    /// Upload blob reference.
    #[serde(rename = "blob", default)]
    pub blob: Option<BlobRef>,
}

fn invalid(message: impl Into<String>) -> SchedulerError {
    SchedulerError::new(ErrorCode::InvalidIntent, message)
}

/// Checks an id: 1..=128 chars of `[A-Za-z0-9._:-]`.
pub fn check_id(value: &str, field: &str) -> Result<(), SchedulerError> {
    let ok = !value.is_empty()
        && value.chars().count() <= MAX_ID_CHARS
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "{field} must be 1-{MAX_ID_CHARS} characters of A-Z a-z 0-9 . _ : -"
        )))
    }
}

/// Whether `value` may be an `operationType` (also what `batch.kinds` names).
pub fn valid_kind(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= MAX_KIND_CHARS
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

fn check_kind(value: &str) -> Result<(), SchedulerError> {
    if valid_kind(value) {
        Ok(())
    } else {
        Err(invalid(format!(
            "operationType must be 1-{MAX_KIND_CHARS} characters of A-Z a-z 0-9 . _ -"
        )))
    }
}

fn check_ids(list: &[String], field: &str) -> Result<(), SchedulerError> {
    if list.len() > MAX_LIST_LEN {
        return Err(invalid(format!(
            "{field} has more than {MAX_LIST_LEN} entries"
        )));
    }
    let mut seen = BTreeSet::new();
    for id in list {
        check_id(id, field)?;
        if !seen.insert(id.to_owned()) {
            return Err(invalid(format!("{field} repeats {id}")));
        }
    }
    Ok(())
}

/// Payload depth, `__proto__` keys (prototype pollution once handed back to JS) and size,
/// read from the payload's text in one pass (the text is what is stored and sent: no tree is
/// built and nothing is serialized again to count its bytes).
pub fn check_payload(payload: &Payload, max_bytes: usize) -> Result<(), SchedulerError> {
    check(payload.text(), MAX_PAYLOAD_DEPTH, true).map_err(|e| match e {
        ShapeError::TooDeep => invalid(format!("payload nests deeper than {MAX_PAYLOAD_DEPTH}")),
        ShapeError::ProtoKey => invalid("payload may not contain a __proto__ key"),
        // A payload is JSON text by construction; a stored one that is not is refused, not read.
        ShapeError::NotJson(e) => invalid(format!("payload is not JSON: {e}")),
    })?;
    let size = payload.text().len();
    if size > max_bytes {
        return Err(SchedulerError::new(
            ErrorCode::PayloadTooLarge,
            format!("payload is {size} bytes; the limit is {max_bytes}"),
        ));
    }
    Ok(())
}

/// Validates one intent's own fields (not its relation to the ledger).
pub fn check_fields(input: &IntentInput, max_payload_bytes: usize) -> Result<(), SchedulerError> {
    check_id(&input.id, "id")?;
    check_kind(&input.operation_type)?;
    if let Some(sequence) = input.sequence {
        if sequence == 0 || sequence > MAX_SAFE_INTEGER {
            return Err(invalid("sequence must be a safe integer >= 1"));
        }
    }
    check_ids(&input.canvas_ids, "canvasIds")?;
    check_ids(&input.dependencies, "dependencies")?;
    if let Some(versions) = &input.expected_versions {
        for (canvas, version) in versions {
            check_id(canvas, "expectedVersions key")?;
            if *version > MAX_SAFE_INTEGER {
                return Err(invalid(
                    "expectedVersions values must be safe integers >= 0",
                ));
            }
        }
    }
    if let Some(run_id) = &input.run_id {
        check_id(run_id, "runId")?;
    }
    if let Some(key) = &input.coalesce_key {
        if key.is_empty() || key.chars().count() > 256 {
            return Err(invalid("coalesceKey must be 1-256 characters"));
        }
    }
    if let Some(blob) = &input.blob {
        check_id(&blob.id, "blob.id")?;
        if blob.size > MAX_SAFE_INTEGER || blob.media_type.len() > 256 {
            return Err(invalid("blob.size or blob.mediaType out of range"));
        }
    }
    check_payload(&input.payload, max_payload_bytes)
}

/// Builds the stored intent (sequence and principal filled in).
pub fn into_intent(input: IntentInput, sequence: u64, principal: Option<String>) -> Intent {
    Intent {
        id: input.id,
        sequence,
        operation_type: input.operation_type,
        canvas_ids: input.canvas_ids,
        dependencies: input.dependencies,
        payload: input.payload,
        expected_versions: input.expected_versions.unwrap_or_default(),
        run_id: input.run_id,
        coalesce_key: input.coalesce_key,
        blob: input.blob.map(Box::new),
        revision: 0,
        principal,
    }
}

/// Finds a dependency cycle among a batch's own intents (ids in the ledger cannot depend on
/// new ones, so cycles can only close inside the batch).
pub fn find_cycle(batch: &[IntentInput]) -> Option<String> {
    // One intent (most enqueues) closes a cycle only through itself: no map needed.
    if let [only] = batch {
        return only
            .dependencies
            .contains(&only.id)
            .then(|| only.id.clone());
    }
    // Id → (place in the batch, visit state: 0 unvisited, 1 on the stack, 2 done).
    let mut visits: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for (place, input) in batch.iter().enumerate() {
        visits.insert(input.id.clone(), (place, 0));
    }
    for start in batch {
        if visits.get(start.id.as_str()).is_some_and(|v| v.1 != 0) {
            continue;
        }
        let mut stack: Vec<(&str, usize)> = vec![(start.id.as_str(), 0)];
        set_visit(&mut visits, &start.id, 1);
        while let Some((id, next)) = stack.pop() {
            let deps = visits
                .get(id)
                .and_then(|(place, _)| batch.get(*place))
                .map(|i| i.dependencies.as_slice())
                .unwrap_or(&[]);
            if next < deps.len() {
                stack.push((id, next + 1));
                let dep = deps[next].as_str();
                match visits.get(dep).map(|v| v.1) {
                    None => {}
                    Some(1) => return Some(dep.to_owned()),
                    Some(0) => {
                        set_visit(&mut visits, dep, 1);
                        stack.push((dep, 0));
                    }
                    Some(_) => {}
                }
            } else {
                set_visit(&mut visits, id, 2);
            }
        }
    }
    None
}

fn set_visit(visits: &mut BTreeMap<String, (usize, usize)>, id: &str, state: usize) {
    if let Some(visit) = visits.get_mut(id) {
        visit.1 = state;
    }
}

/// Whether a stored intent is what `input` asks for (so enqueueing it again is harmless).
pub fn same_intent(stored: &Intent, input: &IntentInput) -> bool {
    stored.operation_type == input.operation_type
        && stored.canvas_ids == input.canvas_ids
        && stored.dependencies == input.dependencies
        && stored.payload == input.payload
        && stored.expected_versions == input.expected_versions.clone().unwrap_or_default()
        && stored.run_id == input.run_id
        && stored.coalesce_key == input.coalesce_key
        && stored.blob.as_deref() == input.blob.as_ref()
        && input.sequence.is_none_or(|s| s == stored.sequence)
}

/// The checks an intent batch passes before anything is stored, without the ledger: fields,
/// no id twice, no cycle inside the batch. A tab that does not dispatch runs these
/// before writing to the shared inbox; the dispatcher checks again against the ledger.
pub fn check_batch(batch: &[IntentInput], max_payload_bytes: usize) -> Result<(), SchedulerError> {
    if batch.is_empty() {
        return Err(invalid("no intents given"));
    }
    let mut ids = BTreeSet::new();
    for (index, input) in batch.iter().enumerate() {
        let at = |error: SchedulerError| error.of_intent(index);
        check_fields(input, max_payload_bytes).map_err(at)?;
        if !ids.insert(input.id.clone()) {
            return Err(at(SchedulerError::new(
                ErrorCode::DuplicateOperation,
                format!("operation {} appears twice in the batch", input.id),
            )));
        }
    }
    match find_cycle(batch) {
        Some(at) => Err(SchedulerError::new(
            ErrorCode::DependencyCycle,
            format!("dependencies form a cycle through {at}"),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(id: &str, deps: &[&str]) -> IntentInput {
        IntentInput {
            id: id.into(),
            sequence: None,
            operation_type: "shape.upsert".into(),
            canvas_ids: vec!["c1".into()],
            dependencies: deps.iter().map(|d| (*d).into()).collect(),
            payload: json!({"x": 1}).into(),
            expected_versions: None,
            run_id: None,
            coalesce_key: None,
            blob: None,
        }
    }

    #[test]
    fn a_rejects_malformed_fields_with_codes() {
        let limit = 1_000;
        let mut bad = input("", &[]);
        assert_eq!(
            check_fields(&bad, limit).unwrap_err().code(),
            "invalid_intent"
        );
        bad = input("ok", &[]);
        bad.canvas_ids = vec!["a".into(), "a".into()];
        assert_eq!(
            check_fields(&bad, limit).unwrap_err().code(),
            "invalid_intent"
        );
        bad = input("ok", &[]);
        bad.payload = json!({"__proto__": {"polluted": true}}).into();
        assert_eq!(
            check_fields(&bad, limit).unwrap_err().code(),
            "invalid_intent"
        );
        bad = input("ok", &[]);
        bad.payload = json!("x".repeat(2_000)).into();
        assert_eq!(
            check_fields(&bad, limit).unwrap_err().code(),
            "payload_too_large"
        );
        bad = input("ok", &[]);
        let mut deep = json!(1);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        bad.payload = deep.into();
        assert_eq!(
            check_fields(&bad, limit).unwrap_err().code(),
            "invalid_intent"
        );
        bad = input("ok", &[]);
        bad.sequence = Some(MAX_SAFE_INTEGER + 1);
        assert_eq!(
            check_fields(&bad, limit).unwrap_err().code(),
            "invalid_intent"
        );
        assert!(check_fields(&input("fine-1", &["dep"]), limit).is_ok());
    }

    /// The payload's shape is read from its text: depth counts every value (a scalar inside
    /// the deepest container too), `__proto__` is found however it is escaped and wherever it
    /// sits, and the size is the text's.
    #[test]
    fn a_checks_the_payload_text_as_the_tree_was_checked() {
        let with = |text: &str| {
            let mut intent = input("ok", &[]);
            intent.payload = serde_json::from_str(text).expect("JSON text");
            check_fields(&intent, 1_000).map_err(|e| e.message)
        };
        let nested = |levels: usize| "[".repeat(levels - 1) + "1" + &"]".repeat(levels - 1);
        assert!(
            with(&nested(MAX_PAYLOAD_DEPTH)).is_ok(),
            "64 levels with the scalar"
        );
        let too_deep = with(&nested(MAX_PAYLOAD_DEPTH + 1)).unwrap_err();
        assert!(too_deep.contains("nests deeper than 64"), "{too_deep}");
        let empty_at_limit = "[".repeat(MAX_PAYLOAD_DEPTH) + &"]".repeat(MAX_PAYLOAD_DEPTH);
        assert!(with(&empty_at_limit).is_ok(), "an empty array at level 64");
        for polluted in [
            r#"{"a":[{"__proto__":1}]}"#,
            r#"{"\u005f_proto__":{}}"#,
            r#"[{"b":1},{"c":{"__proto__":null}}]"#,
        ] {
            let refused = with(polluted).unwrap_err();
            assert!(refused.contains("__proto__"), "{polluted}: {refused}");
        }
        assert!(with(r#"{"proto":{"__proto":1},"x":"__proto__"}"#).is_ok());
        let size = with(&format!("\"{}\"", "x".repeat(999))).unwrap_err();
        assert!(size.contains("1001 bytes"), "{size}");
        assert!(
            with(&format!("\"{}\"", "x".repeat(998))).is_ok(),
            "1000 bytes"
        );
    }

    #[test]
    fn a_detects_cycles_inside_a_batch() {
        let batch = vec![input("a", &["c"]), input("b", &["a"]), input("c", &["b"])];
        assert!(find_cycle(&batch).is_some());
        let batch = vec![input("a", &[]), input("b", &["a"]), input("c", &["a", "b"])];
        assert!(find_cycle(&batch).is_none());
        assert_eq!(
            find_cycle(&[input("self", &["other", "self"])]),
            Some("self".to_owned())
        );
        assert!(find_cycle(&[input("solo", &["other"])]).is_none());
    }

    #[test]
    fn a_unknown_fields_are_refused_by_the_decoder() {
        let text = r#"{"id":"a","operationType":"x","canvasIds":[],"extra":1}"#;
        assert!(serde_json::from_str::<IntentInput>(text).is_err());
        let text = r#"{"id":"a","operationType":"custom.kind","canvasIds":["c"]}"#;
        assert!(serde_json::from_str::<IntentInput>(text).is_ok());
    }
}
