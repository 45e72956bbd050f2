//! The canonical controls, interpreted natively (CTRL-1…10), and `@w6w/call` (CALL-1…3).
//!
//! Owns: what `if`, `foreach`, `parallel`, `wait`, `aggregate`, `merge` and `call` do at
//! run time — one file per control, this one dispatches and holds what they share.
//! Companion §5 item 2: the *engine* decides a control's outcome; the host computes
//! nothing and is never invoked for a control. Invariant: controls and calls run no retry
//! loop (RETRY-6) and carry no meta (CALL-3, META-4); sub-block steps record into frames of
//! their control and never take part in main-graph routing (CTRL-9).

mod call;
mod condition;
mod foreach;
mod join;
mod parallel;
mod wait;

use std::sync::Arc;

use serde_json::{Map, Value};

use super::journal::{Extras, Frame, FrameView};
use super::step::StepCtx;
use super::walk::{GraphOutcome, StepEnd};
use super::{EngineCode, EngineError};
use crate::expr::{ResolveError, Resolved};
use crate::host::WorkflowContext;
use crate::json::JsonText;
use crate::model::{
    BlockKind, Blocks, FrameRecords, Phase, StepError, StepExecution, StepStatus, records_json,
};
use crate::plan::ControlParams;

pub(crate) use call::CALL_DEPTH_MAX;
pub(crate) use call::call;

/// Run one control step (CTRL-2…8). Returns its end and, under `continue-record`, the
/// failures it swallowed.
pub(crate) async fn run<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
) -> Result<(StepEnd, Vec<StepError>), EngineError> {
    let Some(control) = cx.walk.engine.plan.controls.control(cx.i) else {
        let e = StepError::new(
            EngineCode::UnknownControl,
            format!("step {:?} is not a canonical control", cx.step.id),
            Phase::Resolution,
        );
        return Ok((StepEnd::Done(cx.fail(cx.start_record(), e)), Vec::new()));
    };
    let resolved = cx.resolve();
    if let ControlParams::Wait(spec) = &control.params {
        return Ok((wait::wait(cx, *spec, resolved).await?, Vec::new()));
    }
    // RUN-6 / D-73: a control resumed after a crash continues the same attempt (its
    // finished frames are carried), so it keeps the time that attempt started.
    let carried_start = cx
        .existing
        .as_ref()
        .filter(|r| r.status == StepStatus::Running)
        .and_then(|r| r.started_at.clone());
    // RUN-2: control start (a resumed control re-runs; its frames are reused).
    let started = start_with(cx, resolved, carried_start, Map::new(), Extras::default()).await?;
    let (
        record,
        Resolved {
            params,
            secret_paths,
        },
    ) = match started {
        Ok(started) => started,
        Err(failed) => return Ok((StepEnd::Done(failed), Vec::new())),
    };
    let done = |r: Result<Value, StepError>, record| match r {
        Ok(out) => StepEnd::Done(cx.succeed(record, out)),
        Err(e) => StepEnd::Done(cx.fail(record, e)),
    };
    Ok(match &control.params {
        ControlParams::If => (done(condition::output(&params), record), Vec::new()),
        ControlParams::Aggregate { mode } => (
            done(join::join(*mode, &params, &cx.inbound, false), record),
            Vec::new(),
        ),
        ControlParams::Merge { mode } => (
            done(join::join(*mode, &params, &cx.inbound, true), record),
            Vec::new(),
        ),
        ControlParams::Foreach { body, parallelism } => {
            let shape = foreach::Shape {
                body: *body,
                parallelism: *parallelism,
            };
            foreach::foreach(cx, &params, &secret_paths, shape, record).await?
        }
        ControlParams::Parallel { branches, strategy } => (
            parallel::parallel(cx, &params, branches, *strategy, record).await?,
            Vec::new(),
        ),
        ControlParams::Wait(_) => (StepEnd::Canceled, Vec::new()),
    })
}

/// RUN-2 start of a control or call step: the start checkpoint (recorded input is the
/// redacted params, SEC-1; record and run-level `extra` keys in the same checkpoint, e.g. a
/// call's dispatch key, D-120), then the whole [`Resolved`] (its secret paths) — or, when
/// resolution failed, the step's terminal failed record (phase `resolution`, never
/// retried: RETRY-6).
async fn start_with<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    resolved: Result<Resolved, ResolveError>,
    carried_start: Option<String>,
    record_extra: Map<String, Value>,
    extras: Extras,
) -> Result<Result<(StepExecution, Resolved), StepExecution>, EngineError> {
    let mut record = cx.start_record();
    if let Some(at) = carried_start {
        record.started_at = Some(at);
    }
    record.extra.extend(record_extra);
    if let Ok(r) = &resolved {
        record.input = Some(r.redacted_text());
        super::journal::mark_secret_derived(&mut record, r);
    }
    cx.journal()
        .commit_step(cx.host(), cx.frame(), record.clone(), extras)
        .await?;
    Ok(match resolved {
        Ok(r) => Ok((record, r)),
        Err(e) => {
            let error = StepError::new(e.code.as_str(), e.message, Phase::Resolution);
            Err(cx.fail(record, error))
        }
    })
}

/// A control's own parameter problem: phase `resolution`, never retried.
fn param_invalid(message: impl Into<String>) -> StepError {
    let mut e = StepError::new(EngineCode::ParamInvalid, message, Phase::Resolution);
    e.retryable = false;
    e
}

/// A sub-block instance's typed records with in-flight steps marked canceled: shared as
/// they are unless one is marked.
fn closed(records: Arc<FrameRecords>, canceled: bool) -> Arc<FrameRecords> {
    if !canceled || !records.values().any(|r| r.status == StepStatus::Running) {
        return records;
    }
    let mut records = Arc::unwrap_or_clone(records);
    for r in records.values_mut() {
        if r.status == StepStatus::Running {
            let r = Arc::make_mut(r);
            r.status = StepStatus::Skipped;
            r.extra.insert("canceled".into(), Value::Bool(true));
        }
    }
    Arc::new(records)
}

/// A sub-block instance's records as JSON, with in-flight steps marked canceled (when
/// some instance's frame is JSON, D-188).
fn closed_json(records: Option<FrameView>, canceled: bool) -> Value {
    match records {
        None => Value::Object(Map::new()),
        Some(FrameView::Typed(records)) => {
            records_json(Arc::unwrap_or_clone(closed(records, canceled)))
        }
        // D-188: a frame kept as JSON, closed as JSON, every member verbatim.
        Some(FrameView::Json(mut records)) => {
            if canceled {
                for r in records.values_mut() {
                    if r.get("status").and_then(Value::as_str) == Some("running")
                        && let Value::Object(m) = r
                    {
                        m.insert("status".into(), Value::from("skipped"));
                        m.insert("canceled".into(), Value::Bool(true));
                    }
                }
            }
            Value::Object(records)
        }
    }
}

/// The output of a sub-block instance: its last step's output when it succeeded, as the
/// text its record holds (a control writes the texts into its own output without parsing
/// them, D-195).
fn block_output(records: Option<&FrameView>, last_id: &str) -> JsonText {
    match records {
        None => None,
        Some(FrameView::Typed(r)) => r
            .get(last_id)
            .filter(|r| r.status == StepStatus::Succeeded)
            .and_then(|r| r.output.clone()),
        Some(FrameView::Json(r)) => r
            .get(last_id)
            .filter(|r| r.get("status").and_then(Value::as_str) == Some("succeeded"))
            .and_then(|r| r.get("output").map(JsonText::new)),
    }
    .unwrap_or_else(JsonText::null)
}

/// A foreach's or a parallel's output, written from its instances' output texts as they
/// are, without parsing them (D-195): the bytes `serde_json` writes for the same value.
#[derive(Debug, Clone, Copy)]
pub(super) enum OutputText<'a> {
    /// CTRL-4 `{"items": [...]}`.
    Items(&'a [JsonText]),
    /// CTRL-6 `{"branches": [...]}`.
    Branches(&'a [JsonText]),
    /// CTRL-6 `race` / `any`: `{"winner": w, "output": ...}` (`null` for no output).
    Winner(usize, Option<&'a JsonText>),
}

impl OutputText<'_> {
    pub(super) fn write(self) -> JsonText {
        #[derive(serde::Serialize)]
        struct Items<'a> {
            items: &'a [JsonText],
        }
        #[derive(serde::Serialize)]
        struct Branches<'a> {
            branches: &'a [JsonText],
        }
        #[derive(serde::Serialize)]
        struct Winner<'a> {
            winner: usize,
            output: &'a JsonText,
        }
        match self {
            OutputText::Items(items) => JsonText::of(&Items { items }),
            OutputText::Branches(branches) => JsonText::of(&Branches { branches }),
            OutputText::Winner(winner, output) => {
                let null = JsonText::null();
                let output = output.unwrap_or(&null);
                JsonText::of(&Winner { winner, output })
            }
        }
    }
}

/// A sub-block step's error as its control reports it: `what` (the instance) and the
/// inner step named in the message; the control's own step id is set by routing.
fn sub_error(what: &str, error: &StepError) -> StepError {
    let mut e = error.clone();
    let inner = error.step_id.as_deref().unwrap_or("?");
    e.message = format!("{what}, step {inner}: {}", error.message);
    e.step_id = None;
    e
}

/// How a control's sub-blocks stopped without deciding it: the first suspension by
/// instance index (FAN-7), else a cancellation; `None` when every instance finished.
fn stopped(outcomes: &[Option<GraphOutcome>]) -> Option<StepEnd> {
    if let Some(s) = outcomes.iter().flatten().find_map(|o| match o {
        GraphOutcome::Suspended(s) => Some(s.clone()),
        _ => None,
    }) {
        return Some(StepEnd::Suspended(s));
    }
    outcomes
        .iter()
        .flatten()
        .any(|o| *o == GraphOutcome::Canceled)
        .then_some(StepEnd::Canceled)
}

/// Every instance's records, closed (`canceled` instances' in-flight steps marked) and
/// set on the control's `record` under `kind` — typed and shared when every frame is
/// (D-189), else as JSON — and each instance's output text (its last step's, when it
/// succeeded).
fn fold_frames<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    record: &mut StepExecution,
    kind: BlockKind,
    frames: &[Frame],
    last_ids: impl Fn(usize) -> usize,
    canceled: &[usize],
) -> Vec<JsonText> {
    let steps = &cx.walk.engine.workflow.steps;
    let views: Vec<Option<FrameView>> = frames
        .iter()
        .map(|f| cx.journal().frame_records(f))
        .collect();
    let outputs = views
        .iter()
        .enumerate()
        .map(|(k, v)| block_output(v.as_ref(), &steps[last_ids(k)].id))
        .collect();
    if views.iter().any(|v| matches!(v, Some(FrameView::Json(_)))) {
        let records = views
            .into_iter()
            .enumerate()
            .map(|(k, v)| closed_json(v, canceled.contains(&k)))
            .collect();
        record
            .extra
            .insert(kind.key().into(), Value::Array(records));
        return outputs;
    }
    let empty = Arc::new(FrameRecords::default());
    let frames = views
        .into_iter()
        .enumerate()
        .map(|(k, v)| match v {
            Some(FrameView::Typed(r)) => closed(r, canceled.contains(&k)),
            _ => Arc::clone(&empty),
        })
        .collect();
    record.extra.shift_remove(kind.key());
    // Written where inserting the JSON here would have put it: after every key so far.
    let after = record.extra.keys().next_back().cloned();
    record.blocks = Some(Box::new(Blocks {
        kind,
        frames,
        after,
    }));
    outputs
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn json_value() -> impl Strategy<Value = Value> {
        crate::json::arb_tree(crate::json::arb_leaf(), "[a-z\"]{0,3}")
    }

    proptest! {
        /// D-195: a control's output written from its instances' texts is, byte for byte,
        /// what serde_json writes for the value built from their values (CTRL-4, CTRL-6).
        #[test]
        fn an_output_written_from_texts_is_the_values_json(
            values in prop::collection::vec(json_value(), 0..5),
            winner in 0usize..6,
        ) {
            let texts: Vec<JsonText> = values.iter().map(JsonText::new).collect();
            let cases = [
                (OutputText::Items(&texts), json!({"items": values})),
                (OutputText::Branches(&texts), json!({"branches": values})),
                (
                    OutputText::Winner(winner, texts.get(winner)),
                    json!({"winner": winner, "output": values.get(winner)}),
                ),
            ];
            for (out, want) in cases {
                let text = out.write();
                let expected = JsonText::new(&want);
                prop_assert_eq!(text.as_str(), expected.as_str());
                prop_assert_eq!(text.to_value(), want);
            }
        }
    }
}
