//! Unit tests of the YAML front-end: every MUST with its code and clause, YML-3 schemas
//! at argument positions, the import of bodies, modifiers and `when` guards.

use serde_json::json;

use super::import;
use crate::dialect::{DIALECT_PROBLEMS_MAX, Manifest, Problem, TOO_MANY_PROBLEMS};

fn problems(text: &str) -> Vec<Problem> {
    import(text, None).expect_err("invalid")
}

fn has(text: &str, code: &str, clause: &str) -> bool {
    problems(text)
        .iter()
        .any(|p| p.code == code && p.clause == Some(clause))
}

fn manifest() -> Manifest {
    Manifest::from_json(&json!({"actions": {"helpdesk.new_ticket": {
        "input": {"type": "object", "required": ["queue", "subject"],
                  "properties": {"queue": {"enum": ["tier1", "tier2"]}, "subject": {"type": "string"}}},
        "retry": {"maxAttempts": 2}
    }, "chat.post": {"input": {"type": "object"}}}}))
    .expect("manifest")
}

#[test]
fn an_action_call_imports_as_uses_with_arguments_in_list_order() {
    let i = import(
        "steps:\n  - ticket:\n      helpdesk.new_ticket:\n        queue: tier1\n        subject: hi\n      connection: conn_1\n  - done:\n      chat.post:\n        text: ok\n      optional: true\n",
        Some(&manifest()),
    )
    .expect("valid");
    let steps = i.workflow["steps"].as_array().expect("steps");
    assert_eq!(steps[0]["id"], "ticket");
    assert_eq!(
        steps[0]["uses"],
        json!({"app": "helpdesk", "action": "new_ticket", "connection": "conn_1"})
    );
    assert_eq!(steps[0]["with"], json!({"queue": "tier1", "subject": "hi"}));
    assert_eq!(
        steps[0]["retry"],
        json!({"maxAttempts": 2}),
        "YML-12: manifest default"
    );
    assert_eq!(steps[1]["onError"], "continue-record", "YML-11");
    assert!(
        i.workflow.get("edges").is_none(),
        "YML-4: the list is the chain"
    );
}

#[test]
fn yml3_arguments_are_checked_against_the_schema_at_their_position() {
    let text =
        "steps:\n  - t:\n      helpdesk.new_ticket:\n        queue: tier9\n        extra: 1\n";
    let ps = import(text, Some(&manifest())).expect_err("invalid");
    let enum_err = ps
        .iter()
        .find(|p| p.path == "/steps/0/t/helpdesk.new_ticket/queue")
        .expect("enum");
    assert_eq!(
        (enum_err.code, enum_err.line, enum_err.column),
        ("param_invalid", 4, 16)
    );
    assert!(
        ps.iter().any(|p| p.message.contains("subject")),
        "required: {ps:?}"
    );
    assert!(
        ps.iter().any(|p| p.message.contains("extra")),
        "unknown field: {ps:?}"
    );
    let unknown =
        import("steps:\n  - t:\n      other.act: {}\n", Some(&manifest())).expect_err("x");
    assert_eq!(unknown[0].code, "unknown_action");
}

// long: one table of (document, code, clause) rows, a row per MUST of the YAML dialect;
// split, the rows would no longer be read as one list against the spec.
#[test]
fn every_must_has_its_code_and_clause() {
    let cases = [
        ("steps: {}\n", "invalid_steps", "YML-1"),
        ("name: x\n", "missing_steps", "YML-1"),
        (
            "steps:\n  - a: {x.y: {}}\n    b: {x.y: {}}\n",
            "invalid_step",
            "YML-1",
        ),
        ("steps:\n  - just-a-string\n", "invalid_step", "YML-1"),
        ("steps:\n  - a:\n      nobody: 1\n", "invalid_body", "YML-2"),
        (
            "steps:\n  - a:\n      x.y.z: {}\n",
            "invalid_action",
            "YML-2",
        ),
        (
            "steps:\n  - a:\n      x.y: [1]\n",
            "invalid_arguments",
            "YML-2",
        ),
        (
            "steps:\n  - a:\n      run: 'return 1'\n      connection: c\n",
            "modifier_not_permitted",
            "YML-7",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      recovery: r\n",
            "modifier_not_permitted",
            "YML-7",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      optional: true\n      must_succeed: true\n",
            "optional_and_must_succeed",
            "YML-8",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      colour: red\n",
            "unknown_key",
            "YML-9",
        ),
        (
            "steps:\n  - a:\n      wait: 5s\n      timeout: 10s\n",
            "modifier_not_permitted",
            "YML-10",
        ),
        (
            "steps:\n  - a:\n      wait_for: e\n      timeout: 10s\n",
            "modifier_not_permitted",
            "YML-10",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      timeout: soon\n",
            "invalid_modifier",
            "YML-10",
        ),
        (
            "steps:\n  - w:\n      stop: done\n  - b:\n      x.y:\n        v: '{{ w.reason }}'\n",
            "unreadable_step",
            "YML-6",
        ),
        (
            "steps:\n  - w:\n      wait: 5s\n  - b:\n      x.y:\n        v: '{{ w }}'\n",
            "unreadable_step",
            "YML-6",
        ),
        (
            "steps:\n  - w:\n      wait: 5s\n  - b:\n      x.y:\n        v: '{{ steps.w }}'\n",
            "unknown_reference",
            "YML-5",
        ),
        (
            "steps:\n  - a:\n      choose: {}\n",
            "unsupported_construct",
            "YML-5",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      undo: {x.z: {}}\n",
            "unsupported_construct",
            "YML-7",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      retry: many\n",
            "invalid_modifier",
            "YML-12",
        ),
        (
            "steps:\n  - a:\n      x.y: {}\n      retry: {maxAttempts: 0}\n",
            "invalid_modifier",
            "YML-12",
        ),
    ];
    for (text, code, clause) in cases {
        assert!(
            has(text, code, clause),
            "{text}\n expected {code} ({clause}), got {:?}",
            problems(text)
        );
    }
}

#[test]
fn construct_keys_are_not_modifiers() {
    let i = import(
        "steps:\n  - r:\n      run: python\n      code: 'return 1'\n      network: false\n      retry: 2\n      timeout: 30s\n",
        None,
    )
    .expect("YML-9: code and network are construct keys of run");
    let s = &i.workflow["steps"][0];
    assert_eq!(s["uses"], json!({"app": "yaml", "action": "run"}));
    assert_eq!(s["x-yaml"]["code"], "return 1");
    assert_eq!(s["retry"], json!({"maxAttempts": 2}));
    assert!(i.notes.iter().any(|n| n.path.ends_with("/timeout")));
}

#[test]
fn when_guards_keep_list_order_and_never_skip_what_follows() {
    let i = import(
        "steps:\n  - a:\n      x.y: {}\n      when: '{{ message.go }}'\n  - b:\n      x.z: {}\n  - c:\n      x.w: {}\n      when: false\n  - d:\n      x.v: {}\n",
        None,
    )
    .expect("valid");
    let ids: Vec<&str> = i.workflow["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["when__start", "when__a", "a", "b", "when__c", "c", "d"]
    );
    let edges = &i.workflow["edges"];
    for (from, to) in [
        ("when__start", "when__a"),
        ("when__a", "a"),
        ("when__start", "b"),
        ("a", "b"),
        ("b", "when__c"),
        ("when__c", "c"),
        ("b", "d"),
        ("c", "d"),
    ] {
        assert!(
            edges
                .as_array()
                .is_some_and(|e| e.contains(&json!({"from": from, "to": to}))),
            "{from} -> {to} in {edges}"
        );
    }
}

#[test]
fn positions_and_duplicate_keys() {
    let p = problems("steps:\n  - a:\n      x.y: {}\n      optional: yes-please\n");
    assert_eq!((p[0].line, p[0].column), (4, 17));
    assert_eq!(p[0].path, "/steps/0/a/optional");
    let d = problems("steps:\n  - a:\n      x.y: {}\n      x.y: {}\n");
    assert_eq!(d[0].code, "duplicate_key");
    assert_eq!((d[0].line, d[0].column), (4, 7));
    let s = problems("steps: [\n");
    assert_eq!(s[0].code, "syntax_error");
}

/// D-218: a step id already used is found with a hash probe: 10× the duplicate steps is
/// at most ~10× the work, and each is reported.
#[test]
fn duplicate_step_ids_cost_linear_work() {
    let work = |n: usize| {
        let text: String = std::iter::once("steps:\n".to_owned())
            .chain((0..n).map(|_| "  - s:\n      run: x\n".to_owned()))
            .collect();
        let (result, units) = crate::dialect::work::of(|| import(&text, None));
        let problems = result.expect_err("duplicates");
        let dups = problems.iter().filter(|p| p.code == "duplicate_id").count();
        assert_eq!(
            dups, DIALECT_PROBLEMS_MAX,
            "the first ones reported (D-221)"
        );
        assert_eq!(problems.last().map(|p| p.code), Some(TOO_MANY_PROBLEMS));
        units
    };
    let (small, big) = (work(1_000), work(10_000));
    assert!(big <= 20 * small, "{small} → {big} units");
}

/// D-221: a path is built once per node, not copied into every node under it, and a
/// document reports at most DIALECT_PROBLEMS_MAX problems: 40 levels of 1,000-character
/// keys over 10× the `{{ w }}` reads of a wait step cost no more problems, and the walk
/// stops once the list is full.
#[test]
fn problems_under_long_paths_are_capped() {
    let doc = |n: usize| {
        let mut s = String::from("steps:\n  - w:\n      wait: 1s\n  - a:\n      c.act:\n");
        let mut indent = "        ".to_owned();
        for d in 0..40 {
            s.push_str(&format!("{indent}? {}{d}\n{indent}:\n", "k".repeat(1_000)));
            indent.push_str("  ");
        }
        for _ in 0..n {
            s.push_str(&format!("{indent}- '{{{{ w }}}}'\n"));
        }
        s
    };
    let bytes = |n: usize| -> usize {
        let problems =
            crate::dialect::import(crate::dialect::Dialect::Yaml, doc(n).as_bytes(), None)
                .expect_err("unreadable");
        assert_eq!(problems.len(), DIALECT_PROBLEMS_MAX + 1);
        assert_eq!(problems.last().map(|p| p.code), Some(TOO_MANY_PROBLEMS));
        assert!(
            problems[..DIALECT_PROBLEMS_MAX - 1]
                .iter()
                .any(|p| p.code == "unreadable_step")
        );
        problems
            .iter()
            .map(|p| p.path.len() + p.message.len())
            .sum()
    };
    let (small, big) = (bytes(200), bytes(2_000));
    assert!(
        big <= small + small / 10,
        "{small} → {big} bytes of problems"
    );
}

/// D-231: a whole-marker string reads the value type-preserved; text around markers is a
/// w6w template; `message` is the trigger's payload.
#[test]
fn references_resolve_to_w6w_paths() {
    let i = import(
        "steps:\n  - lookup:\n      crm.find: {email: '{{ message.from }}'}\n  - ticket:\n      hd.new:\n        customer: '{{ lookup.id }}'\n        subject: 'Call back {{ lookup.name }}'\n",
        None,
    )
    .expect("valid");
    let steps = &i.workflow["steps"];
    assert_eq!(
        steps[0]["with"]["email"],
        json!({"$": "trigger.event.from"})
    );
    assert_eq!(
        steps[1]["with"],
        json!({"customer": {"$": "steps.lookup.output.id"},
               "subject": "Call back {{ steps.lookup.output.name }}"})
    );
}

/// D-230: every reference the document cannot make is refused at its line, with its code.
#[test]
fn references_the_document_cannot_make_are_refused_with_their_position() {
    let cases = [
        (
            "  - a:\n      x.y: {v: '{{ b.id }}'}\n  - b:\n      x.z: {}\n",
            "later_step",
            3,
        ),
        ("  - a:\n      x.y: {v: '{{ a.id }}'}\n", "later_step", 3),
        (
            "  - a:\n      x.y: {v: '{{ nobody.id }}'}\n",
            "unknown_reference",
            3,
        ),
        (
            "  - a:\n      x.y: {v: 'x {{ vars.go }}'}\n",
            "unknown_reference",
            3,
        ),
        (
            "  - l:\n      for_each: [1]\n      steps:\n        - s: {x.y: {}}\n  - a:\n      x.y: {v: '{{ s }}'}\n",
            "invalid_reference",
            7,
        ),
        (
            "  - l:\n      for_each: [1]\n      steps:\n        - s: {x.y: {}}\n  - a:\n      x.y: {v: '{{ l.first.s }}'}\n",
            "invalid_reference",
            7,
        ),
        (
            "  - r:\n      render: hi\n  - a:\n      x.y: {v: '{{ r.x }}'}\n",
            "invalid_reference",
            5,
        ),
        (
            "  - p:\n      parallel:\n        a: [{s: {x.y: {}}}]\n        b: [{t: {x.y: {v: '{{ s }}'}}}]\n",
            "invalid_reference",
            5,
        ),
    ];
    for (body, code, line) in cases {
        let text = format!("steps:\n{body}");
        let ps = problems(&text);
        assert!(
            ps.iter().any(|p| p.code == code && p.line == line),
            "{text}\nexpected {code} at line {line}: {ps:?}"
        );
        let v = crate::dialect::validate(
            crate::dialect::Dialect::Yaml,
            text.as_bytes(),
            None,
            crate::dialect::Check::Document,
        );
        assert!(v.is_err(), "validate refuses it too: {text}");
    }
}

/// D-237: `validate` accepts every body kind the text names and applies the rules to it;
/// only running refuses what has no runtime meaning.
#[test]
fn validate_accepts_every_body_kind_and_import_refuses_only_what_cannot_run() {
    let text = "steps:\n  - a: {x.y: {}}\n  - v: {value: 1}\n  - r: {render: hi}\n  - s: {run: x}\n  - g: {agent: t}\n  - c: {call: w}\n  - ro: {route: {}}\n  - ch: {choose: {}}\n  - f:\n      for_each: [1]\n      steps: [{b: {x.y: {}}}]\n  - rp: {repeat: {}}\n  - p: {parallel: {one: [{q: {x.y: {}}}]}}\n  - wf: {wait_for: e}\n  - w: {wait: 1s}\n  - st: {stop: done}\n";
    let check =
        |c| crate::dialect::validate(crate::dialect::Dialect::Yaml, text.as_bytes(), None, c);
    assert!(
        check(crate::dialect::Check::Document).is_ok(),
        "{:?}",
        check(crate::dialect::Check::Document)
    );
    let ps = check(crate::dialect::Check::Runnable).expect_err("not all runnable");
    let refused: Vec<usize> = ps.iter().map(|p| p.line).collect();
    assert!(
        ps.iter().all(|p| p.code == "unsupported_construct"),
        "{ps:?}"
    );
    assert_eq!(
        refused,
        [7, 8, 9, 13, 15],
        "call, route, choose, repeat, wait_for"
    );
    // The rules still apply to what is not runnable (YML-10 on wait_for, YML-6 on wait).
    let bad = "steps:\n  - w: {wait_for: e, timeout: 1s}\n  - x: {wait: 1s}\n  - y: {x.y: {v: '{{ x }}'}}\n";
    let ps = crate::dialect::validate(
        crate::dialect::Dialect::Yaml,
        bad.as_bytes(),
        None,
        crate::dialect::Check::Document,
    )
    .expect_err("invalid");
    let codes: Vec<&str> = ps.iter().map(|p| p.code).collect();
    assert_eq!(codes, ["modifier_not_permitted", "unreadable_step"]);
}

/// D-234: later steps continue only from a guarded stop's `unless__` twin.
#[test]
fn a_guarded_stop_continues_only_from_its_negation() {
    let i = import(
        "steps:\n  - a: {x.y: {}}\n  - halt:\n      stop: done\n      when: '{{ a.done }}'\n  - b: {x.z: {}}\n",
        None,
    )
    .expect("valid");
    let edges = i.workflow["edges"].as_array().cloned().unwrap_or_default();
    let into_b: Vec<&str> = edges
        .iter()
        .filter(|e| e["to"] == "b")
        .filter_map(|e| e["from"].as_str())
        .collect();
    assert_eq!(into_b, ["unless__halt"]);
    let unless = i.workflow["steps"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["id"] == "unless__halt"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        unless["with"]["condition"],
        json!({"$expr": {"!": [{"var": "steps.a.output.done"}]}})
    );
}
