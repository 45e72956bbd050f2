//! `parallel` (CTRL-6): every branch at once, decided by `all`, `race` or `any`.
//!
//! Owns: launching the branches, deciding the strategy as branches end, canceling the
//! rest, and the parallel's record (`branches`) and output. Invariant: branches are
//! launched — and ties go — in declared order (the join set polls in launch order); a
//! decision cancels every branch still in flight and marks its running steps canceled.

use serde_json::{Map, Value, json};

use super::{OutputText, fold_frames, param_invalid, stopped, sub_error};
use crate::engine::EngineError;
use crate::engine::graph::Block;
use crate::engine::journal::Frame;
use crate::engine::step::StepCtx;
use crate::engine::strand::InFlight;
use crate::engine::walk::{GraphOutcome, StepEnd};
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{BlockKind, StepError, StepExecution};
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
    let frames = cx
        .frame()
        .children(&cx.step.id, BlockKind::Branches.key(), graphs.len());
    let decided = run_branches(cx, &graphs, &frames, strategy).await?;
    if decided.winner.is_none()
        && let Some(end) = stopped(&decided.outcomes)
    {
        return Ok(end);
    }
    let outputs = fold_frames(
        cx,
        &mut record,
        BlockKind::Branches,
        &frames,
        |b| graphs[b].sub.last,
        &decided.canceled,
    );
    if let Some(w) = decided.winner {
        if let Some(GraphOutcome::Failed(e)) = &decided.outcomes[w] {
            let what = format!("branch {w} won the race by failing");
            return failed(record, sub_error(&what, e));
        }
        let out = OutputText::Winner(w, outputs.get(w)).write();
        return Ok(StepEnd::Done(cx.succeed_text(record, out)));
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
    let out = OutputText::Branches(&outputs).write();
    Ok(StepEnd::Done(cx.succeed_text(record, out)))
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::strategy_of;
    use crate::engine::testing::{TestHost, act, control, run, workflow};
    use crate::model::{RunStatus, StepStatus, Workflow};
    use crate::plan::{ParallelStrategy, PlanValue};

    /// A parallel of one-step branches `a`, `b`, `c` with the given scripts.
    fn branches(strategy: &str, scripts: [Value; 3]) -> Workflow {
        let [a, b, c] = scripts;
        workflow(
            json!([
                control(
                    "par",
                    "parallel",
                    json!({"branches": [["a"], ["b"], ["c"]], "strategy": strategy})
                ),
                act("a", a),
                act("b", b),
                act("c", c)
            ]),
            json!([]),
        )
    }

    fn ok(yields: u64) -> Value {
        json!({"yields": yields})
    }

    fn failing(yields: u64) -> Value {
        json!({"yields": yields, "fail": true})
    }

    fn branch_status(r: &crate::engine::RunResult, b: usize, id: &str) -> Value {
        let record = crate::model::StepExecution::clone(&r.state.steps["par"]);
        record.into_json()["branches"][b][id]["status"].clone()
    }

    #[test]
    fn race_is_won_by_the_first_branch_to_end() {
        let host = TestHost::new();
        let r = run(&branches("race", [ok(5), ok(1), ok(3)]), &host);
        assert_eq!(r.status, RunStatus::Succeeded);
        let out = r.state.steps["par"]
            .output
            .as_ref()
            .expect("output")
            .to_value();
        assert_eq!(out["winner"], 1);
        assert_eq!(out["output"], json!({"yields": 1}));
        for (b, id) in [(0, "a"), (2, "c")] {
            assert_eq!(
                branch_status(&r, b, id),
                "skipped",
                "loser {id} is canceled"
            );
        }
        let data = host.log_data("decided the race strategy").expect("log");
        assert_eq!(data["canceledBranches"], json!([0, 2]));
    }

    #[test]
    fn race_won_by_a_failure_fails_the_parallel() {
        let host = TestHost::new();
        let r = run(&branches("race", [ok(5), ok(3), failing(1)]), &host);
        assert_eq!(r.status, RunStatus::Failed);
        let error = r.error.expect("error");
        assert_eq!(error.code, "boom");
        assert!(
            error
                .message
                .starts_with("branch 2 won the race by failing, step c:"),
            "{}",
            error.message
        );
    }

    #[test]
    fn any_is_won_by_the_first_success_not_the_first_end() {
        let host = TestHost::new();
        let r = run(&branches("any", [ok(6), ok(4), failing(1)]), &host);
        assert_eq!(r.status, RunStatus::Succeeded);
        let out = r.state.steps["par"]
            .output
            .as_ref()
            .expect("output")
            .to_value();
        assert_eq!(out["winner"], 1);
        assert_eq!(branch_status(&r, 0, "a"), "skipped");
        assert_eq!(branch_status(&r, 2, "c"), "failed");
    }

    #[test]
    fn any_with_every_branch_failing_names_the_first_by_index() {
        let host = TestHost::new();
        let r = run(
            &branches("any", [failing(3), failing(1), failing(2)]),
            &host,
        );
        assert_eq!(r.status, RunStatus::Failed);
        let error = r.error.expect("error");
        assert!(
            error
                .message
                .starts_with("every branch failed; first, branch 0, step a:"),
            "{}",
            error.message
        );
    }

    #[test]
    fn all_collects_outputs_in_declared_order() {
        let host = TestHost::new();
        let r = run(&branches("all", [ok(3), ok(1), ok(2)]), &host);
        assert_eq!(r.status, RunStatus::Succeeded);
        assert_eq!(
            host.invoked_ids(),
            ["a", "b", "c"],
            "launched in declared order"
        );
        let out = r.state.steps["par"]
            .output
            .as_ref()
            .expect("output")
            .to_value();
        assert_eq!(
            out,
            json!({"branches": [{"yields": 3}, {"yields": 1}, {"yields": 2}]})
        );
    }

    #[test]
    fn all_fails_on_the_first_failure_and_cancels_the_rest() {
        let host = TestHost::new();
        let r = run(&branches("all", [ok(5), failing(1), ok(0)]), &host);
        assert_eq!(r.status, RunStatus::Failed);
        let error = r.error.clone().expect("error");
        assert!(
            error.message.starts_with("branch 1, step b:"),
            "{}",
            error.message
        );
        assert_eq!(branch_status(&r, 0, "a"), "skipped", "a was in flight");
        assert_eq!(branch_status(&r, 2, "c"), "succeeded", "c ended first");
        assert_eq!(r.state.steps["par"].status, StepStatus::Failed);
    }

    #[test]
    fn a_strategy_resolved_at_run_time_is_checked() {
        let params = |v: Value| v.as_object().cloned().unwrap_or_default();
        let at_run = PlanValue::AtRunTime;
        assert_eq!(
            strategy_of(at_run, &params(json!({}))),
            Ok(ParallelStrategy::All)
        );
        assert_eq!(
            strategy_of(at_run, &params(json!({"strategy": "any"}))),
            Ok(ParallelStrategy::Any)
        );
        let e = strategy_of(at_run, &params(json!({"strategy": "first"}))).expect_err("bad");
        assert_eq!(e.code, "param_invalid");
        assert!(e.message.ends_with("got \"first\""), "{}", e.message);
        let known = PlanValue::Known(ParallelStrategy::Race);
        assert_eq!(
            strategy_of(known, &params(json!({"strategy": "x"}))),
            Ok(ParallelStrategy::Race)
        );
    }
}
