//! The planner's own tests: orders, problems, the adjacency a plan exposes.

use super::*;
use serde_json::json;

fn workflow(steps: &[&str], edges: &[(&str, &str)]) -> Workflow {
    let steps: Vec<_> = steps
        .iter()
        .map(|id| json!({"id": id, "uses": {"app": "x", "action": "y"}}))
        .collect();
    let mut doc = json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": steps});
    if !edges.is_empty() {
        doc["edges"] = edges
            .iter()
            .map(|(f, t)| json!({"from": f, "to": t}))
            .collect();
    }
    serde_json::from_value(doc).expect("test workflow parses")
}

fn order(steps: &[&str], edges: &[(&str, &str)]) -> Vec<String> {
    let w = workflow(steps, edges);
    let p = plan(&w).expect("plans");
    p.ids(&w).into_iter().map(str::to_owned).collect()
}

fn codes(steps: &[&str], edges: &[(&str, &str)]) -> Vec<(String, String)> {
    plan(&workflow(steps, edges))
        .expect_err("rejected")
        .into_iter()
        .map(|e| (e.code.as_str().to_owned(), e.path))
        .collect()
}

#[test]
fn plan_1_duplicate_ids_are_rejected_at_the_later_declaration() {
    assert_eq!(
        codes(&["a", "b", "a", "a"], &[]),
        [
            ("duplicate_step_id".to_owned(), "/steps/2/id".to_owned()),
            ("duplicate_step_id".to_owned(), "/steps/3/id".to_owned())
        ]
    );
}

#[test]
fn plan_2_dangling_from_and_to_are_each_reported() {
    assert_eq!(
        codes(&["a", "b"], &[("a", "b"), ("ghost", "b"), ("a", "nope")]),
        [
            ("dangling_edge".to_owned(), "/edges/1/from".to_owned()),
            ("dangling_edge".to_owned(), "/edges/2/to".to_owned())
        ]
    );
}

#[test]
fn plan_3_cycle_message_names_the_cycle_in_order_not_its_tail() {
    // d hangs off the cycle b → c → b but is not on it.
    let errors = plan(&workflow(
        &["a", "b", "c", "d"],
        &[("a", "b"), ("b", "c"), ("c", "b"), ("c", "d")],
    ))
    .expect_err("cyclic");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].code, ValidationCode::Cycle);
    assert!(
        errors[0].message.contains(r#""b" → "c" → "b""#),
        "{}",
        errors[0].message
    );
    assert!(
        !errors[0].message.contains(r#""d""#),
        "{}",
        errors[0].message
    );
    assert!(
        !errors[0].message.contains(r#""a""#),
        "{}",
        errors[0].message
    );
}

#[test]
fn plan_3_every_independent_cycle_and_self_loops_are_reported() {
    let errors = plan(&workflow(
        &["a", "b", "c", "d", "e"],
        &[("d", "e"), ("e", "d"), ("a", "b"), ("b", "a"), ("c", "c")],
    ))
    .expect_err("cyclic");
    let messages: Vec<&str> = errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(messages[0].contains(r#""a" → "b" → "a""#));
    assert!(messages[1].contains(r#""c" → "c""#));
    assert!(messages[2].contains(r#""d" → "e" → "d""#));
}

#[test]
fn plan_3_cycle_is_the_shortest_through_the_earliest_step() {
    // a → b → c → d → a and the chord c → a: the shortest cycle through a is a b c.
    let errors = plan(&workflow(
        &["a", "b", "c", "d"],
        &[("a", "b"), ("b", "c"), ("c", "d"), ("d", "a"), ("c", "a")],
    ))
    .expect_err("cyclic");
    assert!(errors[0].message.contains(r#""a" → "b" → "c" → "a""#));
}

#[test]
fn plan_4_no_edges_is_the_declared_order() {
    assert_eq!(order(&["c", "a", "b"], &[]), ["c", "a", "b"]);
    let w = workflow(&["c", "a"], &[]);
    assert!(plan(&w).expect("plans").implicit_chain);
}

#[test]
fn plan_4_empty_edges_array_is_the_declared_order() {
    let w: Workflow = serde_json::from_value(json!({"manifestVersion": "2", "id": "w",
        "name": "w", "steps": [{"id": "z"}, {"id": "y"}], "edges": []}))
    .expect("parses");
    let p = plan(&w).expect("plans");
    assert!(p.implicit_chain);
    assert_eq!(p.ids(&w), ["z", "y"]);
}

#[test]
fn plan_5_ties_go_to_the_earlier_declared_step() {
    // c and a are both roots; c is declared first. b waits for a.
    assert_eq!(order(&["c", "b", "a"], &[("a", "b")]), ["c", "a", "b"]);
    // Whenever several steps are ready, the earliest-declared goes: after z, y (index
    // 1) is ready and beats w (index 3), although w was ready first.
    assert_eq!(
        order(&["x", "y", "z", "w"], &[("w", "x"), ("z", "y")]),
        ["z", "y", "w", "x"]
    );
}

#[test]
fn plan_5_rank_is_the_inverse_of_order_and_edges_are_indexed() {
    let w = workflow(&["a", "b", "c"], &[("b", "a"), ("c", "a")]);
    let p = plan(&w).expect("plans");
    assert_eq!(p.order, [1, 2, 0]);
    for (pos, &i) in p.order.iter().enumerate() {
        assert_eq!(p.rank[i], pos);
    }
    assert_eq!(p.incoming(0).map(|e| e.index).collect::<Vec<_>>(), [0, 1]);
    assert_eq!(p.incoming_indices()[0], [0, 1]);
    assert_eq!(p.outgoing(0).len(), 0);
    assert_eq!(p.outgoing(3).len(), 0, "past the last step: no edges");
    assert_eq!(
        p.outgoing(1).collect::<Vec<_>>(),
        [PlanEdge {
            index: 0,
            from: 1,
            to: 0,
            when: When::Success
        }]
    );
}

#[test]
fn err_13_error_edges_order_like_success_edges() {
    let w: Workflow = serde_json::from_value(json!({"manifestVersion": "2", "id": "w",
        "name": "w", "steps": [{"id": "handler"}, {"id": "risky"}],
        "edges": [{"from": "risky", "to": "handler", "when": "error"}]}))
    .expect("parses");
    let p = plan(&w).expect("plans");
    assert_eq!(p.ids(&w), ["risky", "handler"]);
    assert_eq!(
        p.outgoing(1).map(|e| e.when).collect::<Vec<_>>(),
        [When::Error]
    );
}

#[test]
fn err_13_error_edge_cycles_are_rejected() {
    let w: Workflow = serde_json::from_value(json!({"manifestVersion": "2", "id": "w",
        "name": "w", "steps": [{"id": "a"}, {"id": "b"}],
        "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a", "when": "error"}]}))
    .expect("parses");
    let errors = plan(&w).expect_err("cyclic");
    assert_eq!(errors[0].code, ValidationCode::Cycle);
}

#[test]
fn duplicates_dangling_edges_and_cycles_are_all_reported_together() {
    // The self-loop is on the name "a", whichever of the two steps keeps it.
    let found = codes(&["a", "a"], &[("a", "a"), ("a", "zz")]);
    assert_eq!(
        found,
        [
            ("duplicate_step_id".to_owned(), "/steps/1/id".to_owned()),
            ("dangling_edge".to_owned(), "/edges/1/to".to_owned()),
            ("cycle".to_owned(), "/edges".to_owned())
        ]
    );
}

#[test]
fn long_cycles_are_abbreviated_in_the_message() {
    let n = MAX_CYCLE_IDS_IN_MESSAGE + 50;
    let names: Vec<String> = (0..n).map(|i| format!("s{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let edges: Vec<(&str, &str)> = (0..n).map(|i| (refs[i], refs[(i + 1) % n])).collect();
    let errors = plan(&workflow(&refs, &edges)).expect_err("cyclic");
    assert!(
        errors[0].message.contains("(50 more steps)"),
        "{}",
        errors[0].message
    );
    assert!(
        errors[0]
            .message
            .contains(r#""s99" → … (50 more steps) → "s0";"#),
        "{}",
        errors[0].message
    );
}

/// Edges 0..5 in declared order over steps a, b, c; edge 1 dangles, so it is no edge of
/// the graph.
fn small_analysis() -> Analysis {
    let ids = ["a", "b", "c"];
    let declared = [
        ("c", "a", When::Success),
        ("c", "nowhere", When::Error),
        ("a", "b", When::Error),
        ("c", "c", When::Success),
        ("a", "c", When::Success),
        ("c", "b", When::Error),
    ];
    analyse(
        ids.len(),
        |i| ids.get(i).copied(),
        declared.iter().map(|&(f, t, w)| (Some(f), Some(t), w)),
        Needs {
            index: false,
            order: true,
        },
    )
}

#[test]
fn the_adjacency_keeps_declared_edge_order_and_counts_in_degrees() {
    let graph = small_analysis();
    assert_eq!(graph.errors.len(), 2, "a dangling end and the c → c cycle");
    assert_eq!(graph.endpoints[1], [UNRESOLVED; 2]);
    let outgoing = &graph.outgoing;
    assert_eq!(outgoing.len(), 3);
    let targets = |v| outgoing.targets(v).collect::<Vec<_>>();
    assert_eq!(targets(0), [1, 2]);
    assert!(targets(1).is_empty());
    assert_eq!(targets(2), [0, 2, 1]);
    // Each edge keeps its declared index and its `when`.
    let indices: Vec<(u32, When)> = outgoing
        .edges
        .iter()
        .map(|&[k, _]| (k, graph.whens[k as usize]))
        .collect();
    assert_eq!(
        indices,
        [
            (2, When::Error),
            (4, When::Success),
            (0, When::Success),
            (3, When::Success),
            (5, When::Error)
        ]
    );
    // The in-degrees over the resolved edges, and the trailing 0 `fill` expects.
    assert_eq!(graph.in_start, [1, 2, 2, 0]);
}

#[test]
fn the_incoming_adjacency_groups_by_target_in_declared_order() {
    let graph = small_analysis();
    let incoming = Adjacency::fill(
        graph.in_start.clone(),
        resolved_edges(&graph.endpoints).map(|(e, k)| (e[1], k)),
    );
    let sources: Vec<Vec<(u32, u32)>> = incoming
        .iter()
        .map(|edges| {
            edges
                .iter()
                .map(|&k| (k, graph.endpoints[k as usize][0]))
                .collect()
        })
        .collect();
    assert_eq!(
        sources,
        [vec![(0, 2)], vec![(2, 0), (5, 2)], vec![(3, 2), (4, 0)]],
        "grouped by target, in declared order"
    );
    let none = analyse(
        0,
        |_| None,
        std::iter::empty(),
        Needs {
            index: false,
            order: true,
        },
    );
    assert_eq!((none.outgoing.len(), none.in_start.len()), (0, 1));
}
