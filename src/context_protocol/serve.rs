//! `w6w-sim engine serve`: our engine behind the context protocol — the candidate side of
//! the engine seam, and the proof that the seam carries everything our engine needs.
//!
//! Owns: [`RemoteContext`], a `WorkflowContext` whose every async member is a `call`
//! message answered by the suite, and [`serve_engine`], the lockstep loop: poll the engine
//! until nothing is runnable, say `idle` with the calls it waits on, read one answer,
//! repeat. Invariant: the engine sees the world only through the answers (the clock is the
//! `now` stamped on each suite message; nothing here reads a real clock), so the same
//! messages in give the same messages out.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::future::Future;
use std::io::{self, BufRead, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::MAX_LINE_BYTES;
use super::message::{FromSuite, Start, StartHost, StartRun, StartSeed};
use crate::engine::{Engine, EngineError, RunResult, RunSeed};
use crate::host::{
    CallableRequest, HostError, InvokeError, InvokeRequest, LogLevel, RunInfo, RunTrigger,
    ScheduleDirective, WorkflowContext,
};
use crate::model::{Phase, RunState, RunStatePatch, StepError};
use crate::process::read_line;
use crate::sim::SimError;
use crate::validate::{ValidateOptions, validate_workflow};

/// What our engine declares it supports: everything.
pub(crate) const REFERENCE_CAPABILITIES: &[&str] = super::CAPABILITIES;

/// The shared half of the context: the output, the answers, the stamped clock.
struct Wire<'o> {
    out: RefCell<&'o mut dyn Write>,
    /// Call id → its answer once it arrived (`None`: still outstanding).
    pending: RefCell<BTreeMap<u64, Option<Value>>>,
    next_id: Cell<u64>,
    now: Cell<u64>,
    aborted: Cell<bool>,
    failed: Cell<bool>,
}

impl Wire<'_> {
    fn write(&self, message: &Value) {
        let mut out = self.out.borrow_mut();
        if writeln!(out, "{message}")
            .and_then(|()| out.flush())
            .is_err()
        {
            self.failed.set(true);
        }
    }

    fn stamp(&self, message: &Value) {
        if let Some(now) = message.get("now").and_then(Value::as_u64) {
            self.now.set(now);
        }
        if let Some(aborted) = message.get("aborted").and_then(Value::as_bool) {
            self.aborted.set(aborted);
        }
    }
}

/// One outstanding context call; dropping it unanswered sends `cancel`.
struct Call<'w, 'o> {
    wire: &'w Wire<'o>,
    member: &'static str,
    args: Option<Value>,
    id: Option<u64>,
}

impl Future for Call<'_, '_> {
    type Output = Value;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Value> {
        let Some(id) = self.id else {
            let id = self.wire.next_id.get() + 1;
            self.wire.next_id.set(id);
            self.wire.pending.borrow_mut().insert(id, None);
            let args = self.args.take().unwrap_or(Value::Null);
            self.wire
                .write(&json!({"type": "call", "id": id, "member": self.member, "args": args}));
            self.id = Some(id);
            return Poll::Pending;
        };
        let mut pending = self.wire.pending.borrow_mut();
        match pending.get_mut(&id).and_then(Option::take) {
            Some(answer) => {
                pending.remove(&id);
                Poll::Ready(answer)
            }
            None => Poll::Pending,
        }
    }
}

impl Drop for Call<'_, '_> {
    fn drop(&mut self) {
        let Some(id) = self.id else { return };
        let waiting = self.wire.pending.borrow_mut().remove(&id);
        if let Some(None) = waiting {
            self.wire.write(&json!({"type": "cancel", "id": id}));
        }
    }
}

/// The host data a session's first message hands over.
struct HostData {
    secrets: Map<String, Value>,
    /// D-250: the host's sealing key (`host.sealingKey`), if it holds one.
    sealing_key: Option<crate::host::SealingKey>,
    documents: Value,
    schedule: bool,
    idempotent: Vec<String>,
    /// D-275: the steps whose action's output is sensitive (`host.sensitiveSteps`).
    sensitive: Vec<String>,
}

/// `WorkflowContext` over the protocol.
pub(crate) struct RemoteContext<'w, 'o> {
    wire: &'w Wire<'o>,
    info: RunInfo,
    host: HostData,
    /// SEC-1: values declared secret-derived, sent with the next `schedule` /
    /// `invokeCallable` call as `"secretDerived"`.
    derived: std::cell::RefCell<Vec<Value>>,
}

impl<'w, 'o> RemoteContext<'w, 'o> {
    fn call(&self, member: &'static str, args: Value) -> Call<'w, 'o> {
        Call {
            wire: self.wire,
            member,
            args: Some(args),
            id: None,
        }
    }

    /// SEC-1: hand the host the values declared secret-derived since the last call.
    fn attach_derived(&self, args: &mut Value) {
        let derived = std::mem::take(&mut *self.derived.borrow_mut());
        if !derived.is_empty()
            && let Value::Object(m) = args
        {
            m.insert("secretDerived".into(), Value::Array(derived));
        }
    }

    async fn unit(&self, member: &'static str, args: Value) -> Result<(), HostError> {
        let answer = self.call(member, args).await;
        match answer.get("error") {
            None => Ok(()),
            Some(e) => Err(host_error(e)),
        }
    }
}

fn host_error(e: &Value) -> HostError {
    let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
    match e.get("code").and_then(Value::as_str) {
        Some("host_crashed") => HostError::Crashed,
        _ => HostError::Store(message.to_owned()),
    }
}

fn step_error(answer: &Value) -> StepError {
    answer
        .get("error")
        .cloned()
        .and_then(|e| serde_json::from_value(e).ok())
        .unwrap_or_else(|| {
            StepError::new(
                "invalid_answer",
                format!("the host's answer is neither ok nor a StepError: {answer}"),
                Phase::Execute,
            )
        })
}

impl WorkflowContext for RemoteContext<'_, '_> {
    fn run(&self) -> &RunInfo {
        &self.info
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<Value, InvokeError> {
        let answer = self
            .call(
                "invoke",
                json!({"app": req.app, "action": req.action, "connection": req.connection,
                       "params": req.params, "stepId": req.step_id, "attempt": req.attempt,
                       "secretPaths": req.secret_paths}),
            )
            .await;
        for report in answer
            .get("onExecuted")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            req.on_executed.report(report.clone());
        }
        match answer.get("ok") {
            Some(v) if answer.get("error").is_none() => Ok(v.clone()),
            _ => Err(step_error(&answer)),
        }
    }

    fn action_idempotent(&self, step_id: &str, _app: &str, _action: &str) -> bool {
        self.host.idempotent.iter().any(|s| s == step_id)
    }

    fn action_sensitive_output(&self, step_id: &str, _app: &str, _action: &str) -> bool {
        self.host.sensitive.iter().any(|s| s == step_id)
    }

    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>) {
        let mut m = json!({"type": "log", "level": level, "message": message});
        if let (Some(d), Value::Object(obj)) = (data, &mut m) {
            obj.insert("data".into(), d.clone());
        }
        self.wire.write(&m);
    }

    async fn checkpoint(&self, patch: &RunStatePatch) -> Result<(), HostError> {
        self.unit("state.checkpoint", json!({"patch": patch})).await
    }

    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError> {
        let answer = self.call("state.load", json!({"runId": run_id})).await;
        if let Some(e) = answer.get("error") {
            return Err(host_error(e));
        }
        match answer.get("ok") {
            None | Some(Value::Null) => Ok(None),
            Some(state) => serde_json::from_value(state.clone())
                .map(Some)
                .map_err(|e| HostError::Store(format!("state.load answered no RunState: {e}"))),
        }
    }

    fn now_ms(&self) -> u64 {
        self.wire.now.get()
    }

    async fn sleep(&self, ms: u64) {
        let _ = self.call("sleep", json!({"ms": ms})).await;
    }

    async fn wait_before_retry(&self, step_id: Option<&str>, attempt: u32, ms: u64) {
        let _ = self
            .call(
                "waitBeforeRetry",
                json!({"stepId": step_id, "attempt": attempt, "ms": ms}),
            )
            .await;
    }

    fn secrets(&self) -> Map<String, Value> {
        self.host.secrets.clone()
    }

    fn sealing_key(&self) -> Option<crate::host::SealingKey> {
        self.host.sealing_key.clone()
    }

    fn documents(&self) -> Value {
        self.host.documents.clone()
    }

    fn aborted(&self) -> bool {
        self.wire.aborted.get()
    }

    fn supports_schedule(&self) -> bool {
        self.host.schedule
    }

    async fn schedule(&self, directive: ScheduleDirective) -> Result<(), HostError> {
        let mut args = json!({"directive": directive});
        self.attach_derived(&mut args);
        self.unit("schedule", args).await
    }

    fn secret_derived(&self, value: &Value) {
        self.derived.borrow_mut().push(value.clone());
    }

    async fn invoke_callable(&self, req: CallableRequest) -> Result<Value, InvokeError> {
        let mut args = json!({"target": req.target, "input": req.input, "wait": req.wait,
                              "depth": req.depth, "stepId": req.step_id,
                              "dispatchId": req.dispatch_id,
                              "secretPaths": req.secret_paths});
        self.attach_derived(&mut args);
        let answer = self.call("invokeCallable", args).await;
        match answer.get("ok") {
            Some(v) if answer.get("error").is_none() => Ok(v.clone()),
            _ => Err(step_error(&answer)),
        }
    }
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn read_message(input: &mut dyn BufRead) -> io::Result<Option<Value>> {
    while let Some(line) = read_line(&mut *input, MAX_LINE_BYTES)? {
        let text = line
            .into_text()
            .map_err(|what| io::Error::new(io::ErrorKind::InvalidData, what))?;
        if !text.trim().is_empty() {
            return serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e));
        }
    }
    Ok(None)
}

/// Serve our engine over the protocol on `input` / `output` until `input` ends. `Err` when
/// the suite breaks the protocol or a pipe fails (the process then exits non-zero).
pub fn serve_engine(input: &mut dyn BufRead, output: &mut dyn Write) -> io::Result<()> {
    let Some(hello) = read_message(input)? else {
        return Ok(());
    };
    if hello.get("protocol").and_then(Value::as_str) != Some(super::PROTOCOL)
        || hello.get("version").and_then(Value::as_u64) != Some(super::VERSION)
    {
        writeln!(
            output,
            "{}",
            json!({"type": "ready", "protocol": super::PROTOCOL,
                   "error": format!("this engine speaks {} version {}", super::PROTOCOL, super::VERSION)})
        )?;
        return Err(io::Error::new(io::ErrorKind::InvalidData, "unknown hello"));
    }
    let ready = super::ready(
        "w6w-sim reference engine",
        env!("CARGO_PKG_VERSION"),
        REFERENCE_CAPABILITIES,
    );
    writeln!(output, "{ready}")?;
    output.flush()?;
    while let Some(message) = read_message(input)? {
        let between = FromSuite::deserialize(&message).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unexpected message between sessions: {e}"),
            )
        })?;
        match between {
            FromSuite::Op { id, request } => {
                let response = crate::service::handle(&request);
                writeln!(
                    output,
                    "{}",
                    json!({"type": "opResult", "id": id, "response": response})
                )?;
                output.flush()?;
            }
            FromSuite::Run(start) => session(Kind::Run, start, &message, input, output)?,
            FromSuite::Resume(start) => session(Kind::Resume, start, &message, input, output)?,
            FromSuite::Replay(start) => session(Kind::Replay, start, &message, input, output)?,
        }
    }
    Ok(())
}

/// Which session a start message opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Run,
    Resume,
    Replay,
}

/// One session: run the engine in lockstep with the suite, then say `done`. `raw` is the
/// start message as sent (its `now` and `aborted` stamp the clock).
fn session(
    kind: Kind,
    start: Start,
    raw: &Value,
    input: &mut dyn BufRead,
    output: &mut dyn Write,
) -> io::Result<()> {
    let done = |output: &mut dyn Write, body: Value| -> io::Result<()> {
        let mut m = json!({"type": "done"});
        if let (Value::Object(m), Value::Object(b)) = (&mut m, body) {
            m.extend(b);
        }
        writeln!(output, "{m}")?;
        output.flush()
    };
    let workflow = match validate_workflow(&start.workflow, ValidateOptions { runnable: true }) {
        Ok(w) => w,
        Err(errors) => {
            return done(
                output,
                json!({"error": SimError::InvalidWorkflow(errors).to_json()}),
            );
        }
    };
    let engine = match Engine::new(&workflow) {
        Ok(e) => e,
        Err(e) => return done(output, json!({"error": SimError::Rejected(e).to_json()})),
    };
    let Start {
        run,
        host,
        seed,
        token,
        from,
        ..
    } = start;
    let (info, host) = context_of(run, host, &workflow.id);
    let run_id = info.id.clone();
    let result = {
        let wire = Wire {
            out: RefCell::new(&mut *output),
            pending: RefCell::new(BTreeMap::new()),
            next_id: Cell::new(0),
            now: Cell::new(0),
            aborted: Cell::new(false),
            failed: Cell::new(false),
        };
        wire.stamp(raw);
        let ctx = RemoteContext {
            wire: &wire,
            info,
            host,
            derived: RefCell::new(Vec::new()),
        };
        let fut = engine_future(kind, seed, token, from, &engine, &ctx, run_id);
        drive(fut, &wire, input)?
    };
    match result {
        Some(Ok(_)) => done(output, json!({})),
        Some(Err(e)) => {
            let error = match kind {
                Kind::Run => SimError::Rejected(e),
                Kind::Resume | Kind::Replay => SimError::Engine(e),
            };
            done(output, json!({"error": error.to_json()}))
        }
        // The suite ended the session (closed stdin mid-run): nothing more to say.
        None => Ok(()),
    }
}

/// The run a session's first message describes, and what its host holds.
fn context_of(run: StartRun, host: StartHost, workflow_id: &str) -> (RunInfo, HostData) {
    let info = RunInfo {
        id: run.id,
        workflow_id: workflow_id.to_owned(),
        trigger: run.trigger.unwrap_or(RunTrigger::Manual),
        attempt: run.attempt.unwrap_or(1),
    };
    let host = HostData {
        secrets: host.secrets,
        sealing_key: host
            .sealing_key
            .as_deref()
            .and_then(crate::host::SealingKey::from_wire),
        documents: host.documents,
        schedule: host.schedule,
        idempotent: host.idempotent_steps,
        sensitive: host.sensitive_steps,
    };
    (info, host)
}

type EngineFuture<'x> = Pin<Box<dyn Future<Output = Result<RunResult, EngineError>> + 'x>>;

/// What the engine does in a session: run from the seed, resume (with a fired wait's
/// token, or after a crash) or replay (from a step).
fn engine_future<'x>(
    kind: Kind,
    seed: StartSeed,
    token: Option<String>,
    from: Option<String>,
    engine: &'x Engine,
    ctx: &'x RemoteContext<'_, '_>,
    run_id: String,
) -> EngineFuture<'x> {
    match kind {
        Kind::Run => {
            let seed = RunSeed {
                run_id,
                trigger: seed.trigger.unwrap_or_else(|| json!({"type": "manual"})),
                variables: seed.variables,
                call_depth: 0,
                secret_paths: Vec::new(),
            };
            Box::pin(engine.run(seed, ctx))
        }
        Kind::Resume => Box::pin(async move {
            match token {
                Some(token) => engine.resume_with(&run_id, Some(&token), ctx).await,
                None => engine.resume(&run_id, ctx).await,
            }
        }),
        Kind::Replay => Box::pin(async move { engine.replay(&run_id, from.as_deref(), ctx).await }),
    }
}

/// Poll `fut` in lockstep: run until nothing is runnable, say idle, read one answer.
fn drive<T>(
    fut: Pin<Box<dyn Future<Output = T> + '_>>,
    wire: &Wire<'_>,
    input: &mut dyn BufRead,
) -> io::Result<Option<T>> {
    let mut fut = fut;
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(flag.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        flag.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            drop(fut);
            return Ok(Some(v));
        }
        if wire.failed.get() {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "cannot write to the suite",
            ));
        }
        if flag.0.load(Ordering::SeqCst) {
            continue;
        }
        let waiting: Vec<u64> = wire
            .pending
            .borrow()
            .iter()
            .filter(|(_, a)| a.is_none())
            .map(|(id, _)| *id)
            .collect();
        wire.write(&json!({"type": "idle", "waiting": waiting}));
        let Some(answer) = read_message(input)? else {
            return Ok(None);
        };
        if answer.get("type").and_then(Value::as_str) != Some("answer") {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("expected an answer during a session, got {answer}"),
            ));
        }
        wire.stamp(&answer);
        let id = answer.get("id").and_then(Value::as_u64);
        let mut pending = wire.pending.borrow_mut();
        match id.and_then(|id| pending.get_mut(&id)) {
            Some(slot @ None) => *slot = Some(answer),
            _ => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("an answer to no outstanding call: {answer}"),
                ));
            }
        }
    }
}
