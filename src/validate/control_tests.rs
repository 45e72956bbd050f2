//! Unit tests of the plan-time control checks, tagged with clause IDs. Every rejection is
//! checked twice: through save-time validation of the raw document and through
//! `plan::plan` of the typed model, which must agree on codes and paths — so they live
//! here, in the layer above both.

use serde_json::{Value, json};

use super::{ValidateOptions, validate_workflow};
use crate::model::Workflow;
use crate::plan::*;

fn task(id: &str) -> Value {
    json!({"id": id, "uses": {"app": "x", "action": "y"}})
}

fn ctrl(id: &str, action: &str, with: Value) -> Value {
    json!({"id": id, "uses": {"app": "@w6w/control", "action": action}, "with": with})
}

fn doc(steps: Vec<Value>, edges: Vec<(&str, &str)>) -> Value {
    let edges: Vec<Value> = edges
        .into_iter()
        .map(|(f, t)| json!({"from": f, "to": t}))
        .collect();
    json!({"manifestVersion": "2", "id": "w", "name": "w", "steps": steps, "edges": edges})
}

fn typed(d: &Value) -> Workflow {
    serde_json::from_value(d.clone()).expect("test workflow parses")
}

/// `(code, path)` of every problem, checking that validation and planning agree.
fn problems(d: &Value) -> Vec<(String, String)> {
    let mut from_validate: Vec<(String, String)> = validate_workflow(d, ValidateOptions::default())
        .expect_err("validation rejects")
        .into_iter()
        .map(|e| (e.code.as_str().to_owned(), e.path))
        .collect();
    let mut from_plan: Vec<(String, String)> = plan(&typed(d))
        .expect_err("planning rejects")
        .into_iter()
        .map(|e| (e.code.as_str().to_owned(), e.path))
        .collect();
    from_plan.sort();
    let in_document_order = from_validate.clone();
    from_validate.sort();
    assert_eq!(from_validate, from_plan, "validate and plan disagree");
    in_document_order
}

fn one(d: &Value) -> (String, String) {
    let p = problems(d);
    assert_eq!(p.len(), 1, "{p:?}");
    p[0].clone()
}

fn pair(code: &str, path: &str) -> (String, String) {
    (code.to_owned(), path.to_owned())
}

fn planned(d: &Value) -> (Workflow, Plan) {
    validate_workflow(d, ValidateOptions::default()).expect("validates");
    let w = typed(d);
    let p = plan(&w).expect("plans");
    (w, p)
}

fn ids(w: &Workflow, order: &[usize]) -> Vec<String> {
    order.iter().map(|&i| w.steps[i].id.to_string()).collect()
}

fn foreach_doc() -> Value {
    doc(
        vec![
            task("start"),
            ctrl(
                "loop",
                "foreach",
                json!({"items": [1, 2], "body": ["fetch", "save"]}),
            ),
            task("fetch"),
            task("save"),
            task("end"),
        ],
        vec![("start", "loop"), ("loop", "end"), ("fetch", "save")],
    )
}

#[test]
fn ctrl_1_every_canonical_control_is_recognised() {
    for &kind in ControlKind::ALL {
        assert_eq!(ControlKind::from_action(kind.as_str()), Some(kind));
    }
    assert_eq!(ControlKind::from_action("switch"), None);
    assert_eq!(ControlKind::from_action("If"), None);
}

#[test]
fn ctrl_1_unknown_control_action_fails_planning_at_the_action() {
    let d = doc(vec![task("a"), ctrl("b", "switch", json!({}))], vec![]);
    let (code, path) = one(&d);
    assert_eq!(
        (code.as_str(), path.as_str()),
        ("unknown_control", "/steps/1/uses/action")
    );
    // Same action under another app is an ordinary step.
    let d = doc(
        vec![json!({"id": "s", "uses": {"app": "other", "action": "switch"}})],
        vec![],
    );
    planned(&d);
}

#[test]
fn plan_7_sub_block_steps_leave_the_main_graph() {
    let (w, p) = planned(&foreach_doc());
    assert_eq!(ids(&w, &p.order), ["start", "loop", "end"]);
    assert_eq!(p.rank[2], NOT_ON_MAIN_GRAPH);
    assert_eq!(p.rank[3], NOT_ON_MAIN_GRAPH);
    assert!(p.outgoing(2).len() == 0 && p.incoming(3).len() == 0);
    assert_eq!(p.controls.owner, [None, None, Some(1), Some(1), None]);
    assert!(!p.implicit_chain);
    let body = &p.controls.blocks[0];
    assert_eq!(
        (body.control, body.kind, body.level),
        (1, SubBlockKind::Body, 1)
    );
    assert_eq!(ids(&w, &body.order), ["fetch", "save"]);
    assert_eq!((body.root, body.last, body.sinks.clone()), (2, 3, vec![3]));
    assert!(!body.implicit_chain);
    assert_eq!(body.outgoing[0][0].index, 2);
    assert_eq!(body.incoming[1][0].from, 2);
    let c = p.controls.control(1).expect("loop is a control");
    assert_eq!(
        c.params,
        ControlParams::Foreach {
            body: 0,
            parallelism: PlanValue::Known(1)
        }
    );
    assert_eq!(
        p.controls.slot[3],
        Some(BlockSlot {
            block: 0,
            position: 1
        })
    );
}

#[test]
fn plan_4_main_implicit_chain_skips_sub_block_steps() {
    // Only internal edges: the main graph has none, so it is an implicit chain.
    let d = doc(
        vec![
            task("a"),
            task("inner1"),
            ctrl(
                "loop",
                "foreach",
                json!({"items": [], "body": ["inner1", "inner2"]}),
            ),
            task("inner2"),
            task("z"),
        ],
        vec![("inner1", "inner2")],
    );
    let (w, p) = planned(&d);
    assert_eq!(ids(&w, &p.order), ["a", "loop", "z"]);
    assert!(p.implicit_chain);
}

#[test]
fn ctrl_4_body_without_edges_is_a_chain_in_list_order() {
    let d = doc(
        vec![
            ctrl(
                "loop",
                "foreach",
                json!({"items": [], "body": ["c", "a", "b"]}),
            ),
            task("a"),
            task("b"),
            task("c"),
        ],
        vec![],
    );
    let (w, p) = planned(&d);
    let body = &p.controls.blocks[0];
    assert!(body.implicit_chain);
    assert_eq!(ids(&w, &body.order), ["c", "a", "b"]);
    assert_eq!(ids(&w, &[body.last]), ["b"]);
    assert_eq!(body.sinks, [body.last]);
    assert_eq!(body.rank, [0, 1, 2]);
}

#[test]
fn ctrl_4_body_dag_ties_go_to_the_earlier_listed_step_and_last_is_last_in_order() {
    // Declared order puts y before x, the body lists x first: the list wins.
    let d = doc(
        vec![
            ctrl(
                "loop",
                "foreach",
                json!({"items": [], "body": ["r", "x", "y"]}),
            ),
            task("y"),
            task("x"),
            task("r"),
        ],
        vec![("r", "y"), ("r", "x")],
    );
    let (w, p) = planned(&d);
    let body = &p.controls.blocks[0];
    assert_eq!(ids(&w, &body.order), ["r", "x", "y"]);
    assert_eq!(ids(&w, &[body.last]), ["y"]);
    assert_eq!(ids(&w, &body.sinks), ["x", "y"]);
    // rank is by list position: r, x, y are at 0, 1, 2 in order.
    assert_eq!(body.rank, [0, 1, 2]);
}

#[test]
fn ctrl_4_body_root_must_be_the_first_listed_step() {
    let d = doc(
        vec![
            ctrl("loop", "foreach", json!({"items": [], "body": ["b", "a"]})),
            task("a"),
            task("b"),
        ],
        vec![("a", "b")],
    );
    assert_eq!(
        problems(&d),
        [
            pair("param_invalid", "/steps/0/with/body/0"),
            pair("param_invalid", "/steps/0/with/body/1")
        ]
    );
}

#[test]
fn ctrl_4_every_body_step_is_reachable_from_the_root() {
    let d = doc(
        vec![
            ctrl(
                "loop",
                "foreach",
                json!({"items": [], "body": ["a", "b", "c"]}),
            ),
            task("a"),
            task("b"),
            task("c"),
        ],
        vec![("a", "b")],
    );
    assert_eq!(one(&d), pair("param_invalid", "/steps/0/with/body/2"));
}

#[test]
fn ctrl_4_body_must_be_a_literal_non_empty_id_list() {
    for (with, path) in [
        (json!({"items": []}), "/steps/0/with/body"),
        (json!({"items": [], "body": []}), "/steps/0/with/body"),
        (json!({"items": [], "body": "a"}), "/steps/0/with/body"),
        (
            json!({"items": [], "body": {"$": "vars.ids"}}),
            "/steps/0/with/body",
        ),
        (
            json!({"items": [], "body": "{{ vars.ids }}"}),
            "/steps/0/with/body",
        ),
        (
            json!({"items": [], "body": ["a", 3]}),
            "/steps/0/with/body/1",
        ),
        (
            json!({"items": [], "body": ["a", "ghost"]}),
            "/steps/0/with/body/1",
        ),
        (
            json!({"items": [], "body": ["a", "a"]}),
            "/steps/0/with/body/1",
        ),
        (
            json!({"items": [], "body": ["a", "loop"]}),
            "/steps/0/with/body/1",
        ),
        (json!({"body": ["a"]}), "/steps/0/with/items"),
        (json!({"items": 5, "body": ["a"]}), "/steps/0/with/items"),
        (
            json!({"items": [], "body": ["a"], "parallelism": 0}),
            "/steps/0/with/parallelism",
        ),
        (
            json!({"items": [], "body": ["a"], "parallelism": 1.5}),
            "/steps/0/with/parallelism",
        ),
        (
            json!({"items": [], "body": ["a"], "parallelism": "2"}),
            "/steps/0/with/parallelism",
        ),
    ] {
        let d = doc(
            vec![ctrl("loop", "foreach", with.clone()), task("a")],
            vec![],
        );
        assert_eq!(one(&d), pair("param_invalid", path), "{with}");
    }
}

#[test]
fn ctrl_4_literal_and_expression_params_parse() {
    for (with, parallelism) in [
        (
            json!({"items": {"$": "vars.xs"}, "body": ["a"]}),
            PlanValue::Known(1),
        ),
        (
            json!({"items": "{{ vars.xs }}", "body": ["a"], "parallelism": 4}),
            PlanValue::Known(4),
        ),
        (
            json!({"items": [], "body": ["a"], "parallelism": 3.0}),
            PlanValue::Known(3),
        ),
        (
            json!({"items": [], "body": ["a"], "parallelism": {"$expr": {"var": "vars.n"}}}),
            PlanValue::AtRunTime,
        ),
        (
            json!({"items": [], "body": ["a"], "parallelism": {"type": "expr", "parts": []}}),
            PlanValue::AtRunTime,
        ),
    ] {
        let d = doc(
            vec![ctrl("loop", "foreach", with.clone()), task("a")],
            vec![],
        );
        let (_, p) = planned(&d);
        assert_eq!(
            p.controls.controls[0].params,
            ControlParams::Foreach {
                body: 0,
                parallelism
            },
            "{with}"
        );
    }
}

#[test]
fn ctrl_6_parallel_branches_plan_separately() {
    let d = doc(
        vec![
            ctrl(
                "fan",
                "parallel",
                json!({"branches": [["a1", "a2"], ["b1"]], "strategy": "race"}),
            ),
            task("a1"),
            task("a2"),
            task("b1"),
            task("after"),
        ],
        vec![("fan", "after"), ("a1", "a2")],
    );
    let (w, p) = planned(&d);
    assert_eq!(ids(&w, &p.order), ["fan", "after"]);
    assert_eq!(p.controls.blocks.len(), 2);
    assert_eq!(p.controls.blocks[0].kind, SubBlockKind::Branch(0));
    assert_eq!(p.controls.blocks[1].kind, SubBlockKind::Branch(1));
    assert_eq!(ids(&w, &p.controls.blocks[0].order), ["a1", "a2"]);
    assert_eq!(ids(&w, &p.controls.blocks[1].order), ["b1"]);
    assert_eq!(
        p.controls.controls[0].params,
        ControlParams::Parallel {
            branches: vec![0, 1],
            strategy: PlanValue::Known(ParallelStrategy::Race)
        }
    );
}

#[test]
fn ctrl_6_strategy_and_branch_shape_are_checked() {
    for (with, path) in [
        (
            json!({"branches": [["a"]], "strategy": "first"}),
            "/steps/0/with/strategy",
        ),
        (
            json!({"branches": [["a"]], "strategy": 1}),
            "/steps/0/with/strategy",
        ),
        (json!({}), "/steps/0/with/branches"),
        (json!({"branches": []}), "/steps/0/with/branches"),
        (json!({"branches": ["a"]}), "/steps/0/with/branches/0"),
        (json!({"branches": [["a"], []]}), "/steps/0/with/branches/1"),
        (
            json!({"branches": [["a"], ["a"]]}),
            "/steps/0/with/branches/1/0",
        ),
        (
            json!({"branches": {"$": "vars.b"}}),
            "/steps/0/with/branches",
        ),
    ] {
        let d = doc(
            vec![ctrl("fan", "parallel", with.clone()), task("a")],
            vec![],
        );
        assert_eq!(one(&d), pair("param_invalid", path), "{with}");
    }
    for (strategy, want) in [
        (json!("all"), PlanValue::Known(ParallelStrategy::All)),
        (json!("any"), PlanValue::Known(ParallelStrategy::Any)),
        (json!({"$": "vars.s"}), PlanValue::AtRunTime),
    ] {
        let d = doc(
            vec![
                ctrl(
                    "fan",
                    "parallel",
                    json!({"branches": [["a"]], "strategy": strategy}),
                ),
                task("a"),
            ],
            vec![],
        );
        let (_, p) = planned(&d);
        assert_eq!(
            p.controls.controls[0].params,
            ControlParams::Parallel {
                branches: vec![0],
                strategy: want
            }
        );
    }
}

#[test]
fn ctrl_6_edges_between_two_branches_are_sub_block_edges() {
    let d = doc(
        vec![
            ctrl("fan", "parallel", json!({"branches": [["a"], ["b"]]})),
            task("a"),
            task("b"),
        ],
        vec![("a", "b")],
    );
    assert_eq!(one(&d), pair("sub_block_edge", "/edges/0"));
}

#[test]
fn plan_7_edges_into_or_out_of_a_sub_block_are_rejected() {
    for (from, to) in [("start", "fetch"), ("save", "end"), ("loop", "fetch")] {
        let mut d = foreach_doc();
        d["edges"]
            .as_array_mut()
            .expect("edges")
            .push(json!({"from": from, "to": to}));
        assert_eq!(one(&d), pair("sub_block_edge", "/edges/3"), "{from} → {to}");
    }
}

#[test]
fn ctrl_9_error_edges_inside_a_sub_block_are_rejected() {
    let mut d = foreach_doc();
    d["edges"][2]["when"] = json!("error");
    let errors = validate_workflow(&d, ValidateOptions::default()).expect_err("rejected");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code.as_str(), "sub_block_edge");
    assert_eq!(errors[0].path, "/edges/2");
    assert!(
        errors[0].message.contains("only on the main graph"),
        "{}",
        errors[0].message
    );
    assert_eq!(one(&d), pair("sub_block_edge", "/edges/2"));
}

#[test]
fn ctrl_9_error_edges_on_the_main_graph_still_plan() {
    let mut d = foreach_doc();
    d["edges"][1]["when"] = json!("error");
    let (w, p) = planned(&d);
    assert_eq!(ids(&w, &p.order), ["start", "loop", "end"]);
}

#[test]
fn ctrl_4_a_step_owned_twice_is_rejected_at_the_later_listing() {
    let d = doc(
        vec![
            ctrl("l1", "foreach", json!({"items": [], "body": ["a"]})),
            ctrl("l2", "foreach", json!({"items": [], "body": ["b", "a"]})),
            task("a"),
            task("b"),
        ],
        vec![],
    );
    assert_eq!(one(&d), pair("param_invalid", "/steps/1/with/body/1"));
}

#[test]
fn ctrl_4_ownership_cycles_are_rejected_once() {
    let d = doc(
        vec![
            ctrl("l1", "foreach", json!({"items": [], "body": ["l2"]})),
            ctrl("l2", "foreach", json!({"items": [], "body": ["l1"]})),
        ],
        vec![],
    );
    let errors = validate_workflow(&d, ValidateOptions::default()).expect_err("rejected");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].path, "/steps/1/with/body/0");
    assert!(
        errors[0]
            .message
            .contains(r#""l1" inside "l2" inside "l1""#),
        "{}",
        errors[0].message
    );
    assert_eq!(one(&d), pair("param_invalid", "/steps/1/with/body/0"));
}

#[test]
fn ctrl_4_controls_nest() {
    // foreach ⊃ parallel ⊃ foreach.
    let d = doc(
        vec![
            ctrl("outer", "foreach", json!({"items": [], "body": ["fan"]})),
            ctrl(
                "fan",
                "parallel",
                json!({"branches": [["inner"], ["leaf2"]]}),
            ),
            ctrl("inner", "foreach", json!({"items": [], "body": ["leaf1"]})),
            task("leaf1"),
            task("leaf2"),
        ],
        vec![],
    );
    let (w, p) = planned(&d);
    assert_eq!(ids(&w, &p.order), ["outer"]);
    let levels: Vec<(String, usize)> = p
        .controls
        .blocks
        .iter()
        .map(|b| (w.steps[b.control].id.to_string(), b.level))
        .collect();
    assert_eq!(
        levels,
        [
            ("outer".to_owned(), 1),
            ("fan".to_owned(), 2),
            ("fan".to_owned(), 2),
            ("inner".to_owned(), 3)
        ]
    );
    assert_eq!(p.controls.owner, [None, Some(0), Some(1), Some(2), Some(1)]);
}

fn nested(depth: usize) -> Value {
    // c0 owns c1 owns … owns c{depth-1} owns leaf: `depth` levels of sub-blocks.
    let mut steps: Vec<Value> = (0..depth)
        .map(|i| {
            let inner = if i + 1 == depth {
                "leaf".to_owned()
            } else {
                format!("c{}", i + 1)
            };
            ctrl(
                &format!("c{i}"),
                "foreach",
                json!({"items": [], "body": [inner]}),
            )
        })
        .collect();
    steps.push(task("leaf"));
    doc(steps, vec![])
}

#[test]
fn ctrl_4_nesting_is_bounded_with_a_clear_error() {
    let (_, p) = planned(&nested(MAX_CONTROL_NESTING));
    assert_eq!(
        p.controls.blocks.iter().map(|b| b.level).max(),
        Some(MAX_CONTROL_NESTING)
    );
    let d = nested(MAX_CONTROL_NESTING + 3);
    let errors = validate_workflow(&d, ValidateOptions::default()).expect_err("too deep");
    assert_eq!(
        errors.len(),
        1,
        "reported once, not per deeper level: {errors:?}"
    );
    assert_eq!(
        errors[0].path,
        format!("/steps/{MAX_CONTROL_NESTING}/with/body")
    );
    assert!(
        errors[0].message.contains("nesting limit"),
        "{}",
        errors[0].message
    );
    assert_eq!(one(&d).0, "param_invalid");
}

#[test]
fn ctrl_4_deep_ownership_chains_do_not_recurse() {
    // 20k nested foreach steps: over the limit, reported once, no stack overflow.
    let d = nested(20_000);
    let errors = plan(&typed(&d)).expect_err("too deep");
    assert_eq!(errors.len(), 1);
}

#[test]
fn ctrl_7_wait_needs_exactly_one_valid_time() {
    for (with, path) in [
        (json!({}), "/steps/0/with"),
        (
            json!({"duration": "PT5M", "until": "2026-01-01T00:00:00Z"}),
            "/steps/0/with/until",
        ),
        (json!({"duration": "5 minutes"}), "/steps/0/with/duration"),
        (json!({"duration": "P1M"}), "/steps/0/with/duration"),
        (json!({"duration": 300}), "/steps/0/with/duration"),
        (json!({"until": "tomorrow"}), "/steps/0/with/until"),
        (
            json!({"until": "2026-02-30T00:00:00Z"}),
            "/steps/0/with/until",
        ),
    ] {
        let d = doc(vec![ctrl("w", "wait", with.clone())], vec![]);
        assert_eq!(one(&d), pair("param_invalid", path), "{with}");
    }
    for (with, spec) in [
        (
            json!({"duration": "PT5M"}),
            WaitSpec::Duration {
                delay_ms: PlanValue::Known(300_000),
            },
        ),
        (
            json!({"duration": "{{ vars.d }}"}),
            WaitSpec::Duration {
                delay_ms: PlanValue::AtRunTime,
            },
        ),
        (
            json!({"until": "2026-01-01T00:00:01Z"}),
            WaitSpec::Until {
                at_ms: PlanValue::Known(1_767_225_601_000),
            },
        ),
        (
            json!({"until": {"$": "vars.at"}}),
            WaitSpec::Until {
                at_ms: PlanValue::AtRunTime,
            },
        ),
    ] {
        let d = doc(vec![ctrl("w", "wait", with.clone())], vec![]);
        let (_, p) = planned(&d);
        assert_eq!(
            p.controls.controls[0].params,
            ControlParams::Wait(spec),
            "{with}"
        );
    }
}

#[test]
fn ctrl_7_unsupported_wait_only_when_the_host_lacks_schedule() {
    let d = doc(
        vec![
            ctrl("loop", "foreach", json!({"items": [], "body": ["pause"]})),
            ctrl("pause", "wait", json!({"duration": "PT1S"})),
        ],
        vec![],
    );
    let w = typed(&d);
    assert!(
        plan(&w).is_ok(),
        "a host-agnostic plan raises no capability error"
    );
    assert!(
        plan_with(
            &w,
            &PlanOptions {
                host_supports_schedule: true
            }
        )
        .is_ok()
    );
    let errors = plan_with(
        &w,
        &PlanOptions {
            host_supports_schedule: false,
        },
    )
    .expect_err("no schedule");
    assert_eq!(
        errors
            .iter()
            .map(|e| (e.code.as_str(), e.path.as_str()))
            .collect::<Vec<_>>(),
        [("unsupported_wait", "/steps/1/uses/action")]
    );
    validate_workflow(&d, ValidateOptions::default()).expect("validation knows no host");
    let no_wait = typed(&foreach_doc());
    assert!(
        plan_with(
            &no_wait,
            &PlanOptions {
                host_supports_schedule: false
            }
        )
        .is_ok()
    );
}

#[test]
fn ctrl_6_unsupported_strategy_is_never_raised() {
    for strategy in ["all", "race", "any"] {
        let d = doc(
            vec![
                ctrl(
                    "fan",
                    "parallel",
                    json!({"branches": [["a"]], "strategy": strategy}),
                ),
                task("a"),
            ],
            vec![],
        );
        let w = typed(&d);
        assert!(
            plan_with(
                &w,
                &PlanOptions {
                    host_supports_schedule: false
                }
            )
            .is_ok()
        );
    }
}

#[test]
fn ctrl_8_join_modes_and_merge_entries() {
    for (action, with, path) in [
        ("aggregate", json!({"mode": "first"}), "/steps/0/with/mode"),
        ("merge", json!({"mode": 2}), "/steps/0/with/mode"),
        (
            "merge",
            json!({"mode": "object", "entries": {"a": 1}}),
            "/steps/0/with/entries",
        ),
        (
            "merge",
            json!({"mode": "object", "entries": [3]}),
            "/steps/0/with/entries/0",
        ),
        (
            "merge",
            json!({"mode": "object", "entries": [{"key": "", "value": 1}]}),
            "/steps/0/with/entries/0/key",
        ),
        (
            "merge",
            json!({"mode": "object", "entries": [{"key": "k", "value": 1}, {"key": "k", "value": 2}]}),
            "/steps/0/with/entries/1/key",
        ),
        (
            "merge",
            json!({"mode": "object", "entries": [{"value": 1}]}),
            "/steps/0/with/entries/0/key",
        ),
        (
            "merge",
            json!({"entries": [{"key": 5, "value": 1}]}),
            "/steps/0/with/entries/0/key",
        ),
    ] {
        let d = doc(vec![ctrl("j", action, with.clone())], vec![]);
        assert_eq!(one(&d), pair("param_invalid", path), "{action} {with}");
    }
}

#[test]
fn ctrl_8_join_modes_plan_as_written_or_at_run_time() {
    for (action, with, want) in [
        (
            "aggregate",
            json!({}),
            ControlParams::Aggregate {
                mode: PlanValue::Known(JoinMode::Array),
            },
        ),
        (
            "aggregate",
            json!({"mode": "object"}),
            ControlParams::Aggregate {
                mode: PlanValue::Known(JoinMode::Object),
            },
        ),
        (
            "merge",
            json!({"mode": {"$": "vars.m"}, "entries": [{"key": "k", "value": 1}, {"key": "k", "value": 2}]}),
            ControlParams::Merge {
                mode: PlanValue::AtRunTime,
            },
        ),
        (
            "merge",
            json!({"mode": "array", "entries": [{"value": 1}, {"value": 2}]}),
            ControlParams::Merge {
                mode: PlanValue::Known(JoinMode::Array),
            },
        ),
    ] {
        let d = doc(vec![ctrl("j", action, with.clone())], vec![]);
        let (_, p) = planned(&d);
        assert_eq!(p.controls.controls[0].params, want, "{action} {with}");
    }
}

#[test]
fn ctrl_2_if_needs_a_condition_and_has_no_branch_blocks() {
    let d = doc(vec![ctrl("i", "if", json!({}))], vec![]);
    assert_eq!(one(&d), pair("param_invalid", "/steps/0/with/condition"));
    let d = doc(
        vec![
            ctrl("i", "if", json!({"condition": true, "then": ["a"]})),
            task("a"),
        ],
        vec![],
    );
    assert_eq!(one(&d), pair("param_invalid", "/steps/0/with/then"));
    let d = doc(
        vec![
            ctrl("i", "if", json!({"condition": {"$": "vars.ok"}})),
            task("a"),
        ],
        vec![("i", "a")],
    );
    let (_, p) = planned(&d);
    assert_eq!(p.controls.controls[0].params, ControlParams::If);
    assert!(p.controls.blocks.is_empty());
}

#[test]
fn retry_6_a_retry_on_a_control_step_is_still_validated() {
    let mut d = foreach_doc();
    d["steps"][1]["retry"] = json!({"maxAttempts": 0});
    let errors = validate_workflow(&d, ValidateOptions::default()).expect_err("bad retry");
    assert_eq!(errors[0].code.as_str(), "invalid_retry_policy");
    assert_eq!(errors[0].path, "/steps/1/retry/maxAttempts");
}

#[test]
fn ctrl_10_ports_never_change_the_plan() {
    let (w0, base) = planned(&foreach_doc());
    for ports in [
        json!(42),
        json!({"in": 0, "out": 0}),
        json!("many"),
        json!(null),
        json!([1, {}]),
    ] {
        let mut d = foreach_doc();
        for s in d["steps"].as_array_mut().expect("steps") {
            s["ports"] = ports.clone();
        }
        let (w, p) = planned(&d);
        assert_eq!(ids(&w, &p.order), ids(&w0, &base.order), "{ports}");
        assert_eq!(p.controls, base.controls, "{ports}");
    }
}

#[test]
fn fan_1_plans_record_whether_any_step_fans_out_in_parallel() {
    let (_, p) = planned(&foreach_doc());
    assert!(p.is_sequential() && p.has_controls());
    let mut d = foreach_doc();
    d["steps"][2]["fanOut"] = json!("parallel");
    let (_, p) = planned(&d);
    assert!(!p.is_sequential());
}

#[test]
fn plans_without_controls_are_unchanged() {
    let d = doc(vec![task("b"), task("a")], vec![("a", "b")]);
    let (w, p) = planned(&d);
    assert_eq!(ids(&w, &p.order), ["a", "b"]);
    assert_eq!(p.rank, [1, 0]);
    assert!(!p.implicit_chain && !p.has_controls());
    assert_eq!(p.controls, ControlPlan::default());
}

#[test]
fn all_problems_are_collected_together() {
    let d = doc(
        vec![
            ctrl(
                "loop",
                "foreach",
                json!({"items": [], "body": ["a", "ghost"]}),
            ),
            task("a"),
            ctrl("x", "switch", json!({})),
            task("out"),
        ],
        vec![("out", "a"), ("a", "nowhere")],
    );
    assert_eq!(
        problems(&d),
        [
            pair("param_invalid", "/steps/0/with/body/1"),
            pair("unknown_control", "/steps/2/uses/action"),
            pair("sub_block_edge", "/edges/0"),
            pair("dangling_edge", "/edges/1/to"),
        ]
    );
}
