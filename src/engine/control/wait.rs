//! `wait` (CTRL-7): schedule a resume with a fresh token and suspend the run; complete when
//! the run is resumed with that token.
//!
//! Owns: the wait's time arithmetic (a duration from now, or an absolute instant), the
//! resume token (`<runId>:wait:<seq>:<stepId>`), its durable record (`resumeToken`,
//! `scheduledFor`) and the `schedule` directive. Invariant: the token is durable before
//! the host may fire it, and a wait that already holds a durable token never mints another
//! (engine.md invariant 8).

use serde_json::{Map, Value, json};

use super::param_invalid;
use crate::engine::journal::{Extras, is_secret_derived, mark_secret_derived};
use crate::engine::step::StepCtx;
use crate::engine::walk::{StepEnd, Suspension};
use crate::engine::{EngineCode, EngineError};
use crate::expr::{ResolveError, Resolved};
use crate::host::{HostError, LogLevel, ScheduleDirective, WorkflowContext, iso8601_from_ms};
use crate::model::{Phase, StepError, StepExecution, StepStatus};
use crate::plan::{PlanValue, WaitSpec, parse_duration_ms, parse_timestamp_ms};

/// CTRL-7: run the `wait` step of `cx` (its `with` block resolved to `resolved`).
pub(super) async fn wait<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    spec: WaitSpec,
    resolved: Result<Resolved, ResolveError>,
) -> Result<StepEnd, EngineError> {
    let running = cx
        .existing
        .as_ref()
        .filter(|r| r.status == StepStatus::Running);
    if let Some(r) = running
        && let Some(token) = r.extra.get("resumeToken").and_then(Value::as_str)
    {
        if cx.walk.run.resume_token.as_deref() == Some(token) {
            // Resumed with this wait's token: the wait is over.
            let out = json!({"resumeToken": token,
                             "scheduledFor": r.extra.get("scheduledFor").cloned().unwrap_or(Value::Null),
                             "resumedAt": iso8601_from_ms(cx.host().now_ms())});
            return Ok(StepEnd::Done(cx.succeed(StepExecution::clone(r), out)));
        }
        if let Some(at) = r.extra.get("scheduledFor").and_then(Value::as_str) {
            return Ok(still_suspended(cx, StepExecution::clone(r), token, at).await);
        }
    }
    let mut record = cx.start_record();
    let params = match resolved {
        Ok(r) => {
            record.input = Some(r.redacted_text());
            mark_secret_derived(&mut record, &r);
            if is_secret_derived(&record) {
                // SEC-1: the host records the wait time redacted.
                for key in ["until", "duration"] {
                    if let Some(v) = r.params.get(key) {
                        cx.host().secret_derived(v);
                    }
                }
            }
            r.params
        }
        Err(e) => {
            let error = StepError::new(e.code.as_str(), e.message, Phase::Resolution);
            return Ok(StepEnd::Done(cx.fail(record, error)));
        }
    };
    match when(spec, &params, cx.host().now_ms()) {
        Ok((after_ms, at_ms)) => suspend(cx, record, after_ms, at_ms).await,
        Err(e) => Ok(StepEnd::Done(cx.fail(record, e))),
    }
}

/// When the wait ends, from the host's `now`: `(Some(duration), now + duration)` for a
/// duration (saturating), `(None, instant)` for `until` (an instant before the epoch is
/// the epoch). A bad duration or instant is `param_invalid`.
pub(super) fn when(
    spec: WaitSpec,
    params: &Map<String, Value>,
    now: u64,
) -> Result<(Option<u64>, u64), StepError> {
    let text = |key: &str| params.get(key).and_then(Value::as_str).unwrap_or_default();
    match spec {
        WaitSpec::Duration { delay_ms } => {
            let ms = match delay_ms {
                PlanValue::Known(ms) => Ok(ms),
                PlanValue::AtRunTime => parse_duration_ms(text("duration")),
            };
            match ms {
                Ok(ms) => Ok((Some(ms), now.saturating_add(ms))),
                Err(m) => Err(param_invalid(format!("wait duration: {m}"))),
            }
        }
        WaitSpec::Until { at_ms } => {
            let at = match at_ms {
                PlanValue::Known(at) => Ok(at),
                PlanValue::AtRunTime => parse_timestamp_ms(text("until")),
            };
            match at {
                Ok(at) => Ok((None, u64::try_from(at).unwrap_or(0))),
                Err(m) => Err(param_invalid(format!("wait until: {m}"))),
            }
        }
    }
}

/// Mint the token, make it durable, schedule it and suspend.
async fn suspend<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    mut record: StepExecution,
    after_ms: Option<u64>,
    at_ms: u64,
) -> Result<StepEnd, EngineError> {
    let (host, journal) = (cx.host(), cx.journal());
    let seq = journal.next_wait_seq();
    let token = format!("{}:wait:{seq}:{}", journal.run_id(), cx.step.id);
    let directive = match after_ms {
        Some(after_ms) => ScheduleDirective::After {
            after_ms,
            resume_token: token.clone(),
        },
        None => ScheduleDirective::At {
            at: iso8601_from_ms(at_ms),
            resume_token: token.clone(),
        },
    };
    if is_secret_derived(&record) {
        // SEC-1: the time is secret-derived in every spelling the host may record.
        // (The time as a number is not declared: equal numbers elsewhere — an `atMs` —
        // are not derived from it, and the clock shows the time anyway, D-43.)
        host.secret_derived(&json!(iso8601_from_ms(at_ms)));
    }
    record.extra.insert("resumeToken".into(), json!(token));
    record
        .extra
        .insert("scheduledFor".into(), json!(iso8601_from_ms(at_ms)));
    let mut extras = Extras::default();
    extras.extra.insert("waitSeq".into(), json!(seq));
    // The token is durable before the host may fire it.
    journal
        .commit_step(host, cx.frame(), record.clone(), extras)
        .await?;
    if let Err(e) = host.schedule(directive).await {
        return Ok(StepEnd::Done(schedule_failed(cx, record, &e)));
    }
    host.log(
        LogLevel::Info,
        &format!(
            "wait {} suspends the run until {} (token {token})",
            cx.step.id,
            iso8601_from_ms(at_ms)
        ),
        None,
    );
    Ok(StepEnd::Suspended(Suspension {
        token,
        step_id: String::from(cx.step.id.as_str()),
    }))
}

/// CTRL-7 / invariant 8: this wait already suspended with a durable token (a crash came
/// before the run ended queued, or another wait's resume re-entered it). The host may
/// already hold a schedule for that token, so the run stays resumable with exactly that
/// token: schedule it again for the recorded time (a duplicate firing finds the run no
/// longer waiting for it and is refused) and suspend without minting a new one.
async fn still_suspended<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    record: StepExecution,
    token: &str,
    at: &str,
) -> StepEnd {
    let directive = ScheduleDirective::At {
        at: at.to_owned(),
        resume_token: token.to_owned(),
    };
    if let Err(e) = cx.host().schedule(directive).await {
        return StepEnd::Done(schedule_failed(cx, record, &e));
    }
    cx.host().log(
        LogLevel::Info,
        &format!(
            "wait {} is still suspended until {at} (token {token}, recorded before the restart)",
            cx.step.id
        ),
        None,
    );
    StepEnd::Suspended(Suspension {
        token: token.to_owned(),
        step_id: String::from(cx.step.id.as_str()),
    })
}

/// The host refused the schedule: the wait fails (not retried) and drops its token.
fn schedule_failed<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
    mut record: StepExecution,
    e: &HostError,
) -> StepExecution {
    record.extra.remove("resumeToken");
    let mut error = StepError::new(EngineCode::ScheduleFailed, e.to_string(), Phase::Execute);
    error.retryable = false;
    cx.fail(record, error)
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::when;
    use crate::engine::testing::{NOW_MS, TestHost, act, block_on, control, run, workflow};
    use crate::engine::{Engine, EngineError};
    use crate::host::ScheduleDirective;
    use crate::model::{RunStatus, StepStatus};
    use crate::plan::{PlanValue, WaitSpec};

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_duration_ends_that_long_after_now() {
        let known = WaitSpec::Duration {
            delay_ms: PlanValue::Known(300_000),
        };
        assert_eq!(
            when(known, &Map::new(), 1_000),
            Ok((Some(300_000), 301_000))
        );
        let at_run = WaitSpec::Duration {
            delay_ms: PlanValue::AtRunTime,
        };
        let p = params(json!({"duration": "P1DT2H"}));
        assert_eq!(when(at_run, &p, 0), Ok((Some(93_600_000), 93_600_000)));
        // Saturates instead of wrapping around to the past.
        let huge = WaitSpec::Duration {
            delay_ms: PlanValue::Known(u64::MAX),
        };
        assert_eq!(when(huge, &Map::new(), 5), Ok((Some(u64::MAX), u64::MAX)));
        let e = when(at_run, &params(json!({"duration": "5 minutes"})), 0).expect_err("bad");
        assert_eq!(e.code, "param_invalid");
        assert!(e.message.starts_with("wait duration: "), "{}", e.message);
        assert!(
            when(at_run, &params(json!({"duration": 5})), 0).is_err(),
            "not a string"
        );
    }

    #[test]
    fn until_is_an_instant_whatever_now_is() {
        let at_run = WaitSpec::Until {
            at_ms: PlanValue::AtRunTime,
        };
        let p = params(json!({"until": "2026-03-01T09:30:00.250+02:00"}));
        let at = 1_772_350_200_250;
        assert_eq!(when(at_run, &p, 0), Ok((None, at)));
        assert_eq!(
            when(at_run, &p, u64::MAX),
            Ok((None, at)),
            "even one already past"
        );
        let before_epoch = WaitSpec::Until {
            at_ms: PlanValue::Known(-5),
        };
        assert_eq!(when(before_epoch, &Map::new(), 9), Ok((None, 0)));
        let e = when(at_run, &params(json!({"until": "tomorrow"})), 0).expect_err("bad");
        assert!(e.message.starts_with("wait until: "), "{}", e.message);
    }

    fn paused() -> crate::model::Workflow {
        workflow(
            json!([
                control("pause", "wait", json!({"duration": "PT5M"})),
                act(
                    "after",
                    json!({"at": {"$": "steps.pause.output.resumedAt"}})
                )
            ]),
            json!([]),
        )
    }

    #[test]
    fn a_wait_suspends_with_a_durable_token_and_completes_on_resume_with_it() {
        let host = TestHost::new();
        let wf = paused();
        let r = run(&wf, &host);
        assert_eq!(r.status, RunStatus::Queued);
        let token = "r1:wait:1:pause";
        assert_eq!(
            *host.scheduled.borrow(),
            [ScheduleDirective::After {
                after_ms: 300_000,
                resume_token: token.into()
            }]
        );
        let record = &r.state.steps["pause"];
        assert_eq!(record.status, StepStatus::Running);
        assert_eq!(record.extra["resumeToken"], token);
        assert_eq!(record.extra["scheduledFor"], "2026-01-01T00:05:00.000Z");
        assert!(host.invoked_ids().is_empty(), "nothing after the wait ran");

        let engine = Engine::new(&wf).expect("engine");
        let wrong = block_on(engine.resume_with("r1", Some("r1:wait:9:pause"), &host));
        assert!(
            matches!(wrong, Err(EngineError::ResumeToken { .. })),
            "{wrong:?}"
        );
        host.now.set(NOW_MS + 300_000);
        let r = block_on(engine.resume_with("r1", Some(token), &host)).expect("resume");
        assert_eq!(r.status, RunStatus::Succeeded);
        let out = r.state.steps["pause"].output.clone().expect("output");
        assert_eq!(
            out,
            json!({"resumeToken": token, "scheduledFor": "2026-01-01T00:05:00.000Z",
                   "resumedAt": "2026-01-01T00:05:00.000Z"})
        );
        assert_eq!(host.invoked_ids(), ["after"]);
    }

    #[test]
    fn a_refused_schedule_fails_the_wait_and_drops_its_token() {
        let host = TestHost::new();
        host.refuse_schedule.set(true);
        let r = run(&paused(), &host);
        assert_eq!(r.status, RunStatus::Failed);
        let record = &r.state.steps["pause"];
        assert_eq!(record.status, StepStatus::Failed);
        assert!(!record.extra.contains_key("resumeToken"));
        let error = record.error.clone().expect("error");
        assert_eq!(error.code, "schedule_failed");
        assert!(!error.retryable);
    }
}
