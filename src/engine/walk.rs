//! The walker: one pass over a graph — the main graph or one sub-block instance.
//!
//! Owns: [`Walk`], the context of one pass (engine, host, journal, run context, graph,
//! frame), and the order steps run in. A graph with no `fanOut: "parallel"` step takes the
//! plain plan-order loop (FAN-1); otherwise the strand scheduler (FAN-2…7,
//! [`super::strand::Strands`]). Both treat a terminal record already in the state like a
//! step that just finished (same routing, same scope publication, no invocation, no
//! checkpoint), so run, resume and replay are one loop over different starting states.
//! Invariant: every reported result (error, suspension token) is chosen by plan order,
//! never by completion order (FAN-7).

use serde_json::Value;

use super::graph::Graph;
use super::journal::{Extras, Frame, Journal};
use super::routing::{Routed, SkipSet, has_error_edge};
use super::run::Engine;
use super::step::StepCtx;
use super::strand::{InFlight, LocalFuture, Strands};
use super::{EngineCode, EngineError, StepKind};
use crate::expr::RunScope;
use crate::host::{LogLevel, WorkflowContext};
use crate::json::JsonText;
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
    /// Terminal; the record is committed by [`StepCtx::run`], which then answers what
    /// settling reads of it (no recorded input or timestamps).
    Done(StepExecution),
    /// [`StepEnd::Done`] of a plain succeeded step, from [`StepCtx::run`]: what settling
    /// reads, and the output as the value its recorded text was written from (D-193).
    Settled { view: StepExecution, output: Value },
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

/// One pass over one graph: everything its steps share. `Copy` (seven pointers), so a
/// sub-block's walk is this one with another graph and frame ([`Walk::sub`]).
pub(crate) struct Walk<'a, C> {
    pub(crate) engine: &'a Engine<'a>,
    /// The host: the only way to the world (RUN-8).
    pub(crate) host: &'a C,
    pub(crate) journal: &'a Journal,
    pub(crate) run: &'a RunCtx,
    pub(crate) graph: &'a dyn Graph,
    /// Where this pass records its steps.
    pub(crate) frame: &'a Frame,
}

impl<C> Clone for Walk<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Walk<'_, C> {}

/// What a pass has published so far: the scope later steps read and the skipped edges.
#[derive(Debug)]
pub(crate) struct Reached {
    pub(crate) scope: RunScope,
    pub(crate) skips: SkipSet,
}

impl<'a, C: WorkflowContext> Walk<'a, C> {
    /// The same invocation walking sub-block `graph` into `frame` (a foreach iteration,
    /// a parallel branch).
    pub(crate) fn sub<'b>(self, graph: &'b dyn Graph, frame: &'b Frame) -> Walk<'b, C>
    where
        'a: 'b,
    {
        Walk {
            engine: self.engine,
            host: self.host,
            journal: self.journal,
            run: self.run,
            graph,
            frame,
        }
    }

    /// One pass over the graph, starting from `scope`.
    pub(crate) fn walk(
        self,
        mut scope: RunScope,
    ) -> LocalFuture<'a, Result<GraphOutcome, EngineError>> {
        if !self.frame.is_main() {
            // D-187: a sub-block instance publishes into a layer of its own, never into a
            // copy of the enclosing walk's outputs.
            scope.nest_steps();
        }
        let steps = &self.engine.workflow.steps;
        let parallel = self
            .graph
            .order()
            .iter()
            .any(|&i| steps[i].fan_out() == FanOut::Parallel);
        let reached = Reached {
            scope,
            skips: SkipSet::default(),
        };
        // Boxed as the one loop it runs: a box as large as both would be allocated and
        // copied once per sub-block instance (a foreach iteration).
        if parallel {
            Box::pin(self.strands(reached))
        } else {
            Box::pin(self.sequential(reached))
        }
    }

    /// FAN-1: the plain plan-order loop, one step at a time.
    async fn sequential(self, mut reached: Reached) -> Result<GraphOutcome, EngineError> {
        for &i in self.graph.order() {
            let step = &self.engine.workflow.steps[i];
            let mut live = None;
            let mut record = match self.journal.lookup(self.frame, &step.id) {
                // RUN-4 / REPLAY-1: a terminal record is reused, never re-invoked — when
                // this walk's routing reaches the step (`reusable`).
                Some(r) if reusable(&r, &reached.skips, self.graph, i) => {
                    std::sync::Arc::unwrap_or_clone(r)
                }
                existing => {
                    // RUN-7: the signal is polled between steps.
                    if self.host.aborted() {
                        self.host.log(
                            LogLevel::Warn,
                            &format!("run canceled before step {}", step.id),
                            None,
                        );
                        return Ok(GraphOutcome::Canceled);
                    }
                    if reached.skips.step_skipped(self.graph, i) {
                        // ERR-6: every inbound edge is skipped.
                        self.record_skipped(i).await?
                    } else {
                        let inbound = self.join_inputs(&reached.skips, i);
                        match self
                            .step(i, &reached.scope, inbound, existing)
                            .run()
                            .await?
                        {
                            StepEnd::Done(r) => r,
                            StepEnd::Settled { view, output } => {
                                live = Some(output);
                                view
                            }
                            StepEnd::Suspended(s) => return Ok(GraphOutcome::Suspended(s)),
                            StepEnd::Canceled => return Ok(GraphOutcome::Canceled),
                        }
                    }
                }
            };
            if let Some(error) = self.settle(i, &mut record, live, &mut reached) {
                return Ok(GraphOutcome::Failed(error));
            }
        }
        Ok(GraphOutcome::Succeeded)
    }

    /// FAN-2…7: strands. Every strand runs one step at a time, the earliest-in-plan-order
    /// ready step assigned to it; there is no cap on strands (their number is bounded by
    /// the graph's step count).
    async fn strands(self, mut reached: Reached) -> Result<GraphOutcome, EngineError> {
        let mut s = Strands::new(self.graph);
        let mut inflight: InFlight<'_, Result<StepEnd, EngineError>> = InFlight::new();
        loop {
            if !s.stopping && self.host.aborted() {
                self.host.log(
                    LogLevel::Warn,
                    "run canceled: no new steps start; in-flight steps finish",
                    None,
                );
                s.canceled = true;
                s.stopping = true;
            }
            self.launch_ready(&mut s, &mut reached, &mut inflight)
                .await?;
            // FAN-6: when stopping, in-flight steps still finish (drain).
            let Some((pos, result)) = inflight.next().await else {
                break;
            };
            s.landed(self, pos, result?, &mut reached);
        }
        Ok(s.outcome())
    }

    /// Launch every ready step an idle strand can take (reused and skipped steps complete
    /// at once; the others go in flight, each reading a snapshot of the scope).
    async fn launch_ready(
        self,
        s: &mut Strands,
        reached: &mut Reached,
        inflight: &mut InFlight<'a, Result<StepEnd, EngineError>>,
    ) -> Result<(), EngineError> {
        let order = self.graph.order();
        while !s.stopping {
            let Some((strand, pos)) = s.next_launch() else {
                break;
            };
            let i = order[pos];
            let step = &self.engine.workflow.steps[i];
            match self.journal.lookup(self.frame, &step.id) {
                Some(r) if reusable(&r, &reached.skips, self.graph, i) => {
                    let r = std::sync::Arc::unwrap_or_clone(r);
                    s.complete(self, pos, strand, r, None, reached);
                }
                existing => {
                    if reached.skips.step_skipped(self.graph, i) {
                        let r = self.record_skipped(i).await?;
                        s.complete(self, pos, strand, r, None, reached);
                    } else {
                        s.set_busy(strand, true);
                        let inbound = self.join_inputs(&reached.skips, i);
                        let snapshot = reached.scope.clone();
                        inflight.push(
                            pos,
                            Box::pin(async move {
                                self.step(i, &snapshot, inbound, existing).run().await
                            }),
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// The context of step `i` of this pass.
    pub(crate) fn step<'s>(
        self,
        i: usize,
        scope: &'s RunScope,
        (inbound, needles): (Vec<(String, Value)>, super::taint::Needles),
        existing: Option<std::sync::Arc<StepExecution>>,
    ) -> StepCtx<'s, C>
    where
        'a: 's,
    {
        StepCtx {
            walk: self.sub(self.graph, self.frame),
            i,
            step: &self.engine.workflow.steps[i],
            kind: self.engine.kinds[i],
            scope,
            inbound,
            existing,
            error_edge: has_error_edge(self.graph, i),
            live: std::cell::Cell::new(None),
            needles: std::cell::RefCell::new(needles),
        }
    }

    async fn record_skipped(&self, i: usize) -> Result<StepExecution, EngineError> {
        let steps = &self.engine.workflow.steps;
        let record = StepExecution::new(&steps[i].id, StepStatus::Skipped, 0);
        self.journal
            .commit_step(self.host, self.frame, record.clone(), Extras::default())
            .await?;
        Ok(record)
    }

    /// CTRL-8: the outputs a join reads — inbound edges in declared order; an edge that is
    /// skipped, or whose source did not succeed, contributes nothing — and, SEC-1 (D-274),
    /// the secret material they hold, which the join's output is tainted wherever it holds.
    fn join_inputs(
        &self,
        skips: &SkipSet,
        i: usize,
    ) -> (Vec<(String, Value)>, super::taint::Needles) {
        let mut needles = super::taint::Needles::default();
        let is_join = matches!(
            self.engine.plan.controls.control(i).map(|c| c.kind),
            Some(ControlKind::Aggregate | ControlKind::Merge)
        );
        if !is_join {
            return (Vec::new(), needles);
        }
        let inbound = self
            .graph
            .incoming(i)
            .filter(|e| !skips.is_skipped(e))
            .filter_map(|e| {
                let id = &self.engine.workflow.steps[e.from as usize].id;
                let r = self.journal.lookup(self.frame, id)?;
                // D-112: the recorded output with its secret references re-materialised.
                (r.status == StepStatus::Succeeded).then(|| {
                    let secrets = self.host.secrets();
                    let output = super::sealed::unseal(
                        &r,
                        |n| secrets.get(n).cloned(),
                        || super::sealed::Sealer::of(self.host, self.journal, self.frame),
                    );
                    needles.add_places(&output, &super::taint::places(&r));
                    (String::from(id.as_str()), output)
                })
            })
            .collect();
        (inbound, needles)
    }

    /// Publish a terminal record and route its outgoing edges. `Some(error)` when the
    /// failure ends the graph (no error edge, onError `fail`). A succeeded record's output
    /// moves into the scope (the caller's record is done with: it was checkpointed).
    pub(crate) fn settle(
        &self,
        i: usize,
        record: &mut StepExecution,
        live: Option<Value>,
        reached: &mut Reached,
    ) -> Option<StepError> {
        let step = &self.engine.workflow.steps[i];
        let routed = match record.status {
            StepStatus::Succeeded => {
                let unmatched = self.unmatched_if(i, record);
                self.publish(i, record, live, &mut reached.scope);
                if unmatched {
                    // CTRL-2: an unmatched `if` skips every outgoing edge, error edges
                    // included, while the `if` itself succeeded.
                    Routed::Skipped
                } else {
                    Routed::Succeeded
                }
            }
            StepStatus::Failed if has_error_edge(self.graph, i) => {
                // ERR-4: the error edge overrides onError.
                Routed::FailedToErrorEdges
            }
            StepStatus::Failed if step.on_error() == OnError::Fail => {
                // ERR-1 / ERR-12.
                let error = record.error.as_deref().cloned().unwrap_or_else(|| {
                    StepError::new(EngineCode::StepFailed, "the step failed", Phase::Execute)
                });
                return Some(error.for_step(&step.id));
            }
            // ERR-2 / ERR-3 / ERR-7.
            StepStatus::Failed => Routed::FailedContinuing,
            StepStatus::Skipped => Routed::Skipped,
            // Unreachable by construction (steps end terminal); routing nothing is the
            // safe reading of a non-terminal record.
            StepStatus::Pending | StepStatus::Running => return None,
        };
        reached.skips.route(self.graph, i, routed);
        None
    }

    /// A succeeded step's output (and, META-4, meta for app steps only) in the scope.
    fn publish(
        &self,
        i: usize,
        record: &mut StepExecution,
        live: Option<Value>,
        scope: &mut RunScope,
    ) {
        let id = &self.engine.workflow.steps[i].id;
        let meta = if self.engine.kinds[i].carries_meta() {
            record.meta.as_deref().map(JsonText::of)
        } else {
            None
        };
        let text = record.output.take();
        match (live, text) {
            // D-195: a plain output (nothing sealed, no secret references: the value is
            // its text's) is kept as its record's text, parsed while in use.
            (live, Some(text)) if live.is_some() || super::sealed::is_plain(record) => {
                scope.publish_step_texts(id, live, text, meta);
            }
            (live, text) => {
                record.output = text;
                // D-112: a recorded output's secret references re-materialised (inside
                // the engine only), so a resumed or replayed run reads what the
                // crash-free run read.
                let output = live.unwrap_or_else(|| {
                    let output = super::sealed::unseal_taking(
                        record,
                        |n| scope.secrets().get(n).cloned(),
                        || super::sealed::Sealer::of(self.host, self.journal, self.frame),
                    );
                    if super::sealed::is_lost(record, &output) {
                        // D-252: without a key (or with an envelope that does not open) the
                        // value is not in the store; say so rather than read it silently.
                        self.host.log(
                            LogLevel::Warn,
                            &format!(
                                "step {id}: its output was computed from a secret and is not kept without the run's sealing key; this run reads \"[redacted]\" where the first run read the value (D-252)"
                            ),
                            None,
                        );
                    }
                    output
                });
                scope.publish_step(id, output, meta.map(|m| m.to_value()));
            }
        }
        // SEC-1: whatever reads this output where it holds secret material is secret-derived
        // too (D-274: only there, unless the whole output is).
        for place in super::taint::places(record) {
            if place.is_empty() {
                scope.taint(&["steps", id]);
            } else {
                let id = crate::model::pointer_token(id);
                super::taint_pointers(scope, "steps", &[format!("/{id}/output{place}")]);
            }
        }
    }

    /// CTRL-2: whether `record` is an `if` that matched nothing.
    fn unmatched_if(&self, i: usize, record: &StepExecution) -> bool {
        self.engine.kinds[i] == StepKind::Control
            && self.engine.plan.controls.control(i).map(|c| c.kind) == Some(ControlKind::If)
            && (record
                .output
                .as_ref()
                .and_then(|o| o.to_value().get("matched").cloned())
                == Some(Value::Bool(false))
                // D-113: a secret-derived `if` keeps its branch beside its redacted output.
                || record.extra.get("matched") == Some(&Value::Bool(false)))
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
