//! `@w6w/call` `call` (CALL-1…3): dispatch a workflow or function through the host's one
//! bounded seam.
//!
//! Owns: the call's params (`target`, `input`, `wait`), the composition depth bound and
//! what the host is told is secret-derived. Invariant: one dispatch, no retry loop, no
//! meta (RETRY-6, CALL-3); a call past [`CALL_DEPTH_MAX`] is refused before dispatch.

use serde_json::{Map, Value, json};

use super::{param_invalid, start_with};
use crate::engine::journal::Extras;
use crate::engine::step::StepCtx;
use crate::engine::{EngineCode, EngineError};
use crate::host::{CallableRequest, WorkflowContext};
use crate::model::{Phase, StepError, StepExecution, StepStatus};

/// CALL-2: the composition depth bound (node-types.md 2026-08-20, default 16).
pub(crate) const CALL_DEPTH_MAX: u32 = 16;

/// What one call dispatches.
#[derive(Debug, PartialEq)]
pub(super) struct Dispatch {
    pub(super) target: Value,
    pub(super) input: Value,
    pub(super) wait: bool,
    /// The hop count the dispatch reaches.
    pub(super) depth: u32,
}

/// The record key of a call's dispatch key (D-120).
pub(crate) const DISPATCH_ID: &str = "dispatchId";

/// CALL-1…3: run the call step of `cx` to its terminal record.
pub(crate) async fn call<C: WorkflowContext>(
    cx: &StepCtx<'_, C>,
) -> Result<StepExecution, EngineError> {
    // D-120: a call a crash interrupted continues the dispatch it started (same key, same
    // startedAt: no new attempt began); otherwise a fresh key, durable with the start.
    let resumed = cx
        .existing
        .as_ref()
        .filter(|r| r.status == StepStatus::Running)
        .and_then(|r| {
            let key = r.extra.get(DISPATCH_ID)?.as_str()?.to_owned();
            Some((key, r.started_at.clone()))
        });
    let mut extras = Extras::default();
    let (key, carried_start) = match resumed {
        Some(k) => k,
        None => {
            let n = cx.journal().next_call_seq();
            extras.extra.insert("callSeq".into(), json!(n));
            (format!("call{n}"), None)
        }
    };
    let mut record_extra = Map::new();
    record_extra.insert(DISPATCH_ID.into(), json!(key));
    let started = start_with(cx, cx.resolve(), carried_start, record_extra, extras).await?;
    let (record, resolved) = match started {
        Ok(started) => started,
        Err(failed) => return Ok(failed),
    };
    let dispatch = match dispatch(cx.step.action(), &resolved.params, cx.walk.run.call_depth) {
        Ok(d) => d,
        Err(e) => return Ok(cx.fail(record, e)),
    };
    if let Some(recorded) = &record.input {
        // SEC-1: the host records the secret-derived parts of target / input redacted.
        let params = Value::Object(resolved.params.clone());
        declare_secret_derived(cx.host(), &params, &recorded.to_value());
    }
    // RETRY-6 / CALL-3: one dispatch, no retry loop, no meta.
    let req = CallableRequest {
        target: dispatch.target,
        input: dispatch.input,
        wait: dispatch.wait,
        depth: dispatch.depth,
        step_id: String::from(cx.step.id.as_str()),
        dispatch_id: key,
        secret_paths: input_secret_paths(&resolved.secret_paths),
    };
    Ok(match cx.host().invoke_callable(req).await {
        Ok(out) => cx.succeed(record, out),
        Err(mut e) => {
            e.retryable = false;
            e.step_id = None;
            cx.fail(record, e)
        }
    })
}

/// SEC-1 (D-124): the secret paths of a call's params that fall inside `input`, as JSON
/// Pointers into the input (`""`: the whole input).
pub(super) fn input_secret_paths(params_paths: &[String]) -> Vec<String> {
    params_paths
        .iter()
        .filter_map(|p| match p.strip_prefix("/input") {
            Some("") => Some(String::new()),
            Some(rest) if rest.starts_with('/') => Some(rest.to_owned()),
            _ => None,
        })
        .collect()
}

/// The dispatch a call's `action` and resolved `params` ask for, from a run at
/// `call_depth`; the step's failure (never retried) when they are not a valid call.
pub(super) fn dispatch(
    action: Option<&str>,
    params: &Map<String, Value>,
    call_depth: u32,
) -> Result<Dispatch, StepError> {
    if action != Some("call") {
        let mut e = StepError::new(
            EngineCode::UnknownAction,
            format!(
                "@w6w/call has one action, \"call\", not {:?}",
                action.unwrap_or("")
            ),
            Phase::Resolution,
        );
        e.retryable = false;
        return Err(e);
    }
    let target = match params.get("target") {
        Some(t @ Value::Object(m))
            if matches!(
                m.get("kind").and_then(Value::as_str),
                Some("workflow" | "function")
            ) =>
        {
            t.clone()
        }
        // Name the shape, never the resolved value (SEC-1).
        other => {
            return Err(param_invalid(format!(
                "call target must be {{\"kind\": \"workflow\" | \"function\", …}}, got {}",
                other.map_or("nothing", crate::expr::json_type_name)
            )));
        }
    };
    let wait = match params.get("wait") {
        None | Some(Value::Null) => true,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(param_invalid(format!(
                "call wait must be a boolean, got {}",
                crate::expr::json_type_name(other)
            )));
        }
    };
    let input = params
        .get("input")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let depth = call_depth.saturating_add(1);
    if depth > CALL_DEPTH_MAX {
        // CALL-2: refused before dispatch; nothing runs, nothing is enqueued.
        let mut e = StepError::new(
            EngineCode::CallDepthExceeded,
            format!("call depth {depth} exceeds the bound of {CALL_DEPTH_MAX}"),
            Phase::Resolution,
        );
        e.retryable = false;
        return Err(e);
    }
    Ok(Dispatch {
        target,
        input,
        wait,
        depth,
    })
}

/// SEC-1: declare to the host every value of `params` that the recorded (redacted) input
/// shows as `"[redacted]"` — exactly the secret-derived parts, never their neighbours.
pub(super) fn declare_secret_derived<C: WorkflowContext>(
    host: &C,
    params: &Value,
    recorded: &Value,
) {
    match (params, recorded) {
        (Value::Object(p), Value::Object(r)) => {
            for (k, v) in p {
                if let Some(rv) = r.get(k) {
                    declare_secret_derived(host, v, rv);
                }
            }
        }
        (Value::Array(p), Value::Array(r)) => {
            for (v, rv) in p.iter().zip(r) {
                declare_secret_derived(host, v, rv);
            }
        }
        (v, Value::String(r)) if r == crate::expr::REDACTED && v != recorded => {
            host.secret_derived(v);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::{CALL_DEPTH_MAX, Dispatch, declare_secret_derived, dispatch, input_secret_paths};
    use crate::engine::testing::{TestHost, block_on, run, workflow};
    use crate::json::JsonText;
    use crate::model::RunStatus;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_call_dispatches_its_target_one_hop_deeper() {
        let target = json!({"kind": "workflow", "id": "child"});
        let p = params(json!({"target": target, "input": {"x": 1}, "wait": false}));
        assert_eq!(
            dispatch(Some("call"), &p, 3),
            Ok(Dispatch {
                target: target.clone(),
                input: json!({"x": 1}),
                wait: false,
                depth: 4
            })
        );
        // Defaults: wait true, input {}.
        let p = params(json!({"target": target, "wait": null}));
        let d = dispatch(Some("call"), &p, 0).expect("dispatch");
        assert_eq!((d.input, d.wait, d.depth), (json!({}), true, 1));
    }

    #[test]
    fn bad_calls_fail_before_dispatch() {
        let target = json!({"kind": "function", "name": "f"});
        let p = params(json!({"target": target}));
        let e = dispatch(Some("invoke"), &p, 0).expect_err("action");
        assert_eq!(e.code, "unknown_action");
        let e = dispatch(Some("call"), &params(json!({"target": {"kind": "job"}})), 0)
            .expect_err("target kind");
        assert_eq!(e.code, "param_invalid");
        assert!(
            e.message.ends_with("got object"),
            "the shape, never the value: {}",
            e.message
        );
        let e = dispatch(
            Some("call"),
            &params(json!({"target": target, "wait": "yes"})),
            0,
        )
        .expect_err("wait");
        assert_eq!(e.message, "call wait must be a boolean, got string");
        assert!(
            dispatch(Some("call"), &p, CALL_DEPTH_MAX - 1).is_ok(),
            "the bound itself"
        );
        let e = dispatch(Some("call"), &p, CALL_DEPTH_MAX).expect_err("past the bound");
        assert_eq!(e.code, "call_depth_exceeded");
        assert!(!e.retryable);
    }

    #[test]
    fn only_the_redacted_parts_are_declared_secret_derived() {
        let host = TestHost::new();
        let params = json!({"target": {"kind": "workflow", "id": "c"},
                            "input": {"token": "s3cr3t", "n": 1, "list": ["a", "k"]}});
        let recorded = json!({"target": {"kind": "workflow", "id": "c"},
                              "input": {"token": "[redacted]", "n": 1, "list": ["a", "[redacted]"]}});
        declare_secret_derived(&host, &params, &recorded);
        assert_eq!(*host.declared.borrow(), [json!("s3cr3t"), json!("k")]);
    }

    #[test]
    fn only_secret_paths_inside_the_input_reach_the_callee() {
        let paths: Vec<String> = ["/input/token", "/target/workflow", "/input", "/inputs/x"]
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        assert_eq!(input_secret_paths(&paths), ["/token", ""]);
    }

    /// D-120: each dispatch gets a fresh key, durable in the call's start record; a call
    /// a crash interrupted re-dispatches with the key it recorded.
    #[test]
    fn dispatch_keys_are_fresh_per_dispatch_and_reused_after_a_crash() {
        let host = TestHost::new();
        let call = |id: &str| {
            json!({"id": id, "uses": {"app": "@w6w/call", "action": "call"},
                   "with": {"target": {"kind": "workflow", "workflow": "child"}}})
        };
        let wf = workflow(json!([call("c"), call("d")]), json!([]));
        let r = run(&wf, &host);
        assert_eq!(*host.dispatch_ids.borrow(), ["call1", "call2"]);
        assert_eq!(r.state.steps["d"].extra["dispatchId"], json!("call2"));
        assert_eq!(r.state.extra["callSeq"], json!(2));
        // The state a crash left: d started (key call2) and never ended.
        let mut crashed = r.state.clone();
        crashed.status = RunStatus::Running;
        crashed.output = None;
        let mut d = crate::model::StepExecution::clone(&crashed.steps["d"]);
        d.status = crate::model::StepStatus::Running;
        d.output = None;
        crashed.steps.insert("d".into(), std::sync::Arc::new(d));
        let host = TestHost::with_state(crashed);
        let engine = crate::engine::Engine::new(&wf).expect("engine");
        let resumed = block_on(engine.resume("r1", &host)).expect("resume");
        assert_eq!(resumed.status, RunStatus::Succeeded);
        assert_eq!(*host.dispatch_ids.borrow(), ["call2"], "the same key again");
        assert_eq!(resumed.state.extra["callSeq"], json!(2), "no key minted");
    }

    /// D-124: a run seeded with secret-derived variables treats them as such.
    #[test]
    fn secret_derived_variables_taint_what_reads_them() {
        let host = TestHost::new();
        let wf = workflow(
            json!([{"id": "a", "uses": {"app": "demo", "action": "do"},
                    "with": {"t": {"$": "vars.token"}, "plain": {"$": "vars.other"}}}]),
            json!([]),
        );
        let engine = crate::engine::Engine::new(&wf).expect("engine");
        let mut seed = crate::engine::RunSeed::manual("r1");
        seed.variables = params(json!({"token": "derived-value", "other": "x"}));
        seed.secret_paths = vec!["/token".into()];
        let r = block_on(engine.run(seed, &host)).expect("run");
        let a = &r.state.steps["a"];
        assert_eq!(
            a.input.as_ref().map(JsonText::to_value),
            Some(json!({"t": "[redacted]", "plain": "x"}))
        );
        // D-274: the output is secret-derived only where it holds what the step was handed.
        assert_eq!(a.extra.get("secretDerived"), None);
        let recorded = a
            .output
            .as_ref()
            .map(JsonText::to_value)
            .unwrap_or_default();
        assert!(
            !recorded.to_string().contains("derived-value"),
            "{recorded}"
        );
        assert_eq!(r.state.extra["secretVariables"], json!(["/token"]));
    }

    #[test]
    fn a_call_step_runs_through_the_host_seam_once() {
        let host = TestHost::new();
        let wf = workflow(
            json!([{"id": "c", "uses": {"app": "@w6w/call", "action": "call"},
                    "with": {"target": {"kind": "workflow", "id": "child"}, "input": {"v": 2}}}]),
            json!([]),
        );
        let r = run(&wf, &host);
        assert_eq!(r.status, RunStatus::Succeeded);
        assert_eq!(
            *host.callables.borrow(),
            [(
                json!({"kind": "workflow", "id": "child"}),
                json!({"v": 2}),
                true,
                1
            )]
        );
        let record = &r.state.steps["c"];
        assert_eq!(record.attempt, 1);
        assert_eq!(record.meta, None, "CALL-3: no meta");
    }
}
