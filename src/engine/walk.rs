//! The walker: one pass over a graph — the main graph or one sub-block instance.
//!
//! Owns: the order steps run in. A graph with no `fanOut: "parallel"` step takes the plain
//! plan-order loop (FAN-1); otherwise the strand scheduler (FAN-2…7). Both treat a
//! terminal record already in the state like a step that just finished (same routing,
//! same scope publication, no invocation, no checkpoint), so run, resume and replay are
//! one loop over different starting states. Invariant: every reported result (error,
//! suspension token) is chosen by plan order, never by completion order (FAN-7).

use std::collections::BTreeSet;

use serde_json::Value;

use super::graph::Graph;
use super::journal::{Extras, Frame, Journal};
use super::routing::{Routed, SkipSet, has_error_edge};
use super::run::Engine;
use super::strand::{InFlight, LocalFuture};
use super::{EngineError, StepKind, step};
use crate::expr::RunScope;
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{FanOut, OnError, Phase, StepError, StepExecution, StepStatus};
use crate::plan::ControlKind;

/// CTRL-7: where a run stopped for a `wait`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Suspension {
    pub(crate) token: String,
    pub(crate) step_id: String,
}

/// How one pass over a graph ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GraphOutcome {
    Succeeded,
    /// ERR-12: a failure reached a step with neither an error edge nor a continuing onError.
    Failed(StepError),
    /// RUN-7: the host's signal was raised between steps.
    Canceled,
    /// CTRL-7: a `wait` suspended the run (FAN-7: the first by plan order).
    Suspended(Suspension),
}

/// How one step's execution ended. (`Done` is the common case; boxing it would cost an
/// allocation per step for nothing.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepEnd {
    /// Terminal; the record is committed by [`Engine::run_step`].
    Done(StepExecution),
    /// A `wait` (here or inside a sub-block) suspended; the record stays `running`.
    Suspended(Suspension),
    /// The run's signal stopped a control's sub-blocks; the record stays `running`.
    Canceled,
}

/// What is fixed for one engine invocation (run, resume or replay).
#[derive(Debug, Clone, Default)]
pub(crate) struct RunCtx {
    /// CALL-2: composition hops already taken to reach this run.
    pub(crate) call_depth: u32,
    /// CTRL-7: the token this invocation was resumed with, if any.
    pub(crate) resume_token: Option<String>,
}

impl<'w> Engine<'w> {
    /// One pass over `graph`, recording into `frame`, starting from `scope`.
    pub(crate) fn walk<'s, C: WorkflowContext>(
        &'s self,
        ctx: &'s C,
        journal: &'s Journal,
        rc: &'s RunCtx,
        graph: &'s dyn Graph,
        frame: &'s Frame,
        scope: RunScope,
    ) -> LocalFuture<'s, Result<GraphOutcome, EngineError>> {
        Box::pin(async move {
            let parallel = graph
                .order()
                .iter()
                .any(|&i| self.workflow.steps[i].fan_out() == FanOut::Parallel);
            if parallel {
                self.walk_strands(ctx, journal, rc, graph, frame, scope)
                    .await
            } else {
                self.walk_sequential(ctx, journal, rc, graph, frame, scope)
                    .await
            }
        })
    }

    /// FAN-1: the plain plan-order loop, one step at a time.
    async fn walk_sequential<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        graph: &dyn Graph,
        frame: &Frame,
        mut scope: RunScope,
    ) -> Result<GraphOutcome, EngineError> {
        let mut skips = SkipSet::default();
        for &i in graph.order() {
            let step = &self.workflow.steps[i];
            let record = match journal.lookup(frame, &step.id) {
                // RUN-4 / REPLAY-1: a terminal record is reused, never re-invoked — when
                // this walk's routing reaches the step (`reusable`).
                Some(r) if reusable(&r, &skips, graph, i) => r,
                existing => {
                    // RUN-7: the signal is polled between steps.
                    if ctx.aborted() {
                        ctx.log(
                            LogLevel::Warn,
                            &format!("run canceled before step {}", step.id),
                            None,
                        );
                        return Ok(GraphOutcome::Canceled);
                    }
                    if skips.step_skipped(graph, i) {
                        // ERR-6: every inbound edge is skipped.
                        self.record_skipped(ctx, journal, frame, i).await?
                    } else {
                        let inbound = self.join_inputs(journal, frame, graph, &skips, i);
                        match self
                            .run_step(ctx, journal, rc, graph, frame, &scope, inbound, i, existing)
                            .await?
                        {
                            StepEnd::Done(r) => r,
                            StepEnd::Suspended(s) => return Ok(GraphOutcome::Suspended(s)),
                            StepEnd::Canceled => return Ok(GraphOutcome::Canceled),
                        }
                    }
                }
            };
            if let Some(error) = self.settle(graph, i, &record, &mut scope, &mut skips) {
                return Ok(GraphOutcome::Failed(error));
            }
        }
        Ok(GraphOutcome::Succeeded)
    }

    /// FAN-2…7: strands. Every strand runs one step at a time, the earliest-in-plan-order
    /// ready step assigned to it; there is no cap on strands (their number is bounded by
    /// the graph's step count).
    async fn walk_strands<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        graph: &dyn Graph,
        frame: &Frame,
        mut scope: RunScope,
    ) -> Result<GraphOutcome, EngineError> {
        let order = graph.order();
        let mut s = Strands::new(graph);
        let mut skips = SkipSet::default();
        let mut inflight: InFlight<'_, Result<StepEnd, EngineError>> = InFlight::new();
        loop {
            if !s.stopping && ctx.aborted() {
                ctx.log(
                    LogLevel::Warn,
                    "run canceled: no new steps start; in-flight steps finish",
                    None,
                );
                s.canceled = true;
                s.stopping = true;
            }
            while !s.stopping {
                let Some((strand, pos)) = s.next_launch() else {
                    break;
                };
                let i = order[pos];
                let step = &self.workflow.steps[i];
                match journal.lookup(frame, &step.id) {
                    Some(r) if reusable(&r, &skips, graph, i) => {
                        s.complete(self, graph, pos, strand, &r, &mut scope, &mut skips);
                    }
                    existing => {
                        if skips.step_skipped(graph, i) {
                            let r = self.record_skipped(ctx, journal, frame, i).await?;
                            s.complete(self, graph, pos, strand, &r, &mut scope, &mut skips);
                        } else {
                            s.set_busy(strand, true);
                            let inbound = self.join_inputs(journal, frame, graph, &skips, i);
                            let snapshot = scope.clone();
                            inflight.push(
                                pos,
                                Box::pin(async move {
                                    self.run_step(
                                        ctx, journal, rc, graph, frame, &snapshot, inbound, i,
                                        existing,
                                    )
                                    .await
                                }),
                            );
                        }
                    }
                }
            }
            // FAN-6: when stopping, in-flight steps still finish (drain).
            let Some((pos, result)) = inflight.next().await else {
                break;
            };
            let strand = s.strand_of[pos].unwrap_or(0);
            s.set_busy(strand, false);
            match result? {
                StepEnd::Done(record) => {
                    s.complete(self, graph, pos, strand, &record, &mut scope, &mut skips);
                }
                StepEnd::Suspended(sus) => {
                    s.suspensions.push((pos, sus));
                    s.stopping = true;
                }
                StepEnd::Canceled => {
                    s.canceled = true;
                    s.stopping = true;
                }
            }
        }
        // FAN-7: reporting by plan order. A failure is never hidden behind a suspension.
        if let Some((_, e)) = s.failures.into_iter().min_by_key(|(p, _)| *p) {
            return Ok(GraphOutcome::Failed(e));
        }
        if s.canceled {
            return Ok(GraphOutcome::Canceled);
        }
        if let Some((_, sus)) = s.suspensions.into_iter().min_by_key(|(p, _)| *p) {
            return Ok(GraphOutcome::Suspended(sus));
        }
        Ok(GraphOutcome::Succeeded)
    }

    async fn record_skipped<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        frame: &Frame,
        i: usize,
    ) -> Result<StepExecution, EngineError> {
        let record = StepExecution::new(&self.workflow.steps[i].id, StepStatus::Skipped, 0);
        journal
            .commit_step(ctx, frame, record.clone(), Extras::default())
            .await?;
        Ok(record)
    }

    /// CTRL-8: the outputs a join reads — inbound edges in declared order; an edge that is
    /// skipped, or whose source did not succeed, contributes nothing.
    fn join_inputs(
        &self,
        journal: &Journal,
        frame: &Frame,
        graph: &dyn Graph,
        skips: &SkipSet,
        i: usize,
    ) -> Vec<(String, Value)> {
        let is_join = matches!(
            self.plan.controls.control(i).map(|c| c.kind),
            Some(ControlKind::Aggregate | ControlKind::Merge)
        );
        if !is_join {
            return Vec::new();
        }
        graph
            .incoming(i)
            .iter()
            .filter(|e| !skips.is_skipped(e))
            .filter_map(|e| {
                let id = &self.workflow.steps[e.from].id;
                let r = journal.lookup(frame, id)?;
                (r.status == StepStatus::Succeeded)
                    .then(|| (id.clone(), r.output.unwrap_or(Value::Null)))
            })
            .collect()
    }

    /// Run one step that may run (not skipped, not already terminal) and commit its end.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn run_step<C: WorkflowContext>(
        &self,
        ctx: &C,
        journal: &Journal,
        rc: &RunCtx,
        graph: &dyn Graph,
        frame: &Frame,
        scope: &RunScope,
        inbound: Vec<(String, Value)>,
        i: usize,
        existing: Option<StepExecution>,
    ) -> Result<StepEnd, EngineError> {
        let step = &self.workflow.steps[i];
        let kind = self.kinds[i];
        let error_edge = has_error_edge(graph, i);
        // A step interrupted by a crash is re-run with its recorded attempt.
        let first = existing
            .as_ref()
            .filter(|r| r.status == StepStatus::Running)
            .map_or(1, |r| r.attempt.max(1));
        let mut extras = Extras::default();
        let end = match kind {
            StepKind::App | StepKind::Internal => StepEnd::Done(
                step::execute(
                    ctx,
                    journal,
                    frame,
                    step,
                    kind,
                    &self.compiled[i],
                    scope,
                    first,
                )
                .await?,
            ),
            StepKind::Call => StepEnd::Done(self.call(ctx, journal, rc, frame, i, scope).await?),
            StepKind::Control => {
                let (end, errors) = self
                    .control(
                        ctx, journal, rc, frame, i, scope, inbound, existing, error_edge,
                    )
                    .await?;
                extras.step_errors = errors;
                extras.clear_prefixes.push(frame.child_prefix(&step.id));
                end
            }
        };
        let mut end = end;
        if let StepEnd::Done(record) = &mut end
            && record.output.as_ref().is_some_and(|o| {
                crate::limits::nests_deeper_than(o, crate::limits::MAX_NESTING_DEPTH)
            })
        {
            // Issue 12 item 5: an output the store could not read back fails its step,
            // never the store (a run that cannot be resumed).
            record.status = crate::model::StepStatus::Failed;
            record.output = None;
            let mut e = StepError::new(
                "limit_exceeded",
                format!(
                    "the step's output nests deeper than {} levels",
                    crate::limits::MAX_NESTING_DEPTH
                ),
                Phase::Execute,
            );
            e.retryable = false;
            record.error = Some(e);
        }
        if let StepEnd::Done(record) = &mut end
            && super::journal::is_secret_derived(record)
            && let Some(e) = &mut record.error
        {
            // SEC-1: a secret-derived step's error message may quote what it was given;
            // it is redacted before it can reach routing, the run error or stepErrors.
            e.message = crate::expr::REDACTED.to_owned();
        }
        if let StepEnd::Done(record) = &end {
            if let Some(err) = &record.error
                && !error_edge
                && step.on_error() == OnError::ContinueRecord
            {
                // ERR-3: the swallowed failure stays observable.
                extras.step_errors.push(err.clone().for_step(&step.id));
            }
            // RUN-2: step end (with its routing consequence, atomically).
            journal
                .commit_step(ctx, frame, record.clone(), extras)
                .await?;
        }
        Ok(end)
    }

    /// Publish a terminal record and route its outgoing edges. `Some(error)` when the
    /// failure ends the graph (no error edge, onError `fail`).
    pub(crate) fn settle(
        &self,
        graph: &dyn Graph,
        i: usize,
        record: &StepExecution,
        scope: &mut RunScope,
        skips: &mut SkipSet,
    ) -> Option<StepError> {
        let step = &self.workflow.steps[i];
        let kind = self.kinds[i];
        match record.status {
            StepStatus::Succeeded => {
                let meta = if kind.carries_meta() {
                    record
                        .meta
                        .as_ref()
                        .and_then(|m| serde_json::to_value(m).ok())
                } else {
                    None
                };
                // META-4: meta is published beside output for succeeded app steps only.
                scope.publish_step(&step.id, record.output.clone().unwrap_or(Value::Null), meta);
                if super::journal::is_secret_derived(record) {
                    // SEC-1: whatever reads this output is secret-derived too.
                    scope.taint(&["steps", &step.id]);
                }
                // CTRL-2: an unmatched `if` skips every outgoing edge, error edges included,
                // while the `if` itself succeeded.
                let unmatched = kind == StepKind::Control
                    && self.plan.controls.control(i).map(|c| c.kind) == Some(ControlKind::If)
                    && record.output.as_ref().and_then(|o| o.get("matched"))
                        == Some(&Value::Bool(false));
                let routed = if unmatched {
                    Routed::Skipped
                } else {
                    Routed::Succeeded
                };
                skips.route(graph, i, routed);
            }
            StepStatus::Failed => {
                let error = record.error.clone().unwrap_or_else(|| {
                    StepError::new("step_failed", "the step failed", Phase::Execute)
                });
                if has_error_edge(graph, i) {
                    // ERR-4: the error edge overrides onError.
                    skips.route(graph, i, Routed::FailedToErrorEdges);
                } else if step.on_error() == OnError::Fail {
                    // ERR-1 / ERR-12.
                    return Some(error.for_step(&step.id));
                } else {
                    // ERR-2 / ERR-3 / ERR-7.
                    skips.route(graph, i, Routed::FailedContinuing);
                }
            }
            StepStatus::Skipped => skips.route(graph, i, Routed::Skipped),
            // Unreachable by construction (steps end terminal); routing nothing is the
            // safe reading of a non-terminal record.
            StepStatus::Pending | StepStatus::Running => {}
        }
        None
    }
}

/// The strand scheduler's bookkeeping, by position in the graph's order.
struct Strands {
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
    canceled: bool,
    stopping: bool,
}

impl Strands {
    fn new(graph: &dyn Graph) -> Self {
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
    fn next_launch(&mut self) -> Option<(usize, usize)> {
        let strand = *self.launchable.first()?;
        let pos = self.ready[strand].pop_first();
        self.refresh(strand);
        Some((strand, pos?))
    }

    fn set_busy(&mut self, strand: usize, busy: bool) {
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

    /// A step at `pos` on `strand` is terminal: settle it and place its newly ready
    /// successors (FAN-3, FAN-4).
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        engine: &Engine<'_>,
        graph: &dyn Graph,
        pos: usize,
        strand: usize,
        record: &StepExecution,
        scope: &mut RunScope,
        skips: &mut SkipSet,
    ) {
        let order = graph.order();
        let i = order[pos];
        if let Some(error) = engine.settle(graph, i, record, scope, skips) {
            self.failures.push((pos, error));
            self.stopping = true;
        }
        let mut newly = Vec::new();
        for edge in graph.outgoing(i) {
            let t = graph.rank(edge.to);
            if let Some(r) = self.remaining.get_mut(t) {
                *r = r.saturating_sub(1);
                if *r == 0 {
                    newly.push(t);
                }
            }
        }
        newly.sort_unstable();
        newly.dedup();
        let parallel = engine.workflow.steps[i].fan_out() == FanOut::Parallel;
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
                    .iter()
                    .map(|e| graph.rank(e.from))
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
}

/// Whether a terminal record already in the state is this walk's outcome for step `i`.
///
/// REPLAY-2 with ERR-5/ERR-6 (`docs/decisions.md` D-8): a record carried into a replay says
/// how a *reached* step is produced (its stored output instead of an invocation); it does
/// not exempt the step from routing. When a step that failed originally runs fresh and now
/// succeeds, its error handler is reachable only through skipped edges and must be recorded
/// `skipped`, not reused. On a crash-resume routing is recomputed from the same records, so
/// it always reaches the steps it once reached and this is a no-op.
fn reusable(record: &StepExecution, skips: &SkipSet, graph: &dyn Graph, i: usize) -> bool {
    record.status.is_terminal()
        && (record.status == StepStatus::Skipped || !skips.step_skipped(graph, i))
}
