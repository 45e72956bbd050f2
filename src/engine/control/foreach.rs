//! `foreach` (CTRL-4, CTRL-5): the body once per item, at most `parallelism` at a time.
//!
//! Owns: item and parallelism checks, launching iterations in index order, fail-fast, and
//! the foreach's record (`iterations`, `failedIterations`) and output (`{items}`).
//! Invariant: an iteration's scope is the foreach's plus `foreach.item` / `foreach.index`;
//! the reported failure is the lowest failed index (FAN-7), whatever order they failed in.

use serde_json::{Map, Value, json};

use super::{fold_frames, param_invalid, stopped, sub_error};
use crate::engine::EngineError;
use crate::engine::graph::Block;
use crate::engine::journal::Frame;
use crate::engine::step::StepCtx;
use crate::engine::strand::InFlight;
use crate::engine::walk::{GraphOutcome, StepEnd};
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{OnError, StepError, StepExecution};
use crate::plan::PlanValue;

/// A `foreach` over more items than this fails with `param_invalid` (a limit on
/// everything: one record per iteration is kept in the run state).
pub const FOREACH_ITEMS_MAX: usize = 100_000;

/// CTRL-4/5: run the foreach whose start `record` is committed, with resolved `params`.
pub(super) async fn foreach<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    params: &Map<String, Value>,
    body: usize,
    parallelism: PlanValue<u64>,
    mut record: StepExecution,
) -> Result<(StepEnd, Vec<StepError>), EngineError> {
    let failed = |record, e| Ok((StepEnd::Done(cx.fail(record, e)), Vec::new()));
    let (items, width) = match checked(params, parallelism) {
        Ok(checked) => checked,
        Err(e) => return failed(record, e),
    };
    let controls = &cx.walk.engine.plan.controls;
    let Some(block) = controls.blocks.get(body) else {
        return failed(record, param_invalid("foreach body has no plan"));
    };
    let graph = Block {
        sub: block,
        slot: &controls.slot,
    };
    // CTRL-5: an error edge overrides onError — the foreach fails fast and routes.
    let fail_fast = cx.error_edge || cx.step.on_error() == OnError::Fail;
    let frames: Vec<Frame> = (0..items.len())
        .map(|k| cx.frame().child(&cx.step.id, "iterations", k))
        .collect();
    let tainted = crate::engine::journal::is_secret_derived(&record);
    let run = Iterations {
        items: &items,
        width,
        fail_fast,
        tainted,
    };
    let (outcomes, canceled) = run.all(cx, &graph, &frames).await?;
    if let Some(end) = stopped(&outcomes) {
        return Ok((end, Vec::new()));
    }
    let (iterations, items_out) = fold_frames(cx, &frames, |_| block.last, &canceled);
    record
        .extra
        .insert("iterations".into(), Value::Array(iterations));
    let failures: Vec<(usize, &StepError)> = outcomes
        .iter()
        .enumerate()
        .filter_map(|(k, o)| match o {
            Some(GraphOutcome::Failed(e)) => Some((k, e)),
            _ => None,
        })
        .collect();
    if fail_fast && let Some((k, e)) = failures.first() {
        // FAN-7 for iterations: the reported error is the lowest failed index.
        return failed(record, sub_error(&format!("iteration {k}"), e));
    }
    // CTRL-5 "continue": failed iterations stay failed in their records, their `items`
    // entry is null, the foreach succeeds; continue-record also lists them.
    let kept = if cx.step.on_error() == OnError::ContinueRecord {
        failures
            .iter()
            .map(|(k, e)| sub_error(&format!("iteration {k}"), e).for_step(&cx.step.id))
            .collect()
    } else {
        Vec::new()
    };
    if !failures.is_empty() {
        record.extra.insert(
            "failedIterations".into(),
            json!(failures.iter().map(|(k, _)| k).collect::<Vec<_>>()),
        );
    }
    let out = json!({"items": items_out});
    Ok((StepEnd::Done(cx.succeed(record, out)), kept))
}

/// The items (at most [`FOREACH_ITEMS_MAX`]) and how many iterations may run at once
/// (`parallelism`, clamped to 1…items).
fn checked(
    params: &Map<String, Value>,
    parallelism: PlanValue<u64>,
) -> Result<(Vec<Value>, usize), StepError> {
    let items = match params.get("items") {
        Some(Value::Array(a)) if a.len() <= FOREACH_ITEMS_MAX => a.clone(),
        Some(Value::Array(a)) => {
            return Err(param_invalid(format!(
                "foreach items has {} entries; at most {FOREACH_ITEMS_MAX} are allowed",
                a.len()
            )));
        }
        other => {
            return Err(param_invalid(format!(
                "foreach items must resolve to an array, got {}",
                other.map_or("nothing".to_owned(), Value::to_string)
            )));
        }
    };
    let parallelism = match parallelism {
        PlanValue::Known(p) => p,
        PlanValue::AtRunTime => match params.get("parallelism").and_then(Value::as_f64) {
            Some(p) if p >= 1.0 && p.fract() == 0.0 => p as u64,
            _ => {
                return Err(param_invalid(
                    "foreach parallelism must resolve to a whole number >= 1",
                ));
            }
        },
    };
    let width = usize::try_from(parallelism)
        .unwrap_or(usize::MAX)
        .clamp(1, items.len().max(1));
    Ok((items, width))
}

/// How one foreach runs its iterations.
struct Iterations<'v> {
    items: &'v [Value],
    /// At most this many in flight.
    width: usize,
    /// The first failure cancels the in-flight iterations and starts no more.
    fail_fast: bool,
    /// SEC-1: the items are secret-derived.
    tainted: bool,
}

impl Iterations<'_> {
    /// Every iteration's outcome (`None`: never started or canceled), and the indices of
    /// the iterations a fail-fast canceled in flight.
    async fn all<C: WorkflowContext>(
        &self,
        cx: &StepCtx<'_, C>,
        graph: &Block<'_>,
        frames: &[Frame],
    ) -> Result<(Vec<Option<GraphOutcome>>, Vec<usize>), EngineError> {
        let n = self.items.len();
        let mut outcomes: Vec<Option<GraphOutcome>> = vec![None; n];
        let mut canceled = Vec::new();
        let mut inflight = InFlight::new();
        let mut next = 0;
        let mut stop = false;
        loop {
            while !stop && inflight.len() < self.width && next < n {
                let mut child = cx.scope.clone();
                // CTRL-4: each iteration's child scope adds foreach.item / foreach.index.
                child.foreach = Some(json!({"item": self.items[next], "index": next}));
                if self.tainted {
                    // SEC-1: items drawn from a secret-derived value are secret-derived.
                    child.taint(&["foreach"]);
                }
                inflight.push(next, cx.walk.sub(graph, &frames[next]).walk(child));
                next += 1;
            }
            let Some((k, result)) = inflight.next().await else {
                break;
            };
            let outcome = result?;
            match &outcome {
                GraphOutcome::Failed(_) if self.fail_fast => {
                    stop = true;
                    canceled = inflight.cancel_all();
                    let id = &cx.step.id;
                    cx.host().log(
                        LogLevel::Warn,
                        &format!(
                            "foreach {id}: iteration {k} failed; canceled in-flight iterations {canceled:?}; {} never started",
                            n - next
                        ),
                        Some(&json!({"step": id, "failedIteration": k,
                                     "canceledIterations": canceled})),
                    );
                }
                // FAN-6 applied to iterations: stop launching, let in-flight ones end.
                GraphOutcome::Suspended(_) | GraphOutcome::Canceled => stop = true,
                _ => {}
            }
            outcomes[k] = Some(outcome);
        }
        Ok((outcomes, canceled))
    }
}
