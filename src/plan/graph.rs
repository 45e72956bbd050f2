//! The planner's graph storage: edges grouped per step in two flat arrays.
//!
//! Owns: [`Adjacency`] (a plan's `outgoing` / `incoming`: declared edge indices per step),
//! the edge table they index ([`EdgeTable`], each declared edge once), the [`Edges`]
//! iterator a plan hands out, and [`Successors`] (every resolved edge grouped by `from`,
//! what Kahn and the cycle search read). All are filled by one counting sort
//! ([`group_by_key`]) that keeps declared order within each step (D-131, D-204).

use super::{PlanEdge, UNRESOLVED};
use crate::model::When;

/// Edges grouped per step, compressed: step `v`'s edges are one contiguous slice of
/// declared edge indices (positions in `Workflow.edges`), in declared order.
/// `adjacency[v]` is that slice (like a `Vec<Vec<u32>>`, but in two allocations instead of
/// one per step, and 4 bytes per edge: the edges themselves are held once, beside it, by
/// the [`Plan`](super::Plan)).
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
    /// at most [`MAX_GRAPH_SIZE`](super::MAX_GRAPH_SIZE) edges.
    pub(super) fn group<I>(n: usize, edges: I) -> Adjacency
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
    /// are at most [`MAX_GRAPH_SIZE`](super::MAX_GRAPH_SIZE) of them.
    pub(super) fn fill<I>(mut start: Vec<u32>, edges: I) -> Adjacency
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
/// yields exactly the items counted, and there are at most [`MAX_GRAPH_SIZE`](super::MAX_GRAPH_SIZE) of them.
pub(super) fn group_by_key<T: Copy + Default>(
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
pub(super) struct EdgeTable {
    /// Per declared edge, `[from, to]` ([`UNRESOLVED`] where an end names no step).
    pub(super) ends: Vec<[u32; 2]>,
    /// Per declared edge, its `when`.
    pub(super) whens: Vec<When>,
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

/// A step's edges, as [`PlanEdge`]s in declared edge order: [`Plan::outgoing`](super::Plan::outgoing),
/// [`Plan::incoming`](super::Plan::incoming), or a sub-block's lists.
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
    /// The edges `indices` name in `table` (the main graph's lists).
    pub(super) fn indexed(indices: &'a [u32], table: &'a EdgeTable) -> Edges<'a> {
        Edges(EdgesOf::Indexed(indices.iter(), table))
    }

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

/// Every resolved edge as its `[from, to]` and declared index, in declared order: what
/// the analysis groups by `from` — the main graph's `outgoing` when the workflow has no
/// sub-block, so a plan builds it once — and a plan by `to`.
pub(super) fn resolved_edges(
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
    pub(super) edges: Vec<[u32; 2]>,
}

impl Successors {
    /// Group every resolved edge of `endpoints` by `from`, given each step's out-degree
    /// and a trailing 0 (`n + 1` entries).
    pub(super) fn fill(mut start: Vec<u32>, endpoints: &[[u32; 2]]) -> Successors {
        let edges = group_by_key(
            &mut start,
            resolved_edges(endpoints).map(|([from, to], k)| (from, [k, to])),
        );
        Successors { start, edges }
    }

    /// How many steps.
    pub(super) fn len(&self) -> usize {
        self.start.len().saturating_sub(1)
    }

    /// `v`'s range of positions in `edges`.
    pub(super) fn range(&self, v: usize) -> std::ops::Range<usize> {
        self.start[v] as usize..self.start[v + 1] as usize
    }

    /// The step the edge at grouped position `pos` enters.
    pub(super) fn target_at(&self, pos: usize) -> u32 {
        self.edges[pos][1]
    }

    /// The steps `v`'s edges enter, in declared edge order.
    pub(super) fn targets(&self, v: usize) -> impl Iterator<Item = u32> + '_ {
        self.edges[self.range(v)].iter().map(|e| e[1])
    }

    /// The same grouping as declared edge indices only.
    pub(super) fn into_adjacency(self) -> Adjacency {
        Adjacency {
            start: self.start,
            edges: self.edges.iter().map(|e| e[0]).collect(),
        }
    }
}
