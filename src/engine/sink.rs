//! The engine's own redaction sink (SEC-1, docs/decisions.md D-207).
//!
//! Owns: [`Sunk`], the host contract as the engine writes through it — every checkpoint
//! and log line passes the run's [`Scrubber`] (the host's secrets in every form the sink
//! knows, plus every value the engine declared secret-derived) before it reaches the host.
//! Invariant: the engine's own mirror keeps the live values (only the copy the host is
//! handed is scrubbed, exactly as a scrubbing host would store it), so a run behaves the
//! same whether its host scrubs or not; and the engine never relies on its host to redact
//! what it writes: a host, and the conformance suite, may judge the engine's bytes as they
//! arrive.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::host::{
    CallableRequest, HostError, InvokeError, InvokeRequest, LogLevel, RunInfo, ScheduleDirective,
    SealingKey, WorkflowContext,
};
use crate::model::{RunState, RunStatePatch};
use crate::redact::Scrubber;

/// A host as the engine writes to it: checkpoints and logs scrubbed first.
pub(crate) struct Sunk<'c, C> {
    host: &'c C,
    scrub: Scrubber,
}

impl<'c, C: WorkflowContext> Sunk<'c, C> {
    pub(crate) fn new(host: &'c C) -> Self {
        Sunk {
            host,
            scrub: Scrubber::new(host.secrets().values()),
        }
    }
}

impl<C: WorkflowContext> WorkflowContext for Sunk<'_, C> {
    fn run(&self) -> &RunInfo {
        self.host.run()
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<Value, InvokeError> {
        self.host.invoke(req).await
    }

    fn action_idempotent(&self, step_id: &str, app: &str, action: &str) -> bool {
        self.host.action_idempotent(step_id, app, action)
    }

    fn action_sensitive_output(&self, step_id: &str, app: &str, action: &str) -> bool {
        self.host.action_sensitive_output(step_id, app, action)
    }

    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>) {
        let scrubbed = self.scrub.text(message);
        let data = data.map(|d| match self.scrub.touches(d) {
            true => Cow::Owned(self.scrub.scrubbed(d.clone())),
            false => Cow::Borrowed(d),
        });
        self.host.log(
            level,
            scrubbed.as_deref().unwrap_or(message),
            data.as_deref(),
        );
    }

    async fn checkpoint(&self, patch: &RunStatePatch) -> Result<(), HostError> {
        if self.scrub.touches_patch(patch) {
            let mut copy = patch.clone();
            self.scrub.patch(&mut copy);
            self.host.checkpoint(&copy).await
        } else {
            self.host.checkpoint(patch).await
        }
    }

    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError> {
        self.host.load(run_id).await
    }

    fn now_ms(&self) -> u64 {
        self.host.now_ms()
    }

    async fn sleep(&self, ms: u64) {
        self.host.sleep(ms).await;
    }

    async fn wait_before_retry(&self, step_id: Option<&str>, attempt: u32, ms: u64) {
        self.host.wait_before_retry(step_id, attempt, ms).await;
    }

    fn secrets(&self) -> Map<String, Value> {
        self.host.secrets()
    }

    fn sealing_key(&self) -> Option<SealingKey> {
        self.host.sealing_key()
    }

    fn random_bytes(&self, out: &mut [u8]) -> bool {
        self.host.random_bytes(out)
    }

    fn documents(&self) -> Value {
        self.host.documents()
    }

    fn aborted(&self) -> bool {
        self.host.aborted()
    }

    fn supports_schedule(&self) -> bool {
        self.host.supports_schedule()
    }

    /// The directive goes as it is: the host needs the real time and token, and the
    /// engine has declared any secret-derived part of it (`secret_derived`) first.
    async fn schedule(&self, directive: ScheduleDirective) -> Result<(), HostError> {
        self.host.schedule(directive).await
    }

    fn secret_derived(&self, value: &Value) {
        self.scrub.add_derived(value);
        self.host.secret_derived(value);
    }

    async fn invoke_callable(&self, req: CallableRequest) -> Result<Value, InvokeError> {
        self.host.invoke_callable(req).await
    }
}
