//! `foreach` (CTRL-4, CTRL-5): the body once per item, at most `parallelism` at a time.
//!
//! Owns: item and parallelism checks, launching iterations in index order, fail-fast, and
//! the foreach's record (`iterations`, `failedIterations`) and output (`{items}`).
//! Invariant: an iteration's scope is the foreach's plus `foreach.item` / `foreach.index`;
//! the reported failure is the lowest failed index (FAN-7), whatever order they failed in.

use serde_json::{Map, Value, json};

use super::{OutputText, fold_frames, param_invalid, stopped, sub_error};
use crate::engine::EngineError;
use crate::engine::graph::Block;
use crate::engine::journal::Frame;
use crate::engine::step::StepCtx;
use crate::engine::strand::InFlight;
use crate::engine::walk::{GraphOutcome, StepEnd};
use crate::host::{LogLevel, WorkflowContext};
use crate::model::{BlockKind, OnError, StepError, StepExecution};
use crate::plan::PlanValue;

/// A `foreach` over more items than this fails with `param_invalid` (a limit on
/// everything: one record per iteration is kept in the run state).
pub(crate) const FOREACH_ITEMS_MAX: usize = 100_000;

/// A foreach's plan: its body block and its parallelism.
pub(super) struct Shape {
    pub(super) body: usize,
    pub(super) parallelism: PlanValue<u64>,
}

/// CTRL-4/5: run the foreach whose start `record` is committed, with resolved `params`
/// (`secret_paths`: where they are secret-derived).
pub(super) async fn foreach<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    params: &Map<String, Value>,
    secret_paths: &[String],
    Shape { body, parallelism }: Shape,
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
    let frames = cx
        .frame()
        .children(&cx.step.id, BlockKind::Iterations.key(), items.len());
    let run = Iterations {
        items: &items,
        width,
        fail_fast,
        tainted: &item_taint(secret_paths, items.len()),
    };
    let (outcomes, canceled) = run.all(cx, &graph, &frames).await?;
    if let Some(end) = stopped(&outcomes) {
        return Ok((end, Vec::new()));
    }
    let items_out = fold_frames(
        cx,
        &mut record,
        BlockKind::Iterations,
        &frames,
        |_| block.last,
        &canceled,
    );
    let failures = failed_iterations(&outcomes);
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
    let out = OutputText::Items(&items_out).write();
    Ok((StepEnd::Done(cx.succeed_text(record, out)), kept))
}

/// The failed iterations, by index.
fn failed_iterations(outcomes: &[Option<GraphOutcome>]) -> Vec<(usize, &StepError)> {
    outcomes
        .iter()
        .enumerate()
        .filter_map(|(k, o)| match o {
            Some(GraphOutcome::Failed(e)) => Some((k, e)),
            _ => None,
        })
        .collect()
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

/// `places` inside an item as pointers into the `foreach` root.
fn item_pointers(places: &[String]) -> Vec<String> {
    places.iter().map(|p| format!("/item{p}")).collect()
}

/// How one foreach runs its iterations.
struct Iterations<'v> {
    items: &'v [Value],
    /// At most this many in flight.
    width: usize,
    /// The first failure cancels the in-flight iterations and starts no more.
    fail_fast: bool,
    /// SEC-1 (D-274): where each item is secret-derived (pointers into the item, `""`:
    /// all of it; empty: nowhere).
    tainted: &'v [Vec<String>],
}

/// D-274: where each of `n` items is secret-derived, from the params' secret paths: all of
/// every item when `items` itself is (or the params are), else per element.
fn item_taint(secret_paths: &[String], n: usize) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new(); n];
    for p in secret_paths {
        if p.is_empty() || p == "/items" {
            out.iter_mut().for_each(|places| places.push(String::new()));
            continue;
        }
        let Some(rest) = p.strip_prefix("/items/") else {
            continue;
        };
        let (index, inside) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        if let Some(places) = index.parse::<usize>().ok().and_then(|i| out.get_mut(i)) {
            places.push(inside.to_owned());
        }
    }
    out
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
        // Each iteration's `foreach` object is a copy of this one with its two values set:
        // copying a two-member map keeps its hashes, building one hashes both keys anew.
        let mut template = Map::with_capacity(2);
        template.insert("item".to_owned(), Value::Null);
        template.insert("index".to_owned(), Value::Null);
        loop {
            while !stop && inflight.len() < self.width && next < n {
                let mut child = cx.scope.clone();
                // CTRL-4: each iteration's child scope adds foreach.item / foreach.index.
                let mut foreach = template.clone();
                for (k, v) in foreach.iter_mut() {
                    if k == "item" {
                        *v = self.items[next].clone();
                    } else {
                        *v = Value::from(next);
                    }
                }
                child.foreach = Some(Value::Object(foreach));
                // SEC-1: an item drawn from a secret-derived value is secret-derived, where it is.
                if let Some(places) = self.tainted.get(next) {
                    crate::engine::taint_pointers(&mut child, "foreach", &item_pointers(places));
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

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{FOREACH_ITEMS_MAX, checked};
    use crate::engine::testing::{TestHost, act, block_on, control, run, workflow};
    use crate::model::{RunStatus, StepStatus};
    use crate::plan::PlanValue;

    /// A foreach over `items` whose one-step body echoes the item's script.
    fn looped(items: Value, extra: Value) -> crate::model::Workflow {
        let mut with = json!({"items": items, "body": ["work"]});
        if let (Some(w), Value::Object(e)) = (with.as_object_mut(), extra) {
            w.extend(e);
        }
        let mut lp = control("loop", "foreach", with);
        if let Some(on_error) = lp.get("with").and_then(|w| w.get("onError")).cloned() {
            lp["onError"] = on_error;
            lp["with"].as_object_mut().map(|w| w.remove("onError"));
        }
        workflow(
            json!([
                lp,
                act(
                    "work",
                    json!({
                "n": {"$": "foreach.item.n"},
                "fail": {"$": "foreach.item.fail"},
                "yields": {"$": "foreach.item.yields"},
                "index": {"$": "foreach.index"}})
                )
            ]),
            json!([]),
        )
    }

    /// D-188: a frame a store gives back as JSON that typed records would not reproduce
    /// (here each record carries `"error": null`) is still this iteration's frame: its
    /// finished step is reused, not invoked again; the next step's record is upserted into
    /// the JSON; the fold keeps every member verbatim.
    #[test]
    fn a_frame_given_back_as_json_is_resumed_not_invoked_again() {
        let wf = workflow(
            json!([
                control(
                    "loop",
                    "foreach",
                    json!({"items": [10, 20], "body": ["a", "b"]})
                ),
                act("a", json!({"n": {"$": "foreach.item"}})),
                act("b", json!({"from_a": {"$": "steps.a.output.n"}}))
            ]),
            json!([{"from": "a", "to": "b"}]),
        );
        let clean = run(&wf, &TestHost::new());
        assert_eq!(clean.status, RunStatus::Succeeded);
        // What a crash after iteration 0's `a` left, as a store that writes every absent
        // field as `null` gives it back.
        let mut crashed = clean.state.clone();
        crashed.status = RunStatus::Running;
        crashed.output = None;
        let mut lp = crate::model::StepExecution::clone(&crashed.steps["loop"]);
        let iterations = lp.blocks.take().expect("iterations").into_json();
        lp.status = StepStatus::Running;
        lp.output = None;
        lp.finished_at = None;
        crashed.steps.insert("loop".into(), std::sync::Arc::new(lp));
        let mut a = iterations[0]["a"].clone();
        a["error"] = Value::Null;
        let key = "frame:/loop.iterations[0]";
        crashed.extra.insert(key.into(), json!({"a": a}));
        let text = serde_json::to_string(&crashed).expect("json");
        let stored: crate::model::RunState = serde_json::from_str(&text).expect("state");
        assert!(stored.frames.is_empty() && stored.extra.contains_key(key));

        let host = TestHost::with_state(stored);
        let engine = crate::engine::Engine::new(&wf).expect("engine");
        let resumed = block_on(engine.resume("r1", &host)).expect("resume");
        assert_eq!(resumed.status, RunStatus::Succeeded);
        assert_eq!(
            host.invoked_ids(),
            ["b", "a", "b"],
            "iteration 0's a is not invoked again"
        );
        assert_eq!(resumed.output, clean.output);
        let record = &resumed.state.steps["loop"];
        assert!(record.blocks.is_none(), "a JSON frame folds as JSON");
        let folded = &record.extra["iterations"];
        assert_eq!(folded[0]["a"], a, "kept verbatim, its null member too");
        assert_eq!(folded[0]["b"]["output"], json!({"from_a": 10}));
        assert_eq!(folded[1], iterations[1]);
        assert!(resumed.state.frames.is_empty() && !resumed.state.extra.contains_key(key));
    }

    fn item(n: u64, fail: bool, yields: u64) -> Value {
        json!({"n": n, "fail": fail, "yields": yields})
    }

    #[test]
    fn fail_fast_reports_the_failed_iteration_and_cancels_the_rest() {
        // Iteration 2 fails first (1 yield); 0 and 1 are still in flight; 3 never starts.
        let items = json!([
            item(0, false, 5),
            item(1, true, 3),
            item(2, true, 1),
            item(3, false, 0)
        ]);
        let host = TestHost::new();
        let r = run(&looped(items, json!({"parallelism": 3})), &host);
        assert_eq!(r.status, RunStatus::Failed);
        let error = r.error.expect("run error");
        assert_eq!(error.code, "boom");
        assert_eq!(error.step_id.as_deref(), Some("loop"));
        assert!(
            error.message.starts_with("iteration 2, step work:"),
            "{}",
            error.message
        );
        let indices: Vec<Value> = host
            .invoked
            .borrow()
            .iter()
            .map(|(_, p)| p["index"].clone())
            .collect();
        assert_eq!(
            indices,
            [json!(0), json!(1), json!(2)],
            "item 3 never starts"
        );
        let record = crate::model::StepExecution::clone(&r.state.steps["loop"]);
        assert_eq!(record.status, StepStatus::Failed);
        let json = record.into_json();
        let iterations = json["iterations"].as_array().expect("iterations");
        assert_eq!(iterations.len(), 4);
        for k in [0, 1] {
            assert_eq!(iterations[k]["work"]["status"], "skipped", "iteration {k}");
            assert_eq!(iterations[k]["work"]["canceled"], true, "iteration {k}");
        }
        assert_eq!(iterations[2]["work"]["status"], "failed");
        assert_eq!(iterations[3], json!({}));
        let data = host.log_data("canceled in-flight iterations").expect("log");
        assert_eq!(data["failedIteration"], 2);
        assert_eq!(data["canceledIterations"], json!([0, 1]));
    }

    #[test]
    fn fail_fast_with_everything_failing_reports_the_lowest_index() {
        // Sequential (parallelism 1): iteration 0 fails and nothing else starts.
        let items = json!([item(0, true, 0), item(1, true, 0)]);
        let host = TestHost::new();
        let r = run(&looped(items, json!({})), &host);
        let error = r.error.expect("run error");
        assert!(
            error.message.starts_with("iteration 0,"),
            "{}",
            error.message
        );
        assert_eq!(host.invoked.borrow().len(), 1);
    }

    #[test]
    fn continue_record_keeps_failed_iterations_null_and_lists_them() {
        let items = json!([item(10, false, 2), item(11, true, 0), item(12, false, 0)]);
        let host = TestHost::new();
        let wf = looped(
            items,
            json!({"parallelism": 3, "onError": "continue-record"}),
        );
        let r = run(&wf, &host);
        assert_eq!(r.status, RunStatus::Succeeded);
        let record = &r.state.steps["loop"];
        assert_eq!(record.status, StepStatus::Succeeded);
        let out = &record.output.as_ref().expect("output").to_value();
        let ns: Vec<Value> = out["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|v| v.get("n").cloned().unwrap_or(Value::Null))
            .collect();
        assert_eq!(
            ns,
            [json!(10), Value::Null, json!(12)],
            "index order, not finish order"
        );
        assert_eq!(record.extra["failedIterations"], json!([1]));
        assert_eq!(r.state.step_errors.len(), 1);
        assert_eq!(r.state.step_errors[0].step_id.as_deref(), Some("loop"));
        assert!(r.state.step_errors[0].message.starts_with("iteration 1,"));
    }

    #[test]
    fn parallelism_bounds_the_iterations_in_flight() {
        let items: Vec<Value> = (0..6).map(|n| item(n, false, 3)).collect();
        for (parallelism, expected) in [(1, 1), (2, 2), (4, 4), (100, 6)] {
            let host = TestHost::new();
            let r = run(
                &looped(json!(items), json!({"parallelism": parallelism})),
                &host,
            );
            assert_eq!(r.status, RunStatus::Succeeded);
            assert_eq!(
                host.max_in_flight.get(),
                expected,
                "parallelism {parallelism}"
            );
        }
    }

    #[test]
    fn items_and_parallelism_are_checked() {
        let params = |v: Value| v.as_object().cloned().unwrap_or_default();
        let known = PlanValue::Known(2);
        let e = checked(&params(json!({"items": "abc"})), known).expect_err("not an array");
        assert_eq!(e.code, "param_invalid");
        assert_eq!(
            e.message,
            "foreach items must resolve to an array, got \"abc\""
        );
        let e = checked(&params(json!({})), known).expect_err("absent");
        assert!(e.message.ends_with("got nothing"));
        let many = vec![Value::Null; FOREACH_ITEMS_MAX + 1];
        let e = checked(&params(json!({"items": many})), known).expect_err("too many");
        assert!(e.message.contains("at most 100000"), "{}", e.message);
        let at_run = PlanValue::AtRunTime;
        for bad in [json!(0), json!(1.5), json!("2"), Value::Null] {
            let p = params(json!({"items": [1], "parallelism": bad}));
            assert!(checked(&p, at_run).is_err(), "parallelism {bad}");
        }
        let p = params(json!({"items": [1, 2, 3], "parallelism": 2.0}));
        assert_eq!(checked(&p, at_run).map(|(_, w)| w), Ok(2));
        // The width is clamped to the item count, and to 1 for no items.
        let p = params(json!({"items": [1, 2, 3]}));
        assert_eq!(
            checked(&p, PlanValue::Known(u64::MAX)).map(|(_, w)| w),
            Ok(3)
        );
        let p = params(json!({"items": []}));
        assert_eq!(checked(&p, PlanValue::Known(5)).map(|(_, w)| w), Ok(1));
    }
}
