//! Plan-time half of the canonical controls (CTRL-1, CTRL-4…10, PLAN-7): control
//! identities, sub-block membership and structure, and the params that can be checked
//! before anything runs.
//!
//! Owns: [`ControlPlan`] — for every step, which control's sub-block holds it; for every
//! control, its parsed static params; for every sub-block, its own [`SubPlan`] (order,
//! adjacency, root, last step). It is what the control runtime walks.
//!
//! Declaration (companions SILENT, see `docs/decisions.md (Controls at plan time)`): sub-block steps are
//! ordinary entries of the top-level `steps`; a `foreach` owns the ids in `with.body`, a
//! `parallel` owns the ids in each `with.branches[b]`. A sub-block's internal edges live in
//! the top-level `edges`. Membership must be literal JSON.
//!
//! Refuses to know: how a control runs, the clock (an `until` in the past is a run-time
//! matter), and `ports` (CTRL-10). Params given as expressions are left for run time.
//!
//! Invariant: nothing recurses. Ownership is a forest walked iteratively, with cycles
//! reported and nesting bounded by [`MAX_CONTROL_NESTING`].

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use serde_json::{Map, Number, Value};

use super::wait::{parse_duration_ms, parse_timestamp_ms};
use super::{Analysis, PlanEdge};
use crate::model::{ValidationCode as Code, ValidationError, When, pointer_token};
use crate::model::{json_kind, show_value};

/// The first-party app whose actions are the engine's controls.
pub(crate) const CONTROL_APP: &str = "@w6w/control";

/// How many sub-blocks may nest inside one another: a body inside a body … 16 deep. A
/// sub-block of a main-graph control is at level 1.
pub(crate) use crate::limits::MAX_CONTROL_NESTING;

/// CTRL-1: the canonical control identities (`uses.action` of a `@w6w/control` step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::VariantArray)]
pub enum ControlKind {
    If,
    Foreach,
    Parallel,
    Wait,
    Aggregate,
    Merge,
}

impl ControlKind {
    /// The canonical set, in the order engine.md lists it (companion notes §1.4).
    pub const ALL: &'static [ControlKind] = <Self as strum::VariantArray>::VARIANTS;

    /// The identity for a `uses.action`, `None` outside the canonical set.
    pub fn from_action(action: &str) -> Option<ControlKind> {
        ControlKind::ALL
            .iter()
            .copied()
            .find(|k| k.as_str() == action)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ControlKind::If => "if",
            ControlKind::Foreach => "foreach",
            ControlKind::Parallel => "parallel",
            ControlKind::Wait => "wait",
            ControlKind::Aggregate => "aggregate",
            ControlKind::Merge => "merge",
        }
    }
}

/// A param that is either literal (checked and parsed now) or an expression, resolved
/// and checked by the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanValue<T> {
    Known(T),
    AtRunTime,
}

/// CTRL-6: `parallel.strategy`. This engine supports all three, so `unsupported_strategy`
/// is never raised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParallelStrategy {
    All,
    Race,
    Any,
}

/// CTRL-8: `aggregate` / `merge` `mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinMode {
    Array,
    Object,
}

/// CTRL-7: which of `wait`'s two params was given, parsed when literal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitSpec {
    /// `duration`: schedule `afterMs = delay_ms`.
    Duration { delay_ms: PlanValue<u64> },
    /// `until`: schedule `at`, in milliseconds since the Unix epoch (UTC).
    Until { at_ms: PlanValue<i64> },
}

/// A control's statically known params. Sub-blocks are indices into
/// [`ControlPlan::blocks`]; everything else in `with` (foreach `items`, if `condition`,
/// merge `entries` values) is resolved by the runtime from the step's `with`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlParams {
    If,
    Foreach {
        body: usize,
        /// Default 1 (sequential).
        parallelism: PlanValue<u64>,
    },
    Parallel {
        /// One block per branch, in `with.branches` order.
        branches: Vec<usize>,
        /// Default `all`.
        strategy: PlanValue<ParallelStrategy>,
    },
    Wait(WaitSpec),
    Aggregate {
        /// Default `array` (action.md declares it a select defaulting to "array").
        mode: PlanValue<JoinMode>,
    },
    Merge {
        mode: PlanValue<JoinMode>,
    },
}

/// One control step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlStep {
    /// Its index in `Workflow.steps`.
    pub step: usize,
    pub kind: ControlKind,
    pub params: ControlParams,
}

/// Which list of its control a sub-block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubBlockKind {
    /// `foreach.with.body`.
    Body,
    /// `parallel.with.branches[i]`.
    Branch(usize),
}

/// Where a sub-block step sits: its block, and its position in that block's `steps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSlot {
    pub block: usize,
    pub position: usize,
}

/// The plan of one sub-block. Step indices are positions in `Workflow.steps`; the
/// per-step vectors (`rank`, `outgoing`, `incoming`) are indexed by position in `steps`
/// (see [`ControlPlan::slot`] to go from a step index to a position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubPlan {
    /// The owning control's step index.
    pub control: usize,
    pub kind: SubBlockKind,
    /// 1 for a sub-block of a main-graph control, 2 inside that, … ≤ MAX_CONTROL_NESTING.
    pub level: usize,
    /// Member step indices in list order (the sub-block's declared order).
    pub steps: Vec<usize>,
    /// Member step indices in execution order: Kahn's algorithm, ties to the earlier
    /// listed member (PLAN-5 applied to the list).
    pub order: Vec<usize>,
    /// `rank[k]`: the position of `steps[k]` in `order`.
    pub rank: Vec<usize>,
    /// Internal edges leaving `steps[k]`, in declared edge order.
    pub outgoing: Vec<Vec<PlanEdge>>,
    /// Internal edges entering `steps[k]`, in declared edge order.
    pub incoming: Vec<Vec<PlanEdge>>,
    /// No internal edges: the members run as a chain in list order (PLAN-4 applied).
    pub implicit_chain: bool,
    /// The first listed step, the only one with no internal inbound edge.
    pub root: usize,
    /// The last step in `order`: its output is the sub-block's output (foreach
    /// `items[i]`, a parallel branch's output).
    pub last: usize,
    /// Members with no internal outgoing edge, in execution order (`last` is among them).
    pub sinks: Vec<usize>,
}

/// The controls of a workflow, as the runtime needs them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ControlPlan {
    /// Every control step, in declared order.
    pub controls: Vec<ControlStep>,
    /// Per step index: its entry in `controls`, if it is a control.
    pub control_of: Vec<Option<usize>>,
    /// Per step index: the control step whose sub-block holds it; `None` on the main graph.
    pub owner: Vec<Option<usize>>,
    /// Per step index: its sub-block and position there; `None` on the main graph.
    pub slot: Vec<Option<BlockSlot>>,
    /// Every sub-block: controls in declared order, a parallel's branches in list order.
    pub blocks: Vec<SubPlan>,
}

impl ControlPlan {
    /// Whether step `step` belongs to the main graph.
    pub fn is_main(&self, step: usize) -> bool {
        self.owner.get(step).is_none_or(Option::is_none)
    }

    /// The control entry for step `step`, if it is one.
    pub fn control(&self, step: usize) -> Option<&ControlStep> {
        let i = (*self.control_of.get(step)?)?;
        self.controls.get(i)
    }

    /// Whether any step is a `wait` (CTRL-7 needs the host's `schedule`).
    pub fn has_wait(&self) -> bool {
        self.controls.iter().any(|c| c.kind == ControlKind::Wait)
    }
}

/// What the control analysis sees of a step, from the raw document or the typed model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct StepView<'a> {
    pub(crate) id: Option<&'a str>,
    /// `uses.action` when `uses.app` is [`CONTROL_APP`].
    pub(crate) control: Option<&'a str>,
    pub(crate) with: Option<&'a Map<String, Value>>,
}

/// The result of [`analyse_controls`]: `plan` is `Some` exactly when `errors` is empty.
pub(crate) struct ControlAnalysis {
    pub(crate) errors: Vec<ValidationError>,
    pub(crate) plan: Option<ControlPlan>,
}

/// Run every plan-time control check and build the [`ControlPlan`].
///
/// `graph` is the PLAN-1/2/3 analysis of the whole document (main graph and sub-blocks
/// together): it resolves ids and endpoints, and its cycle check covers sub-blocks too.
pub(crate) fn analyse_controls(steps: &[StepView<'_>], graph: &Analysis) -> ControlAnalysis {
    let n = steps.len();
    // Most workflows have no control: skip the per-step tables (three n-long vectors).
    if steps.iter().all(|v| v.control.is_none()) {
        return ControlAnalysis {
            errors: Vec::new(),
            plan: Some(ControlPlan::default()),
        };
    }
    let mut a = Analyser {
        steps,
        graph,
        errors: Vec::new(),
        controls: Vec::new(),
        control_of: vec![None; n],
        owner: vec![None; n],
        slot: vec![None; n],
        drafts: Vec::new(),
    };
    for (i, view) in steps.iter().enumerate() {
        let Some(action) = view.control else { continue };
        match ControlKind::from_action(action) {
            Some(kind) => a.control(i, kind),
            None => a.push(
                Code::UnknownControl,
                format!("/steps/{i}/uses/action"),
                format!(
                    "step {} uses {CONTROL_APP} action {action:?}, which is not a canonical control; the canonical set is if, foreach, parallel, wait, aggregate, merge",
                    a.name(i)
                ),
            ),
        }
    }
    if a.drafts.is_empty() {
        return a.finish(Vec::new());
    }
    let levels = a.levels();
    let internal = a.edges();
    let blocks = a.structure(&internal, &levels);
    a.finish(blocks)
}

/// A sub-block before planning: its members with the list position each was claimed at.
struct Draft {
    control: usize,
    kind: SubBlockKind,
    members: Vec<(usize, usize)>,
}

struct Analyser<'s, 'a> {
    steps: &'s [StepView<'a>],
    graph: &'s Analysis,
    errors: Vec<ValidationError>,
    controls: Vec<ControlStep>,
    control_of: Vec<Option<usize>>,
    owner: Vec<Option<usize>>,
    slot: Vec<Option<BlockSlot>>,
    drafts: Vec<Draft>,
}

/// Depth marks for the iterative ownership walk.
const UNSEEN: usize = usize::MAX;
const IN_PROGRESS: usize = usize::MAX - 1;
const CYCLIC: usize = usize::MAX - 2;

impl Analyser<'_, '_> {
    fn push(&mut self, code: Code, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ValidationError::new(code, path, message));
    }

    fn invalid(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.push(Code::ParamInvalid, path, message);
    }

    /// A step named for messages: its id, or its position when it has none.
    fn name(&self, i: usize) -> String {
        match self.steps.get(i).and_then(|s| s.id) {
            Some(id) => format!("{id:?}"),
            None => format!("/steps/{i}"),
        }
    }

    fn with_path(i: usize, key: &str) -> String {
        format!("/steps/{i}/with/{}", pointer_token(key))
    }

    fn block_path(&self, block: usize, position: usize) -> String {
        let d = &self.drafts[block];
        match d.kind {
            SubBlockKind::Body => format!("/steps/{}/with/body/{position}", d.control),
            SubBlockKind::Branch(b) => {
                format!("/steps/{}/with/branches/{b}/{position}", d.control)
            }
        }
    }

    fn block_name(&self, block: usize) -> String {
        let d = &self.drafts[block];
        match d.kind {
            SubBlockKind::Body => format!("the body of foreach {}", self.name(d.control)),
            SubBlockKind::Branch(b) => {
                format!("branch {b} of parallel {}", self.name(d.control))
            }
        }
    }

    fn finish(self, blocks: Vec<SubPlan>) -> ControlAnalysis {
        // A block left unplanned had a cycle the graph analysis reports: no plan.
        if !self.errors.is_empty() || blocks.len() != self.drafts.len() {
            return ControlAnalysis {
                errors: self.errors,
                plan: None,
            };
        }
        ControlAnalysis {
            errors: Vec::new(),
            plan: Some(ControlPlan {
                controls: self.controls,
                control_of: self.control_of,
                owner: self.owner,
                slot: self.slot,
                blocks,
            }),
        }
    }
}

fn block_indices(params: &ControlParams) -> Vec<usize> {
    match params {
        ControlParams::Foreach { body, .. } => vec![*body],
        ControlParams::Parallel { branches, .. } => branches.clone(),
        _ => Vec::new(),
    }
}

/// Which local positions the root (position 0) reaches along `outgoing`.
fn reachable(outgoing: &[Vec<PlanEdge>], position: impl Fn(usize) -> usize) -> Vec<bool> {
    let mut seen = vec![false; outgoing.len()];
    if seen.is_empty() {
        return seen;
    }
    seen[0] = true;
    let mut queue = VecDeque::from([0usize]);
    while let Some(k) = queue.pop_front() {
        for e in &outgoing[k] {
            let t = position(e.to as usize);
            if !seen[t] {
                seen[t] = true;
                queue.push_back(t);
            }
        }
    }
    seen
}

/// PLAN-5 inside a sub-block: ties go to the earlier *listed* member.
fn local_kahn(
    outgoing: &[Vec<PlanEdge>],
    incoming: &[Vec<PlanEdge>],
    position: impl Fn(usize) -> usize,
) -> Vec<usize> {
    let mut indegree: Vec<usize> = incoming.iter().map(Vec::len).collect();
    let mut ready: BinaryHeap<Reverse<usize>> = (0..indegree.len())
        .filter(|&k| indegree[k] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(indegree.len());
    while let Some(Reverse(k)) = ready.pop() {
        order.push(k);
        for e in &outgoing[k] {
            let t = position(e.to as usize);
            indegree[t] -= 1;
            if indegree[t] == 0 {
                ready.push(Reverse(t));
            }
        }
    }
    order
}

/// An expression the runtime resolves: a `{"$"}`/`{"$expr"}` marker, an ExprValue
/// (`{"type": "expr", "parts"}`) or a string holding a `{{ … }}` template.
pub(crate) fn is_run_time(v: &Value) -> bool {
    match v {
        Value::Object(o) => {
            (o.len() == 1 && (o.contains_key("$") || o.contains_key("$expr")))
                || (o.get("type").and_then(Value::as_str) == Some("expr")
                    && o.contains_key("parts"))
        }
        Value::String(s) => s.contains("{{"),
        _ => false,
    }
}

/// A JSON number holding a whole value ≥ 1 (`3`, `3.0`, `1e300`).
fn whole_at_least_one(n: &Number) -> bool {
    if let Some(u) = n.as_u64() {
        return u >= 1;
    }
    if n.is_i64() {
        return false;
    }
    n.as_f64()
        .is_some_and(|f| f.is_finite() && f >= 1.0 && f.fract() == 0.0)
}

/// A whole number ≥ 1 as u64, saturating (`3.0` is 3, `1e300` is u64::MAX).
fn whole_u64(n: &Number) -> u64 {
    if let Some(u) = n.as_u64() {
        return u;
    }
    match n.as_f64() {
        Some(f) if f >= u64::MAX as f64 => u64::MAX,
        Some(f) if f >= 1.0 => f as u64,
        _ => 1,
    }
}

mod blocks;
mod params;
