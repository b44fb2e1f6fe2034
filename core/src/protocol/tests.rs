//! Every row of the answer table (docs/protocol.md, "Status codes"), plus `Retry-After` parsing.

use serde_json::json;

use super::*;

const NOW: Millis = 784_111_777_000; // Sun, 06 Nov 1994 08:49:37 GMT

fn code(status: &AttemptStatus) -> Option<&str> {
    status.error.as_ref().map(|e| e.code.as_str())
}

/// One row: what came in, and the outcome, error code, blocked reason and delay expected.
struct Row {
    name: &'static str,
    action: RetryAction,
    status: u16,
    body: Option<&'static str>,
    retry_after: Option<&'static str>,
    outcome: AttemptOutcome,
    code: Option<&'static str>,
    blocked: Option<&'static str>,
    retry_after_ms: Option<Millis>,
    /// `Some(false)`: dead-lettered at once.
    retryable: Option<bool>,
}

const SUBMIT: RetryAction = RetryAction::Submit;
const QUERY: RetryAction = RetryAction::Query;

fn row(
    name: &'static str,
    action: RetryAction,
    status: u16,
    body: Option<&'static str>,
    outcome: AttemptOutcome,
    code: Option<&'static str>,
) -> Row {
    Row {
        name,
        action,
        status,
        body,
        retry_after: None,
        outcome,
        code,
        blocked: None,
        retry_after_ms: None,
        retryable: None,
    }
}

/// A 4xx that is not the protocol's rejection: unresolved, not retryable (a dead letter).
fn dead_letter(
    name: &'static str,
    action: RetryAction,
    status: u16,
    body: Option<&'static str>,
    code: &'static str,
) -> Row {
    Row {
        retryable: Some(false),
        ..row(
            name,
            action,
            status,
            body,
            AttemptOutcome::Unresolved,
            Some(code),
        )
    }
}

fn table() -> Vec<Row> {
    use AttemptOutcome::*;
    let err = Some(r#"{"error":{"code":"service_unavailable","message":"injected"}}"#);
    vec![
        row(
            "200 applied",
            SUBMIT,
            200,
            Some(r#"{"outcome":"applied"}"#),
            Applied,
            None,
        ),
        row(
            "201 applied",
            SUBMIT,
            201,
            Some(r#"{"outcome":"applied"}"#),
            Applied,
            None,
        ),
        row(
            "202 accepted",
            SUBMIT,
            202,
            Some(r#"{"outcome":"accepted"}"#),
            Accepted,
            None,
        ),
        row(
            "200 accepted on a query",
            QUERY,
            200,
            Some(r#"{"outcome":"accepted"}"#),
            Accepted,
            None,
        ),
        row(
            "200 rejected",
            QUERY,
            200,
            Some(r#"{"outcome":"rejected","error":"gone"}"#),
            Rejected,
            Some("gone"),
        ),
        row(
            "409 rejected",
            SUBMIT,
            409,
            Some(r#"{"outcome":"rejected","error":{"code":"version_conflict","message":"stale"}}"#),
            Rejected,
            Some("version_conflict"),
        ),
        row(
            "422 rejected",
            SUBMIT,
            422,
            Some(r#"{"outcome":"rejected","error":{"code":"unknown_kind","message":"no"}}"#),
            Rejected,
            Some("unknown_kind"),
        ),
        row(
            "409 empty = in progress",
            SUBMIT,
            409,
            None,
            Accepted,
            Some("in_progress"),
        ),
        row(
            "409 blank = in progress",
            QUERY,
            409,
            Some("  "),
            Accepted,
            Some("in_progress"),
        ),
        row(
            "409 junk = in progress",
            SUBMIT,
            409,
            Some("<html>"),
            Accepted,
            Some("in_progress"),
        ),
        row(
            "409 applied is no rejection",
            SUBMIT,
            409,
            Some(r#"{"outcome":"applied"}"#),
            Accepted,
            Some("in_progress"),
        ),
        dead_letter("422 without a body", SUBMIT, 422, None, "http_422"),
        dead_letter(
            "422 applied is no rejection",
            SUBMIT,
            422,
            Some(r#"{"outcome":"applied"}"#),
            "http_422",
        ),
        row(
            "404 query = never received",
            QUERY,
            404,
            Some(r#"{"error":{"code":"not_found","message":"x"}}"#),
            Unresolved,
            Some("not_found"),
        ),
        row(
            "404 query without a body",
            QUERY,
            404,
            None,
            Unresolved,
            Some("not_found"),
        ),
        dead_letter("404 submit", SUBMIT, 404, Some("not here"), "http_404"),
        Row {
            blocked: Some("unauthorized"),
            ..row("401", SUBMIT, 401, err, Unresolved, Some("http_401"))
        },
        Row {
            blocked: Some("unauthorized"),
            ..row("403", QUERY, 403, None, Unresolved, Some("http_403"))
        },
        row("408", SUBMIT, 408, None, Unresolved, Some("http_408")),
        row("421", SUBMIT, 421, None, Unresolved, Some("http_421")),
        Row {
            retry_after: Some("2"),
            retry_after_ms: Some(2_000),
            ..row(
                "421 html",
                QUERY,
                421,
                Some("<html>"),
                Unresolved,
                Some("http_421"),
            )
        },
        row("425", SUBMIT, 425, None, Unresolved, Some("http_425")),
        Row {
            retry_after: Some("3"),
            retry_after_ms: Some(3_000),
            ..row(
                "429 with seconds",
                SUBMIT,
                429,
                err,
                Unresolved,
                Some("http_429"),
            )
        },
        Row {
            retry_after: Some("Sun, 06 Nov 1994 08:50:07 GMT"),
            retry_after_ms: Some(30_000),
            ..row(
                "503 with a date",
                QUERY,
                503,
                err,
                Unresolved,
                Some("http_503"),
            )
        },
        Row {
            retry_after: Some("soon"),
            ..row(
                "503 with a bad Retry-After",
                QUERY,
                503,
                None,
                Unresolved,
                Some("http_503"),
            )
        },
        row("500", SUBMIT, 500, err, Unresolved, Some("http_500")),
        row(
            "502 html",
            SUBMIT,
            502,
            Some("<html>bad gateway</html>"),
            Unresolved,
            Some("http_502"),
        ),
        row("599", SUBMIT, 599, None, Unresolved, Some("http_599")),
        dead_letter(
            "400 with a rejection body is still no protocol rejection",
            SUBMIT,
            400,
            Some(r#"{"outcome":"rejected","error":{"code":"invalid_request","message":"m"}}"#),
            "http_400",
        ),
        dead_letter(
            "a proxy's html 400",
            SUBMIT,
            400,
            Some("<html><body>Request Header Or Cookie Too Large</body></html>"),
            "http_400",
        ),
        dead_letter("405", SUBMIT, 405, Some("<html>"), "http_405"),
        dead_letter("405 on a query", QUERY, 405, None, "http_405"),
        dead_letter("410", SUBMIT, 410, None, "http_410"),
        dead_letter("413", SUBMIT, 413, None, "http_413"),
        dead_letter("415", SUBMIT, 415, None, "http_415"),
        dead_letter("431", SUBMIT, 431, Some("<html>"), "http_431"),
        row(
            "200 empty",
            SUBMIT,
            200,
            None,
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "204",
            SUBMIT,
            204,
            Some(""),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 not JSON",
            SUBMIT,
            200,
            Some("ok"),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 array",
            SUBMIT,
            200,
            Some("[]"),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 no outcome",
            SUBMIT,
            200,
            Some("{}"),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 unknown outcome",
            SUBMIT,
            200,
            Some(r#"{"outcome":"done"}"#),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 numeric error",
            SUBMIT,
            200,
            Some(r#"{"outcome":"applied","error":5}"#),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 bad operations",
            SUBMIT,
            200,
            Some(r#"{"outcome":"applied","operations":[{"outcome":"applied"}]}"#),
            Unresolved,
            Some("invalid_answer"),
        ),
        row(
            "200 operations not an array",
            SUBMIT,
            200,
            Some(r#"{"outcome":"applied","operations":{}}"#),
            Unresolved,
            Some("invalid_answer"),
        ),
        row("302", SUBMIT, 302, None, Unresolved, Some("http_302")),
    ]
}

#[test]
fn w3_p7_every_row_of_the_answer_table() {
    for row in table() {
        let status = map_answer(row.action, row.status, row.body, row.retry_after, NOW);
        assert_eq!(status.outcome, row.outcome, "{}: outcome", row.name);
        assert_eq!(code(&status), row.code, "{}: error code", row.name);
        assert_eq!(
            status.blocked.as_deref(),
            row.blocked,
            "{}: blocked",
            row.name
        );
        assert_eq!(
            status.retry_after_ms, row.retry_after_ms,
            "{}: retry after",
            row.name
        );
        assert_eq!(status.retryable, row.retryable, "{}: retryable", row.name);
        if row.retryable == Some(false) {
            let details = status.error.and_then(|e| e.details).map(tree);
            assert_eq!(
                details.map(|d| d["status"].clone()),
                Some(json!(row.status)),
                "{}: the status is in the error",
                row.name
            );
        }
    }
}

#[test]
fn p7_a_canonical_over_the_cap_is_left_out_and_the_verdict_stands() {
    let big = "x".repeat(MAX_CANONICAL_BYTES);
    let body = json!({"outcome": "applied", "canonical": {"blob": big},
        "operations": [{"operationId": "a", "outcome": "applied", "canonical": big}]})
    .to_string();
    let status = map_answer(SUBMIT, 200, Some(&body), None, NOW);
    assert_eq!(status.outcome, AttemptOutcome::Applied);
    assert_eq!(status.canonical, None);
    assert_eq!(status.operations[0].canonical, None);
    let fits = "x".repeat(MAX_CANONICAL_BYTES - 2);
    let body = json!({"outcome": "applied", "canonical": fits}).to_string();
    let status = map_answer(SUBMIT, 200, Some(&body), None, NOW);
    assert_eq!(
        status.canonical.map(|c| c.text().len()),
        Some(MAX_CANONICAL_BYTES)
    );
}

#[test]
fn p7_query_paths_keep_the_id_one_segment_of_the_endpoint() {
    assert_eq!(query_path("r-1_a.b~").as_deref(), Some("requests/r-1_a.b~"));
    assert_eq!(
        query_path("//evil.example/x?y#z").as_deref(),
        Some("requests/%2F%2Fevil.example%2Fx%3Fy%23z")
    );
    assert_eq!(
        query_path("@evil:80").as_deref(),
        Some("requests/%40evil%3A80")
    );
    assert_eq!(query_path("é").as_deref(), Some("requests/%C3%A9"));
    for unsafe_id in ["", ".", ".."] {
        assert_eq!(query_path(unsafe_id), None, "{unsafe_id:?}");
    }
}

#[test]
fn p7_applied_carries_canonical_and_operation_verdicts() {
    let body = json!({
        "outcome": "applied",
        "canonical": {"canvases": {"c1": {"version": 2}}},
        "operations": [
            {"operationId": "op-1", "outcome": "applied", "canonical": {"shapeId": "s1"}},
            {"operationId": "op-2", "outcome": "rejected", "error": {"code": "batch_aborted", "message": "m", "details": {"operationId": "op-1"}}},
            {"operationId": "op-3", "outcome": "accepted"}
        ]
    })
    .to_string();
    let status = map_answer(SUBMIT, 200, Some(&body), None, NOW);
    assert_eq!(status.outcome, AttemptOutcome::Applied);
    assert_eq!(
        status.canonical,
        Some(json!({"canvases": {"c1": {"version": 2}}}).into())
    );
    assert_eq!(status.error, None);
    assert_eq!(
        status.operations,
        vec![
            OperationVerdict {
                operation_id: "op-1".into(),
                settlement: Settlement::Applied,
                error: None,
                canonical: Some(json!({"shapeId": "s1"}).into()),
            },
            OperationVerdict {
                operation_id: "op-2".into(),
                settlement: Settlement::Rejected,
                error: Some(
                    SafeError::new("batch_aborted", "m")
                        .with_details(json!({"operationId": "op-1"}).into())
                ),
                canonical: None,
            },
        ],
        "accepted entries carry no verdict yet"
    );
}

/// A kept JSON text as a tree, to look inside it.
fn tree(text: crate::json_text::JsonText) -> serde_json::Value {
    serde_json::from_str(text.text()).expect("JSON text")
}

#[test]
fn p7_rejected_keeps_the_server_error_and_canonical() {
    let body = json!({
        "outcome": "rejected",
        "error": {"code": "version_conflict", "message": "stale", "details": {"stale": [{"canvasId": "c1", "expected": 5, "actual": 0}]}},
        "canonical": {"canvases": {"c1": {"version": 0, "document": {}}}},
        "operations": [{"operationId": "op-1", "outcome": "rejected", "error": {"code": "version_conflict", "message": "stale"}}]
    })
    .to_string();
    let status = map_answer(SUBMIT, 409, Some(&body), None, NOW);
    assert_eq!(status.outcome, AttemptOutcome::Rejected);
    let error = status.error.expect("error");
    assert_eq!(error.code, "version_conflict");
    assert_eq!(error.message, "stale");
    assert_eq!(
        tree(error.details.expect("details"))["stale"][0]["expected"],
        5
    );
    assert_eq!(
        tree(status.canonical.expect("canonical"))["canvases"]["c1"]["version"],
        0
    );
    assert_eq!(status.operations.len(), 1);
    assert_eq!(status.operations[0].settlement, Settlement::Rejected);
}

#[test]
fn k5_p7_server_errors_are_bounded() {
    let long = "x".repeat(10_000);
    let body = json!({
        "outcome": "rejected",
        "error": {"code": long, "message": long, "details": {"blob": long}}
    })
    .to_string();
    let error = map_answer(SUBMIT, 422, Some(&body), None, NOW)
        .error
        .expect("error");
    assert_eq!(error.code.len(), crate::safe_error::MAX_CODE_CHARS);
    assert_eq!(error.message.len(), crate::safe_error::MAX_MESSAGE_CHARS);
    assert_eq!(
        error.details,
        Some(json!({"omitted": "error_details_too_large"}).into())
    );

    // A string error becomes the code; an object without a code gets a fallback.
    let string = map_answer(
        SUBMIT,
        200,
        Some(r#"{"outcome":"rejected","error":"nope"}"#),
        None,
        NOW,
    );
    assert_eq!(string.error.expect("error").code, "nope");
    let codeless = map_answer(
        SUBMIT,
        200,
        Some(r#"{"outcome":"rejected","error":{"message":"m"}}"#),
        None,
        NOW,
    );
    let codeless = codeless.error.expect("error");
    assert_eq!(
        (codeless.code.as_str(), codeless.message.as_str()),
        ("server_error", "m")
    );
}

#[test]
fn p7_http_errors_keep_the_server_code_in_details() {
    let body = r#"{"error":{"code":"too_many_requests","message":"injected fault"}}"#;
    let error = map_answer(QUERY, 429, Some(body), Some("1"), NOW)
        .error
        .expect("error");
    assert_eq!(error.code, "http_429");
    assert_eq!(error.message, "injected fault");
    assert_eq!(
        error.details,
        Some(json!({"status": 429, "serverCode": "too_many_requests"}).into())
    );
    let bare = map_answer(QUERY, 500, None, None, NOW)
        .error
        .expect("error");
    assert_eq!(
        (bare.code.as_str(), bare.message.as_str()),
        ("http_500", "HTTP 500")
    );
}

#[test]
fn p7_accepted_honours_retry_after_and_others_ignore_it() {
    let accepted = map_answer(
        SUBMIT,
        202,
        Some(r#"{"outcome":"accepted"}"#),
        Some("2"),
        NOW,
    );
    assert_eq!(accepted.retry_after_ms, Some(2_000));
    let in_progress = map_answer(SUBMIT, 409, None, Some("4"), NOW);
    assert_eq!(in_progress.retry_after_ms, Some(4_000));
    let applied = map_answer(
        SUBMIT,
        200,
        Some(r#"{"outcome":"applied"}"#),
        Some("2"),
        NOW,
    );
    assert_eq!(applied.retry_after_ms, None);
    let rejected = map_answer(SUBMIT, 400, None, Some("2"), NOW);
    assert_eq!(rejected.retry_after_ms, None);
}

#[test]
fn p7_null_fields_are_absent() {
    let body = r#"{"outcome":"applied","error":null,"canonical":null,"operations":null}"#;
    let status = map_answer(SUBMIT, 200, Some(body), None, NOW);
    assert_eq!(status, AttemptStatus::outcome(AttemptOutcome::Applied));
}

#[test]
fn w3_retry_after_delta_seconds() {
    assert_eq!(parse_retry_after("0", NOW), Some(0));
    assert_eq!(parse_retry_after("120", NOW), Some(120_000));
    assert_eq!(parse_retry_after(" 7 ", NOW), Some(7_000));
    assert_eq!(
        parse_retry_after("99999999999999999999999", NOW),
        Some(u64::MAX)
    );
    for bad in ["", " ", "-1", "1.5", "+3", "3s", "0x10", "soon"] {
        assert_eq!(parse_retry_after(bad, NOW), None, "{bad:?}");
    }
}

#[test]
fn w3_retry_after_http_date() {
    // RFC 9110's example date is NOW itself.
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", NOW),
        Some(0)
    );
    assert_eq!(
        parse_retry_after("Sun, 06 Nov 1994 08:49:38 GMT", NOW),
        Some(1_000)
    );
    assert_eq!(
        parse_retry_after("Mon, 07 Nov 1994 08:49:37 GMT", NOW),
        Some(86_400_000)
    );
    // A past date means "now".
    assert_eq!(
        parse_retry_after("Thu, 01 Jan 1970 00:00:00 GMT", NOW),
        Some(0)
    );
    // Leap years, month ends and the epoch.
    assert_eq!(parse_imf_fixdate("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
    assert_eq!(
        parse_imf_fixdate("Tue, 29 Feb 2000 00:00:00 GMT"),
        Some(951_782_400_000)
    );
    assert_eq!(
        parse_imf_fixdate("Sat, 01 Jan 2000 00:00:00 GMT"),
        Some(946_684_800_000)
    );
    assert_eq!(
        parse_imf_fixdate("Fri, 31 Dec 2038 23:59:59 GMT"),
        Some(2_177_452_799_000)
    );
    assert_eq!(
        parse_imf_fixdate("Tue, 14 Nov 2023 22:13:20 GMT"),
        Some(1_700_000_000_000)
    );
}

#[test]
fn w3_retry_after_rejects_malformed_dates() {
    for bad in [
        "Sun, 06 Nov 1994 08:49:37 UTC",
        "Sunday, 06-Nov-94 08:49:37 GMT",
        "Sun Nov  6 08:49:37 1994",
        "Sun, 6 Nov 1994 08:49:37 GMT",
        "Xyz, 06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 00 Nov 1994 08:49:37 GMT",
        "Sun, 31 Nov 1994 08:49:37 GMT",
        "Mon, 29 Feb 1900 00:00:00 GMT",
        "Sun, 06 Nov 1994 24:00:00 GMT",
        "Sun, 06 Nov 1994 08:60:00 GMT",
        "Sun, 06 Nov 1994 08:49:61 GMT",
        "Sun, 06 Nov 1969 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:3x GMT",
        "Sun, 06 Nov 1994 08:49:+7 GMT",
        "Sun,_06 Nov 1994 08:49:37 GMT",
        "Sun, 06 Nov 1994 08:49:37 GMT ",
        "Sün, 06 Nov 1994 08:49:37 GMT",
    ] {
        assert_eq!(parse_imf_fixdate(bad), None, "{bad:?}");
    }
}

#[test]
fn w3_a_pluggable_transport_answer_maps_like_http() {
    use super::map_transport_answer;
    let now = 1_000_000;
    let applied = map_transport_answer(
        RetryAction::Submit,
        &serde_json::json!({"outcome": "applied", "canonical": {"v": 2}}).to_string(),
        now,
    );
    assert_eq!(applied.outcome, AttemptOutcome::Applied);
    assert_eq!(applied.canonical, Some(serde_json::json!({"v": 2}).into()));
    let rejected = map_transport_answer(
        RetryAction::Submit,
        &serde_json::json!({"outcome": "rejected", "error": "version_conflict"}).to_string(),
        now,
    );
    assert_eq!(rejected.outcome, AttemptOutcome::Rejected);
    let busy = map_transport_answer(
        RetryAction::Submit,
        &serde_json::json!({"status": 503, "retryAfterMs": 1500}).to_string(),
        now,
    );
    assert_eq!(
        (busy.outcome, busy.retry_after_ms),
        (AttemptOutcome::Unresolved, Some(1_500))
    );
    let missing = map_transport_answer(
        RetryAction::Query,
        &serde_json::json!({"status": 404}).to_string(),
        now,
    );
    assert_eq!(missing.error.map(|e| e.code), Some("not_found".to_string()));
}

/// The answer's derive reads what the module reads: the same status from the same body, and a
/// refusal (`invalid_answer`) where the module refuses.
#[test]
fn p7_an_answer_is_read_by_its_derive_from_an_object_only() {
    let read = |body: &str| map_answer(SUBMIT, 200, Some(body), None, NOW);
    let invalid = |body: &str| code(&read(body)) == Some(INVALID_ANSWER);
    // Lenient members: null is absent, a code or message that is not a string is empty,
    // unknown members are skipped, accepted entries carry no verdict.
    let lenient =
        read(r#"{"outcome":"applied","canonical":null,"error":null,"operations":null,"x":1}"#);
    assert_eq!(lenient.outcome, AttemptOutcome::Applied);
    assert!(
        lenient.error.is_none() && lenient.canonical.is_none() && lenient.operations.is_empty()
    );
    let odd = read(r#"{"outcome":"rejected","error":{"code":7,"message":["x"],"details":null}}"#);
    assert_eq!(odd.outcome, AttemptOutcome::Rejected);
    assert!(odd.error.as_ref().is_some_and(|e| e.details.is_none()));
    let batch = read(
        r#"{"outcome":"applied","operations":[{"operationId":"a","outcome":"applied","canonical":{"v":2}},{"operationId":"b","outcome":"accepted"},{"operationId":"c","outcome":"rejected","error":{"code":"conflict"}}]}"#,
    );
    assert_eq!(batch.operations.len(), 2);
    assert_eq!(
        batch.operations[1].error.as_ref().map(|e| e.code.as_str()),
        Some("conflict")
    );
    // Kept values are the server's text without its layout: member order and numbers as written.
    let kept = read(
        r#"{"outcome":"rejected","canonical":{ "z" : [-0, 1e2] , "a":1},"error":{"code":"c","details":{"b":2, "a":1}}}"#,
    );
    assert_eq!(
        kept.canonical.as_ref().map(JsonText::text),
        Some(r#"{"z":[-0,1e2],"a":1}"#)
    );
    let details = kept.error.and_then(|e| e.details);
    assert_eq!(
        details.as_ref().map(JsonText::text),
        Some(r#"{"b":2,"a":1}"#)
    );
    // A kept value that is not JSON the ledger keeps is left out; the answer stands.
    let lone = read(r#"{"outcome":"applied","canonical":"\ud800"}"#);
    assert_eq!(
        (lone.outcome, lone.canonical),
        (AttemptOutcome::Applied, None)
    );
    // Refused: not an object (an array would otherwise read as the members in order), a member
    // written twice, an unknown outcome, an error that is neither a string nor an object,
    // operation entries that are not objects.
    for body in [
        r#"["applied"]"#,
        r#""applied""#,
        r#"{"outcome":"applied","outcome":"rejected"}"#,
        r#"{"outcome":"unresolved"}"#,
        r#"{"canonical":{}}"#,
        r#"{"outcome":"applied","error":5}"#,
        r#"{"outcome":"applied","operations":{}}"#,
        r#"{"outcome":"applied","operations":[["a","applied"]]}"#,
        r#"{"outcome":"applied","operations":[{"outcome":"applied"}]}"#,
        r#"{"outcome":"applied","operations":[{"operationId":"a","outcome":"maybe"}]}"#,
    ] {
        assert!(invalid(body), "{body}");
    }
}
