//! The strand scheduler's state (FAN-2…7) and its deterministic join set.
//!
//! Owns: [`Strands`], which step runs on which strand and what the pass reports, and
//! [`InFlight`], polling several borrowed futures from one task. Invariant: children are
//! polled in the order they were launched, and the first ready one is returned, so ties
//! (two steps finishing at the same virtual instant) go to the earlier launch — never to
//! whatever a waker happened to fire first. Dropping an entry cancels it (foreach
//! fail-fast, race/any losers); no runtime, no `'static`, no `Send` needed.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use super::graph::Graph;
use super::walk::{GraphOutcome, Reached, StepEnd, Suspension, Walk};
use crate::host::WorkflowContext;
use crate::model::{FanOut, StepError, StepExecution};

pub(crate) type LocalFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Futures in flight, each tagged with a caller key.
pub(crate) struct InFlight<'a, T> {
    /// Launch order. A finished entry leaves a hole (`None`) instead of shifting the rest:
    /// removing from the front of a 1,000-wide fan-out made every completion O(width).
    entries: Vec<Option<(usize, LocalFuture<'a, T>)>>,
    /// Index of the first entry that may be live.
    head: usize,
    live: usize,
}

impl<'a, T> InFlight<'a, T> {
    pub(crate) fn new() -> Self {
        InFlight {
            entries: Vec::new(),
            head: 0,
            live: 0,
        }
    }

    pub(crate) fn push(&mut self, key: usize, fut: LocalFuture<'a, T>) {
        self.entries.push(Some((key, fut)));
        self.live += 1;
    }

    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The keys still in flight, in launch order.
    pub(crate) fn keys(&self) -> Vec<usize> {
        self.entries.iter().flatten().map(|(k, _)| *k).collect()
    }

    /// Drop (cancel) every entry still in flight; returns their keys in launch order.
    pub(crate) fn cancel_all(&mut self) -> Vec<usize> {
        let keys = self.keys();
        self.entries.clear();
        self.head = 0;
        self.live = 0;
        keys
    }

    /// Take out the finished entry at `i`; drop leading holes, and compact when most of
    /// the vector is holes, so both stay amortised O(1) per entry.
    fn take(&mut self, i: usize) -> Option<usize> {
        let (key, _) = self.entries.get_mut(i)?.take()?;
        self.live -= 1;
        while self.entries.get(self.head).is_some_and(Option::is_none) {
            self.head += 1;
        }
        if self.head > 32 && self.head * 2 > self.entries.len() {
            self.entries.drain(..self.head);
            self.head = 0;
        }
        Some(key)
    }

    /// The next entry to finish: `None` when nothing is in flight.
    pub(crate) async fn next(&mut self) -> Option<(usize, T)> {
        if self.live == 0 {
            return None;
        }
        std::future::poll_fn(|cx| {
            for i in self.head..self.entries.len() {
                let Some((_, fut)) = self.entries[i].as_mut() else {
                    continue;
                };
                if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                    return Poll::Ready(self.take(i).map(|key| (key, v)));
                }
            }
            Poll::Pending
        })
        .await
    }
}

/// The strand scheduler's bookkeeping, by position in the graph's order.
pub(crate) struct Strands {
    /// Inbound edges whose source is not terminal yet.
    remaining: Vec<usize>,
    strand_of: Vec<Option<usize>>,
    /// Per strand: assigned, ready, not yet launched positions (earliest first).
    ready: Vec<BTreeSet<usize>>,
    busy: Vec<bool>,
    /// Idle strands with a ready step: the next launch is the lowest, without scanning
    /// every strand (a 1,000-wide fan-out made each launch and completion O(width)).
    launchable: BTreeSet<usize>,
    failures: Vec<(usize, StepError)>,
    suspensions: Vec<(usize, Suspension)>,
    pub(crate) canceled: bool,
    /// No new step launches (a failure, a suspension, the run's signal); in-flight ones
    /// still finish (FAN-6).
    pub(crate) stopping: bool,
}

impl Strands {
    pub(crate) fn new(graph: &dyn Graph) -> Self {
        let order = graph.order();
        let remaining: Vec<usize> = order.iter().map(|&i| graph.incoming(i).len()).collect();
        let mut s = Strands {
            strand_of: vec![None; order.len()],
            ready: vec![BTreeSet::new()],
            busy: vec![false],
            launchable: BTreeSet::new(),
            remaining,
            failures: Vec::new(),
            suspensions: Vec::new(),
            canceled: false,
            stopping: false,
        };
        // FAN-2: one strand runs the roots.
        for pos in 0..order.len() {
            if s.remaining[pos] == 0 {
                s.strand_of[pos] = Some(0);
                s.ready[0].insert(pos);
            }
        }
        s.refresh(0);
        s
    }

    /// The lowest-numbered idle strand with a ready step, and that step.
    pub(crate) fn next_launch(&mut self) -> Option<(usize, usize)> {
        let strand = *self.launchable.first()?;
        let pos = self.ready[strand].pop_first();
        self.refresh(strand);
        Some((strand, pos?))
    }

    pub(crate) fn set_busy(&mut self, strand: usize, busy: bool) {
        if let Some(b) = self.busy.get_mut(strand) {
            *b = busy;
        }
        self.refresh(strand);
    }

    /// Keep `launchable` = idle strands with a ready step.
    fn refresh(&mut self, strand: usize) {
        let idle_and_ready = !self.busy.get(strand).copied().unwrap_or(true)
            && self.ready.get(strand).is_some_and(|r| !r.is_empty());
        if idle_and_ready {
            self.launchable.insert(strand);
        } else {
            self.launchable.remove(&strand);
        }
    }

    /// The in-flight step at `pos` ended with `end`: free its strand and take the end in.
    pub(crate) fn landed<C: WorkflowContext>(
        &mut self,
        walk: Walk<'_, C>,
        pos: usize,
        end: StepEnd,
        reached: &mut Reached,
    ) {
        let strand = self.strand_of[pos].unwrap_or(0);
        self.set_busy(strand, false);
        match end {
            StepEnd::Done(record) => self.complete(walk, pos, strand, record, None, reached),
            StepEnd::Settled { view, output } => {
                self.complete(walk, pos, strand, view, Some(output), reached)
            }
            StepEnd::Suspended(sus) => {
                self.suspensions.push((pos, sus));
                self.stopping = true;
            }
            StepEnd::Canceled => {
                self.canceled = true;
                self.stopping = true;
            }
        }
    }

    /// A step at `pos` on `strand` is terminal: settle it (its output moves into the
    /// scope) and place its newly ready successors (FAN-3, FAN-4).
    pub(crate) fn complete<C: WorkflowContext>(
        &mut self,
        walk: Walk<'_, C>,
        pos: usize,
        strand: usize,
        mut record: StepExecution,
        live: Option<serde_json::Value>,
        reached: &mut Reached,
    ) {
        let graph = walk.graph;
        let order = graph.order();
        let i = order[pos];
        if let Some(error) = walk.settle(i, &mut record, live, reached) {
            self.failures.push((pos, error));
            self.stopping = true;
        }
        let mut newly = Vec::new();
        for edge in graph.outgoing(i) {
            let t = graph.rank(edge.to as usize);
            if let Some(r) = self.remaining.get_mut(t) {
                *r = r.saturating_sub(1);
                if *r == 0 {
                    newly.push(t);
                }
            }
        }
        newly.sort_unstable();
        newly.dedup();
        let parallel = walk.engine.workflow.steps[i].fan_out() == FanOut::Parallel;
        let mut continued = false;
        for t in newly {
            let target = order[t];
            let inbound = graph.incoming(target);
            let placed = if inbound.len() > 1 {
                // FAN-4: a join runs once, on the strand of its earliest inbound source. It
                // still takes its place in S1…Sk (FAN-3 counts every newly ready successor),
                // so the successors after it open new strands rather than queue behind it.
                continued = true;
                inbound
                    .map(|e| graph.rank(e.from as usize))
                    .min()
                    .and_then(|p| self.strand_of.get(p).copied().flatten())
                    .unwrap_or(strand)
            } else if parallel && continued {
                // FAN-3: S2…Sk each open a new strand.
                self.ready.push(BTreeSet::new());
                self.busy.push(false);
                self.ready.len() - 1
            } else {
                // S1 continues the strand; a sequential step's successors stay on it.
                continued = true;
                strand
            };
            self.strand_of[t] = Some(placed);
            self.ready[placed].insert(t);
            self.refresh(placed);
        }
    }

    /// FAN-7: how the pass ended, reported by plan order. A failure is never hidden behind
    /// a suspension.
    pub(crate) fn outcome(self) -> GraphOutcome {
        if let Some((_, e)) = self.failures.into_iter().min_by_key(|(p, _)| *p) {
            return GraphOutcome::Failed(e);
        }
        if self.canceled {
            return GraphOutcome::Canceled;
        }
        if let Some((_, sus)) = self.suspensions.into_iter().min_by_key(|(p, _)| *p) {
            return GraphOutcome::Suspended(sus);
        }
        GraphOutcome::Succeeded
    }
}
