//! The context protocol's messages as types: what a candidate engine writes during a
//! session ([`Turn`], tagged by `type`), the arguments of each context member it calls,
//! the answers a host process and an engine's `op` give, and what the suite sends an
//! engine ([`FromSuite`], as `engine serve` reads it). Each decodes through serde; a
//! field the suite cannot read is named by its JSON Pointer (D-209).
//!
//! Owns: the shapes of `docs/schemas/context/*.json` on the reading side. Refuses to know
//! what a message makes happen: that is [`super::suite`]'s, [`super::host_seam`]'s and
//! [`super::serve`]'s.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::host::{LogLevel, RunTrigger, ScheduleDirective};
use crate::model::RunStatePatch;
use crate::process::clip;

/// One line a candidate engine writes during a session.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum Turn {
    /// A context member called; answered once it completes.
    Call {
        id: u64,
        member: String,
        #[serde(default = "empty_object")]
        args: Value,
    },
    Log {
        level: LogLevel,
        message: String,
        #[serde(default, deserialize_with = "crate::json::present")]
        data: Option<Value>,
    },
    /// An outstanding call the engine no longer waits for.
    Cancel { id: u64 },
    /// Everything runnable has run; these calls are unanswered.
    Idle { waiting: Vec<u64> },
    /// The run returned (`error`: the engine's own refusal, `{code, …}`).
    Done {
        #[serde(default, deserialize_with = "crate::json::present")]
        error: Option<Value>,
    },
}

/// `invoke`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InvokeArgs {
    pub(crate) app: String,
    pub(crate) action: String,
    #[serde(default)]
    pub(crate) connection: Option<String>,
    pub(crate) params: Map<String, Value>,
    pub(crate) step_id: String,
    pub(crate) attempt: u32,
    #[serde(default)]
    pub(crate) secret_paths: Option<Vec<String>>,
}

/// `state.checkpoint`'s arguments.
#[derive(Debug, Deserialize)]
pub(crate) struct CheckpointArgs {
    pub(crate) patch: RunStatePatch,
}

/// `state.load`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LoadArgs {
    pub(crate) run_id: String,
}

/// `sleep`'s arguments.
#[derive(Debug, Deserialize)]
pub(crate) struct SleepArgs {
    pub(crate) ms: u64,
}

/// `waitBeforeRetry`'s arguments.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WaitArgs {
    pub(crate) ms: u64,
    pub(crate) attempt: u32,
    #[serde(default)]
    pub(crate) step_id: Option<String>,
}

/// `schedule`'s arguments (`secretDerived` is read before they are decoded).
#[derive(Debug, Deserialize)]
pub(crate) struct ScheduleArgs {
    pub(crate) directive: ScheduleDirective,
}

/// `queue.enqueue`'s arguments.
#[derive(Debug, Deserialize)]
pub(crate) struct EnqueueArgs {
    #[serde(deserialize_with = "crate::json::present")]
    pub(crate) job: Option<Value>,
}

/// `invokeCallable`'s arguments (`dispatchId` and `secretPaths` optional since D-120).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallableArgs {
    #[serde(deserialize_with = "crate::json::present")]
    pub(crate) target: Option<Value>,
    #[serde(default)]
    pub(crate) input: Value,
    #[serde(default = "yes")]
    pub(crate) wait: bool,
    pub(crate) depth: u32,
    #[serde(default)]
    pub(crate) dispatch_id: String,
    #[serde(default)]
    pub(crate) secret_paths: Vec<String>,
    #[serde(default)]
    pub(crate) step_id: String,
}

/// The answer a host process gives a call (`{type: "answer", id, ok | error}`).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum FromHost {
    Answer {
        id: u64,
        #[serde(default)]
        ok: Value,
        #[serde(default, deserialize_with = "crate::json::present")]
        error: Option<Value>,
    },
}

/// The answer a candidate engine gives an `op` message.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum FromEngine {
    OpResult {
        id: u64,
        #[serde(default)]
        response: Value,
    },
}

/// What the suite sends a candidate engine between sessions, as `engine serve` reads it.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub(crate) enum FromSuite {
    /// A pure op request, answered with `opResult`.
    Op {
        #[serde(default)]
        id: Value,
        #[serde(default)]
        request: Value,
    },
    Run(Start),
    Resume(Start),
    Replay(Start),
}

/// A session's first message (`run` / `resume` / `replay`; docs/schemas/context/run.json).
/// Every field is optional: a missing one reads as its default.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Start {
    pub(crate) workflow: Value,
    pub(crate) run: StartRun,
    pub(crate) host: StartHost,
    /// `run`: the seed's trigger and variables.
    pub(crate) seed: StartSeed,
    /// `resume`: a fired wait's token (`None`: after a crash).
    pub(crate) token: Option<String>,
    /// `replay`: the step to replay from.
    pub(crate) from: Option<String>,
}

/// `run` of a session's first message.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StartRun {
    pub(crate) id: String,
    pub(crate) trigger: Option<RunTrigger>,
    pub(crate) attempt: Option<u32>,
}

/// `host` of a session's first message: what the suite's host holds.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct StartHost {
    pub(crate) secrets: Map<String, Value>,
    /// D-250: the host's sealing key, if it holds one.
    pub(crate) sealing_key: Option<String>,
    /// `{}` when absent.
    #[serde(default = "empty_object")]
    pub(crate) documents: Value,
    pub(crate) schedule: bool,
    pub(crate) idempotent_steps: Vec<String>,
    /// D-275: the steps whose action's output the catalog declares sensitive.
    pub(crate) sensitive_steps: Vec<String>,
}

/// `seed` of a `run` message.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StartSeed {
    pub(crate) trigger: Option<Value>,
    pub(crate) variables: Map<String, Value>,
}

/// `member`'s `args` as its typed arguments. A field the suite cannot read is named by
/// its JSON Pointer below `/args` and why, then `note` (what the value should be).
pub(crate) fn decode_args<'a, T: Deserialize<'a>>(
    member: &str,
    args: &'a Value,
    note: &str,
) -> Result<T, String> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let mut at = pointer_of(e.path());
        let why = e.inner().to_string();
        if let Some(field) = why
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next())
        {
            at.push('/');
            at.push_str(field);
        }
        invalid_call(member, &format!("{at} ({why}{note})"), args)
    })
}

/// A `call` the suite cannot read: `what` begins with the field (a JSON Pointer below
/// `/args`, e.g. `/patch/steps/a/attempt`), then why in parentheses.
pub(crate) fn invalid_call(member: &str, what: &str, args: &Value) -> String {
    let (field, why) = what.split_once(' ').unwrap_or((what, ""));
    let field = field.trim_start_matches('/');
    format!(
        "context protocol v1: a \"call\" message (member {member:?}) needs /args/{field} {why} \
         (docs/context-protocol.md, \"call → answer\"; docs/schemas/context/call.json); its args \
         were {}",
        clip(&args.to_string())
    )
}

/// A serde path as a JSON Pointer suffix (`/steps/a/attempt`), empty at the root.
fn pointer_of(path: &serde_path_to_error::Path) -> String {
    path.iter()
        .filter_map(|seg| match seg {
            serde_path_to_error::Segment::Seq { index } => Some(index.to_string()),
            serde_path_to_error::Segment::Map { key } => {
                Some(key.replace('~', "~0").replace('/', "~1"))
            }
            serde_path_to_error::Segment::Enum { variant } => Some(variant.clone()),
            serde_path_to_error::Segment::Unknown => None,
        })
        .fold(String::new(), |mut out, seg| {
            out.push('/');
            out.push_str(&seg);
            out
        })
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turns_decode_by_their_type() {
        let turn = |v: Value| serde_json::from_value::<Turn>(v).map_err(|e| e.to_string());
        assert!(matches!(
            turn(json!({"type": "call", "id": 3, "member": "sleep"})),
            Ok(Turn::Call {
                id: 3,
                args: Value::Object(_),
                ..
            })
        ));
        assert!(matches!(
            turn(json!({"type": "log", "level": "info", "message": "m", "data": null})),
            Ok(Turn::Log {
                data: Some(Value::Null),
                ..
            })
        ));
        assert!(matches!(
            turn(json!({"type": "done", "error": null})),
            Ok(Turn::Done {
                error: Some(Value::Null)
            })
        ));
        assert!(matches!(
            turn(json!({"type": "done"})),
            Ok(Turn::Done { error: None })
        ));
        for bad in [
            json!({"type": "call", "id": "1", "member": "sleep"}),
            json!({"type": "idle"}),
            json!({"type": "log", "level": "loud", "message": "m"}),
            json!({"type": "shout"}),
            json!({"id": 1}),
        ] {
            assert!(turn(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_start_message_reads_missing_fields_as_defaults() {
        let run = json!({"type": "run", "run": {"id": "r"}, "host": {"schedule": true}});
        let Ok(FromSuite::Run(start)) = FromSuite::deserialize(&run) else {
            panic!("a run message decodes");
        };
        assert_eq!(start.run.id, "r");
        assert_eq!(start.run.attempt, None);
        assert!(start.host.schedule);
        assert_eq!(start.host.documents, json!({}));
        assert!(start.host.secrets.is_empty() && start.seed.trigger.is_none());
        let op = json!({"type": "op", "id": 4, "request": {"op": "plan"}});
        assert!(matches!(
            FromSuite::deserialize(&op),
            Ok(FromSuite::Op { id, .. }) if id == 4
        ));
        assert!(FromSuite::deserialize(&json!({"type": "answer", "id": 1})).is_err());
    }

    #[test]
    fn a_bad_field_is_named_by_its_pointer() {
        let args = json!({"patch": {"runId": "r", "steps": {"a": {"stepId": "a", "status": "running", "attempt": "1"}}}});
        let err = decode_args::<CheckpointArgs>("state.checkpoint", &args, "; a RunStatePatch")
            .expect_err("attempt is a string");
        assert!(err.contains("needs /args/patch/steps/a/attempt (invalid type: string \"1\", expected u32; a RunStatePatch)"), "{err}");
        let err =
            decode_args::<InvokeArgs>("invoke", &json!({"app": "a"}), "").expect_err("no action");
        assert!(
            err.contains("needs /args/action (missing field `action`)"),
            "{err}"
        );
        let callable: CallableArgs =
            decode_args("invokeCallable", &json!({"target": null, "depth": 1}), "").expect("ok");
        assert_eq!(callable.target, Some(Value::Null));
        assert!(callable.wait);
    }
}
