//! One view over the main graph and every sub-block, so that one walker runs both.
//!
//! Owns: the adjacency a walker needs (order, rank, inbound and outbound edges) for the
//! main [`Plan`] and for one [`SubPlan`]. Invariant: indices are always positions in
//! `Workflow.steps`; a sub-block's position-indexed vectors are reached through
//! `ControlPlan::slot`, never by the caller.

use crate::plan::{BlockSlot, Edges, Plan, SubPlan};

/// What a walker and the skip set read of a graph.
pub(crate) trait Graph {
    /// Member step indices in execution order.
    fn order(&self) -> &[usize];
    /// Edges leaving `step`, in declared edge order.
    fn outgoing(&self, step: usize) -> Edges<'_>;
    /// Edges entering `step`, in declared edge order.
    fn incoming(&self, step: usize) -> Edges<'_>;
    /// The position of `step` in [`Graph::order`].
    fn rank(&self, step: usize) -> usize;
}

impl Graph for Plan {
    fn order(&self) -> &[usize] {
        &self.order
    }
    fn outgoing(&self, step: usize) -> Edges<'_> {
        Plan::outgoing(self, step)
    }
    fn incoming(&self, step: usize) -> Edges<'_> {
        Plan::incoming(self, step)
    }
    fn rank(&self, step: usize) -> usize {
        self.rank.get(step).copied().unwrap_or(usize::MAX)
    }
}

/// One sub-block (a foreach body or one parallel branch) as a graph.
#[derive(Clone, Copy)]
pub(crate) struct Block<'p> {
    pub(crate) sub: &'p SubPlan,
    pub(crate) slot: &'p [Option<BlockSlot>],
}

impl Block<'_> {
    fn position(&self, step: usize) -> Option<usize> {
        self.slot.get(step).copied().flatten().map(|s| s.position)
    }
}

impl Graph for Block<'_> {
    fn order(&self) -> &[usize] {
        &self.sub.order
    }
    fn outgoing(&self, step: usize) -> Edges<'_> {
        self.position(step)
            .and_then(|p| self.sub.outgoing.get(p))
            .map_or(Edges::none(), |edges| Edges::listed(edges))
    }
    fn incoming(&self, step: usize) -> Edges<'_> {
        self.position(step)
            .and_then(|p| self.sub.incoming.get(p))
            .map_or(Edges::none(), |edges| Edges::listed(edges))
    }
    fn rank(&self, step: usize) -> usize {
        self.position(step)
            .and_then(|p| self.sub.rank.get(p).copied())
            .unwrap_or(usize::MAX)
    }
}
