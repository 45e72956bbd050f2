//! Control planning properties over random workflows (PLAN-7, CTRL-4, CTRL-6, CTRL-9).
//!
//! - A random workflow whose `foreach` / `parallel` sub-blocks are valid by construction
//!   (nested too) plans, through validation and through `plan::plan` alike; no sub-block
//!   step appears in the main order; every step is planned exactly once, on the main graph
//!   or in its own block; each sub-plan is a topological order of its block's edges, rooted
//!   at its first listed id.
//! - Adding any edge that crosses a sub-block boundary, or any error edge inside a block,
//!   is always rejected with `sub_block_edge` at that edge.
//!
//! Case count follows `PROPTEST_CASES`; proptest prints the shrunk workflow and records
//! its seed under `proptest-regressions/` so a failure replays.

use proptest::prelude::*;
use serde_json::{Value, json};
use w6w_sim::model::Workflow;
use w6w_sim::plan;
use w6w_sim::{ValidateOptions, validate_workflow};

/// A generated workflow: steps `s0…`, the block each step sits in (`None` = main
/// graph), which steps are controls owning which blocks, and the edges.
#[derive(Debug, Clone)]
struct Generated {
    doc: Value,
    /// Per step: the block holding it.
    block_of: Vec<Option<usize>>,
    /// Per block: its members in list order.
    blocks: Vec<Vec<usize>>,
}

/// Build a workflow: `n` steps; `plan_blocks` are (owner step, kind, member lists) chosen
/// so that owners precede members in a hidden ownership forest; `edge_seeds` pick edges
/// inside one graph (main or a block), always forward in a hidden order.
fn build(
    n: usize,
    sizes: Vec<(bool, Vec<usize>)>,
    edge_seeds: Vec<(usize, usize, usize)>,
) -> Generated {
    // Step 0 is always on the main graph. Blocks are carved from the remaining steps in
    // order; block k's owner is a step that sits before the block's first member and is
    // not itself already a control, so ownership is acyclic and nesting happens naturally.
    let mut block_of: Vec<Option<usize>> = vec![None; n];
    let mut blocks: Vec<Vec<usize>> = Vec::new();
    let mut control: Vec<Option<(bool, Vec<usize>)>> = vec![None; n];
    let mut next = 1usize;
    for (is_parallel, branch_sizes) in sizes {
        let needed: usize = branch_sizes.iter().sum();
        if next + needed > n || branch_sizes.is_empty() {
            break;
        }
        // The owner: the latest step before `next` that is not yet a control.
        let Some(owner) = (0..next).rev().find(|&s| control[s].is_none()) else {
            break;
        };
        let branch_sizes = if is_parallel {
            branch_sizes
        } else {
            vec![needed]
        };
        let mut ids = Vec::new();
        for size in branch_sizes {
            let members: Vec<usize> = (next..next + size).collect();
            next += size;
            for &m in &members {
                block_of[m] = Some(blocks.len());
            }
            ids.push(blocks.len());
            blocks.push(members);
        }
        control[owner] = Some((is_parallel, ids));
    }
    let steps: Vec<Value> = (0..n)
        .map(|i| match &control[i] {
            None => json!({"id": format!("s{i}"), "uses": {"app": "x", "action": "y"}}),
            Some((parallel, ids)) => {
                let lists: Vec<Vec<String>> = ids
                    .iter()
                    .map(|&b| blocks[b].iter().map(|m| format!("s{m}")).collect())
                    .collect();
                if *parallel {
                    json!({"id": format!("s{i}"), "uses": {"app": "@w6w/control", "action": "parallel"},
                           "with": {"branches": lists}})
                } else {
                    json!({"id": format!("s{i}"), "uses": {"app": "@w6w/control", "action": "foreach"},
                           "with": {"items": [], "body": lists[0]}})
                }
            }
        })
        .collect();
    // Edges: inside a block, from an earlier-listed member to a later one, and every
    // non-first member gets one edge from an earlier member (so the root reaches all) —
    // unless the block gets no edges at all (an implicit chain). Main-graph edges go
    // forward in declared order.
    let mut edges: Vec<Value> = Vec::new();
    for (b, members) in blocks.iter().enumerate() {
        let with_edges = edge_seeds.get(b).is_some_and(|&(x, _, _)| x % 3 != 0);
        if !with_edges {
            continue;
        }
        for (k, &m) in members.iter().enumerate().skip(1) {
            let seed = edge_seeds.get(b + k).map_or(0, |&(_, y, _)| y);
            let from = members[seed % k];
            edges.push(json!({"from": format!("s{from}"), "to": format!("s{m}")}));
        }
    }
    let main: Vec<usize> = (0..n).filter(|&i| block_of[i].is_none()).collect();
    for &(_, a, c) in &edge_seeds {
        if main.len() < 2 {
            break;
        }
        let (x, y) = (main[a % main.len()], main[c % main.len()]);
        if x < y {
            let mut e = json!({"from": format!("s{x}"), "to": format!("s{y}")});
            if a % 2 == 0 {
                e["when"] = json!("error");
            }
            edges.push(e);
        }
    }
    let doc =
        json!({"manifestVersion": "2", "id": "w", "name": "w", "steps": steps, "edges": edges});
    Generated {
        doc,
        block_of,
        blocks,
    }
}

fn generated() -> impl Strategy<Value = Generated> {
    (
        2usize..40,
        prop::collection::vec(
            (any::<bool>(), prop::collection::vec(1usize..5, 1..4)),
            0..6,
        ),
        prop::collection::vec((0usize..100, 0usize..100, 0usize..100), 0..60),
    )
        .prop_map(|(n, sizes, seeds)| build(n, sizes, seeds))
}

/// The case count comes from PROPTEST_CASES (the default config reads it). About half of
/// the generated edges in `boundary_crossing_edges_are_always_rejected` are filtered out
/// with `prop_assume!`, so the reject budget scales with the case count instead of the
/// fixed default of 1,024 (which a large PROPTEST_CASES exhausts).
fn config() -> ProptestConfig {
    let base = ProptestConfig::default();
    ProptestConfig {
        max_global_rejects: base.cases.saturating_mul(8).max(1024),
        ..base
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn valid_sub_blocks_plan_and_stay_off_the_main_graph(g in generated()) {
        let validated = validate_workflow(&g.doc, ValidateOptions::default());
        prop_assert!(validated.is_ok(), "{:?}\n{}", validated.err(), g.doc);
        let w: Workflow = serde_json::from_value(g.doc.clone()).expect("parses");
        let p = plan(&w).map_err(|e| TestCaseError::fail(format!("{e:?}\n{}", g.doc)))?;
        let n = w.steps.len();
        // Main order: exactly the main-graph steps.
        let mut seen = vec![0usize; n];
        for &i in &p.order {
            prop_assert!(g.block_of[i].is_none(), "sub-block step s{} in main order", i);
            seen[i] += 1;
        }
        prop_assert_eq!(p.controls.blocks.len(), g.blocks.len());
        for (b, sub) in p.controls.blocks.iter().enumerate() {
            prop_assert_eq!(&sub.steps, &g.blocks[b]);
            prop_assert_eq!(sub.root, g.blocks[b][0]);
            prop_assert_eq!(Some(&sub.last), sub.order.last());
            // A topological order of the block's edges, each member once.
            let mut position = vec![usize::MAX; n];
            for (pos, &s) in sub.order.iter().enumerate() {
                prop_assert_eq!(g.block_of[s], Some(b));
                position[s] = pos;
                seen[s] += 1;
            }
            for edges in &sub.outgoing {
                for e in edges {
                    prop_assert!(position[e.from as usize] < position[e.to as usize], "edge {} not forward", e.index);
                }
            }
            prop_assert_eq!(sub.order.first(), Some(&sub.root));
        }
        prop_assert!(seen.iter().all(|&c| c == 1), "every step planned exactly once: {:?}", seen);
    }

    #[test]
    fn boundary_crossing_edges_are_always_rejected(
        g in generated(),
        a in 0usize..1000,
        b in 0usize..1000,
        error in any::<bool>(),
    ) {
        let n = g.block_of.len();
        let (x, y) = (a % n, b % n);
        let crossing = g.block_of[x] != g.block_of[y];
        let error_inside = error && g.block_of[x].is_some() && g.block_of[x] == g.block_of[y];
        prop_assume!(crossing || error_inside);
        let mut doc = g.doc.clone();
        let edges = doc["edges"].as_array_mut().expect("edges");
        let index = edges.len();
        let mut e = json!({"from": format!("s{x}"), "to": format!("s{y}")});
        if error {
            e["when"] = json!("error");
        }
        edges.push(e);
        let errors = validate_workflow(&doc, ValidateOptions::default()).expect_err("rejected");
        let path = format!("/edges/{index}");
        prop_assert!(
            errors.iter().any(|e| e.code.as_str() == "sub_block_edge" && e.path == path),
            "{:?}", errors
        );
        let w: Workflow = serde_json::from_value(doc).expect("parses");
        let planned = plan(&w).expect_err("rejected");
        prop_assert!(planned.iter().any(|e| e.code.as_str() == "sub_block_edge" && e.path == path));
    }
}

/// The generator really builds sub-blocks (nested, with and without internal edges), so
/// the properties above are not vacuous.
#[test]
fn the_generator_builds_nested_sub_blocks() {
    let g = build(
        10,
        vec![(false, vec![3]), (true, vec![1, 2])],
        vec![(1, 1, 1); 10],
    );
    assert_eq!(g.blocks, [vec![1, 2, 3], vec![4], vec![5, 6]]);
    let w: Workflow = serde_json::from_value(g.doc.clone()).expect("parses");
    let p = plan(&w).expect("plans");
    // s3 is the latest non-control step before the parallel's members: a body step owns
    // the parallel, so it nests at level 2.
    assert_eq!(p.controls.owner[4], Some(3));
    assert_eq!(p.controls.blocks[1].level, 2);
    assert!(!p.controls.blocks[0].implicit_chain);
    assert_eq!(p.ids(&w), ["s0", "s7", "s8", "s9"]);
}
