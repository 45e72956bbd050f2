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
use std::hash::BuildHasher;

use crate::model::{FanOut, ValidationCode, ValidationError, When, Workflow};
use control::{ControlAnalysis, StepView, analyse_controls};

/// At most this many step ids are spelled out in one cycle message; longer cycles are
/// abbreviated so a pathological document cannot produce a megabyte-long message.
pub use crate::limits::MAX_CYCLE_IDS_IN_MESSAGE;

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
pub use crate::limits::MAX_GRAPH_SIZE;

/// Edges grouped per step, compressed: step `v`'s edges are one contiguous slice of
/// declared edge indices (positions in `Workflow.edges`), in declared order.
/// `adjacency[v]` is that slice (like a `Vec<Vec<u32>>`, but in two allocations instead of
/// one per step, and 4 bytes per edge: the edges themselves are held once, beside it, by
/// the [`Plan`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Adjacency {
    /// `start[v]..start[v + 1]` is step `v`'s range in `edges`; `n + 1` entries.
    start: Vec<u32>,
    /// Declared edge indices, grouped by step.
    edges: Vec<u32>,
}

impl Adjacency {
    /// Group `edges` — `(key, declared index)` pairs in declared order — by key over `n`
    /// steps, keeping declared order within each group. Every key is `< n` and there are
    /// at most [`MAX_GRAPH_SIZE`] edges.
    fn group<I>(n: usize, edges: I) -> Adjacency
    where
        I: DoubleEndedIterator<Item = (u32, u32)> + Clone,
    {
        let mut counts = vec![0u32; n + 1];
        for (key, _) in edges.clone() {
            counts[key as usize] += 1;
        }
        Adjacency::fill(counts, edges)
    }

    /// Group `edges` — `(key, declared index)` pairs in declared order — by key, given
    /// how many have each key: `counts[v]` for each of the `n` steps, then a 0 (`n + 1`
    /// entries). Every key is `< n`, `edges` yields exactly the edges counted, and there
    /// are at most [`MAX_GRAPH_SIZE`] of them.
    fn fill<I>(mut start: Vec<u32>, edges: I) -> Adjacency
    where
        I: DoubleEndedIterator<Item = (u32, u32)>,
    {
        let edges = group_by_key(&mut start, edges);
        Adjacency { start, edges }
    }

    /// How many steps the adjacency covers.
    pub fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// Whether it covers no step.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Step `step`'s declared edge indices, `None` past the last step.
    pub fn get(&self, step: usize) -> Option<&[u32]> {
        let (&from, &to) = (self.start.get(step)?, self.start.get(step.checked_add(1)?)?);
        self.edges.get(from as usize..to as usize)
    }

    /// Every step's declared edge indices, by step index.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &[u32]> + '_ {
        self.start
            .windows(2)
            .map(|w| self.edges.get(w[0] as usize..w[1] as usize).unwrap_or(&[]))
    }

    /// Every declared edge index, grouped by step.
    pub fn edges(&self) -> &[u32] {
        &self.edges
    }
}

impl std::ops::Index<usize> for Adjacency {
    type Output = [u32];

    /// Step `step`'s declared edge indices; panics past the last step, like indexing a
    /// `Vec`.
    fn index(&self, step: usize) -> &[u32] {
        let (from, to) = (self.start[step], self.start[step + 1]);
        &self.edges[from as usize..to as usize]
    }
}

/// Group `items` — `(key, item)` pairs — by key, keeping their order within each group,
/// given how many have each key: `start[v]` for each of the `n` keys, then a 0 (`n + 1`
/// entries), which becomes each group's start (and the total). Every key is `< n`, `items`
/// yields exactly the items counted, and there are at most [`MAX_GRAPH_SIZE`] of them.
fn group_by_key<T: Copy + Default>(
    start: &mut [u32],
    items: impl DoubleEndedIterator<Item = (u32, T)>,
) -> Vec<T> {
    // Prefix-sum the counts, so `start[v]` is the end of `v`'s range; filling backwards
    // then moves it to the range's start and keeps the items' order.
    for v in 1..start.len() {
        start[v] += start[v - 1];
    }
    let m = start.last().map_or(0, |&m| m as usize);
    let mut grouped = vec![T::default(); m];
    for (key, item) in items.rev() {
        let at = &mut start[key as usize];
        *at -= 1;
        grouped[*at as usize] = item;
    }
    grouped
}

/// Every declared edge once, in declared order: its resolved ends and its `when` — what
/// an [`Adjacency`]'s indices point into.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct EdgeTable {
    /// Per declared edge, `[from, to]` ([`UNRESOLVED`] where an end names no step).
    ends: Vec<[u32; 2]>,
    /// Per declared edge, its `when`.
    whens: Vec<When>,
}

impl EdgeTable {
    /// Declared edge `index`, when it exists and both its ends resolve.
    fn get(&self, index: u32) -> Option<PlanEdge> {
        let i = index as usize;
        match (self.ends.get(i), self.whens.get(i)) {
            (Some(&[from, to]), Some(&when)) if from != UNRESOLVED && to != UNRESOLVED => {
                Some(PlanEdge {
                    index,
                    from,
                    to,
                    when,
                })
            }
            _ => None,
        }
    }
}

/// A step's edges, as [`PlanEdge`]s in declared edge order: [`Plan::outgoing`],
/// [`Plan::incoming`], or a sub-block's lists.
#[derive(Debug, Clone)]
pub struct Edges<'a>(EdgesOf<'a>);

#[derive(Debug, Clone)]
enum EdgesOf<'a> {
    /// Indices into a plan's edge table (the main graph).
    Indexed(std::slice::Iter<'a, u32>, &'a EdgeTable),
    /// A sub-block's own lists.
    Listed(std::slice::Iter<'a, PlanEdge>),
}

impl<'a> Edges<'a> {
    /// A list of edges, as a sub-block holds them.
    pub fn listed(edges: &'a [PlanEdge]) -> Edges<'a> {
        Edges(EdgesOf::Listed(edges.iter()))
    }

    /// No edges.
    pub fn none() -> Edges<'a> {
        Edges::listed(&[])
    }
}

impl Iterator for Edges<'_> {
    type Item = PlanEdge;

    #[inline]
    fn next(&mut self) -> Option<PlanEdge> {
        match &mut self.0 {
            EdgesOf::Indexed(ids, table) => loop {
                // A plan's adjacency only holds resolved edges: the loop never repeats
                // there, and cannot panic on anything else.
                if let Some(edge) = table.get(*ids.next()?) {
                    return Some(edge);
                }
            },
            EdgesOf::Listed(edges) => edges.next().copied(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            EdgesOf::Indexed(ids, _) => ids.size_hint(),
            EdgesOf::Listed(edges) => edges.size_hint(),
        }
    }
}

/// Exact: a plan's adjacency holds only edges its table resolves.
impl ExactSizeIterator for Edges<'_> {}

impl std::iter::FusedIterator for Edges<'_> {}

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
        Edges(EdgesOf::Indexed(
            adjacency.get(step).unwrap_or(&[]).iter(),
            &self.edges,
        ))
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
    // Every resolved edge between main-graph steps, in declared order, as `[from, to]`
    // and its declared index. With no error the analysis resolved every edge; `index`
    // fits a `u32` because `analyse` checked the size.
    let main_edges = endpoints
        .iter()
        .enumerate()
        .filter(|&(_, &[from, to])| {
            from != UNRESOLVED
                && to != UNRESOLVED
                && (controls.blocks.is_empty() || (on_main(from as usize) && on_main(to as usize)))
        })
        .map(|(index, &ends)| (ends, index as u32));
    // Without sub-blocks the main graph is every edge, which the analysis already grouped
    // by `from` and counted by `to` (with no error, every edge resolved).
    let (outgoing, incoming) = if controls.blocks.is_empty() {
        let incoming =
            Adjacency::fill(in_start, resolved_edges(&endpoints).map(|(e, k)| (e[1], k)));
        (resolved.into_adjacency(), incoming)
    } else {
        drop(in_start);
        (
            Adjacency::group(n, main_edges.clone().map(|(e, k)| (e[0], k))),
            Adjacency::group(n, main_edges.map(|(e, k)| (e[1], k))),
        )
    };
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
        implicit_chain: outgoing.edges.is_empty(),
        outgoing,
        incoming,
        edges,
        controls,
        fan_out_parallel,
    })
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
    let is_control = |s: &crate::model::Step| s.app() == Some(control::CONTROL_APP);
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
        let views: Vec<StepView<'_>> = workflow
            .steps
            .iter()
            .map(|s| StepView {
                id: Some(s.id.as_str()),
                control: is_control(s).then(|| s.action()).flatten(),
                with: s.with.as_ref(),
            })
            .collect();
        let mut controls = analyse_controls(&views, &analysis);
        // CTRL-7: every wait, main graph or sub-block, needs the host's schedule.
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

/// An end of [`Analysis::endpoints`] that names no step.
pub(crate) const UNRESOLVED: u32 = u32::MAX;

/// What an [`analyse`] caller needs beyond the problems.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Needs {
    /// Keep the id map ([`Analysis::index`]) for the control analysis.
    pub(crate) index: bool,
    /// The PLAN-5 order ([`Analysis::order`]); without it only the problems are found,
    /// and cycles without ordering the ready steps.
    pub(crate) order: bool,
}

/// What the graph checks found.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// PLAN-1/2/3 problems: duplicates in step order, dangling ends in edge order, then one
    /// error per cyclic strongly connected component.
    pub(crate) errors: Vec<ValidationError>,
    /// Per declared edge: the resolved `[from, to]` step indices, each [`UNRESOLVED`]
    /// when that end names no step (see [`Analysis::endpoint`]).
    pub(crate) endpoints: Vec<[u32; 2]>,
    /// Per declared edge: its `when` (an edge the document spells oddly is `Success`).
    pub(crate) whens: Vec<When>,
    /// The plan order; `Some` exactly when `errors` is empty and it was asked for
    /// ([`Needs::order`]).
    pub(crate) order: Option<Vec<usize>>,
    /// Every resolved edge, grouped by `from` in declared order, as `[index, to]`.
    pub(crate) outgoing: Successors,
    /// Each step's in-degree over the resolved edges, and a trailing 0 (`n + 1`
    /// entries): the counts [`Adjacency::fill`] groups the same edges by `to` with.
    pub(crate) in_start: Vec<u32>,
    /// Each usable id → the index of its first declaration (empty unless `analyse` was
    /// asked to keep it).
    pub(crate) index: IdMap,
}

impl Analysis {
    /// Declared edge `e`'s `(from, to)` step indices, when both ends resolve.
    pub(crate) fn endpoint(&self, e: usize) -> Option<(usize, usize)> {
        match self.endpoints.get(e) {
            Some(&[from, to]) if from != UNRESOLVED && to != UNRESOLVED => {
                Some((from as usize, to as usize))
            }
            _ => None,
        }
    }
}

/// Step id → index of its first declaration (D-130: foldhash, seeded per process, so a
/// crafted document cannot force collisions; nothing iterates the map, so plans do not
/// depend on the seed).
///
/// Open addressing with linear probing over a power-of-two table at most three quarters
/// full, sized once for the step count (it never grows). Each 32-byte slot holds the
/// id's first [`ID_PREFIX`] bytes (zero-padded) beside its index and a tag of hash bits
/// and length, so a probe confirms an id of up to [`ID_PREFIX`] bytes with one tag and
/// one fixed-size comparison, without reading the step's string; a longer id is
/// confirmed against the step's own string (`id_of`). A name is turned into its
/// [`IdKey`] once and probed with that (D-197). Look-ups come in batches
/// ([`IdMap::touch`]): the first slot of every look-up in the batch is loaded before any
/// is probed, so their cache misses overlap instead of queuing one behind another.
#[derive(Debug, Clone, Default)]
pub(crate) struct IdMap {
    hasher: foldhash::fast::RandomState,
    /// Empty slots have tag 0; empty when there are no steps.
    slots: Vec<IdSlot>,
}

/// How many bytes of an id a map slot holds inline.
const ID_PREFIX: usize = 24;

/// How many look-ups [`analyse`] hashes and touches before probing them.
const ID_BATCH: usize = 32;

/// 32 bytes, aligned so that a slot never straddles two cache lines.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct IdSlot {
    /// [`IdKey::tag`] of the id held; 0 marks an empty slot.
    tag: u32,
    index: u32,
    /// [`IdKey::prefix`] of the id held.
    prefix: [u64; ID_WORDS],
}

/// The first [`ID_PREFIX`] bytes of `bytes`, zero-padded, as little-endian words: equal
/// words mean equal padded prefixes. Whole words are read as they are; the last, partial
/// word is read as the 8 bytes ending where it ends, shifted down (or, in a name shorter
/// than a word, from two overlapping halves, or byte by byte), so no byte is copied twice.
#[inline]
fn padded_words(bytes: &[u8]) -> [u64; ID_WORDS] {
    let mut words = [0u64; ID_WORDS];
    let head = &bytes[..bytes.len().min(ID_PREFIX)];
    let mut rest = head;
    let mut i = 0;
    while let Some((chunk, tail)) = rest.split_first_chunk::<8>() {
        words[i] = u64::from_le_bytes(*chunk);
        rest = tail;
        i += 1;
    }
    let k = rest.len();
    if k == 0 {
        return words;
    }
    let shift = |w: u64, by: usize| w >> (8 * by);
    words[i] = if let Some(window) = head.last_chunk::<8>() {
        // The 8 bytes ending with the partial word: its `k` bytes are the top ones.
        shift(u64::from_le_bytes(*window), 8 - k)
    } else if let (Some(lo), Some(hi)) = (head.first_chunk::<4>(), head.last_chunk::<4>()) {
        // 4 ≤ len < 8: the first 4 bytes, then the last `len - 4` from the last 4.
        u64::from(u32::from_le_bytes(*lo)) | shift(u64::from(u32::from_le_bytes(*hi)), 8 - k) << 32
    } else {
        head.iter().rev().fold(0u64, |w, &b| w << 8 | u64::from(b))
    };
    words
}

/// How many words an [`IdKey`]'s prefix has.
const ID_WORDS: usize = ID_PREFIX / 8;

/// A name as the map probes for it: its hash, a tag and its first bytes.
#[derive(Debug, Clone, Copy, Default)]
struct IdKey {
    hash: u64,
    /// 24 bits of the hash above the name's length (saturated at 255); never 0. Equal tags
    /// mean equal lengths for any name shorter than 255 bytes.
    tag: u32,
    /// The name's first [`ID_PREFIX`] bytes, zero-padded ([`padded_words`]).
    prefix: [u64; ID_WORDS],
}

impl IdKey {
    /// Whether the id of `slot` (whose tag equals this key's) is `name`, this key's name;
    /// `full` reads the slot's whole id when the prefix cannot decide.
    fn matches<'a>(
        &self,
        slot: &IdSlot,
        name: &str,
        full: impl FnOnce(usize) -> Option<&'a str>,
    ) -> bool {
        // Equal tags mean equal lengths below 255 bytes; such a name of at most
        // `ID_PREFIX` bytes is the slot's id exactly when the padded prefixes are equal.
        // Word by word in registers: `==` on the arrays compiled to a 16-byte load of the
        // key just stored as two 8-byte words, a failed store-to-load forwarding that
        // stalled every probe (D-199).
        let [a, b, c] = slot.prefix;
        let [x, y, z] = self.prefix;
        (a ^ x) | (b ^ y) | (c ^ z) == 0
            && (name.len() <= ID_PREFIX || full(slot.index as usize) == Some(name))
    }
}

impl IdMap {
    fn with_capacity(n: usize) -> IdMap {
        let slots = if n == 0 {
            Vec::new()
        } else {
            // ≤ 3/4 full, so every probe sequence meets an empty slot.
            vec![IdSlot::default(); (n + n / 3 + 1).next_power_of_two()]
        };
        IdMap {
            hasher: foldhash::fast::RandomState::default(),
            slots,
        }
    }

    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// `name`'s key from its `hash`: the hash, its tag and its padded first bytes.
    #[inline]
    fn key(&self, name: &str, hash: u64) -> IdKey {
        let bytes = name.as_bytes();
        // At most 255 (fits the tag's low byte).
        let len = bytes.len().min(255) as u32;
        // The high hash bits pick the tag (the low ones pick the slot); a zero tag (an
        // empty id whose tag bits are zero) is moved off the empty marker.
        let tag = ((hash >> 40) as u32) << 8 | len;
        IdKey {
            hash,
            tag: if tag == 0 { 1 << 8 } else { tag },
            prefix: padded_words(bytes),
        }
    }

    /// The first slot of `hash`.
    fn home(&self, hash: u64) -> usize {
        hash as usize & self.slots.len().wrapping_sub(1)
    }

    /// Load the first slot of each hash, so the probes that follow find them in cache.
    fn touch(&self, hashes: &[u64]) {
        if self.slots.is_empty() {
            return;
        }
        let mut seen = 0u32;
        for &hash in hashes {
            seen ^= self.slots[self.home(hash)].tag;
        }
        std::hint::black_box(seen);
    }

    /// The slot holding `name` (whose key is `key`), or the empty slot where it would go.
    #[inline]
    fn find<'a>(
        &self,
        name: &str,
        key: &IdKey,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<(usize, bool)> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let mut at = self.home(key.hash);
        loop {
            let slot = &self.slots[at];
            if slot.tag == 0 {
                return Some((at, false));
            }
            if slot.tag == key.tag && key.matches(slot, name, &id_of) {
                return Some((at, true));
            }
            at = (at + 1) & mask;
        }
    }

    /// The index of the step declaring `name` first; `id_of(i)` is step `i`'s id.
    pub(crate) fn get<'a>(
        &self,
        name: &str,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        self.get_keyed(name, &self.key(name, self.hash(name)), id_of)
    }

    /// The index of the step declaring `name` (whose hash is `hash`), if any: an edge
    /// end's look-up in [`analyse`]'s batches.
    #[inline(always)]
    fn resolve<'a>(
        &self,
        name: Option<&str>,
        hash: u64,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        let name = name?;
        self.get_keyed(name, &self.key(name, hash), id_of)
    }

    #[inline]
    fn get_keyed<'a>(
        &self,
        name: &str,
        key: &IdKey,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        match self.find(name, key, id_of)? {
            (at, true) => Some(self.slots[at].index as usize),
            (_, false) => None,
        }
    }

    /// Record `name` → `index` unless `name` is already there; returns the earlier index.
    /// At most the capacity's step count of ids are ever inserted.
    fn insert_first<'a>(
        &mut self,
        name: &str,
        key: &IdKey,
        index: u32,
        id_of: impl Fn(usize) -> Option<&'a str>,
    ) -> Option<usize> {
        let (at, found) = self.find(name, key, id_of)?;
        if found {
            return Some(self.slots[at].index as usize);
        }
        self.slots[at] = IdSlot {
            tag: key.tag,
            index,
            prefix: key.prefix,
        };
        None
    }
}

/// The graph checks shared by [`plan`] and save-time validation of a raw document.
///
/// There are `n` steps; `id_of(i)` is step `i`'s id (`None` when the document has no
/// usable id for it; such a step is still a node, just one no edge can name). `edges`
/// yields each declared edge's `(from, to)` names (`None` where the document holds no
/// usable string: that problem is the caller's, not a dangling edge) and its `when`. Ids
/// resolve to their first declaration, so with duplicate ids the graph is the graph of
/// *names* the edges describe: a cycle in it survives whichever twin is renamed, and is
/// reported too. [`Needs::index`] keeps the id map in [`Analysis::index`] for the
/// control analysis; without it the map is dropped once the edges are resolved, before
/// the graph is grouped, so the two are never held together. [`Needs::order`] asks for
/// the PLAN-5 order; validation only needs the problems.
pub(crate) fn analyse<'a, 'e>(
    n: usize,
    id_of: impl Fn(usize) -> Option<&'a str>,
    edges: impl ExactSizeIterator<Item = (Option<&'e str>, Option<&'e str>, When)>,
    needs: Needs,
) -> Analysis {
    let m = edges.len();
    let mut errors = Vec::new();
    if n > MAX_GRAPH_SIZE || m > MAX_GRAPH_SIZE {
        let (path, what) = if n > MAX_GRAPH_SIZE {
            ("/steps", "steps")
        } else {
            ("/edges", "edges")
        };
        errors.push(ValidationError::new(
            ValidationCode::InvalidValue,
            path,
            format!("a workflow may declare at most {MAX_GRAPH_SIZE} {what}"),
        ));
        return Analysis {
            errors,
            endpoints: Vec::new(),
            whens: Vec::new(),
            order: None,
            outgoing: Successors::default(),
            in_start: Vec::new(),
            index: IdMap::default(),
        };
    }
    // PLAN-1: first declaration wins; every later one is the problem. In batches: key a
    // batch and touch its slots, then insert in declared order.
    let mut index = IdMap::with_capacity(n);
    let mut names: [Option<&str>; ID_BATCH] = [None; ID_BATCH];
    let mut hashes = [0u64; ID_BATCH];
    for base in (0..n).step_by(ID_BATCH) {
        let len = ID_BATCH.min(n - base);
        for (k, (name, hash)) in names.iter_mut().zip(&mut hashes).take(len).enumerate() {
            *name = id_of(base + k);
            *hash = name.map_or(0, |id| index.hash(id));
        }
        index.touch(&hashes[..len]);
        for (k, (name, &hash)) in names.iter().zip(&hashes).take(len).enumerate() {
            let Some(id) = *name else { continue };
            let i = base + k;
            let key = index.key(id, hash);
            if let Some(first) = index.insert_first(id, &key, i as u32, &id_of) {
                errors.push(ValidationError::new(
                    ValidationCode::DuplicateStepId,
                    format!("/steps/{i}/id"),
                    format!("step id {id:?} is already used by step {first} (/steps/{first}); step ids must be unique within a workflow"),
                ));
            }
        }
    }
    // PLAN-2 / ERR-13: every edge, success or error, must name existing steps. In batches
    // as above; problems are still reported in edge order, `from` before `to`. Each
    // resolved edge is counted into its ends' degrees as it resolves (D-197), so grouping
    // needs no counting pass of its own.
    let mut endpoints = Vec::with_capacity(m);
    let mut whens = Vec::with_capacity(m);
    let mut out_start = vec![0u32; n + 1];
    let mut in_start = vec![0u32; n + 1];
    let mut edges = edges;
    let mut ends: [Option<&str>; 2 * ID_BATCH] = [None; 2 * ID_BATCH];
    let mut end_hashes = [0u64; 2 * ID_BATCH];
    let mut first_edge = 0usize;
    loop {
        let mut len = 0;
        for (pair, (from, to, when)) in ends.chunks_exact_mut(2).zip(edges.by_ref()) {
            pair[0] = from;
            pair[1] = to;
            whens.push(when);
            len += 1;
        }
        if len == 0 {
            break;
        }
        for (hash, end) in end_hashes.iter_mut().zip(&ends[..2 * len]) {
            *hash = end.map_or(0, |name| index.hash(name));
        }
        index.touch(&end_hashes[..2 * len]);
        for (k, (pair, hashes)) in ends
            .chunks_exact(2)
            .zip(end_hashes.chunks_exact(2))
            .take(len)
            .enumerate()
        {
            match (
                index.resolve(pair[0], hashes[0], &id_of),
                index.resolve(pair[1], hashes[1], &id_of),
            ) {
                (Some(from), Some(to)) => {
                    out_start[from] += 1;
                    in_start[to] += 1;
                    // Indices are below `n`, which fits a `u32` (checked above).
                    endpoints.push([from as u32, to as u32]);
                }
                (from, to) => {
                    let e = first_edge + k;
                    for (end, found, field) in [(pair[0], from, "from"), (pair[1], to, "to")] {
                        if let (Some(name), None) = (end, found) {
                            errors.push(dangling(e, field, name));
                        }
                    }
                    endpoints.push([UNRESOLVED; 2]);
                }
            }
        }
        first_edge += len;
        if len < ID_BATCH {
            break;
        }
    }
    if !needs.index {
        index = IdMap::default();
    }
    let outgoing = Successors::fill(out_start, &endpoints);
    let graph = &outgoing;
    // PLAN-4: no edges → the declared order, without touching the heap.
    let order = if m == 0 {
        (0..n).collect()
    } else if needs.order {
        kahn(graph, in_start.clone())
    } else {
        acyclic_part(graph, in_start.clone())
    };
    if order.len() < n {
        // PLAN-3: whatever Kahn could not consume lies on or behind a cycle.
        let mut consumed = vec![false; n];
        for &i in &order {
            consumed[i] = true;
        }
        for cycle in cycles(graph, &consumed) {
            errors.push(cycle_error(&id_of, &cycle));
        }
    }
    let order = (errors.is_empty() && needs.order).then_some(order);
    Analysis {
        errors,
        endpoints,
        whens,
        order,
        outgoing,
        in_start,
        index,
    }
}

/// PLAN-2's problem: edge `e`'s `field` names `name`, which no step declares.
#[cold]
fn dangling(e: usize, field: &str, name: &str) -> ValidationError {
    ValidationError::new(
        ValidationCode::DanglingEdge,
        format!("/edges/{e}/{field}"),
        format!("edge {e}'s {field:?} is {name:?}, but no step has that id"),
    )
}

/// Every resolved edge as its `[from, to]` and declared index, in declared order: what
/// the analysis groups by `from` — the main graph's `outgoing` when the workflow has no
/// sub-block, so a plan builds it once — and a plan by `to`.
fn resolved_edges(
    endpoints: &[[u32; 2]],
) -> impl DoubleEndedIterator<Item = ([u32; 2], u32)> + Clone + '_ {
    endpoints
        .iter()
        .enumerate()
        .filter(|&(_, &[from, to])| from != UNRESOLVED && to != UNRESOLVED)
        // `analyse` checked that every index fits a `u32`.
        .map(|(index, &ends)| (ends, index as u32))
}

/// Every resolved edge grouped by `from`, in declared order within each step, as
/// `[declared index, to]`: Kahn and the cycle search read each step's targets from one
/// contiguous run (no look-up per edge), and a plan keeps the indices as its `outgoing`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Successors {
    /// `start[v]..start[v + 1]` is step `v`'s range in `edges`; `n + 1` entries.
    start: Vec<u32>,
    /// `[declared index, to]`, grouped by `from`.
    edges: Vec<[u32; 2]>,
}

impl Successors {
    /// Group every resolved edge of `endpoints` by `from`, given each step's out-degree
    /// and a trailing 0 (`n + 1` entries).
    fn fill(mut start: Vec<u32>, endpoints: &[[u32; 2]]) -> Successors {
        let edges = group_by_key(
            &mut start,
            resolved_edges(endpoints).map(|([from, to], k)| (from, [k, to])),
        );
        Successors { start, edges }
    }

    /// How many steps.
    fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// `v`'s range of positions in `edges`.
    fn range(&self, v: usize) -> std::ops::Range<usize> {
        self.start[v] as usize..self.start[v + 1] as usize
    }

    /// The step the edge at grouped position `pos` enters.
    fn target_at(&self, pos: usize) -> u32 {
        self.edges[pos][1]
    }

    /// The steps `v`'s edges enter, in declared edge order.
    fn targets(&self, v: usize) -> impl Iterator<Item = u32> + '_ {
        self.edges[self.range(v)].iter().map(|e| e[1])
    }

    /// The same grouping as declared edge indices only.
    fn into_adjacency(self) -> Adjacency {
        Adjacency {
            start: self.start,
            edges: self.edges.iter().map(|e| e[0]).collect(),
        }
    }
}

/// The steps Kahn's algorithm consumes — every step on no cycle and behind none — in some
/// topological order, not PLAN-5's: what validation needs to find cycles, without the
/// heap that orders the ready steps (D-197). [`kahn`] consumes exactly the same steps.
fn acyclic_part(graph: &Successors, mut indegree: Vec<u32>) -> Vec<usize> {
    let mut ready: Vec<u32> = (0..graph.len() as u32)
        .filter(|&i| indegree[i as usize] == 0)
        .collect();
    let mut consumed = Vec::with_capacity(graph.len());
    while let Some(v) = ready.pop() {
        consumed.push(v as usize);
        for w in graph.targets(v as usize) {
            let d = &mut indegree[w as usize];
            *d -= 1;
            if *d == 0 {
                ready.push(w);
            }
        }
    }
    consumed
}

/// PLAN-5: Kahn's algorithm; among ready steps the earliest-declared goes first, which
/// makes the result the smallest topological order by declared index.
fn kahn(graph: &Successors, mut indegree: Vec<u32>) -> Vec<usize> {
    let mut ready: BinaryHeap<Reverse<u32>> = (0..graph.len() as u32)
        .filter(|&i| indegree[i as usize] == 0)
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
        order.push(v as usize);
        for w in graph.targets(v as usize) {
            let d = &mut indegree[w as usize];
            *d -= 1;
            if *d == 0 {
                ready.push(Reverse(w));
            }
        }
    }
    order
}

/// One actual cycle per cyclic strongly connected component among the unconsumed nodes,
/// ordered by each component's earliest-declared step. Each cycle starts at that step and
/// lists the steps in edge order (the closing edge back to the first step is implied).
fn cycles(graph: &Successors, consumed: &[bool]) -> Vec<Vec<usize>> {
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
        frames.push((root, graph.range(root).start));
        while let Some(&(v, pos)) = frames.last() {
            if pos < graph.range(v).end {
                if let Some(frame) = frames.last_mut() {
                    frame.1 += 1;
                }
                let w = graph.target_at(pos) as usize;
                if consumed[w] {
                    continue;
                }
                if order_of[w] == UNSEEN {
                    order_of[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    frames.push((w, graph.range(w).start));
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
        let self_loop = graph.targets(first).any(|w| w as usize == first);
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
    graph: &Successors,
    start: usize,
    inside: impl Fn(usize) -> bool,
    parent: &mut [usize],
) -> Option<Vec<usize>> {
    let mut queue = VecDeque::from([start]);
    parent[start] = start;
    while let Some(v) = queue.pop_front() {
        for w in graph.targets(v) {
            let w = w as usize;
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

fn cycle_error<'a>(id_of: impl Fn(usize) -> Option<&'a str>, cycle: &[usize]) -> ValidationError {
    let name = |i: usize| match id_of(i) {
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

    #[test]
    fn the_id_map_tells_apart_ids_that_share_a_prefix_or_a_length() {
        let long = "a-very-long-step-identifier-";
        let ids: Vec<String> = vec![
            "x".into(),
            format!("{long}1"),
            format!("{long}2"),
            format!("{long}1"),
            long.into(),
            "".into(),
            "12345678901234567890".into(),
            "12345678901234567890x".into(),
            // At the 24-byte prefix and past it; differing only after it; a trailing NUL
            // (the padding's own byte); longer than the tag's length byte; not ASCII.
            "abcdefghijklmnopqrstuvwx".into(),
            "abcdefghijklmnopqrstuvwxy".into(),
            "abcdefghijklmnopqrstuvwxz".into(),
            "ab".into(),
            "ab\0".into(),
            "é".repeat(150),
            format!("{}!", "é".repeat(150)),
        ];
        let id_of = |i: usize| ids.get(i).map(String::as_str);
        let mut map = IdMap::with_capacity(ids.len());
        let firsts: Vec<Option<usize>> = (0..ids.len())
            .map(|i| {
                let id = &ids[i];
                map.insert_first(id, &map.key(id, map.hash(id)), i as u32, id_of)
            })
            .collect();
        let mut want = vec![None; ids.len()];
        want[3] = Some(1);
        assert_eq!(firsts, want, "only the repeated long id is a duplicate");
        for (i, id) in ids.iter().enumerate() {
            let want = if i == 3 { 1 } else { i };
            assert_eq!(map.get(id, id_of), Some(want), "{id:?}");
        }
        for absent in [
            &format!("{long}3")[..],
            "y",
            "1234567890123456789",
            "a-very-long",
            "abcdefghijklmnopqrstuvw",
            "abcdefghijklmnopqrstuvwxyz",
            "a",
            "ab\0\0",
            "\0",
            &"é".repeat(149),
        ] {
            assert_eq!(map.get(absent, id_of), None, "{absent:?}");
        }
        assert_eq!(IdMap::with_capacity(0).get("x", id_of), None);
    }

    #[test]
    fn the_adjacency_keeps_declared_edge_order_and_counts_in_degrees() {
        // Edges 0..5 in declared order; edge 1 dangles, so it is no edge of the graph.
        let ids = ["a", "b", "c"];
        let declared = [
            ("c", "a", When::Success),
            ("c", "nowhere", When::Error),
            ("a", "b", When::Error),
            ("c", "c", When::Success),
            ("a", "c", When::Success),
            ("c", "b", When::Error),
        ];
        let graph = analyse(
            ids.len(),
            |i| ids.get(i).copied(),
            declared.iter().map(|&(f, t, w)| (Some(f), Some(t), w)),
            Needs {
                index: false,
                order: true,
            },
        );
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

    /// The zero-padded first bytes of `bytes`, the plain way.
    fn padded_plainly(bytes: &[u8]) -> [u64; ID_WORDS] {
        let mut buf = [0u8; ID_PREFIX];
        let k = bytes.len().min(ID_PREFIX);
        buf[..k].copy_from_slice(&bytes[..k]);
        let mut words = [0u64; ID_WORDS];
        for (w, chunk) in words.iter_mut().zip(buf.chunks_exact(8)) {
            let mut b = [0u8; 8];
            b.copy_from_slice(chunk);
            *w = u64::from_le_bytes(b);
        }
        words
    }

    proptest::proptest! {
        #[test]
        fn padded_words_are_the_zero_padded_prefix(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..40)) {
            proptest::prop_assert_eq!(padded_words(&bytes), padded_plainly(&bytes));
        }
    }

    #[test]
    fn padded_words_at_every_length() {
        // Every length around each word boundary, with no zero byte to hide a slip.
        let bytes: Vec<u8> = (1..=40).collect();
        for len in 0..=bytes.len() {
            assert_eq!(
                padded_words(&bytes[..len]),
                padded_plainly(&bytes[..len]),
                "{len}"
            );
        }
    }
}
