//! Unit tests of save-time validation, one or more per code, tagged with clause IDs.

use super::*;
use crate::model::{MAX_NESTING_DEPTH, pointer_token};
use serde_json::{Map, json};

fn base() -> Value {
    json!({
        "manifestVersion": "2", "id": "wf_1", "name": "wf",
        "steps": [
            {"id": "a", "uses": {"app": "x", "action": "y"}},
            {"id": "b", "uses": {"app": "x", "action": "y"}}
        ]
    })
}

fn with(mut doc: Value, pointer: &str, value: Value) -> Value {
    let (parent, last) = pointer.rsplit_once('/').expect("pointer has a parent");
    let target = doc.pointer_mut(parent).expect("parent exists");
    match target {
        Value::Object(o) => {
            o.insert(last.to_owned(), value);
        }
        Value::Array(a) => a[last.parse::<usize>().expect("index")] = value,
        _ => panic!("parent is not a container"),
    }
    doc
}

fn without(mut doc: Value, pointer: &str) -> Value {
    let (parent, last) = pointer.rsplit_once('/').expect("pointer has a parent");
    doc.pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect("parent object")
        .remove(last);
    doc
}

fn problems(doc: &Value) -> Vec<(String, String)> {
    problems_with(doc, ValidateOptions::default())
}

fn problems_with(doc: &Value, opts: ValidateOptions) -> Vec<(String, String)> {
    match validate_workflow(doc, opts) {
        Ok(_) => Vec::new(),
        Err(errors) => errors
            .into_iter()
            .map(|e| {
                assert_eq!(e.status, 400);
                assert!(!e.message.is_empty());
                (e.code.as_str().to_owned(), e.path)
            })
            .collect(),
    }
}

fn one(code: &str, path: &str) -> Vec<(String, String)> {
    vec![(code.to_owned(), path.to_owned())]
}

const RUNNABLE: ValidateOptions = ValidateOptions { runnable: true };

#[test]
fn a_well_formed_workflow_validates_and_parses() {
    let w = validate_workflow(&base(), RUNNABLE).expect("valid");
    assert_eq!(w.steps.len(), 2);
}

// ---- document shape: invalid_type / missing_field / invalid_value ----

#[test]
fn the_document_must_be_an_object() {
    for doc in [json!(null), json!([]), json!("wf"), json!(2)] {
        assert_eq!(problems(&doc), one("invalid_type", ""), "{doc}");
    }
}

#[test]
fn required_workflow_fields_are_reported_at_their_own_path() {
    assert_eq!(
        problems(&json!({})),
        [
            ("missing_field".to_owned(), "/manifestVersion".to_owned()),
            ("missing_field".to_owned(), "/id".to_owned()),
            ("missing_field".to_owned(), "/name".to_owned()),
            ("missing_field".to_owned(), "/steps".to_owned()),
        ]
    );
}

#[test]
fn manifest_version_must_be_the_string_2() {
    assert_eq!(
        problems(&with(base(), "/manifestVersion", json!("1"))),
        one("invalid_value", "/manifestVersion")
    );
    assert_eq!(
        problems(&with(base(), "/manifestVersion", json!(2))),
        one("invalid_type", "/manifestVersion")
    );
}

#[test]
fn workflow_string_fields_refuse_other_types_and_null() {
    for field in ["id", "name", "displayName", "description"] {
        for bad in [json!(1), json!(null), json!({}), json!(["x"])] {
            let doc = with(base(), &format!("/{field}"), bad.clone());
            assert_eq!(
                problems(&doc),
                one("invalid_type", &format!("/{field}")),
                "{field}={bad}"
            );
        }
    }
}

#[test]
fn trigger_must_be_an_object_when_present() {
    assert!(problems(&with(base(), "/trigger", json!({"subscriptionId": "s"}))).is_empty());
    assert_eq!(
        problems(&with(base(), "/trigger", json!("manual"))),
        one("invalid_type", "/trigger")
    );
}

#[test]
fn model_7_variables_have_typed_fields() {
    let doc = with(
        base(),
        "/variables",
        json!([
            {"key": "ok", "type": "string", "required": true, "default": null},
            {"type": "string"},
            {"key": 5, "type": "date", "required": "yes"},
            "channel"
        ]),
    );
    assert_eq!(
        problems(&doc),
        [
            ("missing_field".to_owned(), "/variables/1/key".to_owned()),
            ("invalid_type".to_owned(), "/variables/2/key".to_owned()),
            ("invalid_value".to_owned(), "/variables/2/type".to_owned()),
            (
                "invalid_type".to_owned(),
                "/variables/2/required".to_owned()
            ),
            ("invalid_type".to_owned(), "/variables/3".to_owned()),
        ]
    );
    assert_eq!(
        problems(&with(base(), "/variables", json!({}))),
        one("invalid_type", "/variables")
    );
}

#[test]
fn steps_must_be_an_array_of_objects_with_an_id() {
    assert_eq!(
        problems(&with(base(), "/steps", json!({}))),
        one("invalid_type", "/steps")
    );
    assert_eq!(
        problems(&with(base(), "/steps/1", json!("b"))),
        one("invalid_type", "/steps/1")
    );
    assert_eq!(
        problems(&without(base(), "/steps/1/id")),
        one("missing_field", "/steps/1/id")
    );
    assert_eq!(
        problems(&with(base(), "/steps/1/id", json!(7))),
        one("invalid_type", "/steps/1/id")
    );
    assert_eq!(
        problems(&with(base(), "/steps/1/id", json!(""))),
        one("invalid_value", "/steps/1/id")
    );
}

#[test]
fn step_enums_are_checked() {
    // ERR-1..3: the three onError values; FAN: the two fanOut values.
    for ok in ["fail", "continue", "continue-record"] {
        assert!(
            problems(&with(base(), "/steps/0/onError", json!(ok))).is_empty(),
            "{ok}"
        );
    }
    assert_eq!(
        problems(&with(base(), "/steps/0/onError", json!("ignore"))),
        one("invalid_value", "/steps/0/onError")
    );
    assert_eq!(
        problems(&with(base(), "/steps/0/onError", json!(null))),
        one("invalid_type", "/steps/0/onError")
    );
    for ok in ["sequential", "parallel"] {
        assert!(
            problems(&with(base(), "/steps/0/fanOut", json!(ok))).is_empty(),
            "{ok}"
        );
    }
    assert_eq!(
        problems(&with(base(), "/steps/0/fanOut", json!("concurrent"))),
        one("invalid_value", "/steps/0/fanOut")
    );
}

#[test]
fn uses_and_with_have_typed_fields() {
    assert_eq!(
        problems(&with(base(), "/steps/0/uses", json!("x.y"))),
        one("invalid_type", "/steps/0/uses")
    );
    assert_eq!(
        problems(&with(base(), "/steps/0/uses/app", json!(3))),
        one("invalid_type", "/steps/0/uses/app")
    );
    assert_eq!(
        problems(&with(base(), "/steps/0/uses/action", json!(null))),
        one("invalid_type", "/steps/0/uses/action")
    );
    assert!(problems(&with(base(), "/steps/0/uses/connection", json!(null))).is_empty());
    assert!(problems(&with(base(), "/steps/0/uses/connection", json!("conn_1"))).is_empty());
    assert_eq!(
        problems(&with(base(), "/steps/0/uses/connection", json!(1))),
        one("invalid_type", "/steps/0/uses/connection")
    );
    assert_eq!(
        problems(&with(base(), "/steps/0/with", json!([1]))),
        one("invalid_type", "/steps/0/with")
    );
}

#[test]
fn model_2_declarative_fields_are_never_refused() {
    // MODEL-2 / CTRL-10: settings, position, notes and ports may hold anything.
    for weird in [
        json!(null),
        json!("x"),
        json!(-1.5),
        json!([1, {"a": null}]),
        json!({"zoom": "far"}),
    ] {
        let mut doc = with(base(), "/settings", weird.clone());
        doc = with(doc, "/steps/0/position", weird.clone());
        doc = with(doc, "/steps/0/notes", weird.clone());
        doc = with(doc, "/steps/1/ports", weird.clone());
        assert!(problems_with(&doc, RUNNABLE).is_empty(), "{weird}");
    }
}

#[test]
fn workflow_on_error_is_fail_or_continue_only() {
    for ok in ["fail", "continue"] {
        assert!(problems(&with(base(), "/onError", json!(ok))).is_empty());
    }
    for bad in ["continue-record", "retry"] {
        assert_eq!(
            problems(&with(base(), "/onError", json!(bad))),
            one("invalid_value", "/onError")
        );
    }
}

#[test]
fn runerr_7_reroute_target_is_a_callable() {
    let good = json!({"target": {"kind": "workflow", "workflow": "wf_2"}, "with": {"x": 1}});
    assert!(problems(&with(base(), "/reroute", good)).is_empty());
    let fn_target = json!({"target": {"kind": "function", "function": "fn_1"}});
    assert!(problems(&with(base(), "/reroute", fn_target)).is_empty());
    assert_eq!(
        problems(&with(base(), "/reroute", json!({}))),
        one("missing_field", "/reroute/target")
    );
    assert_eq!(
        problems(&with(
            base(),
            "/reroute",
            json!({"target": {"kind": "app"}})
        )),
        one("invalid_value", "/reroute/target/kind")
    );
    assert_eq!(
        problems(&with(
            base(),
            "/reroute",
            json!({"target": {"kind": "function", "workflow": "w"}})
        )),
        one("missing_field", "/reroute/target/function")
    );
    assert_eq!(
        problems(&with(base(), "/reroute", json!(null))),
        one("invalid_type", "/reroute")
    );
}

// ---- PLAN-1..3, PLAN-6, PLAN-8: graph and id rules ----

#[test]
fn plan_1_duplicate_step_id() {
    let doc = with(base(), "/steps/1/id", json!("a"));
    assert_eq!(problems(&doc), one("duplicate_step_id", "/steps/1/id"));
}

#[test]
fn plan_2_dangling_edge() {
    let doc = with(
        base(),
        "/edges",
        json!([{"from": "a", "to": "zz"}, {"from": "q", "to": "b"}]),
    );
    assert_eq!(
        problems(&doc),
        [
            ("dangling_edge".to_owned(), "/edges/0/to".to_owned()),
            ("dangling_edge".to_owned(), "/edges/1/from".to_owned()),
        ]
    );
}

#[test]
fn plan_3_cycle_names_the_steps_on_it() {
    let doc = with(
        base(),
        "/edges",
        json!([{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]),
    );
    let errors = validate_workflow(&doc, ValidateOptions::default()).expect_err("cyclic");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, Code::Cycle);
    assert_eq!(errors[0].path, "/edges");
    assert!(
        errors[0].message.contains(r#""a" → "b" → "a""#),
        "{}",
        errors[0].message
    );
}

#[test]
fn err_13_error_edges_are_validated_like_success_edges() {
    let dangling = with(
        base(),
        "/edges",
        json!([{"from": "a", "to": "nowhere", "when": "error"}]),
    );
    assert_eq!(problems(&dangling), one("dangling_edge", "/edges/0/to"));
    let cyclic = with(
        base(),
        "/edges",
        json!([{"from": "a", "to": "b", "when": "error"}, {"from": "b", "to": "a"}]),
    );
    assert_eq!(problems(&cyclic), one("cycle", "/edges"));
}

#[test]
fn plan_6_edge_when_outside_the_enum_is_rejected() {
    for bad in [
        json!("failure"),
        json!("Success"),
        json!(null),
        json!(true),
        json!(["error"]),
    ] {
        let doc = with(
            base(),
            "/edges",
            json!([{"from": "a", "to": "b", "when": bad}]),
        );
        assert_eq!(
            problems(&doc),
            one("invalid_edge_when", "/edges/0/when"),
            "{bad}"
        );
    }
    for ok in [json!("success"), json!("error")] {
        let doc = with(
            base(),
            "/edges",
            json!([{"from": "a", "to": "b", "when": ok}]),
        );
        assert!(problems(&doc).is_empty());
    }
    // Omitted `when` is a success edge.
    let doc = with(base(), "/edges", json!([{"from": "a", "to": "b"}]));
    let w = validate_workflow(&doc, ValidateOptions::default()).expect("valid");
    assert_eq!(w.edges()[0].when(), crate::model::When::Success);
}

#[test]
fn edges_have_typed_fields() {
    assert_eq!(
        problems(&with(base(), "/edges", json!(null))),
        one("invalid_type", "/edges")
    );
    let doc = with(
        base(),
        "/edges",
        json!([{"to": "b"}, {"from": 1, "to": "b"}, 5]),
    );
    assert_eq!(
        problems(&doc),
        [
            ("missing_field".to_owned(), "/edges/0/from".to_owned()),
            ("invalid_type".to_owned(), "/edges/1/from".to_owned()),
            ("invalid_type".to_owned(), "/edges/2".to_owned()),
        ]
    );
}

#[test]
fn plan_8_dotted_step_id_is_refused() {
    let doc = with(base(), "/steps/0/id", json!("fetch.items"));
    assert_eq!(problems(&doc), one("dotted_step_id", "/steps/0/id"));
    // An edge to the dotted id still resolves: one problem, not a cascade.
    let doc = with(doc, "/edges", json!([{"from": "fetch.items", "to": "b"}]));
    assert_eq!(problems(&doc), one("dotted_step_id", "/steps/0/id"));
}

// ---- PLAN-9: drafts and the runnable gate ----

#[test]
fn plan_9_drafts_may_leave_uses_unset() {
    let draft = json!({"manifestVersion": "2", "id": "w", "name": "w",
        "steps": [{"id": "a"}, {"id": "b", "uses": {}}, {"id": "c", "uses": {"app": "x"}}]});
    assert!(problems(&draft).is_empty());
    assert_eq!(
        problems_with(&draft, RUNNABLE),
        [
            ("missing_field".to_owned(), "/steps/0/uses".to_owned()),
            ("missing_field".to_owned(), "/steps/1/uses/app".to_owned()),
            (
                "missing_field".to_owned(),
                "/steps/1/uses/action".to_owned()
            ),
            (
                "missing_field".to_owned(),
                "/steps/2/uses/action".to_owned()
            ),
        ]
    );
}

#[test]
fn plan_9_no_steps_only_under_the_runnable_gate() {
    let empty = with(base(), "/steps", json!([]));
    assert!(problems(&empty).is_empty());
    assert_eq!(problems_with(&empty, RUNNABLE), one("no_steps", "/steps"));
}

#[test]
fn plan_9_runnable_refuses_empty_targets_and_accepts_function_steps() {
    let doc = with(base(), "/steps/0/uses/app", json!(""));
    assert!(problems(&doc).is_empty());
    assert_eq!(
        problems_with(&doc, RUNNABLE),
        one("invalid_value", "/steps/0/uses/app")
    );
    let function = with(base(), "/steps/0/uses", json!({"function": "fn_1"}));
    assert!(problems_with(&function, RUNNABLE).is_empty());
    let both = with(base(), "/steps/0/uses/function", json!("fn_1"));
    assert_eq!(
        problems_with(&both, RUNNABLE),
        one("invalid_value", "/steps/0/uses")
    );
}

// ---- MODEL-3 / MODEL-4: RetryPolicy ----

#[test]
fn model_3_well_formed_policies_are_accepted() {
    for retry in [
        json!(null),
        json!({"maxAttempts": 1}),
        json!({"maxAttempts": 3, "backoff": "exponential", "delayMs": 1000}),
        json!({"maxAttempts": 3.0}),
        json!({"maxAttempts": 1e300, "backoff": "fixed", "delayMs": 0}),
        json!({"maxAttempts": 18446744073709551615u64, "delayMs": 0.5}),
        json!({"maxAttempts": 2, "delayMs": 1e300, "x-extra": true}),
    ] {
        assert!(
            problems(&with(base(), "/steps/1/retry", retry.clone())).is_empty(),
            "{retry}"
        );
        assert!(
            problems(&with(base(), "/retry", retry.clone())).is_empty(),
            "{retry}"
        );
    }
}

#[test]
fn model_4_each_malformed_field_is_named_by_path() {
    let cases = [
        (json!({"maxAttempts": 0}), "/maxAttempts"),
        (json!({"maxAttempts": -2}), "/maxAttempts"),
        (json!({"maxAttempts": 1.5}), "/maxAttempts"),
        (json!({"maxAttempts": 0.5}), "/maxAttempts"),
        (json!({"maxAttempts": true}), "/maxAttempts"),
        (json!({"maxAttempts": "3"}), "/maxAttempts"),
        (json!({"maxAttempts": null}), "/maxAttempts"),
        (json!({"delayMs": 10}), "/maxAttempts"),
        (json!({"maxAttempts": 2, "delayMs": -1}), "/delayMs"),
        (json!({"maxAttempts": 2, "delayMs": "100"}), "/delayMs"),
        (json!({"maxAttempts": 2, "delayMs": null}), "/delayMs"),
        (json!({"maxAttempts": 2, "backoff": "linear"}), "/backoff"),
        (json!({"maxAttempts": 2, "backoff": null}), "/backoff"),
        (json!(3), ""),
        (json!([{"maxAttempts": 2}]), ""),
        (json!(true), ""),
    ];
    for (retry, field) in cases {
        let step = problems(&with(base(), "/steps/1/retry", retry.clone()));
        assert_eq!(
            step,
            one("invalid_retry_policy", &format!("/steps/1/retry{field}")),
            "{retry}"
        );
        let run = problems(&with(base(), "/retry", retry.clone()));
        assert_eq!(
            run,
            one("invalid_retry_policy", &format!("/retry{field}")),
            "{retry}"
        );
    }
}

#[test]
fn model_4_every_malformed_field_of_one_policy_is_reported() {
    let doc = with(
        base(),
        "/steps/0/retry",
        json!({"maxAttempts": 0, "backoff": "x", "delayMs": -1}),
    );
    assert_eq!(
        problems(&doc),
        [
            (
                "invalid_retry_policy".to_owned(),
                "/steps/0/retry/maxAttempts".to_owned()
            ),
            (
                "invalid_retry_policy".to_owned(),
                "/steps/0/retry/backoff".to_owned()
            ),
            (
                "invalid_retry_policy".to_owned(),
                "/steps/0/retry/delayMs".to_owned()
            ),
        ]
    );
}

#[test]
fn retry_6_policies_on_call_and_control_steps_are_still_validated() {
    let doc = with(
        base(),
        "/steps/0/uses",
        json!({"app": "@w6w/control", "action": "if"}),
    );
    // A well-formed `if` (CTRL-2 needs a condition), so the retry is the only problem.
    let doc = with(doc, "/steps/0/with", json!({"condition": true}));
    let doc = with(doc, "/steps/0/retry", json!({"maxAttempts": 0}));
    assert_eq!(
        problems(&doc),
        one("invalid_retry_policy", "/steps/0/retry/maxAttempts")
    );
}

// ---- MODEL-5: key ----

#[test]
fn model_5_key_grammar_on_first_assignment() {
    assert!(problems(&with(base(), "/key", json!("daily-report"))).is_empty());
    assert!(problems(&with(base(), "/key", json!(null))).is_empty());
    for bad in [
        "ab",
        "Daily",
        "daily_report",
        "daily--report",
        "daily-",
        "1daily",
        "",
    ] {
        assert_eq!(
            problems(&with(base(), "/key", json!(bad))),
            one("invalid_key", "/key"),
            "{bad}"
        );
    }
    assert_eq!(
        problems(&with(base(), "/key", json!(["k"]))),
        one("invalid_type", "/key")
    );
}

// ---- reporting ----

#[test]
fn every_problem_is_reported_in_document_order() {
    let doc = json!({
        "manifestVersion": "3",
        "name": 5,
        "edges": [{"from": "a", "to": "ghost", "when": "maybe"}],
        "steps": [
            {"id": "a.b", "retry": {"maxAttempts": 0}},
            {"id": "a", "onError": "explode"},
            {"id": "a"}
        ],
        "key": "Bad"
    });
    let got = problems(&doc);
    let want: Vec<(String, String)> = [
        ("invalid_value", "/manifestVersion"),
        ("invalid_type", "/name"),
        ("dangling_edge", "/edges/0/to"),
        ("invalid_edge_when", "/edges/0/when"),
        ("dotted_step_id", "/steps/0/id"),
        ("invalid_retry_policy", "/steps/0/retry/maxAttempts"),
        ("invalid_value", "/steps/1/onError"),
        ("duplicate_step_id", "/steps/2/id"),
        ("invalid_key", "/key"),
        ("missing_field", "/id"),
    ]
    .into_iter()
    .map(|(c, p)| (c.to_owned(), p.to_owned()))
    .collect();
    assert_eq!(got, want);
}

#[test]
fn paths_escape_tilde_and_slash() {
    assert_eq!(pointer_token("a/b~c"), "a~1b~0c");
    let doc = json!({"a/b": {"c~d": [0, 1]}});
    assert_eq!(document_position(&doc, "/a~1b/c~0d/1"), vec![0, 0, 1]);
}

#[test]
fn sec_2_deep_nesting_is_refused_without_recursion() {
    // Built by hand: `json!(expr)` serializes `expr` recursively.
    let mut deep = json!(1);
    for _ in 0..100_000 {
        deep = Value::Array(vec![deep]);
    }
    let mut with_block = Map::new();
    with_block.insert("x".to_owned(), deep);
    let doc = with(base(), "/steps/0/with", Value::Object(with_block));
    let errors = validate_workflow(&doc, ValidateOptions::default()).expect_err("too deep");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, Code::NestingTooDeep);
    assert!(
        errors[0].path.starts_with("/steps/0/with/x/0/0/"),
        "{}",
        &errors[0].path[..40]
    );
    assert_eq!(errors[0].path.matches('/').count(), MAX_NESTING_DEPTH);
    // Dropping a 100 000-deep Value recurses inside serde_json; take it apart iteratively.
    let mut doc = doc;
    let mut stack = vec![doc.take()];
    while let Some(mut v) = stack.pop() {
        match &mut v {
            Value::Array(a) => stack.append(a),
            Value::Object(o) => stack.extend(std::mem::take(o).into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[test]
fn nesting_at_the_limit_is_accepted() {
    // Containers on the path: root, steps, step, with — then the arrays under `x`.
    let mut deep = json!(1);
    for _ in 0..(MAX_NESTING_DEPTH - 4) {
        deep = Value::Array(vec![deep]);
    }
    let doc = with(base(), "/steps/0/with", json!({"x": deep}));
    assert!(validate_workflow(&doc, ValidateOptions::default()).is_ok());
    let doc = with(base(), "/steps/0/with", json!({"x": [deep]}));
    assert!(validate_workflow(&doc, ValidateOptions::default()).is_err());
}

#[test]
fn accepted_documents_round_trip_exactly() {
    let doc = json!({
        "manifestVersion": "2", "id": "w", "name": "w", "key": null,
        "x-vendor": {"keep": [1, 2.5, null]},
        "variables": [{"key": "v", "default": null, "x": 1}],
        "steps": [{"id": "a", "uses": {"app": "x", "action": "y", "connection": null, "z": 0},
                   "retry": null, "position": null, "notes": {"n": 1}, "ports": {"in": 2},
                   "with": {"q": {"$": "vars.v"}}, "custom": "kept"},
                  {"id": "b", "retry": {"maxAttempts": 3.0, "delayMs": 0, "jitter": true}}],
        "edges": [{"from": "a", "to": "b", "label": "kept"}],
        "settings": "arbitrary",
        "retry": {"maxAttempts": 1e300},
        "reroute": {"target": {"kind": "workflow", "workflow": "w2", "extra": 1}}
    });
    let w = validate_workflow(&doc, ValidateOptions::default()).expect("valid");
    assert_eq!(serde_json::to_value(&w).expect("serializes"), doc);
}

/// MODEL-5's first-assignment gate, through [`validate_save`].
mod key_gate {
    use super::*;
    use crate::model::ValidationCode;

    fn doc(key: Value) -> Value {
        json!({"manifestVersion": "2", "id": "w", "name": "w", "key": key,
               "steps": [{"id": "a", "uses": {"app": "x", "action": "y"}}]})
    }

    fn key_codes(result: Result<Workflow, Vec<ValidationError>>) -> Vec<(ValidationCode, String)> {
        result
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.code, e.path))
            .collect()
    }

    #[test]
    fn model_5_first_assignment_checks_the_grammar() {
        let bad = doc(json!("Bad_Key"));
        let want = vec![(ValidationCode::InvalidKey, "/key".to_owned())];
        // A new workflow, a stored one with no key, and one with a null key: all first sets.
        assert_eq!(
            key_codes(validate_save(&bad, None, ValidateOptions::default())),
            want
        );
        let stored_without = json!({"id": "w"});
        assert_eq!(
            key_codes(validate_save(
                &bad,
                Some(&stored_without),
                ValidateOptions::default()
            )),
            want
        );
        let stored_null = doc(Value::Null);
        assert_eq!(
            key_codes(validate_save(
                &bad,
                Some(&stored_null),
                ValidateOptions::default()
            )),
            want
        );
    }

    #[test]
    fn model_5_a_stored_key_is_never_rechecked() {
        // Stored under an older, looser grammar; a later save that keeps it must pass.
        let stored = doc(json!("Legacy_Key"));
        assert!(validate_save(&stored, Some(&stored), ValidateOptions::default()).is_ok());
        // A save that changes an already-set key is not a first assignment either.
        let renamed = doc(json!("Other_Key"));
        assert!(validate_save(&renamed, Some(&stored), ValidateOptions::default()).is_ok());
    }

    #[test]
    fn model_5_clearing_and_absent_keys_are_never_checked() {
        assert!(validate_save(&doc(Value::Null), None, ValidateOptions::default()).is_ok());
        let mut no_key = doc(Value::Null);
        no_key.as_object_mut().map(|o| o.remove("key"));
        assert!(validate_save(&no_key, None, ValidateOptions::default()).is_ok());
    }

    #[test]
    fn model_5_the_type_of_key_is_checked_on_every_save() {
        // The gate covers the grammar only; a non-string key is not a key at all.
        let stored = doc(json!("good-key"));
        assert_eq!(
            key_codes(validate_save(
                &doc(json!(42)),
                Some(&stored),
                ValidateOptions::default()
            )),
            vec![(ValidationCode::InvalidType, "/key".to_owned())]
        );
    }
}
