//! Planning (PLAN-1…7, CTRL-1, CTRL-4…10): step ids → indices, adjacency, in-degrees, the
//! deterministic order, and the plan-time half of the canonical controls.
//!
//! Owns: the graph view of a workflow and its checks — duplicate ids (PLAN-1), dangling
//! endpoints (PLAN-2), cycles (PLAN-3), the implicit chain (PLAN-4) and the topological
//! order with declared-order tie-breaking (PLAN-5). Error edges are ordinary edges here
//! (ERR-13): `when` never changes the order. [`control`] adds control identities
//! (CTRL-1), sub-block membership and structure, edges touching sub-blocks (PLAN-7,
//! CTRL-9) and literal control params; [`Plan::controls`] carries the result.
//!
//! Invariant: planning is a pure function of the document (and, through [`PlanOptions`],
//! of the host's declared capabilities) — no expressions, no clock. It never reads
//! `ports` (CTRL-10). A workflow without controls plans exactly as before controls existed:
//! the main graph is every step.
//!
//! Complexity: O((n + m) log n) for n steps and m edges. Kahn's algorithm with a min-heap
//! on declared index yields the lexicographically smallest topological order by declared
//! index; cycles are reported per strongly connected component (iterative Tarjan), each
//! with one actual cycle found by a breadth-first search, so nothing here recurses.

mod control;
mod document;
mod wait;

pub use control::{
    BlockSlot, CONTROL_APP, ControlKind, ControlParams, ControlPlan, ControlStep, JoinMode,
    MAX_CONTROL_NESTING, ParallelStrategy, PlanValue, SubBlockKind, SubPlan, WaitSpec,
};
pub(crate) use document::document_problems;
pub use wait::{MAX_TIME_TEXT_LEN, parse_duration_ms, parse_timestamp_ms};

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::model::{FanOut, ValidationCode, ValidationError, When, Workflow};
use control::{StepView, analyse_controls};

/// At most this many step ids are spelled out in one cycle message; longer cycles are
/// abbreviated so a pathological document cannot produce a megabyte-long message.
pub use crate::limits::MAX_CYCLE_IDS_IN_MESSAGE;

/// One edge of the main graph, by step index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanEdge {
    /// Position of the edge in `Workflow.edges` (declared order).
    pub index: usize,
    pub from: usize,
    pub to: usize,
    pub when: When,
}

/// `Plan::rank` of a step that is not on the main graph (it sits in a sub-block; its
/// rank there is in [`SubPlan::rank`]).
pub const NOT_ON_MAIN_GRAPH: usize = usize::MAX;

/// The planned graph. Indices are positions in `Workflow.steps`.
///
/// `order`, `rank`, `outgoing`, `incoming` and `implicit_chain` describe the *main graph*.
/// Without controls that is every step and every edge, exactly as PLAN-4/5 define it.
/// With sub-blocks, their steps appear in no main `order`, have rank
/// [`NOT_ON_MAIN_GRAPH`] and empty main adjacency; their plans are in
/// `controls.blocks`.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Main-graph step indices in execution order.
    pub order: Vec<usize>,
    /// Position of each step index in `order` ([`NOT_ON_MAIN_GRAPH`] for sub-block steps).
    pub rank: Vec<usize>,
    /// Outgoing main-graph edges per step, in declared edge order.
    pub outgoing: Vec<Vec<PlanEdge>>,
    /// Incoming main-graph edges per step, in declared edge order.
    pub incoming: Vec<Vec<PlanEdge>>,
    /// Whether the main graph has no edges (PLAN-4 implicit chain). Without sub-blocks this
    /// is "the workflow declared no edges".
    pub implicit_chain: bool,
    /// Controls, sub-block ownership and sub-block plans (empty without controls).
    pub controls: ControlPlan,
    /// FAN-1: whether any step, on the main graph or in a sub-block, declares
    /// `fanOut: "parallel"`; such a plan takes the strand scheduler.
    pub fan_out_parallel: bool,
}

impl Plan {
    /// The main-graph plan as step ids.
    pub fn ids<'w>(&self, workflow: &'w Workflow) -> Vec<&'w str> {
        self.order
            .iter()
            .map(|&i| workflow.steps[i].id.as_str())
            .collect()
    }

    /// FAN-1: no step declares `fanOut: "parallel"`, so the plain `order` loop applies
    /// (controls, if any, still need the control runtime: see [`Plan::has_controls`]).
    pub fn is_sequential(&self) -> bool {
        !self.fan_out_parallel
    }

    /// Whether any step is a canonical control.
    pub fn has_controls(&self) -> bool {
        !self.controls.controls.is_empty()
    }
}

/// What the planner knows about the host that will run the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanOptions {
    /// CTRL-7: the host offers `context.schedule`; without it a `wait` fails planning with
    /// `unsupported_wait`.
    pub host_supports_schedule: bool,
}

impl Default for PlanOptions {
    /// A host-agnostic plan: it does not know the host, so it assumes nothing is missing
    /// and raises no capability error. The engine plans with its host's real options.
    fn default() -> Self {
        PlanOptions {
            host_supports_schedule: true,
        }
    }
}

/// Plan a workflow for no host in particular, returning every planning problem found.
///
/// The typed [`Workflow`] cannot carry an invalid `when` (PLAN-6) or a dotted id check
/// (PLAN-8): those are save-time rules of `validate::validate_workflow`, which also runs
/// the same graph and control checks over the raw document (`document.rs`) so that one
/// call reports everything. Host capabilities are not checked here; see [`plan_with`].
pub fn plan(workflow: &Workflow) -> Result<Plan, Vec<ValidationError>> {
    plan_with(workflow, &PlanOptions::default())
}

/// Plan a workflow for a host with the given capabilities (CTRL-7 `unsupported_wait`).
pub fn plan_with(workflow: &Workflow, options: &PlanOptions) -> Result<Plan, Vec<ValidationError>> {
    let n = workflow.steps.len();
    let edges = workflow.edges();
    let ends: Vec<EdgeEnds<'_>> = edges
        .iter()
        .map(|e| EdgeEnds {
            from: Some(e.from.as_str()),
            to: Some(e.to.as_str()),
            error: e.when() == When::Error,
        })
        .collect();
    let views: Vec<StepView<'_>> = workflow
        .steps
        .iter()
        .map(|s| StepView {
            id: Some(s.id.as_str()),
            control: (s.app() == Some(control::CONTROL_APP))
                .then(|| s.action())
                .flatten(),
            with: s.with.as_ref(),
        })
        .collect();
    let mut analysis = analyse(&views, &ends);
    let controls = analyse_controls(&views, &ends, &analysis);
    let mut errors = std::mem::take(&mut analysis.errors);
    errors.extend(controls.errors);
    // CTRL-7: every wait, main graph or sub-block, needs the host's schedule.
    if !options.host_supports_schedule {
        for (i, view) in views.iter().enumerate() {
            if view.control == Some(ControlKind::Wait.as_str()) {
                errors.push(ValidationError::new(
                    ValidationCode::UnsupportedWait,
                    format!("/steps/{i}/uses/action"),
                    format!(
                        "step {:?} is a wait, but this host has no schedule to resume the run with; run it on a host that supports schedule",
                        workflow.steps[i].id
                    ),
                ));
            }
        }
    }
    let (Some(full_order), Some(controls), true) =
        (analysis.order, controls.plan, errors.is_empty())
    else {
        return Err(errors);
    };
    // The main graph: sub-block steps and their internal edges leave it. Crossing edges
    // were rejected above, so the main order is the full order without sub-block steps
    // (Kahn's restriction to a union of disconnected parts is each part's own order).
    let on_main = |i: usize| controls.is_main(i);
    let order: Vec<usize> = if controls.blocks.is_empty() {
        full_order
    } else {
        full_order.into_iter().filter(|&i| on_main(i)).collect()
    };
    let main_edge =
        |ends: &Option<(usize, usize)>| ends.is_some_and(|(f, t)| on_main(f) && on_main(t));
    // Size every list up front: 100k steps must not pay for 200k reallocating pushes.
    let mut out_len = vec![0usize; n];
    let mut in_len = vec![0usize; n];
    let mut main_edges = 0usize;
    for &(from, to) in analysis.endpoints.iter().filter(|e| main_edge(e)).flatten() {
        out_len[from] += 1;
        in_len[to] += 1;
        main_edges += 1;
    }
    let mut outgoing: Vec<Vec<PlanEdge>> = out_len.into_iter().map(Vec::with_capacity).collect();
    let mut incoming: Vec<Vec<PlanEdge>> = in_len.into_iter().map(Vec::with_capacity).collect();
    for (index, (edge, ends)) in edges.iter().zip(&analysis.endpoints).enumerate() {
        if !main_edge(ends) {
            continue;
        }
        if let Some((from, to)) = *ends {
            let pe = PlanEdge {
                index,
                from,
                to,
                when: edge.when(),
            };
            outgoing[from].push(pe);
            incoming[to].push(pe);
        }
    }
    let mut rank = vec![NOT_ON_MAIN_GRAPH; n];
    for (pos, &i) in order.iter().enumerate() {
        rank[i] = pos;
    }
    let controls = if controls.controls.is_empty() {
        ControlPlan::default()
    } else {
        controls
    };
    Ok(Plan {
        order,
        rank,
        outgoing,
        incoming,
        implicit_chain: main_edges == 0,
        controls,
        fan_out_parallel: workflow
            .steps
            .iter()
            .any(|s| s.fan_out() == FanOut::Parallel),
    })
}

/// The endpoints of one declared edge; `None` where the document holds no usable string
/// (that problem is reported by the caller, not as a dangling edge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EdgeEnds<'a> {
    pub(crate) from: Option<&'a str>,
    pub(crate) to: Option<&'a str>,
    /// `when: "error"` (CTRL-9: such an edge may not touch a sub-block).
    pub(crate) error: bool,
}

/// What the graph checks found.
#[derive(Debug, Clone)]
pub(crate) struct Analysis<'a> {
    /// PLAN-1/2/3 problems: duplicates in step order, dangling ends in edge order, then one
    /// error per cyclic strongly connected component.
    pub(crate) errors: Vec<ValidationError>,
    /// Per declared edge: the resolved `(from, to)` step indices, when both resolve.
    pub(crate) endpoints: Vec<Option<(usize, usize)>>,
    /// The plan order; `Some` exactly when `errors` is empty.
    pub(crate) order: Option<Vec<usize>>,
    /// Each usable id → the index of its first declaration.
    pub(crate) index: IdMap<'a>,
}

/// Step id → index. Ids are short strings looked up once per edge end, so the hasher is
/// foldhash's, not SipHash (D-130); its per-process seed keeps crafted ids from colliding
/// on purpose, and nothing iterates the map, so plans do not depend on the seed.
pub(crate) type IdMap<'a> = foldhash::HashMap<&'a str, usize>;

/// The graph checks shared by [`plan`] and save-time validation of a raw document.
///
/// `steps[i].id` is step `i`'s id (`None` when the document has no usable id for it; such
/// a step is still a node, just one no edge can name). Ids resolve to their first
/// declaration, so with duplicate ids the graph is the graph of *names* the edges
/// describe: a cycle in it survives whichever twin is renamed, and is reported too.
pub(crate) fn analyse<'a>(steps: &[StepView<'a>], edges: &[EdgeEnds<'_>]) -> Analysis<'a> {
    let n = steps.len();
    let mut errors = Vec::new();
    // PLAN-1: first declaration wins; every later one is the problem.
    let mut index = IdMap::with_capacity_and_hasher(n, Default::default());
    for (i, step) in steps.iter().enumerate() {
        let Some(id) = step.id else { continue };
        if let Some(&first) = index.get(id) {
            errors.push(ValidationError::new(
                ValidationCode::DuplicateStepId,
                format!("/steps/{i}/id"),
                format!("step id {id:?} is already used by step {first} (/steps/{first}); step ids must be unique within a workflow"),
            ));
        } else {
            index.insert(id, i);
        }
    }
    // PLAN-2 / ERR-13: every edge, success or error, must name existing steps.
    let mut endpoints = Vec::with_capacity(edges.len());
    for (e, edge) in edges.iter().enumerate() {
        let mut resolve = |end: Option<&str>, field: &str| -> Option<usize> {
            let name = end?;
            let found = index.get(name).copied();
            if found.is_none() {
                errors.push(ValidationError::new(
                    ValidationCode::DanglingEdge,
                    format!("/edges/{e}/{field}"),
                    format!("edge {e}'s {field:?} is {name:?}, but no step has that id"),
                ));
            }
            found
        };
        let from = resolve(edge.from, "from");
        let to = resolve(edge.to, "to");
        endpoints.push(from.zip(to));
    }
    let (graph, indegree) = Csr::new(n, &endpoints);
    // PLAN-4: no edges → the declared order, without touching the heap.
    let order = if edges.is_empty() {
        (0..n).collect()
    } else {
        kahn(&graph, indegree)
    };
    if order.len() < n {
        // PLAN-3: whatever Kahn could not consume lies on or behind a cycle.
        let mut consumed = vec![false; n];
        for &i in &order {
            consumed[i] = true;
        }
        for cycle in cycles(&graph, &consumed) {
            errors.push(cycle_error(steps, &cycle));
        }
    }
    let order = errors.is_empty().then_some(order);
    Analysis {
        errors,
        endpoints,
        order,
        index,
    }
}

/// Compressed adjacency, the analysis's one copy of the edges: the out-neighbours of `v`
/// are `targets[start[v]..start[v + 1]]`, in declared edge order.
struct Csr {
    start: Vec<usize>,
    targets: Vec<usize>,
}

impl Csr {
    /// The adjacency of the resolved `endpoints` over `n` nodes, and each node's in-degree.
    fn new(n: usize, endpoints: &[Option<(usize, usize)>]) -> (Self, Vec<usize>) {
        // Count into `start[from]` and prefix-sum, so `start[v]` is the end of `v`'s range;
        // filling backwards then moves it to the range's start and keeps declared order.
        let mut start = vec![0usize; n + 1];
        let mut indegree = vec![0usize; n];
        let mut m = 0usize;
        for &(from, to) in endpoints.iter().flatten() {
            start[from] += 1;
            indegree[to] += 1;
            m += 1;
        }
        for v in 1..=n {
            start[v] += start[v - 1];
        }
        let mut targets = vec![0usize; m];
        for &(from, to) in endpoints.iter().rev().flatten() {
            start[from] -= 1;
            targets[start[from]] = to;
        }
        (Csr { start, targets }, indegree)
    }

    fn len(&self) -> usize {
        self.start.len() - 1
    }

    fn out(&self, v: usize) -> &[usize] {
        &self.targets[self.start[v]..self.start[v + 1]]
    }
}

/// PLAN-5: Kahn's algorithm; among ready steps the earliest-declared goes first, which
/// makes the result the smallest topological order by declared index.
fn kahn(graph: &Csr, mut indegree: Vec<usize>) -> Vec<usize> {
    let mut ready: BinaryHeap<Reverse<usize>> = (0..graph.len())
        .filter(|&i| indegree[i] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(graph.len());
    while let Some(Reverse(v)) = ready.pop() {
        #[cfg(w6w_mutants)] // PLAN-5 mutant (mutant build only): ties to the largest index
        let v = if crate::mutants::active(crate::mutants::Mutant::TiesByReverseDeclaredOrder) {
            let largest = ready.iter().map(|r| r.0).max().filter(|&w| w > v);
            match largest {
                Some(w) => {
                    ready.retain(|r| r.0 != w);
                    ready.push(Reverse(v));
                    w
                }
                None => v,
            }
        } else {
            v
        };
        order.push(v);
        for &w in graph.out(v) {
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(Reverse(w));
            }
        }
    }
    order
}

/// One actual cycle per cyclic strongly connected component among the unconsumed nodes,
/// ordered by each component's earliest-declared step. Each cycle starts at that step and
/// lists the steps in edge order (the closing edge back to the first step is implied).
fn cycles(graph: &Csr, consumed: &[bool]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let n = graph.len();
    let mut order_of = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut component = vec![UNSEEN; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut frames: Vec<(usize, usize)> = Vec::new();
    let mut counter = 0usize;
    let mut components: Vec<Vec<usize>> = Vec::new();
    // Iterative Tarjan: `frames` is the DFS call stack (node, next out-edge offset).
    for root in 0..n {
        if consumed[root] || order_of[root] != UNSEEN {
            continue;
        }
        order_of[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        frames.push((root, graph.start[root]));
        while let Some(&(v, pos)) = frames.last() {
            if pos < graph.start[v + 1] {
                if let Some(frame) = frames.last_mut() {
                    frame.1 += 1;
                }
                let w = graph.targets[pos];
                if consumed[w] {
                    continue;
                }
                if order_of[w] == UNSEEN {
                    order_of[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, graph.start[w]));
                } else if on_stack[w] {
                    low[v] = low[v].min(order_of[w]);
                }
                continue;
            }
            frames.pop();
            if let Some(&(parent, _)) = frames.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order_of[v] {
                let id = components.len();
                let mut members = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = id;
                    members.push(w);
                    if w == v {
                        break;
                    }
                }
                components.push(members);
            }
        }
    }
    let mut found: Vec<Vec<usize>> = Vec::new();
    let mut parent = vec![UNSEEN; n];
    for (id, members) in components.iter().enumerate() {
        let Some(&first) = members.iter().min() else {
            continue;
        };
        let self_loop = graph.out(first).contains(&first);
        if members.len() == 1 && !self_loop {
            continue; // behind a cycle, not on one
        }
        if let Some(cycle) =
            shortest_cycle_through(graph, first, |w| component[w] == id, &mut parent)
        {
            found.push(cycle);
        }
        for &m in members {
            parent[m] = UNSEEN;
        }
    }
    found.sort_by_key(|c| c.first().copied());
    found
}

/// Breadth-first search from `start` inside the component (`inside`), returning the
/// shortest cycle through `start`. `parent` is scratch space, all `usize::MAX` on entry.
fn shortest_cycle_through(
    graph: &Csr,
    start: usize,
    inside: impl Fn(usize) -> bool,
    parent: &mut [usize],
) -> Option<Vec<usize>> {
    let mut queue = VecDeque::from([start]);
    parent[start] = start;
    while let Some(v) = queue.pop_front() {
        for &w in graph.out(v) {
            if w == start {
                let mut cycle = vec![v];
                let mut at = v;
                while at != start {
                    at = parent[at];
                    cycle.push(at);
                }
                cycle.reverse();
                return Some(cycle);
            }
            if inside(w) && parent[w] == usize::MAX {
                parent[w] = v;
                queue.push_back(w);
            }
        }
    }
    None
}

fn cycle_error(steps: &[StepView<'_>], cycle: &[usize]) -> ValidationError {
    let name = |i: usize| match steps.get(i).and_then(|s| s.id) {
        Some(id) => format!("{id:?}"),
        None => format!("/steps/{i}"),
    };
    let mut names: Vec<String> = cycle
        .iter()
        .take(MAX_CYCLE_IDS_IN_MESSAGE)
        .map(|&i| name(i))
        .collect();
    if cycle.len() > MAX_CYCLE_IDS_IN_MESSAGE {
        names.push(format!(
            "… ({} more steps)",
            cycle.len() - MAX_CYCLE_IDS_IN_MESSAGE
        ));
    }
    if let Some(&first) = cycle.first() {
        names.push(name(first));
    }
    ValidationError::new(
        ValidationCode::Cycle,
        "/edges",
        format!(
            "the edges form a cycle: {}; a workflow must be acyclic, so remove or reverse one of these edges",
            names.join(" → ")
        ),
    )
}

#[cfg(test)]
mod tests {
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
        assert_eq!(
            p.incoming[0].iter().map(|e| e.index).collect::<Vec<_>>(),
            [0, 1]
        );
        assert_eq!(
            p.outgoing[1][0],
            PlanEdge {
                index: 0,
                from: 1,
                to: 0,
                when: When::Success
            }
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
        assert_eq!(p.outgoing[1][0].when, When::Error);
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

    #[test]
    fn the_adjacency_keeps_declared_edge_order_and_counts_in_degrees() {
        // Edges 0..4 in declared order; unresolved ones (None) are not edges.
        let endpoints = [
            Some((2, 0)),
            None,
            Some((0, 1)),
            Some((2, 2)),
            Some((0, 2)),
            Some((2, 1)),
        ];
        let (graph, indegree) = Csr::new(3, &endpoints);
        assert_eq!(graph.len(), 3);
        assert_eq!(graph.out(0), [1, 2]);
        assert!(graph.out(1).is_empty());
        assert_eq!(graph.out(2), [0, 2, 1]);
        assert_eq!(indegree, [1, 2, 2]);
        let (empty, none) = Csr::new(0, &[]);
        assert_eq!((empty.len(), none.len()), (0, 0));
    }
}
