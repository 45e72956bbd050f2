//! `parallel` (CTRL-6): every branch at once, decided by `all`, `race` or `any`.
//!
//! Owns: launching the branches, deciding the strategy as branches end, canceling the
//! rest, and the parallel's record (`branches`) and output. Invariant: branches are
//! launched — and ties go — in declared order (the join set polls in launch order); a
//! decision cancels every branch still in flight and marks its running steps canceled.

use serde_json::{Map, Value, json};

use super::{fold_frames, param_invalid, stopped, sub_error};
use crate::engine::EngineError;
use crate::engine::graph::Block;
use crate::engine::journal::Frame;
use crate::engine::step::StepCtx;
use crate::engine::strand::InFlight;
use crate::engine::walk::{GraphOutcome, StepEnd};
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{StepError, StepExecution};
use crate::plan::{ParallelStrategy, PlanValue};

/// CTRL-6: run the parallel whose start `record` is committed, with resolved `params`.
pub(super) async fn parallel<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    params: &Map<String, Value>,
    branches: &[usize],
    strategy: PlanValue<ParallelStrategy>,
    mut record: StepExecution,
) -> Result<StepEnd, EngineError> {
    let failed = |record, e| Ok(StepEnd::Done(cx.fail(record, e)));
    let strategy = match strategy_of(strategy, params) {
        Ok(s) => s,
        Err(e) => return failed(record, e),
    };
    let controls = &cx.walk.engine.plan.controls;
    let mut graphs = Vec::with_capacity(branches.len());
    for &b in branches {
        let Some(sub) = controls.blocks.get(b) else {
            return failed(record, param_invalid("parallel branch has no plan"));
        };
        graphs.push(Block {
            sub,
            slot: &controls.slot,
        });
    }
    let frames: Vec<Frame> = (0..graphs.len())
        .map(|b| cx.frame().child(&cx.step.id, "branches", b))
        .collect();
    let decided = run_branches(cx, &graphs, &frames, strategy).await?;
    if decided.winner.is_none()
        && let Some(end) = stopped(&decided.outcomes)
    {
        return Ok(end);
    }
    let (records, outputs) = fold_frames(cx, &frames, |b| graphs[b].sub.last, &decided.canceled);
    record
        .extra
        .insert("branches".into(), Value::Array(records));
    if let Some(w) = decided.winner {
        if let Some(GraphOutcome::Failed(e)) = &decided.outcomes[w] {
            let what = format!("branch {w} won the race by failing");
            return failed(record, sub_error(&what, e));
        }
        let out = json!({"winner": w, "output": outputs[w]});
        return Ok(StepEnd::Done(cx.succeed(record, out)));
    }
    let first_failure = decided
        .outcomes
        .iter()
        .enumerate()
        .find_map(|(b, o)| match o {
            Some(GraphOutcome::Failed(e)) => Some((b, e)),
            _ => None,
        });
    if let Some((b, e)) = first_failure {
        let what = if strategy == ParallelStrategy::Any {
            format!("every branch failed; first, branch {b}")
        } else {
            format!("branch {b}")
        };
        return failed(record, sub_error(&what, e));
    }
    let out = json!({"branches": outputs});
    Ok(StepEnd::Done(cx.succeed(record, out)))
}

/// The strategy: planned, or resolved at run time (`all` when absent).
fn strategy_of(
    strategy: PlanValue<ParallelStrategy>,
    params: &Map<String, Value>,
) -> Result<ParallelStrategy, StepError> {
    match strategy {
        PlanValue::Known(s) => Ok(s),
        PlanValue::AtRunTime => match params.get("strategy").and_then(Value::as_str) {
            Some("all") | None => Ok(ParallelStrategy::All),
            Some("race") => Ok(ParallelStrategy::Race),
            Some("any") => Ok(ParallelStrategy::Any),
            Some(other) => Err(param_invalid(format!(
                "parallel strategy must be \"all\", \"race\" or \"any\", got {other:?}"
            ))),
        },
    }
}

fn strategy_name(strategy: ParallelStrategy) -> &'static str {
    match strategy {
        ParallelStrategy::All => "all",
        ParallelStrategy::Race => "race",
        ParallelStrategy::Any => "any",
    }
}

/// How the branches ended.
struct Decided {
    /// Per branch (`None`: canceled before it ended).
    outcomes: Vec<Option<GraphOutcome>>,
    /// `race` / `any`: the branch that decided.
    winner: Option<usize>,
    /// Branches canceled in flight by the decision.
    canceled: Vec<usize>,
}

/// Whether branch `b` ending with `outcome` decides the parallel, and whether it wins.
fn decides(outcome: &GraphOutcome, strategy: ParallelStrategy) -> (bool, bool) {
    match (outcome, strategy) {
        // Open question 3: under `all` the first failure cancels the rest.
        (GraphOutcome::Failed(_), ParallelStrategy::All) => (true, false),
        // `race`: the first branch to complete wins, failed or not.
        (GraphOutcome::Succeeded | GraphOutcome::Failed(_), ParallelStrategy::Race) => (true, true),
        // `any`: the first branch to succeed wins.
        (GraphOutcome::Succeeded, ParallelStrategy::Any) => (true, true),
        _ => (false, false),
    }
}

/// Every branch at once, until the strategy is decided or every branch has ended.
async fn run_branches<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    graphs: &[Block<'_>],
    frames: &[Frame],
    strategy: ParallelStrategy,
) -> Result<Decided, EngineError> {
    let mut d = Decided {
        outcomes: vec![None; graphs.len()],
        winner: None,
        canceled: Vec::new(),
    };
    let mut inflight = InFlight::new();
    for (b, g) in graphs.iter().enumerate() {
        inflight.push(b, cx.walk.sub(g, &frames[b]).walk(cx.scope.clone()));
    }
    while let Some((b, result)) = inflight.next().await {
        let outcome = result?;
        let (decided, wins) = decides(&outcome, strategy);
        if wins {
            d.winner = Some(b);
        }
        d.outcomes[b] = Some(outcome);
        if decided {
            d.canceled = inflight.cancel_all();
            if !d.canceled.is_empty() {
                let id = &cx.step.id;
                cx.host().log(
                    LogLevel::Info,
                    &format!(
                        "parallel {id}: branch {b} decided the {} strategy; canceled branches {:?}",
                        strategy_name(strategy),
                        d.canceled
                    ),
                    Some(&json!({"step": id, "decidedBy": b, "canceledBranches": d.canceled})),
                );
            }
            break;
        }
    }
    Ok(d)
}
