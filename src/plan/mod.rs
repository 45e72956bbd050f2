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

mod analysis;
mod control;
mod cycles;
mod document;
mod graph;
mod id_map;
mod wait;

pub(crate) use analysis::{Analysis, Needs, UNRESOLVED, analyse};
pub(crate) use control::{
    BlockSlot, CONTROL_APP, ControlKind, ControlParams, ControlPlan, JoinMode, MAX_CONTROL_NESTING,
    ParallelStrategy, PlanValue, SubBlockKind, SubPlan, WaitSpec,
};
pub(crate) use document::document_problems;
pub(crate) use graph::Adjacency;
pub use graph::Edges;

pub(crate) use wait::{parse_duration_ms, parse_timestamp_ms};

use crate::model::{FanOut, ValidationCode, ValidationError, When, Workflow};
use control::{ControlAnalysis, StepView, analyse_controls};
use graph::{EdgeTable, Successors, resolved_edges};

/// At most this many step ids are spelled out in one cycle message; longer cycles are
/// abbreviated so a pathological document cannot produce a megabyte-long message.
pub(crate) use crate::limits::MAX_CYCLE_IDS_IN_MESSAGE;

/// One edge of a graph, by step index. Indices are `u32` (a plan has at most
/// [`MAX_GRAPH_SIZE`] steps and edges). A [`Plan`] holds each main-graph edge once, as its
/// resolved ends and its `when` in declared order, and hands out `PlanEdge`s by value
/// ([`Plan::outgoing`], [`Plan::incoming`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanEdge {
    /// Position of the edge in `Workflow.edges` (declared order).
    pub index: u32,
    pub from: u32,
    pub to: u32,
    pub when: When,
}

/// The most steps, and the most edges, one workflow may declare: indices are `u32`
/// (`u32::MAX` marks an unresolved end). A document that large could not be held in
/// memory anyway (every step and edge costs far more than four bytes); the analysis still
/// reports it instead of truncating an index.
pub(crate) use crate::limits::MAX_GRAPH_SIZE;

/// `Plan::rank` of a step that is not on the main graph (it sits in a sub-block; its
/// rank there is in [`SubPlan::rank`]).
pub(crate) const NOT_ON_MAIN_GRAPH: usize = usize::MAX;

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
    /// Outgoing main-graph edges per step, in declared edge order ([`Plan::outgoing`]).
    outgoing: Adjacency,
    /// Incoming main-graph edges per step, in declared edge order ([`Plan::incoming`]).
    incoming: Adjacency,
    /// Every declared edge once: what `outgoing` and `incoming` index.
    edges: EdgeTable,
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

    /// The main-graph edges leaving `step`, in declared edge order (none for a sub-block
    /// step or past the last step).
    pub fn outgoing(&self, step: usize) -> Edges<'_> {
        self.edges_of(&self.outgoing, step)
    }

    /// The main-graph edges entering `step`, in declared edge order (none for a sub-block
    /// step or past the last step).
    pub fn incoming(&self, step: usize) -> Edges<'_> {
        self.edges_of(&self.incoming, step)
    }

    /// Outgoing main-graph edges per step, as declared edge indices.
    pub fn outgoing_indices(&self) -> &Adjacency {
        &self.outgoing
    }

    /// Incoming main-graph edges per step, as declared edge indices.
    pub fn incoming_indices(&self) -> &Adjacency {
        &self.incoming
    }

    fn edges_of<'p>(&'p self, adjacency: &'p Adjacency, step: usize) -> Edges<'p> {
        Edges::indexed(adjacency.get(step).unwrap_or(&[]), &self.edges)
    }
}

/// What the planner knows about the host that will run the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlanOptions {
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
pub(crate) fn plan_with(
    workflow: &Workflow,
    options: &PlanOptions,
) -> Result<Plan, Vec<ValidationError>> {
    let n = workflow.steps.len();
    let Checked {
        errors,
        order,
        endpoints,
        whens,
        outgoing: resolved,
        in_start,
        controls,
        fan_out_parallel,
    } = check(workflow, options, true);
    let (Some(full_order), Some(controls), true) = (order, controls, errors.is_empty()) else {
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
    let (outgoing, incoming) = main_adjacency(n, &controls, &endpoints, resolved, in_start);
    let edges = EdgeTable {
        ends: endpoints,
        whens,
    };
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
        implicit_chain: outgoing.edges().is_empty(),
        outgoing,
        incoming,
        edges,
        controls,
        fan_out_parallel,
    })
}

/// The main graph's `outgoing` and `incoming`: every resolved edge between main-graph
/// steps, in declared order. Without sub-blocks that is every edge, which the analysis
/// already grouped by `from` (`resolved`) and counted by `to` (`in_start`); with them,
/// the edges that stay are grouped afresh.
fn main_adjacency(
    n: usize,
    controls: &ControlPlan,
    endpoints: &[[u32; 2]],
    resolved: Successors,
    in_start: Vec<u32>,
) -> (Adjacency, Adjacency) {
    if controls.blocks.is_empty() {
        // With no error every edge resolved.
        let incoming = Adjacency::fill(in_start, resolved_edges(endpoints).map(|(e, k)| (e[1], k)));
        return (resolved.into_adjacency(), incoming);
    }
    drop((resolved, in_start));
    let on_main = |i: u32| controls.is_main(i as usize);
    // `index` fits a `u32` because `analyse` checked the size.
    let main_edges =
        resolved_edges(endpoints).filter(|&([from, to], _)| on_main(from) && on_main(to));
    (
        Adjacency::group(n, main_edges.clone().map(|(e, k)| (e[0], k))),
        Adjacency::group(n, main_edges.map(|(e, k)| (e[1], k))),
    )
}

/// Every planning problem of a typed workflow with default [`PlanOptions`] — the graph
/// and control checks `document_problems` runs over a raw document, without building a
/// plan. Save-time validation calls it once the document has passed the storage rules
/// (then the typed workflow reads exactly what the raw document holds).
pub(crate) fn workflow_problems(workflow: &Workflow) -> Vec<ValidationError> {
    check(workflow, &PlanOptions::default(), false).errors
}

/// What the checks of [`plan_with`] found.
struct Checked {
    /// Graph problems, then control problems, then CTRL-7's.
    errors: Vec<ValidationError>,
    /// The full order (main graph and sub-blocks), `Some` when the graph is sound.
    order: Option<Vec<usize>>,
    /// Per declared edge, its resolved ends (see [`Analysis::endpoints`]).
    endpoints: Vec<[u32; 2]>,
    /// Per declared edge, its `when`.
    whens: Vec<When>,
    /// Every resolved edge, grouped by `from` (see [`Analysis::outgoing`]).
    outgoing: Successors,
    /// In-degrees (see [`Analysis::in_start`]).
    in_start: Vec<u32>,
    /// The control plan, `Some` when the controls are sound.
    controls: Option<ControlPlan>,
    /// FAN-1: some step declares `fanOut: "parallel"`.
    fan_out_parallel: bool,
}

fn check(workflow: &Workflow, options: &PlanOptions, ordered: bool) -> Checked {
    let n = workflow.steps.len();
    let edges = workflow.edges();
    // Most workflows have no control: then no step views are built at all, and the id
    // map is not kept for the control analysis.
    // One pass over the steps for both flags (D-197).
    let (mut has_controls, mut fan_out_parallel) = (false, false);
    for s in &workflow.steps {
        has_controls |= is_control(s) && s.action().is_some();
        fan_out_parallel |= s.fan_out() == FanOut::Parallel;
    }
    let mut analysis = analyse(
        n,
        |i| workflow.steps.get(i).map(|s| s.id.as_str()),
        edges
            .iter()
            .map(|e| (Some(e.from.as_str()), Some(e.to.as_str()), e.when())),
        Needs {
            index: has_controls,
            order: ordered,
        },
    );
    let controls = if has_controls {
        control_analysis(workflow, &analysis, options)
    } else {
        ControlAnalysis {
            errors: Vec::new(),
            plan: Some(ControlPlan::default()),
        }
    };
    let mut errors = std::mem::take(&mut analysis.errors);
    errors.extend(controls.errors);
    // The id map has served the control analysis: it is dropped here, before a plan is
    // built from the rest.
    let Analysis {
        order,
        endpoints,
        whens,
        outgoing,
        in_start,
        ..
    } = analysis;
    Checked {
        errors,
        order,
        endpoints,
        whens,
        outgoing,
        in_start,
        controls: controls.plan,
        fan_out_parallel,
    }
}

/// The plan-time control checks of a workflow with controls (CTRL-1, PLAN-7, CTRL-4…9),
/// then CTRL-7's: every wait, main graph or sub-block, needs the host's schedule.
fn control_analysis(
    workflow: &Workflow,
    analysis: &Analysis,
    options: &PlanOptions,
) -> ControlAnalysis {
    let views: Vec<StepView<'_>> = workflow
        .steps
        .iter()
        .map(|s| StepView {
            id: Some(s.id.as_str()),
            control: is_control(s).then(|| s.action()).flatten(),
            with: s.with.as_ref(),
        })
        .collect();
    let mut controls = analyse_controls(&views, analysis);
    if !options.host_supports_schedule {
        for (i, view) in views.iter().enumerate() {
            if view.control == Some(ControlKind::Wait.as_str()) {
                controls.errors.push(ValidationError::new(
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
    controls
}

/// Whether `step` names the control app (a canonical control when it names an action).
fn is_control(step: &crate::model::Step) -> bool {
    step.app() == Some(control::CONTROL_APP)
}

#[cfg(test)]
mod tests;
