//! Planner properties over random graphs (PLAN-3, PLAN-5; ERR-13 via random `when`).
//!
//! - For a random DAG the plan is a topological order and equals the lexicographically
//!   smallest topological order by declared index, computed by an independent O(n²)
//!   reference.
//! - A random graph with at least one cycle is always rejected with code `cycle`, and the
//!   cycle each error names is a real cycle of the graph.
//!
//! Both the raw-document path (`validate_workflow`) and the typed path (`plan::plan`) are
//! checked. Case count follows `PROPTEST_CASES`; a failure prints the shrunk graph, and
//! proptest records its seed under `proptest-regressions/` so it replays.

use proptest::prelude::*;
use serde_json::{Value, json};
use w6w_sim::model::{ValidationCode, When, Workflow};
use w6w_sim::plan;
use w6w_sim::{ValidateOptions, validate_workflow};

/// A graph: `n` steps named `s0…`, edges by declared index, each with a `when`.
#[derive(Debug, Clone)]
struct Graph {
    n: usize,
    edges: Vec<(usize, usize, bool)>,
}

impl Graph {
    fn document(&self) -> Value {
        let steps: Vec<Value> = (0..self.n)
            .map(|i| json!({"id": format!("s{i}"), "uses": {"app": "x", "action": "y"}}))
            .collect();
        let edges: Vec<Value> = self
            .edges
            .iter()
            .map(|&(f, t, error)| {
                let mut e = json!({"from": format!("s{f}"), "to": format!("s{t}")});
                if error {
                    e["when"] = json!("error");
                }
                e
            })
            .collect();
        json!({"manifestVersion": "2", "id": "w", "name": "w", "steps": steps, "edges": edges})
    }

    fn has_edge(&self, from: usize, to: usize) -> bool {
        self.edges.iter().any(|&(f, t, _)| f == from && t == to)
    }
}

/// A random DAG: a hidden topological permutation decides the direction of every edge,
/// so declared order and graph order are unrelated.
fn dag() -> impl Strategy<Value = Graph> {
    (1usize..40).prop_flat_map(|n| {
        let perm = Just((0..n).collect::<Vec<usize>>()).prop_shuffle();
        let pairs = prop::collection::vec((0..n, 0..n, any::<bool>()), 0..(3 * n));
        (Just(n), perm, pairs).prop_map(|(n, perm, pairs)| {
            // position[v] = v's place in the hidden order; edges go forward in it.
            let mut position = vec![0; n];
            for (pos, &v) in perm.iter().enumerate() {
                position[v] = pos;
            }
            let edges = pairs
                .into_iter()
                .filter(|&(a, b, _)| a != b)
                .map(|(a, b, w)| {
                    if position[a] < position[b] {
                        (a, b, w)
                    } else {
                        (b, a, w)
                    }
                })
                .collect();
            Graph { n, edges }
        })
    })
}

/// A DAG plus at least one edge that closes a cycle (possibly a self-loop).
fn cyclic() -> impl Strategy<Value = Graph> {
    dag().prop_flat_map(|g| {
        let n = g.n;
        (
            Just(g),
            0..n,
            0..n,
            any::<bool>(),
            prop::collection::vec(0..n, 0..4),
        )
            .prop_map(|(mut g, a, b, when, chain)| {
                // A path a → c1 → … → ck → b plus the edge b → a is a cycle whatever
                // else the graph holds (a == b with no chain is a self-loop).
                let mut prev = a;
                for c in chain {
                    g.edges.push((prev, c, when));
                    prev = c;
                }
                g.edges.push((prev, b, false));
                g.edges.push((b, a, when));
                g
            })
    })
}

/// Reference: repeatedly take the smallest declared index whose predecessors are all
/// placed. Quadratic and obviously right.
fn smallest_topological_order(g: &Graph) -> Vec<usize> {
    let mut placed = vec![false; g.n];
    let mut order = Vec::with_capacity(g.n);
    for _ in 0..g.n {
        let next = (0..g.n)
            .find(|&v| !placed[v] && g.edges.iter().all(|&(f, t, _)| t != v || placed[f]))
            .expect("a DAG always has a ready step");
        placed[next] = true;
        order.push(next);
    }
    order
}

fn ids(order: &[String]) -> Vec<usize> {
    order
        .iter()
        .map(|id| id.trim_start_matches('s').parse().expect("generated id"))
        .collect()
}

/// The step indices a cycle message names, in order (first repeated at the end).
fn named_cycle(message: &str) -> Vec<usize> {
    let body = message
        .split_once("cycle: ")
        .and_then(|(_, rest)| rest.split_once(';'))
        .map(|(cycle, _)| cycle)
        .expect("cycle message shape");
    body.split(" → ")
        .map(|name| {
            name.trim_matches('"')
                .trim_start_matches('s')
                .parse()
                .expect("generated id in message")
        })
        .collect()
}

proptest! {
    #[test]
    fn plan_5_dag_plan_is_the_smallest_topological_order(g in dag()) {
        let doc = g.document();
        let workflow = validate_workflow(&doc, ValidateOptions::default())
            .map_err(|e| TestCaseError::fail(format!("valid DAG rejected: {e:?}")))?;
        let p = plan(&workflow).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        let order: Vec<String> = p.ids(&workflow).into_iter().map(str::to_owned).collect();
        let order = ids(&order);
        // A permutation of all steps …
        let mut sorted = order.clone();
        sorted.sort_unstable();
        prop_assert_eq!(sorted, (0..g.n).collect::<Vec<_>>());
        // … in which every edge points forward …
        for &(f, t, _) in &g.edges {
            prop_assert!(p.rank[f] < p.rank[t], "edge s{} → s{} goes backwards", f, t);
        }
        // … and which is the smallest such order by declared index.
        prop_assert_eq!(order, smallest_topological_order(&g));
        // Each step's edges, both ways, are exactly its declared edges in declared order,
        // each with its index, ends and `when` (the plan holds them once, by index).
        let expected = |keep: &dyn Fn(usize, usize) -> bool| -> Vec<(u32, u32, u32, When)> {
            g.edges
                .iter()
                .enumerate()
                .filter(|&(_, &(f, t, _))| keep(f, t))
                .map(|(k, &(f, t, error))| {
                    let when = if error { When::Error } else { When::Success };
                    (k as u32, f as u32, t as u32, when)
                })
                .collect()
        };
        let seen = |edges: w6w_sim::__internals::plan::Edges<'_>| -> Vec<(u32, u32, u32, When)> {
            edges.map(|e| (e.index, e.from, e.to, e.when)).collect()
        };
        for v in 0..g.n {
            let out = p.outgoing(v);
            prop_assert_eq!(out.len(), g.edges.iter().filter(|e| e.0 == v).count());
            prop_assert_eq!(seen(out), expected(&|f, _| f == v));
            prop_assert_eq!(seen(p.incoming(v)), expected(&|_, t| t == v));
        }
        prop_assert_eq!(p.outgoing(g.n).len() + p.incoming(g.n).len(), 0);
    }

    #[test]
    fn plan_3_cyclic_graphs_are_always_rejected_naming_a_real_cycle(g in cyclic()) {
        let doc = g.document();
        let errors = match validate_workflow(&doc, ValidateOptions::default()) {
            Ok(_) => return Err(TestCaseError::fail("a cyclic graph was accepted")),
            Err(errors) => errors,
        };
        prop_assert!(!errors.is_empty());
        for e in &errors {
            prop_assert_eq!(e.code, ValidationCode::Cycle);
            prop_assert_eq!(&e.path, "/edges");
            let cycle = named_cycle(&e.message);
            prop_assert!(cycle.len() >= 2);
            prop_assert_eq!(cycle.first(), cycle.last());
            for pair in cycle.windows(2) {
                prop_assert!(g.has_edge(pair[0], pair[1]), "s{} → s{} is not an edge: {}", pair[0], pair[1], e.message);
            }
            // A cycle visits each step once.
            let mut inner = cycle[..cycle.len() - 1].to_vec();
            inner.sort_unstable();
            inner.dedup();
            prop_assert_eq!(inner.len(), cycle.len() - 1);
        }
        // The typed planner agrees with the raw-document validator.
        let typed: Workflow = serde_json::from_value(doc).expect("well-typed");
        let planned = plan(&typed).map(|_| ()).map_err(|e| e.into_iter().map(|e| e.message).collect::<Vec<_>>());
        let messages: Vec<String> = errors.into_iter().map(|e| e.message).collect();
        prop_assert_eq!(planned, Err(messages));
    }
}
