//! The host contract: `WorkflowContext` (RFC § Host contract) and its request types.
//!
//! Owns: the seam every host — simulated or real — implements. Invariant: the engine
//! performs every effect through this trait (RUN-8): invoking actions, logging, durable
//! checkpoints, loading state, the clock, sleeping, scheduling and cancellation. Nothing
//! here knows how a host stores or runs anything.
//!
//! The trait uses `async fn` and is not object-safe on purpose: the engine is generic over
//! its host and runs on one thread, which keeps a simulated run deterministic.

#![allow(async_fn_in_trait)]

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::model::{RunState, RunStatePatch, StepError};

pub(crate) mod sealing;
pub(crate) mod store;
#[cfg(feature = "cli")]
pub(crate) use sealing::SEALING_KEY_MAX_BYTES;
pub use sealing::{KeyError, SEALING_KEY_ENV, SealingKey};
pub use store::{RunStore, ScheduleEntry, StoreError, StoreFactory};

/// How a run was started (`RunTrigger`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunTrigger {
    Manual,
    Schedule,
    Webhook,
    Replay,
}

/// `WorkflowContext.run`: correlation ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunInfo {
    pub id: String,
    pub workflow_id: String,
    pub trigger: RunTrigger,
    pub attempt: u32,
}

/// An invocation failure as the runtime classifies it (`code`, `message`, `phase`,
/// `retryable`). Same shape as a StepError.
pub type InvokeError = StepError;

/// META-1/META-3: the per-attempt `onExecuted` callback. The host calls [`OnExecuted::report`]
/// with its raw report; the first call wins and later calls are ignored. Each attempt gets
/// a fresh callback, so a report from a superseded attempt can never land.
#[derive(Debug, Clone, Default)]
pub struct OnExecuted {
    /// Every report in call order; the engine uses the first (a suite relaying the host's
    /// reports to a candidate engine relays all of them, so first-wins is the engine's job).
    slot: Arc<Mutex<Vec<Value>>>,
}

impl OnExecuted {
    pub fn new() -> Self {
        OnExecuted::default()
    }

    /// Report meta for this attempt. Only the first report counts (META-3).
    pub fn report(&self, raw: Value) {
        let mut slot = self
            .slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        slot.push(raw);
    }

    /// The first report, if the host made one.
    pub fn first_report(&self) -> Option<Value> {
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .first()
            .cloned()
    }

    /// Every report the host made for this attempt, in order.
    pub fn reports(&self) -> Vec<Value> {
        self.slot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// The invoke request (RFC: `{ app, action, connection?, params, stepId }` + `onExecuted`).
#[derive(Debug, Clone)]
pub struct InvokeRequest {
    pub app: String,
    pub action: String,
    pub connection: Option<String>,
    pub params: Map<String, Value>,
    pub step_id: String,
    /// 1-based attempt of the step this invocation is for.
    pub attempt: u32,
    pub on_executed: OnExecuted,
    /// SEC-1: JSON Pointers (into `params`) of secret-derived values. A host that records
    /// params (a trace, an API-call log) records [`InvokeRequest::redacted_params`].
    pub secret_paths: Vec<String>,
}

impl InvokeRequest {
    /// The params with every secret-derived value replaced by [`crate::expr::REDACTED`],
    /// exactly as the step's recorded `input` (SEC-1).
    pub fn redacted_params(&self) -> Map<String, Value> {
        crate::expr::redact_params(&self.params, &self.secret_paths)
    }
}

/// CALL-1/2, RUNERR-7: one dispatch through the callable seam (`ctx.invokeCallable`).
#[derive(Debug, Clone, PartialEq)]
pub struct CallableRequest {
    /// `{kind: "workflow", workflow}` or `{kind: "function", function}`.
    pub target: Value,
    /// The resolved payload for the target.
    pub input: Value,
    /// `true`: the target's output; `false`: `{runId}` at once (CALL-1).
    pub wait: bool,
    /// The hop count the dispatch reaches (CALL-2).
    pub depth: u32,
    /// The calling step (`""` for a run-level reroute).
    pub step_id: String,
    /// The dispatch's idempotency key within the calling run, stable across crash-resumes
    /// of the caller (`call<n>` for a call step, `reroute` for the run-level reroute): a
    /// host that keeps child runs durable continues the child it already started for
    /// this key instead of starting another (docs/decisions.md D-120).
    pub dispatch_id: String,
    /// SEC-1: JSON Pointers (into `input`) of secret-derived values; a child run treats
    /// those variables as secret-derived (D-124).
    pub secret_paths: Vec<String>,
}

/// `schedule` directive for a `wait` step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScheduleDirective {
    At {
        at: String,
        #[serde(rename = "resumeToken")]
        resume_token: String,
    },
    After {
        #[serde(rename = "afterMs")]
        after_ms: u64,
        #[serde(rename = "resumeToken")]
        resume_token: String,
    },
}

/// Log levels of `WorkflowContext.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// A host-side failure that is not an action's failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostError {
    /// The host process "died" (a simulated crash): the engine must stop at once and
    /// leave recovery to whoever restarts it.
    #[error("host crashed")]
    Crashed,
    /// The host does not offer this optional member (e.g. `schedule`).
    #[error("host does not support {0}")]
    Unsupported(&'static str),
    /// Durable storage failed.
    #[error("store error: {0}")]
    Store(String),
}

impl HostError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            HostError::Crashed => "host_crashed",
            HostError::Unsupported(_) => "host_unsupported",
            HostError::Store(_) => "store_error",
        }
    }
}

/// What the engine needs from a host. Optional RFC members have default methods that
/// report "unsupported".
pub trait WorkflowContext {
    /// Correlation ids for this run.
    fn run(&self) -> &RunInfo;

    /// Package as an Invocation and call the runtime; returns the action's output.
    /// `@w6w/*` internal apps (e.g. `@w6w/document`) route through the same seam.
    async fn invoke(&self, req: InvokeRequest) -> Result<Value, InvokeError>;

    /// Whether the catalog declares this action `idempotent: true` (RETRY-2).
    fn action_idempotent(&self, step_id: &str, app: &str, action: &str) -> bool;

    /// SEC-1 (D-275): whether the catalog declares this action's output sensitive — a
    /// token-minting action, say — so the engine treats its whole output as secret-derived
    /// (recorded `"[redacted]"`, sealed, tainting whatever reads it). An undeclared
    /// action's output is secret-derived only where it holds secret material (D-274).
    fn action_sensitive_output(&self, _step_id: &str, _app: &str, _action: &str) -> bool {
        false
    }

    /// Route a log line to the host's sink.
    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>);

    /// Durably persist a checkpoint; MUST be durable before returning (RUN-3).
    async fn checkpoint(&self, patch: &RunStatePatch) -> Result<(), HostError>;

    /// Idempotent read for resume / replay.
    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError>;

    /// The host clock, in ms since the Unix epoch. The engine never reads a clock itself.
    fn now_ms(&self) -> u64;

    /// Wait `ms` on the host clock (retry backoff, RETRY-4/5).
    async fn sleep(&self, ms: u64);

    /// RETRY-4/5, RUNERR-2: the backoff wait before `attempt` of `step_id` (`None`: a
    /// run-level attempt). Defaults to [`WorkflowContext::sleep`]; a host overrides it to
    /// record which wait it is (the simulator's `waits`).
    async fn wait_before_retry(&self, step_id: Option<&str>, attempt: u32, ms: u64) {
        let _ = (step_id, attempt);
        self.sleep(ms).await;
    }

    /// The named-secret plaintext the host hands the engine (`RunScope.secrets`). Only
    /// secret parts read it; it never reaches the generic data root (EXPR-5).
    fn secrets(&self) -> Map<String, Value> {
        Map::new()
    }

    /// SEC-1, RUN-4 (D-250): the key that seals a secret-derived step output the store may
    /// not hold in plaintext, so a resumed or replayed run reads what the crash-free run
    /// read. It must come from key material the host holds outside the store (a key file,
    /// an environment variable, a KMS) and be the same on every resume of the run; it is
    /// never derived from [`WorkflowContext::secrets`], so the store holds nothing a guess
    /// of a secret could be confirmed against. Default: `None` — nothing is sealed, and an
    /// output computed from a secret reads `"[redacted]"` after a crash (D-252).
    fn sealing_key(&self) -> Option<SealingKey> {
        None
    }

    /// D-251: fill `out` with random bytes from the host's randomness (a simulator draws
    /// them from its seed), or return `false` when the host offers none. The engine asks
    /// only when [`WorkflowContext::sealing_key`] holds a key: once per run, for the run's
    /// seal id, which every envelope of the run is bound to.
    fn random_bytes(&self, out: &mut [u8]) -> bool {
        let _ = out;
        false
    }

    /// The static `documents` root (`documents.<key>`), an object.
    fn documents(&self) -> Value {
        Value::Object(Map::new())
    }

    /// RUN-7: the cancellation signal, polled between steps.
    fn aborted(&self) -> bool {
        false
    }

    /// CTRL-7: whether `schedule` is available (plan-time `unsupported_wait` otherwise).
    fn supports_schedule(&self) -> bool {
        false
    }

    /// Durable scheduling for `wait`.
    async fn schedule(&self, _directive: ScheduleDirective) -> Result<(), HostError> {
        Err(HostError::Unsupported("schedule"))
    }

    /// SEC-1: the engine declares a value it is about to hand this host (a call target or
    /// input, a wait time) secret-derived. A host must record it — and anything it builds
    /// from it, error messages included — redacted. The default records nothing.
    fn secret_derived(&self, _value: &Value) {}

    /// CALL-*: dispatch a callable (workflow / function, [`CallableRequest`]). The host
    /// refuses a `depth` past its bound with `call_depth_exceeded`.
    async fn invoke_callable(&self, _req: CallableRequest) -> Result<Value, InvokeError> {
        Err(StepError::new(
            "unsupported_callable",
            "this host cannot dispatch @w6w/call targets",
            crate::model::Phase::Resolution,
        ))
    }
}

/// Format ms since the Unix epoch as an RFC 3339 UTC timestamp with ms precision,
/// e.g. `2026-01-01T00:00:00.000Z`. Pure arithmetic (no clock read).
pub(crate) fn iso8601_from_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}.{millis:03}Z");
    }
    // Two timestamps per step record: written digit by digit into one exact allocation
    // rather than through the formatting machinery.
    let mut buf = *b"0000-00-00T00:00:00.000Z";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for k in (at..at + width).rev() {
            buf[k] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, y as u64);
    put(5, 2, mo as u64);
    put(8, 2, d as u64);
    put(11, 2, h);
    put(14, 2, m);
    put(17, 2, s);
    put(20, 3, millis);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_formats_known_instants() {
        assert_eq!(iso8601_from_ms(0), "1970-01-01T00:00:00.000Z");
        // The simulator's epoch.
        assert_eq!(
            iso8601_from_ms(1_767_225_600_000),
            "2026-01-01T00:00:00.000Z"
        );
        assert_eq!(
            iso8601_from_ms(1_709_210_096_789),
            "2024-02-29T12:34:56.789Z"
        );
        for (ms, text) in [
            (1_709_251_199_999, "2024-02-29T23:59:59.999Z"),
            (951_868_800_007, "2000-03-01T00:00:00.007Z"),
            (946_645_509_090, "1999-12-31T13:05:09.090Z"),
            (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
        ] {
            assert_eq!(iso8601_from_ms(ms), text);
        }
        // Past year 9999 the digits widen (the formatting path).
        assert_eq!(
            iso8601_from_ms(253_402_300_800_000),
            "10000-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn on_executed_keeps_first_report() {
        let cb = OnExecuted::new();
        cb.report(serde_json::json!({"app": "a"}));
        cb.report(serde_json::json!({"app": "b"}));
        assert_eq!(cb.first_report(), Some(serde_json::json!({"app": "a"})));
    }
}
