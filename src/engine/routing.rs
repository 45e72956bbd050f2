//! Edge routing and the additive skip set (ERR-4…10, 2026-07-29).
//!
//! Owns: which outgoing edges a terminal step skips, and whether a step is skipped.
//! Invariant: the skip set only grows (CTRL-3); skips are keyed by `(from, to, when)`
//! (ERR-10), so a success edge and an error edge to the same target never collide. The set
//! is a pure function of the terminal records, so resume rebuilds it by replaying the
//! decisions — it is never persisted.

use std::collections::HashSet;

use super::graph::Graph;
use crate::model::When;
use crate::plan::{Plan, PlanEdge};

/// How a step ended, as routing sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Routed {
    Succeeded,
    /// Failed and the step declares ≥ 1 outgoing error edge (ERR-4).
    FailedToErrorEdges,
    /// Failed, no error edge, a continuing onError (ERR-7: nothing is skipped).
    FailedContinuing,
    Skipped,
}

#[derive(Debug, Default)]
pub(crate) struct SkipSet {
    // ERR-10: (from, to, when).
    skipped: HashSet<(u32, u32, When)>,
}

impl SkipSet {
    fn skip(&mut self, edge: &PlanEdge) {
        self.skipped.insert((edge.from, edge.to, edge.when));
    }

    pub(crate) fn is_skipped(&self, edge: &PlanEdge) -> bool {
        self.skipped.contains(&(edge.from, edge.to, edge.when))
    }

    /// ERR-6: skipped iff it has ≥ 1 inbound edge and every inbound edge is skipped.
    pub(crate) fn step_skipped(&self, plan: &(impl Graph + ?Sized), step: usize) -> bool {
        let mut inbound = plan.incoming(step);
        #[cfg(w6w_mutants)] // ERR-6 mutant (mutant build only): any skipped inbound skips
        if crate::mutants::active(crate::mutants::Mutant::SkipOnAnyInbound) {
            return inbound.any(|e| self.is_skipped(&e));
        }
        inbound.len() > 0 && inbound.all(|e| self.is_skipped(&e))
    }

    /// Apply a terminal step's outcome to its outgoing edges (ERR-4, ERR-5, ERR-7, ERR-6).
    pub(crate) fn route(&mut self, plan: &(impl Graph + ?Sized), step: usize, outcome: Routed) {
        for edge in plan.outgoing(step) {
            let skip = match outcome {
                // ERR-5: success activates success edges and skips error edges.
                Routed::Succeeded => edge.when == When::Error,
                // ERR-4: failure down error edges skips the success lane.
                Routed::FailedToErrorEdges => edge.when == When::Success,
                // ERR-7: a failure with no error edge skips nothing.
                Routed::FailedContinuing => false,
                // ERR-6: skipping propagates along every outgoing edge.
                Routed::Skipped => true,
            };
            if skip {
                self.skip(&edge);
            }
        }
    }
}

/// Whether the step declares at least one outgoing `when: "error"` edge.
pub(crate) fn has_error_edge(plan: &(impl Graph + ?Sized), step: usize) -> bool {
    #[cfg(w6w_mutants)] // ERR-4 mutant (mutant build only): error edges ignored
    if crate::mutants::active(crate::mutants::Mutant::SkipErrorEdges) {
        return false;
    }
    plan.outgoing(step).any(|e| e.when == When::Error)
}

/// REPLAY-4: `from` and all its graph descendants (both lanes). For an implicit chain the
/// positional rule: that step and every later plan step.
pub(crate) fn descendants(plan: &Plan, from: usize) -> Vec<bool> {
    // Indexed by step index: sub-block steps are in no main order but are steps.
    let mut marked = vec![false; plan.rank.len()];
    if plan.implicit_chain {
        for &i in &plan.order[plan.rank[from]..] {
            marked[i] = true;
        }
        return marked;
    }
    let mut stack = vec![from];
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut marked[i], true) {
            continue;
        }
        stack.extend(plan.outgoing(i).map(|e| e.to as usize));
    }
    marked
}
