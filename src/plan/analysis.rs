//! The graph checks (PLAN-1/2/3) and the PLAN-5 order, shared by [`plan`](super::plan)
//! and save-time validation.
//!
//! Owns: [`analyse`] — ids to indices through the [`IdMap`] (duplicates, PLAN-1), edge
//! ends resolved and counted into degrees (dangling ends, PLAN-2), the edges grouped by
//! `from` ([`Successors`]), then Kahn's algorithm: with a min-heap on declared index for
//! the PLAN-5 order ([`kahn`]), or with a stack when only the problems are asked for
//! ([`acyclic_part`]); whatever Kahn cannot consume goes to the cycle search
//! (`cycles.rs`, PLAN-3).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::MAX_GRAPH_SIZE;
use super::cycles::{cycle_error, cycles};
use super::graph::Successors;
use super::id_map::{ID_BATCH, IdMap};
use crate::model::{ValidationCode, ValidationError, When};

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
    /// entries): the counts [`Adjacency::fill`](super::Adjacency) groups the same edges by `to` with.
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

/// The graph checks shared by [`plan`](super::plan) and save-time validation of a raw document.
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
    if let Some(too_large) = too_large(n, m) {
        return too_large;
    }
    let mut errors = Vec::new();
    let mut index = declare_ids(n, &id_of, &mut errors);
    let Resolved {
        endpoints,
        whens,
        out_start,
        in_start,
    } = resolve_edges(n, edges, &index, &id_of, &mut errors);
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

/// The one problem of a workflow with more than [`MAX_GRAPH_SIZE`] steps or edges, as
/// an analysis of nothing else; `None` for any other.
fn too_large(n: usize, m: usize) -> Option<Analysis> {
    let (path, what) = if n > MAX_GRAPH_SIZE {
        ("/steps", "steps")
    } else if m > MAX_GRAPH_SIZE {
        ("/edges", "edges")
    } else {
        return None;
    };
    Some(Analysis {
        errors: vec![ValidationError::new(
            ValidationCode::InvalidValue,
            path,
            format!("a workflow may declare at most {MAX_GRAPH_SIZE} {what}"),
        )],
        endpoints: Vec::new(),
        whens: Vec::new(),
        order: None,
        outgoing: Successors::default(),
        in_start: Vec::new(),
        index: IdMap::default(),
    })
}

/// PLAN-1: the id map of `n` steps, first declaration wins; every later one is a
/// problem. In batches: key a batch and touch its slots, then insert in declared order.
fn declare_ids<'a>(
    n: usize,
    id_of: &impl Fn(usize) -> Option<&'a str>,
    errors: &mut Vec<ValidationError>,
) -> IdMap {
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
            if let Some(first) = index.insert_first(id, &key, i as u32, id_of) {
                errors.push(ValidationError::new(
                    ValidationCode::DuplicateStepId,
                    format!("/steps/{i}/id"),
                    format!("step id {id:?} is already used by step {first} (/steps/{first}); step ids must be unique within a workflow"),
                ));
            }
        }
    }
    index
}

/// The declared edges, resolved: what [`resolve_edges`] found.
struct Resolved {
    endpoints: Vec<[u32; 2]>,
    whens: Vec<When>,
    /// Each step's out-degree over the resolved edges, and a trailing 0.
    out_start: Vec<u32>,
    /// Each step's in-degree over the resolved edges, and a trailing 0.
    in_start: Vec<u32>,
}

/// PLAN-2 / ERR-13: every edge, success or error, must name existing steps. In batches
/// as [`declare_ids`]; problems are still reported in edge order, `from` before `to`.
/// Each resolved edge is counted into its ends' degrees as it resolves (D-197), so
/// grouping needs no counting pass of its own.
fn resolve_edges<'a, 'e>(
    n: usize,
    mut edges: impl ExactSizeIterator<Item = (Option<&'e str>, Option<&'e str>, When)>,
    index: &IdMap,
    id_of: &impl Fn(usize) -> Option<&'a str>,
    errors: &mut Vec<ValidationError>,
) -> Resolved {
    let m = edges.len();
    let mut endpoints = Vec::with_capacity(m);
    let mut whens = Vec::with_capacity(m);
    let mut out_start = vec![0u32; n + 1];
    let mut in_start = vec![0u32; n + 1];
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
                index.resolve(pair[0], hashes[0], id_of),
                index.resolve(pair[1], hashes[1], id_of),
            ) {
                (Some(from), Some(to)) => {
                    out_start[from] += 1;
                    in_start[to] += 1;
                    // Indices are below `n`, which fits a `u32` (checked by `too_large`).
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
    Resolved {
        endpoints,
        whens,
        out_start,
        in_start,
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
