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
use super::{Analysis, EdgeEnds, PlanEdge};
use crate::model::{ValidationCode as Code, ValidationError, When, pointer_token};
use crate::model::{json_kind, show_value};

/// The first-party app whose actions are the engine's controls.
pub const CONTROL_APP: &str = "@w6w/control";

/// How many sub-blocks may nest inside one another: a body inside a body … 16 deep. A
/// sub-block of a main-graph control is at level 1.
pub const MAX_CONTROL_NESTING: usize = 16;

/// CTRL-1: the canonical control identities (`uses.action` of a `@w6w/control` step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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
    pub const ALL: [ControlKind; 6] = [
        ControlKind::If,
        ControlKind::Foreach,
        ControlKind::Parallel,
        ControlKind::Wait,
        ControlKind::Aggregate,
        ControlKind::Merge,
    ];

    /// The identity for a `uses.action`, `None` outside the canonical set.
    pub fn from_action(action: &str) -> Option<ControlKind> {
        ControlKind::ALL.into_iter().find(|k| k.as_str() == action)
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
pub(crate) fn analyse_controls(
    steps: &[StepView<'_>],
    edges: &[EdgeEnds<'_>],
    graph: &Analysis<'_>,
) -> ControlAnalysis {
    let n = steps.len();
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
    let internal = a.edges(edges);
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
    graph: &'s Analysis<'a>,
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

    /// Parse one control's params and claim its sub-block members.
    fn control(&mut self, i: usize, kind: ControlKind) {
        let empty = Map::new();
        let with = self.steps[i].with.unwrap_or(&empty);
        let params = match kind {
            ControlKind::If => {
                if !with.contains_key("condition") {
                    self.invalid(
                        Self::with_path(i, "condition"),
                        format!(
                            "if step {} needs a condition param (a boolean, usually an expression)",
                            self.name(i)
                        ),
                    );
                }
                for key in ["then", "else"] {
                    if with.contains_key(key) {
                        self.invalid(
                            Self::with_path(i, key),
                            format!(
                                "if step {} has a {key:?} param, but if has no branch blocks here: route with edges from the if step (a false condition skips all of them)",
                                self.name(i)
                            ),
                        );
                    }
                }
                ControlParams::If
            }
            ControlKind::Foreach => {
                match with.get("items") {
                    None => self.invalid(
                        Self::with_path(i, "items"),
                        format!(
                            "foreach step {} needs an items param (an array)",
                            self.name(i)
                        ),
                    ),
                    Some(v) if is_run_time(v) || v.is_array() => {}
                    Some(v) => self.invalid(
                        Self::with_path(i, "items"),
                        format!(
                            "foreach step {}'s items must be an array or an expression, not {}",
                            self.name(i),
                            json_kind(v)
                        ),
                    ),
                }
                let parallelism = match with.get("parallelism") {
                    None => PlanValue::Known(1),
                    Some(v) if is_run_time(v) => PlanValue::AtRunTime,
                    Some(Value::Number(n)) if whole_at_least_one(n) => {
                        PlanValue::Known(whole_u64(n))
                    }
                    Some(v) => {
                        self.invalid(
                            Self::with_path(i, "parallelism"),
                            format!(
                                "foreach step {}'s parallelism must be a positive integer, not {}",
                                self.name(i),
                                show_value(v)
                            ),
                        );
                        PlanValue::Known(1)
                    }
                };
                let list = self.id_list(i, with, "body", &format!("/steps/{i}/with/body"));
                let body = self.claim(i, SubBlockKind::Body, list);
                ControlParams::Foreach { body, parallelism }
            }
            ControlKind::Parallel => {
                let strategy = match with.get("strategy") {
                    None => PlanValue::Known(ParallelStrategy::All),
                    Some(v) if is_run_time(v) => PlanValue::AtRunTime,
                    Some(Value::String(s)) if s == "all" => PlanValue::Known(ParallelStrategy::All),
                    Some(Value::String(s)) if s == "race" => {
                        PlanValue::Known(ParallelStrategy::Race)
                    }
                    Some(Value::String(s)) if s == "any" => PlanValue::Known(ParallelStrategy::Any),
                    Some(v) => {
                        self.invalid(
                            Self::with_path(i, "strategy"),
                            format!(
                                "parallel step {}'s strategy must be \"all\", \"race\" or \"any\", not {}",
                                self.name(i),
                                show_value(v)
                            ),
                        );
                        PlanValue::Known(ParallelStrategy::All)
                    }
                };
                let lists = self.branch_lists(i, with);
                let branches = lists
                    .into_iter()
                    .enumerate()
                    .map(|(b, list)| self.claim(i, SubBlockKind::Branch(b), list))
                    .collect();
                ControlParams::Parallel { branches, strategy }
            }
            ControlKind::Wait => ControlParams::Wait(self.wait(i, with)),
            ControlKind::Aggregate => ControlParams::Aggregate {
                mode: self.mode(i, kind, with),
            },
            ControlKind::Merge => {
                let mode = self.mode(i, kind, with);
                self.merge_entries(i, with, mode);
                ControlParams::Merge { mode }
            }
        };
        self.control_of[i] = Some(self.controls.len());
        self.controls.push(ControlStep {
            step: i,
            kind,
            params,
        });
    }

    /// A literal, non-empty array of step ids at `path`; bad entries are reported and
    /// left out (each kept entry carries its list position).
    fn id_list<'v>(
        &mut self,
        i: usize,
        with: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Vec<(usize, &'v str)> {
        let what = format!("{} step {}'s {key}", self.kind_name(i), self.name(i));
        match with.get(key) {
            None => {
                self.invalid(
                    path,
                    format!("{what} is missing: list the ids of the steps it owns"),
                );
                Vec::new()
            }
            Some(v) => self.ids_in(v, path, &what),
        }
    }

    fn kind_name(&self, i: usize) -> &'static str {
        self.steps[i]
            .control
            .and_then(ControlKind::from_action)
            .map_or("control", ControlKind::as_str)
    }

    fn ids_in<'v>(&mut self, v: &'v Value, path: &str, what: &str) -> Vec<(usize, &'v str)> {
        if is_run_time(v) {
            self.invalid(
                path,
                format!("{what} must be literal JSON: sub-block membership is fixed at plan time, so it cannot be an expression"),
            );
            return Vec::new();
        }
        let Value::Array(items) = v else {
            self.invalid(
                path,
                format!(
                    "{what} must be a non-empty array of step ids, not {}",
                    json_kind(v)
                ),
            );
            return Vec::new();
        };
        if items.is_empty() {
            self.invalid(
                path,
                format!("{what} is empty; a sub-block needs at least one step"),
            );
        }
        let mut out = Vec::with_capacity(items.len());
        for (k, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => out.push((k, s.as_str())),
                other => self.invalid(
                    format!("{path}/{k}"),
                    format!(
                        "{what} must hold step ids (strings), not {}",
                        json_kind(other)
                    ),
                ),
            }
        }
        out
    }

    fn branch_lists<'v>(
        &mut self,
        i: usize,
        with: &'v Map<String, Value>,
    ) -> Vec<Vec<(usize, &'v str)>> {
        let path = format!("/steps/{i}/with/branches");
        let what = format!("parallel step {}'s branches", self.name(i));
        let branches = match with.get("branches") {
            None => {
                self.invalid(
                    &path,
                    format!("{what} are missing: list each branch's step ids"),
                );
                return Vec::new();
            }
            Some(v) if is_run_time(v) => {
                self.invalid(
                    &path,
                    format!("{what} must be literal JSON: sub-block membership is fixed at plan time, so it cannot be an expression"),
                );
                return Vec::new();
            }
            Some(Value::Array(b)) => b,
            Some(other) => {
                self.invalid(
                    &path,
                    format!(
                        "{what} must be a non-empty array of arrays of step ids, not {}",
                        json_kind(other)
                    ),
                );
                return Vec::new();
            }
        };
        if branches.is_empty() {
            self.invalid(&path, format!("{what} are empty; give at least one branch"));
        }
        branches
            .iter()
            .enumerate()
            .map(|(b, branch)| {
                let what = format!("{what}[{b}]");
                self.ids_in(branch, &format!("{path}/{b}"), &what)
            })
            .collect()
    }

    /// Resolve and claim a sub-block's ids; returns the new block's index.
    fn claim(&mut self, control: usize, kind: SubBlockKind, list: Vec<(usize, &str)>) -> usize {
        let graph = self.graph;
        let block = self.drafts.len();
        self.drafts.push(Draft {
            control,
            kind,
            members: Vec::with_capacity(list.len()),
        });
        for (k, name) in list {
            let path = self.block_path(block, k);
            let Some(&s) = graph.index.get(name) else {
                let where_ = self.block_name(block);
                self.invalid(
                    path,
                    format!("{where_} lists {name:?}, but no step has that id"),
                );
                continue;
            };
            if s == control {
                let where_ = self.block_name(block);
                self.invalid(
                    path,
                    format!("{where_} lists the control step itself; a control cannot own itself"),
                );
                continue;
            }
            if let Some(prev) = self.slot[s] {
                let (this, earlier) = (self.block_name(block), self.block_name(prev.block));
                let at = self.drafts[prev.block]
                    .members
                    .get(prev.position)
                    .map_or(0, |m| m.1);
                let earlier_path = self.block_path(prev.block, at);
                let message = if prev.block == block {
                    format!(
                        "{this} lists step {name:?} twice (first at {earlier_path}); a step belongs to one sub-block, once"
                    )
                } else {
                    format!(
                        "{this} lists step {name:?}, which {earlier} already owns ({earlier_path}); a step belongs to one sub-block"
                    )
                };
                self.invalid(path, message);
                continue;
            }
            let position = self.drafts[block].members.len();
            self.drafts[block].members.push((s, k));
            self.owner[s] = Some(control);
            self.slot[s] = Some(BlockSlot { block, position });
        }
        block
    }

    /// CTRL-7: exactly one of `duration` and `until`, parsed when literal.
    fn wait(&mut self, i: usize, with: &Map<String, Value>) -> WaitSpec {
        let name = self.name(i);
        let (duration, until) = (with.get("duration"), with.get("until"));
        match (duration, until) {
            (Some(_), Some(_)) => {
                self.invalid(
                    Self::with_path(i, "until"),
                    format!("wait step {name} gives both duration and until; give exactly one"),
                );
                WaitSpec::Duration {
                    delay_ms: PlanValue::AtRunTime,
                }
            }
            (None, None) => {
                self.invalid(
                    format!("/steps/{i}/with"),
                    format!("wait step {name} needs exactly one of duration (an ISO-8601 duration such as \"PT5M\") or until (an RFC 3339 timestamp)"),
                );
                WaitSpec::Duration {
                    delay_ms: PlanValue::AtRunTime,
                }
            }
            (Some(v), None) => WaitSpec::Duration {
                delay_ms: self.time_param(i, "duration", v, parse_duration_ms),
            },
            (None, Some(v)) => WaitSpec::Until {
                at_ms: self.time_param(i, "until", v, parse_timestamp_ms),
            },
        }
    }

    fn time_param<T>(
        &mut self,
        i: usize,
        key: &str,
        v: &Value,
        parse: fn(&str) -> Result<T, String>,
    ) -> PlanValue<T> {
        if is_run_time(v) {
            return PlanValue::AtRunTime;
        }
        let problem = match v {
            Value::String(s) => match parse(s) {
                Ok(t) => return PlanValue::Known(t),
                Err(reason) => format!("{key} {} {reason}", show_value(v)),
            },
            other => format!("{key} must be a string, not {}", json_kind(other)),
        };
        let name = self.name(i);
        self.invalid(
            Self::with_path(i, key),
            format!("wait step {name}'s {problem}"),
        );
        PlanValue::AtRunTime
    }

    /// CTRL-8: `mode` is "array" (the default) or "object".
    fn mode(
        &mut self,
        i: usize,
        kind: ControlKind,
        with: &Map<String, Value>,
    ) -> PlanValue<JoinMode> {
        match with.get("mode") {
            None => PlanValue::Known(JoinMode::Array),
            Some(v) if is_run_time(v) => PlanValue::AtRunTime,
            Some(Value::String(s)) if s == "array" => PlanValue::Known(JoinMode::Array),
            Some(Value::String(s)) if s == "object" => PlanValue::Known(JoinMode::Object),
            Some(v) => {
                self.invalid(
                    Self::with_path(i, "mode"),
                    format!(
                        "{} step {}'s mode must be \"array\" or \"object\", not {}",
                        kind.as_str(),
                        self.name(i),
                        show_value(v)
                    ),
                );
                PlanValue::AtRunTime
            }
        }
    }

    /// CTRL-8: literal `merge.entries` — an array of objects; in object mode every literal
    /// key is a non-empty string used once.
    fn merge_entries(&mut self, i: usize, with: &Map<String, Value>, mode: PlanValue<JoinMode>) {
        let Some(entries) = with.get("entries") else {
            return;
        };
        if is_run_time(entries) {
            return;
        }
        let path = Self::with_path(i, "entries");
        let name = self.name(i);
        let Value::Array(entries) = entries else {
            self.invalid(
                path,
                format!(
                    "merge step {name}'s entries must be an array of {{ key?, value }}, not {}",
                    json_kind(entries)
                ),
            );
            return;
        };
        let object_mode = mode == PlanValue::Known(JoinMode::Object);
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (k, entry) in entries.iter().enumerate() {
            let entry_path = format!("{path}/{k}");
            if is_run_time(entry) {
                continue;
            }
            let Value::Object(entry) = entry else {
                self.invalid(
                    entry_path,
                    format!(
                        "merge step {name}'s entries must be objects {{ key?, value }}, not {}",
                        json_kind(entry)
                    ),
                );
                continue;
            };
            let key_path = format!("{entry_path}/key");
            match entry.get("key") {
                Some(v) if is_run_time(v) => {}
                Some(Value::String(key)) if object_mode && key.is_empty() => self.invalid(
                    key_path,
                    format!("merge step {name}'s entry {k} has an empty key; object mode needs a name for every entry"),
                ),
                Some(Value::String(key)) if object_mode => {
                    if let Some(&first) = seen.get(key.as_str()) {
                        self.invalid(
                            key_path,
                            format!("merge step {name}'s entry {k} repeats key {key:?} of entry {first}; object mode needs distinct keys"),
                        );
                    } else {
                        seen.insert(key, k);
                    }
                }
                Some(Value::String(_)) => {}
                None if object_mode => self.invalid(
                    key_path,
                    format!("merge step {name}'s entry {k} has no key; object mode needs a name for every entry"),
                ),
                None => {}
                Some(other) => self.invalid(
                    key_path,
                    format!("merge step {name}'s entry keys must be strings, not {}", json_kind(other)),
                ),
            }
        }
    }

    /// Nesting level per step (0 on the main graph), `CYCLIC` on or under an ownership
    /// cycle. Reports each cycle once and each control whose sub-block is one level too
    /// deep. Iterative: every step is walked up its owner chain once.
    fn levels(&mut self) -> Vec<usize> {
        let n = self.owner.len();
        let mut level = vec![UNSEEN; n];
        let mut chain: Vec<usize> = Vec::new();
        for s in 0..n {
            if level[s] != UNSEEN {
                continue;
            }
            chain.clear();
            let mut v = s;
            // The level of the step just above the chain's top, or CYCLIC.
            let above = loop {
                match level[v] {
                    UNSEEN => {
                        level[v] = IN_PROGRESS;
                        chain.push(v);
                        match self.owner[v] {
                            Some(o) => v = o,
                            None => break None,
                        }
                    }
                    IN_PROGRESS => {
                        let start = chain.iter().position(|&c| c == v).unwrap_or(0);
                        let cycle = chain[start..].to_vec();
                        self.ownership_cycle(&cycle);
                        break Some(CYCLIC);
                    }
                    known => break Some(known),
                }
            };
            let mut next = match above {
                None => 0,
                Some(CYCLIC) => CYCLIC,
                Some(l) => l + 1,
            };
            // `chain` runs from s up to the top; assign from the top down.
            for &c in chain.iter().rev() {
                level[c] = next;
                if next != CYCLIC {
                    next += 1;
                }
            }
        }
        for c in 0..self.controls.len() {
            let step = self.controls[c].step;
            if level[step] == MAX_CONTROL_NESTING {
                let blocks = block_indices(&self.controls[c].params);
                if let Some(&b) = blocks.first() {
                    let path = match self.drafts[b].kind {
                        SubBlockKind::Body => format!("/steps/{step}/with/body"),
                        SubBlockKind::Branch(_) => format!("/steps/{step}/with/branches"),
                    };
                    let name = self.name(step);
                    self.invalid(
                        path,
                        format!("control step {name} already sits {MAX_CONTROL_NESTING} sub-blocks deep; its own sub-block would exceed the nesting limit of {MAX_CONTROL_NESTING}"),
                    );
                }
            }
        }
        level
    }

    fn ownership_cycle(&mut self, cycle: &[usize]) {
        let Some(&first) = cycle.iter().min() else {
            return;
        };
        let Some(slot) = self.slot[first] else {
            return;
        };
        let at = self.drafts[slot.block].members[slot.position].1;
        let path = self.block_path(slot.block, at);
        // Name the cycle from `first` upward: first is owned by its owner, and so on.
        let start = cycle.iter().position(|&c| c == first).unwrap_or(0);
        let mut names: Vec<String> = cycle[start..]
            .iter()
            .chain(&cycle[..start])
            .map(|&c| self.name(c))
            .collect();
        names.push(self.name(first));
        self.invalid(
            path,
            format!(
                "sub-block ownership forms a cycle: {} (each is listed in the sub-block of the next); a control cannot contain itself",
                names.join(" inside ")
            ),
        );
    }

    /// PLAN-7 / CTRL-9: classify every edge. Returns the internal success edges per block.
    fn edges(&mut self, edges: &[EdgeEnds<'_>]) -> Vec<Vec<usize>> {
        let graph = self.graph;
        let mut internal = vec![Vec::new(); self.drafts.len()];
        for (e, ends) in graph.endpoints.iter().enumerate() {
            let Some((from, to)) = *ends else { continue };
            let (bf, bt) = (
                self.slot[from].map(|s| s.block),
                self.slot[to].map(|s| s.block),
            );
            let place = |a: &Self, s: usize, b: Option<usize>| match b {
                None => format!("{} (main graph)", a.name(s)),
                Some(b) => format!("{} (in {})", a.name(s), a.block_name(b)),
            };
            if bf != bt {
                let message = format!(
                    "edge {e} runs from {} to {}; an edge must stay inside one sub-block or on the main graph, so connect sub-block steps only to steps of the same sub-block",
                    place(self, from, bf),
                    place(self, to, bt)
                );
                self.push(Code::SubBlockEdge, format!("/edges/{e}"), message);
                continue;
            }
            let Some(b) = bf else { continue };
            if edges.get(e).is_some_and(|x| x.error) {
                let message = format!(
                    "edge {e} is a when: \"error\" edge inside {}; error edges exist only on the main graph, a failure inside a sub-block is handled by its control",
                    self.block_name(b)
                );
                self.push(Code::SubBlockEdge, format!("/edges/{e}"), message);
                continue;
            }
            internal[b].push(e);
        }
        internal
    }

    /// Each sub-block's plan; reports roots that are not the first listed step and steps
    /// the root cannot reach (a sub-block is rooted at its first id, CTRL-4/6).
    fn structure(&mut self, internal: &[Vec<usize>], levels: &[usize]) -> Vec<SubPlan> {
        let graph = self.graph;
        let mut plans = Vec::with_capacity(self.drafts.len());
        for (b, edges) in internal.iter().enumerate() {
            let members: Vec<usize> = self.drafts[b].members.iter().map(|m| m.0).collect();
            let Some(&root) = members.first() else {
                continue;
            };
            let m = members.len();
            let mut outgoing: Vec<Vec<PlanEdge>> = vec![Vec::new(); m];
            let mut incoming: Vec<Vec<PlanEdge>> = vec![Vec::new(); m];
            for &e in edges {
                let Some((from, to)) = graph.endpoints[e] else {
                    continue;
                };
                let (Some(f), Some(t)) = (self.slot[from], self.slot[to]) else {
                    continue;
                };
                let pe = PlanEdge {
                    index: e,
                    from,
                    to,
                    when: When::Success,
                };
                outgoing[f.position].push(pe);
                incoming[t.position].push(pe);
            }
            let implicit_chain = edges.is_empty();
            let order: Vec<usize> = if implicit_chain {
                members.clone()
            } else {
                if let Some(first_in) = incoming[0].first() {
                    let (path, where_) = (
                        self.block_path(b, self.drafts[b].members[0].1),
                        self.block_name(b),
                    );
                    let message = format!(
                        "{where_} is rooted at its first listed step {}, but edge {} enters it; list the sub-block's entry step first",
                        self.name(root),
                        first_in.index
                    );
                    self.invalid(path, message);
                }
                let reached = reachable(&outgoing, |s| self.slot[s].map_or(0, |x| x.position));
                for (k, seen) in reached.iter().enumerate() {
                    if !seen {
                        let (path, where_) = (
                            self.block_path(b, self.drafts[b].members[k].1),
                            self.block_name(b),
                        );
                        let message = format!(
                            "{} in {where_} cannot be reached from the sub-block's root {} (its first listed step) along the sub-block's edges",
                            self.name(members[k]),
                            self.name(root)
                        );
                        self.invalid(path, message);
                    }
                }
                local_kahn(&outgoing, &incoming, |s| {
                    self.slot[s].map_or(0, |x| x.position)
                })
                .into_iter()
                .map(|k| members[k])
                .collect()
            };
            if order.len() < m {
                continue; // a cycle inside the block, reported by the graph analysis
            }
            let mut rank = vec![0; m];
            for (pos, &s) in order.iter().enumerate() {
                if let Some(slot) = self.slot[s] {
                    rank[slot.position] = pos;
                }
            }
            let last = order.last().copied().unwrap_or(root);
            let sinks = order
                .iter()
                .copied()
                .filter(|&s| {
                    if implicit_chain {
                        s == last
                    } else {
                        self.slot[s].is_some_and(|x| outgoing[x.position].is_empty())
                    }
                })
                .collect();
            let draft = &self.drafts[b];
            plans.push(SubPlan {
                control: draft.control,
                kind: draft.kind,
                level: levels.get(root).copied().unwrap_or(0),
                steps: members,
                order,
                rank,
                outgoing,
                incoming,
                implicit_chain,
                root,
                last,
                sinks,
            });
        }
        plans
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
            let t = position(e.to);
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
            let t = position(e.to);
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

#[cfg(test)]
#[path = "control_tests.rs"]
mod tests;
