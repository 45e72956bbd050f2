//! The suite side of the engine seam: a candidate engine process runs against the suite,
//! which is its `WorkflowContext`.
//!
//! Owns: the candidate process's life ([`Candidate`]: spawn, hello, real `SIGKILL` at a
//! crash, respawn), one session per engine "process life" ([`Session`], a future the
//! simulator's virtual-time executor drives like our own engine), and [`EngineProcess`],
//! the op-level `conformance::Adapter` over it.
//!
//! Invariant: the candidate never reports an effect. Every invocation, wait, checkpoint and
//! schedule enters the report because the suite's simulated host ([`SimHost`]) served it;
//! the final RunState is the one the suite's store folded from the checkpoints it
//! acknowledged. Per session the suite salts the run id with a nonce and what it hands the
//! engine with the run's output salt ([`super::salt`], D-215), both drawn from the session
//! seed and taken back out before anything is stored, so a candidate replaying a recorded
//! transcript writes checkpoints for a run, and with values, that do not exist here and is
//! refused. Every line the candidate writes is judged for the session's secrets before
//! anything else reads it (SEC-1, D-207).
//!
//! Determinism: lockstep turns (module docs of [`super`]). On `idle` the suite polls every
//! outstanding call in id order; the first to complete is answered; if none can, virtual
//! time jumps to the next timer — exactly the executor rule our own engine runs under.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::message::{
    CallableArgs, CheckpointArgs, EnqueueArgs, FromEngine, InvokeArgs, LoadArgs, ScheduleArgs,
    SleepArgs, Turn, WaitArgs, decode_args, invalid_call,
};
use super::salt::OutputSalt;
use super::shift::ClockShift;
use crate::conformance::generate::{SplitMix64, fresh_seed};
use crate::conformance::{Adapter, AdapterError};
use crate::engine::{EngineError, RunResult, RunSeed};
use crate::host::{HostError, InvokeRequest, LogLevel, OnExecuted, WorkflowContext};
use crate::model::{RunState, RunStatePatch};
use crate::process::{Deadline, Peer, ProcessError, clip};
use crate::redact::leak::{Detector, Leak};
use crate::sim::exec::{Exec, block_on};
use crate::sim::host::SimHost;
use crate::sim::world::World;
use crate::sim::{
    Driver, MemoryStore, Mode, Scenario, SimError, SimOptions, Simulation, load_scenario,
};

/// At most this many messages (calls, logs, cancels) in one turn: a candidate that never
/// says `idle` cannot grow the trace without bound before the session deadline.
pub(crate) use crate::limits::MAX_MESSAGES_PER_TURN;

/// The code of a session that ended because the candidate broke the protocol.
pub(crate) const PROTOCOL_ERROR: &str = "context_protocol";

/// Deadlines and restart policy of an [`EngineProcess`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineOptions {
    /// How long the candidate may take to write its next line.
    pub line_timeout: Duration,
    /// How long one session (one process life of one run) may take in real time.
    pub session_timeout: Duration,
    /// How long the candidate may take to start and answer the hello.
    pub startup_timeout: Duration,
    /// After this many failed spawns / handshakes in a row, every later request fails.
    pub max_consecutive_failures: u32,
    /// The whole suite run's wall-clock bound (`--deadline`; `None`: none): once it
    /// passes the candidate is killed and every later case fails at once, naming it.
    pub deadline: Option<Duration>,
    /// What every session's run id nonce and clock are drawn from (`--session-seed`;
    /// `None`: a fresh random seed, [`EngineProcess::session_seed`] says which). The same
    /// seed and cases give the candidate the same messages (D-215).
    pub session_seed: Option<u64>,
}

impl Default for EngineOptions {
    fn default() -> Self {
        EngineOptions {
            line_timeout: Duration::from_secs(10),
            session_timeout: Duration::from_secs(60),
            startup_timeout: Duration::from_secs(30),
            max_consecutive_failures: 3,
            deadline: None,
            session_seed: None,
        }
    }
}

/// Counters of what crossed the boundary (the bench's denominators, and a test's proof
/// that crashes were real process kills).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Processes started.
    pub spawns: u64,
    /// `SIGKILL`s sent mid-session: at scripted crash points (and when a simulation halts
    /// or the candidate breaks the protocol, which a passing suite never sees).
    pub kills: u64,
    /// Context calls the candidate made (`call` messages).
    pub calls: u64,
    /// Sessions (run / resume / replay messages).
    pub sessions: u64,
}

/// The candidate engine process, across sessions and restarts.
pub(crate) struct Candidate {
    argv: Vec<String>,
    options: EngineOptions,
    peer: Option<Peer>,
    name: Option<String>,
    capabilities: Vec<String>,
    broken: Option<String>,
    failures: u32,
    traffic: Traffic,
    deadline: Deadline,
    /// The session seed each run's seed is derived from.
    seed: u64,
}

impl Candidate {
    fn running(&mut self) -> Result<&mut Peer, String> {
        if let Some(why) = &self.broken {
            return Err(why.clone());
        }
        if self.deadline.passed() {
            self.kill();
            let why = format!(
                "the run's overall deadline of {} s passed; this and every later case were not \
                 run (--deadline)",
                self.deadline.total().as_secs()
            );
            self.broken = Some(why.clone());
            return Err(why);
        }
        if self.peer.is_none() {
            match self.start() {
                Ok(peer) => {
                    self.failures = 0;
                    self.peer = Some(peer);
                }
                Err(e) => {
                    self.failures += 1;
                    if self.failures >= self.options.max_consecutive_failures {
                        self.broken = Some(format!(
                            "gave up after {} failed starts in a row; the last: {e}",
                            self.failures
                        ));
                    }
                    return Err(e);
                }
            }
        }
        self.peer
            .as_mut()
            .ok_or_else(|| "the candidate is not running".to_owned())
    }

    fn start(&mut self) -> Result<Peer, String> {
        let mut peer = Peer::spawn(&self.argv, "the candidate").map_err(|e| e.to_string())?;
        self.traffic.spawns += 1;
        let ready = peer
            .handshake(
                &super::hello("engine"),
                self.deadline.clamp(self.options.startup_timeout),
                "waiting for the ready message",
                super::parse_ready,
            )
            .map_err(|e| format!("handshake: {e}"))?;
        self.name = Some(ready.name);
        self.capabilities = ready.capabilities;
        Ok(peer)
    }

    fn kill(&mut self) {
        if let Some(mut peer) = self.peer.take() {
            peer.kill();
        }
    }

    /// A run's seed — its run id nonce, its clock and its salt (D-215) — from the session
    /// seed and the request alone, not from how many runs came before: the same request
    /// gets the same run whichever candidate process of a `--jobs` pool is handed it, so
    /// the report does not depend on the pool (D-222).
    fn run_seed(&self, request: &Value) -> u64 {
        use crate::conformance::shard::{FNV_OFFSET, fnv1a};
        let request = fnv1a(FNV_OFFSET, request.to_string().as_bytes());
        SplitMix64::new(self.seed ^ request).next_u64()
    }
}

/// The answer to one call, and whether the suite must crash the candidate right after
/// acknowledging it (a `crashAfterCheckpoint` fault).
struct Answer {
    message: Value,
    crash_after: bool,
}

impl Answer {
    fn of(message: Value) -> Self {
        Answer {
            message,
            crash_after: false,
        }
    }

    fn ok_null() -> Self {
        Answer::of(json!({"ok": null}))
    }

    fn error(code: &str, e: &dyn std::fmt::Display) -> Self {
        Answer::of(json!({"error": {"code": code, "message": e.to_string()}}))
    }
}

type CallFuture<'s> = Pin<Box<dyn Future<Output = Answer> + 's>>;

/// How a session ended, besides a result.
pub(crate) enum Ending {
    /// The candidate broke the protocol (or died, or timed out): `{code, message}`.
    Broken(String),
    /// The candidate's own refusal (`done` with an `error`).
    Refused(Value),
    /// A scripted crash after an acknowledged checkpoint.
    Crashed,
}

/// One process life of a run: a future the simulator's executor polls. Generic over the
/// context it serves, so any host (the simulator's, or a Rust seam's) can drive a
/// candidate process; dropping it before it ended kills the candidate (a crash, a halt).
pub(crate) struct Session<'s, C: WorkflowContext> {
    cand: &'s RefCell<Candidate>,
    host: &'s C,
    run_id: String,
    /// The session ended (done, refused, crashed, broken): nothing to kill on drop.
    ended: bool,
    outstanding: BTreeMap<u64, CallFuture<'s>>,
    ready: VecDeque<(u64, Value)>,
    /// The suite sent a message and waits for the candidate's `idle` or `done`.
    awaiting: bool,
    last_id: u64,
    enqueued: u64,
    /// This process life's real-time bound (`EngineOptions::session_timeout`).
    deadline: Deadline,
    /// This run's session clock (D-104), shared by all its process lives.
    shift: &'s ClockShift,
    /// This run's output salt (D-215), shared by all its process lives.
    salt: &'s OutputSalt,
    /// SEC-1 judged on the candidate's own bytes (D-207): the session's secrets.
    secrets: Detector,
}

impl<'s, C: WorkflowContext> Session<'s, C> {
    fn recv(&self) -> Result<String, String> {
        let mut cand = self.cand.borrow_mut();
        let line_timeout = self
            .deadline
            .clamp(cand.deadline.clamp(cand.options.line_timeout));
        let peer = cand.running()?;
        peer.recv(line_timeout, "the candidate was running (before its idle)")
            .map_err(|e: ProcessError| {
                let said = format!("{}: {e}", e.code());
                // The report keeps the stderr tail a failure quotes: judged like any line the
                // candidate wrote (D-207), before the report's sink scrubs it.
                match self.secrets.in_text(&said) {
                    Some(form) => format!(
                        "{said}; SEC-1: the candidate's stderr holds a secret of this session {}",
                        form.describe()
                    ),
                    None => said,
                }
            })
    }

    fn send(&self, message: &Value) -> Result<(), String> {
        let mut cand = self.cand.borrow_mut();
        let peer = cand.running()?;
        if peer.send(message) {
            Ok(())
        } else {
            Err("the candidate closed its stdin".into())
        }
    }

    /// The clock and the abort signal ride on every message the suite sends; every time in
    /// it is on the session clock (D-104).
    fn stamped(&self, mut message: Value) -> Value {
        self.shift.outbound(&mut message);
        if let Value::Object(m) = &mut message {
            m.insert("now".into(), json!(self.shift.now(self.host.now_ms())));
            m.insert("aborted".into(), json!(self.host.aborted()));
        }
        message
    }

    /// Read the candidate's lines until it is idle (`Ok(None)`) or done.
    fn read_turn(&mut self) -> Result<Option<Result<(), Ending>>, String> {
        for _ in 0..MAX_MESSAGES_PER_TURN {
            let line = self.recv()?;
            let mut msg: Value = serde_json::from_str(&line).map_err(|e| {
                // A line that is not JSON is judged as text before it is quoted.
                match self.secrets.in_text(&line) {
                    Some(form) => Leak {
                        pointer: String::new(),
                        form,
                    }
                    .message("a line that is not JSON"),
                    None => format!("a line that is not JSON ({e}): {}", clip(&line)),
                }
            })?;
            self.judge_secrets(&msg)?;
            self.check_times(&msg)?;
            if msg.get("member").and_then(Value::as_str) == Some("state.checkpoint") {
                self.salt.check_carried(&msg)?;
            }
            self.shift.inbound(&mut msg);
            self.salt.unsalt(&mut msg)?;
            let turn = Turn::deserialize(msg).map_err(|e| {
                format!(
                    "a message the suite cannot read during a session ({e}): {}",
                    clip(&line)
                )
            })?;
            match turn {
                Turn::Call { id, member, args } => self.accept_call(id, &member, &args)?,
                Turn::Log {
                    level,
                    message,
                    data,
                } => self.host.log(level, &message, data.as_ref()),
                Turn::Cancel { id } => {
                    // Dropping the call's future is the cancellation (the trace says so).
                    self.outstanding.remove(&id);
                    self.ready.retain(|(r, _)| *r != id);
                }
                Turn::Idle { waiting } => {
                    self.check_idle(waiting)?;
                    return Ok(None);
                }
                Turn::Done { error } => return Ok(Some(self.finish(error))),
            }
        }
        Err(format!(
            "more than {MAX_MESSAGES_PER_TURN} messages without an idle"
        ))
    }

    /// SEC-1 (D-207): a message the candidate wrote holds no secret of the session in any
    /// form, outside the fields that carry secrets to where they are used: an `invoke`'s
    /// `params` (the action's input), an `invokeCallable`'s `target` and `input` (the
    /// callee), and any value the same call declares in `secretDerived` (the host records
    /// those redacted). Judged before anything is redacted, translated or stored.
    fn judge_secrets(&self, msg: &Value) -> Result<(), String> {
        if self.secrets.is_empty() {
            return Ok(());
        }
        let member = msg
            .get("member")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let declared = msg.pointer("/args/secretDerived").and_then(Value::as_array);
        let exempt = |pointer: &str| {
            pointer == "/args/secretDerived"
                || (member == "invoke" && pointer == "/args/params")
                || (member == "invokeCallable"
                    && (pointer == "/args/input" || pointer == "/args/target"))
                || declared.is_some_and(|d| {
                    pointer.starts_with("/args/")
                        && msg.pointer(pointer).is_some_and(|v| d.contains(v))
                })
        };
        match self.secrets.in_value(msg, "", &exempt) {
            None => Ok(()),
            Some(leak) => {
                let kind = msg.get("type").and_then(Value::as_str).unwrap_or("message");
                let what = match kind {
                    "call" => format!("a {member:?} call"),
                    other => format!("a {other:?} message"),
                };
                Err(leak.message(&what))
            }
        }
    }

    /// D-104: the times a candidate writes into its step records must be times the suite's
    /// clock showed in this session — a recorded transcript carries another session's.
    fn check_times(&self, msg: &Value) -> Result<(), String> {
        if !self.shift.active()
            || msg.get("member").and_then(Value::as_str) != Some("state.checkpoint")
        {
            return Ok(());
        }
        let steps = msg.pointer("/args/patch/steps").and_then(Value::as_object);
        for (step, record) in steps.into_iter().flatten() {
            for field in ["startedAt", "finishedAt"] {
                if let Some(t) = record.get(field).and_then(Value::as_str)
                    && !self.shift.shown(t)
                {
                    return Err(format!(
                        "a checkpoint gives step {step:?} {field} {}, a time the suite's clock never \
                         showed in this session (the clock is the `now` on every suite message; is a \
                         recorded transcript being replayed?)",
                        clip(t)
                    ));
                }
            }
        }
        Ok(())
    }

    /// `idle` must list exactly the calls without an answer.
    fn check_idle(&self, mut said: Vec<u64>) -> Result<(), String> {
        let mut expected: Vec<u64> = self.outstanding.keys().copied().collect();
        expected.extend(self.ready.iter().map(|(id, _)| *id));
        expected.sort_unstable();
        said.sort_unstable();
        if said != expected {
            return Err(format!(
                "idle lists {said:?} as waiting, but the calls without an answer are {expected:?}"
            ));
        }
        Ok(())
    }

    fn finish(&mut self, error: Option<Value>) -> Result<(), Ending> {
        // Anything still outstanding is abandoned by the engine that returned.
        self.outstanding.clear();
        self.ready.clear();
        match error {
            None => Ok(()),
            Some(error) if error.get("code").and_then(Value::as_str).is_some() => {
                Err(Ending::Refused(error))
            }
            Some(error) => Err(Ending::Broken(format!(
                "done's error needs a code: {error}"
            ))),
        }
    }

    fn accept_call(&mut self, id: u64, member: &str, args: &Value) -> Result<(), String> {
        if id <= self.last_id {
            return Err(format!(
                "call ids must increase within a session: {id} after {}",
                self.last_id
            ));
        }
        self.last_id = id;
        self.cand.borrow_mut().traffic.calls += 1;
        let fut = self.call_future(member, args)?;
        self.outstanding.insert(id, fut);
        Ok(())
    }

    /// The suite's host serving one call: `args` decoded as `member`'s arguments
    /// ([`super::message`]); a member this suite's context does not have is answered
    /// `unsupported_member`.
    fn call_future(&mut self, member: &str, args: &Value) -> Result<CallFuture<'s>, String> {
        let host = self.host;
        Ok(match member {
            "invoke" => {
                let invoke: InvokeArgs = decode_args(member, args, "")?;
                if invoke.attempt == 0 {
                    return Err(invalid_call(member, "attempt (an integer ≥ 1)", args));
                }
                self.invoke(invoke)
            }
            "state.checkpoint" => {
                let CheckpointArgs { patch } = decode_args(member, args, "; a RunStatePatch")?;
                self.checkpoint(patch)?
            }
            "state.load" => self.load(decode_args(member, args, "")?),
            "sleep" => {
                let SleepArgs { ms } = decode_args(member, args, "")?;
                Box::pin(async move {
                    host.sleep(ms).await;
                    Answer::ok_null()
                })
            }
            "waitBeforeRetry" => {
                let wait: WaitArgs = decode_args(member, args, "")?;
                Box::pin(async move {
                    let step = wait.step_id.as_deref();
                    host.wait_before_retry(step, wait.attempt, wait.ms).await;
                    Answer::ok_null()
                })
            }
            "schedule" => {
                // Declared before anything else reads the args: an error quotes them.
                declare_secret_derived(host, args);
                let ScheduleArgs { directive } = decode_args(member, args, "")?;
                Box::pin(async move {
                    match host.schedule(directive).await {
                        Ok(()) => Answer::ok_null(),
                        Err(e) => Answer::error(e.code(), &e),
                    }
                })
            }
            "queue.enqueue" => self.enqueue(decode_args(member, args, "")?),
            "invokeCallable" => {
                declare_secret_derived(host, args);
                self.invoke_callable(decode_args(member, args, "")?)
            }
            other => {
                let message = json!({"error": {"code": "unsupported_member",
                    "message": format!("this suite's context has no member {other:?}")}});
                Box::pin(async move { Answer::of(message) })
            }
        })
    }

    fn invoke(&self, args: InvokeArgs) -> CallFuture<'s> {
        let (host, salt) = (self.host, self.salt);
        let on_executed = OnExecuted::new();
        let req = InvokeRequest {
            app: args.app,
            action: args.action,
            connection: args.connection,
            params: args.params,
            step_id: args.step_id,
            attempt: args.attempt,
            on_executed: on_executed.clone(),
            secret_paths: args.secret_paths.unwrap_or_default(),
        };
        // A secret-derived invocation's output is sealed whole by the engine (D-170):
        // ciphertext the suite could not unsalt, so it goes unsalted.
        let salted = req.secret_paths.is_empty();
        let step_id = req.step_id.clone();
        Box::pin(async move {
            let mut message = match host.invoke(req).await {
                Ok(mut v) => {
                    salt.step_output(&step_id, &mut v, salted);
                    json!({"ok": v})
                }
                Err(e) => {
                    let mut e = serde_json::to_value(e).unwrap_or(Value::Null);
                    salt.step_error(&step_id, &mut e, salted);
                    json!({"error": e})
                }
            };
            let reports = on_executed.reports();
            if let (false, Value::Object(m)) = (reports.is_empty(), &mut message) {
                m.insert("onExecuted".into(), Value::Array(reports));
            }
            Answer::of(message)
        })
    }

    fn checkpoint(&self, patch: RunStatePatch) -> Result<CallFuture<'s>, String> {
        if patch.run_id != self.run_id {
            return Err(format!(
                "a checkpoint for run {:?}, but this session runs {:?} (is a recorded transcript being replayed?)",
                patch.run_id, self.run_id
            ));
        }
        let host = self.host;
        Ok(Box::pin(async move {
            match host.checkpoint(&patch).await {
                Ok(()) => Answer::ok_null(),
                Err(HostError::Crashed) => Answer {
                    message: json!({"ok": null}),
                    crash_after: true,
                },
                Err(e) => Answer::error(e.code(), &e),
            }
        }))
    }

    fn load(&self, args: LoadArgs) -> CallFuture<'s> {
        let (host, salt) = (self.host, self.salt);
        Box::pin(async move {
            match host.load(&args.run_id).await {
                Ok(state) => {
                    let mut state = serde_json::to_value(state).unwrap_or(Value::Null);
                    salt.state(&mut state);
                    Answer::of(json!({"ok": state}))
                }
                Err(e) => Answer::error(e.code(), &e),
            }
        })
    }

    fn enqueue(&mut self, args: EnqueueArgs) -> CallFuture<'s> {
        self.enqueued += 1;
        let job_id = format!("{}.job{}", self.run_id, self.enqueued);
        self.host.log(
            LogLevel::Debug,
            "queue.enqueue",
            Some(&json!({"jobId": job_id, "job": args.job})),
        );
        Box::pin(async move { Answer::of(json!({"ok": {"jobId": job_id}})) })
    }

    fn invoke_callable(&self, args: CallableArgs) -> CallFuture<'s> {
        let (host, salt) = (self.host, self.salt);
        let req = crate::host::CallableRequest {
            target: args.target.unwrap_or_default(),
            input: args.input,
            wait: args.wait,
            depth: args.depth,
            step_id: args.step_id,
            dispatch_id: args.dispatch_id,
            secret_paths: args.secret_paths,
        };
        let salted = req.secret_paths.is_empty();
        let step_id = req.step_id.clone();
        Box::pin(async move {
            let message = match host.invoke_callable(req).await {
                Ok(mut v) => {
                    salt.step_output(&step_id, &mut v, salted);
                    json!({"ok": v})
                }
                Err(e) => json!({"error": e}),
            };
            Answer::of(message)
        })
    }
}

/// D-215: the trigger a `run` hands the engine carries the session's salt.
fn salted_trigger(mut trigger: Value, salt: &OutputSalt) -> Value {
    salt.output(&mut trigger);
    trigger
}

impl<C: WorkflowContext> Future for Session<'_, C> {
    type Output = Result<(), Ending>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            if this.awaiting {
                match this.read_turn() {
                    Err(why) => {
                        this.ended = true;
                        let mut cand = this.cand.borrow_mut();
                        cand.kill();
                        return Poll::Ready(Err(Ending::Broken(why)));
                    }
                    Ok(Some(done)) => {
                        this.ended = true;
                        return Poll::Ready(done);
                    }
                    Ok(None) => this.awaiting = false,
                }
            }
            if let Some((id, answer)) = this.ready.pop_front() {
                let mut message = answer;
                if let Value::Object(m) = &mut message {
                    m.insert("type".into(), json!("answer"));
                    m.insert("id".into(), json!(id));
                }
                let message = this.stamped(message);
                if let Err(why) = this.send(&message) {
                    this.ended = true;
                    this.cand.borrow_mut().kill();
                    return Poll::Ready(Err(Ending::Broken(why)));
                }
                this.awaiting = true;
                continue;
            }
            // The candidate is idle: let every outstanding call make progress, in id order.
            let ids: Vec<u64> = this.outstanding.keys().copied().collect();
            for id in ids {
                let Some(fut) = this.outstanding.get_mut(&id) else {
                    continue;
                };
                if let Poll::Ready(answer) = fut.as_mut().poll(cx) {
                    this.outstanding.remove(&id);
                    if answer.crash_after {
                        // The checkpoint is durable; acknowledge it, then the process dies.
                        let mut message = answer.message;
                        if let Value::Object(m) = &mut message {
                            m.insert("type".into(), json!("answer"));
                            m.insert("id".into(), json!(id));
                        }
                        let message = this.stamped(message);
                        let _ = this.send(&message);
                        this.ended = true;
                        let mut cand = this.cand.borrow_mut();
                        cand.traffic.kills += 1;
                        cand.kill();
                        return Poll::Ready(Err(Ending::Crashed));
                    }
                    this.ready.push_back((id, answer.message));
                }
            }
            if this.ready.is_empty() {
                // Nothing can happen at this instant: the executor moves virtual time — or,
                // at a crash inside an invoke, drops this session (which kills the process
                // with the invoke outstanding).
                return Poll::Pending;
            }
        }
    }
}

impl<C: WorkflowContext> Drop for Session<'_, C> {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        // Dropped mid-session: a crash inside an invocation (the action ran, its result was
        // never delivered), or a halted simulation. The process dies like a crashed host's.
        self.outstanding.clear();
        if let Ok(mut cand) = self.cand.try_borrow_mut() {
            cand.traffic.kills += 1;
            cand.kill();
        }
    }
}

/// What a session asks the candidate to do.
pub(crate) enum SessionKind<'k> {
    Run(&'k RunSeed),
    /// After a crash (`None`), or a fired wait's token.
    Resume(Option<&'k str>),
    Replay(Option<&'k str>),
}

impl<'s, C: WorkflowContext> Session<'s, C> {
    /// Start one session of the candidate against `ctx`: the `run` / `resume` / `replay`
    /// message is sent; the returned future runs the lockstep turns until `done`.
    pub(crate) fn open(
        cand: &'s RefCell<Candidate>,
        workflow: &Value,
        idempotent: &[String],
        kind: SessionKind<'_>,
        ctx: &'s C,
        shift: &'s ClockShift,
        salt: &'s OutputSalt,
    ) -> Result<Self, String> {
        let info = ctx.run();
        let start = start_message(workflow, idempotent, kind, ctx, salt);
        let session_timeout = {
            let mut cand = cand.borrow_mut();
            cand.traffic.sessions += 1;
            cand.running()
                .map_err(|why| format!("the candidate engine: {why}"))?;
            cand.deadline.clamp(cand.options.session_timeout)
        };
        let deadline = Deadline::after(Some(session_timeout));
        let mut session = Session {
            cand,
            host: ctx,
            run_id: info.id.clone(),
            ended: false,
            outstanding: BTreeMap::new(),
            ready: VecDeque::new(),
            awaiting: true,
            last_id: 0,
            enqueued: 0,
            deadline,
            shift,
            salt,
            secrets: Detector::new(
                ctx.secrets()
                    .values()
                    .cloned()
                    .chain(ctx.sealing_key().map(|k| json!(k.to_wire())))
                    .collect::<Vec<_>>()
                    .iter(),
            ),
        };
        let start = session.stamped(start);
        if let Err(why) = session.send(&start) {
            session.ended = true;
            cand.borrow_mut().kill();
            return Err(why);
        }
        Ok(session)
    }
}

/// The message that opens a session: the workflow, the run, what the host offers (its
/// secrets, documents, schedule, idempotent and sensitive steps, sealing key) and the
/// `run` / `resume` / `replay` request itself.
fn start_message<C: WorkflowContext>(
    workflow: &Value,
    idempotent: &[String],
    kind: SessionKind<'_>,
    ctx: &C,
    salt: &OutputSalt,
) -> Value {
    let info = ctx.run();
    // D-275: the steps whose action the host's catalog declares sensitive.
    let sensitive: Vec<&str> = workflow["steps"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| {
            let id = s["id"].as_str()?;
            let app = s
                .pointer("/uses/app")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let action = s
                .pointer("/uses/action")
                .and_then(Value::as_str)
                .unwrap_or_default();
            ctx.action_sensitive_output(id, app, action).then_some(id)
        })
        .collect();
    let mut start = json!({
        "workflow": workflow,
        "run": {"id": info.id, "workflowId": info.workflow_id,
                "trigger": info.trigger, "attempt": info.attempt},
        "host": {"secrets": ctx.secrets(), "documents": ctx.documents(),
                 "schedule": ctx.supports_schedule(), "idempotentSteps": idempotent,
                 "sensitiveSteps": sensitive},
    });
    if let (Some(key), Some(Value::Object(host))) = (ctx.sealing_key(), start.get_mut("host")) {
        // D-250: the host's key, for an engine that seals; judged like a secret below.
        host.insert("sealingKey".into(), json!(key.to_wire()));
    }
    let (kind, extra) = match kind {
        SessionKind::Run(seed) => (
            "run",
            json!({"seed": {"runId": seed.run_id, "trigger": salted_trigger(seed.trigger.clone(), salt),
                            "variables": seed.variables}}),
        ),
        SessionKind::Resume(token) => ("resume", json!({"runId": info.id, "token": token})),
        SessionKind::Replay(from) => ("replay", json!({"runId": info.id, "from": from})),
    };
    if let (Value::Object(m), Value::Object(x)) = (&mut start, extra) {
        m.insert("type".into(), json!(kind));
        m.extend(x);
    }
    start
}

/// A candidate engine behind the protocol, as the simulator's [`Driver`].
pub(crate) struct RemoteEngine<'c> {
    cand: &'c RefCell<Candidate>,
    workflow: &'c Value,
    idempotent: Vec<String>,
    shift: ClockShift,
    salt: OutputSalt,
}

impl Driver for RemoteEngine<'_> {
    fn drive(
        &self,
        mode: &Mode<'_>,
        run_id: &str,
        host: &SimHost<'_>,
        world: &RefCell<World>,
    ) -> Exec<Result<RunResult, EngineError>> {
        let kind = match mode {
            Mode::Start(seed) => SessionKind::Run(seed),
            Mode::Resume => SessionKind::Resume(None),
            Mode::ResumeToken(token) => SessionKind::Resume(Some(token)),
            Mode::Replay(from) => SessionKind::Replay(*from),
        };
        let session = match Session::open(
            self.cand,
            self.workflow,
            &self.idempotent,
            kind,
            host,
            &self.shift,
            &self.salt,
        ) {
            Ok(s) => s,
            Err(why) => {
                return Exec::Refused(json!({"code": PROTOCOL_ERROR, "message": why}));
            }
        };
        match block_on(session, world) {
            Exec::Done(Ok(())) => {}
            Exec::Done(Err(Ending::Crashed)) => {
                return Exec::Done(Err(EngineError::Host(HostError::Crashed)));
            }
            Exec::Done(Err(Ending::Refused(error))) => return Exec::Refused(error),
            Exec::Done(Err(Ending::Broken(why))) => {
                return Exec::Refused(json!({"code": PROTOCOL_ERROR, "message": why}));
            }
            Exec::Crashed => return Exec::Crashed,
            Exec::Halted(why) => return Exec::Halted(why),
            Exec::Refused(v) => return Exec::Refused(v),
        }
        // The result is what the suite stored, never what the candidate says.
        let stored = match host.store.borrow().load(run_id) {
            Ok(Some(stored)) => stored.state,
            Ok(None) => {
                return Exec::Refused(json!({"code": PROTOCOL_ERROR, "message": format!(
                    "the candidate said done, but never checkpointed run {run_id:?}")}));
            }
            Err(e) => return Exec::Halted(format!("the suite's store: {e}")),
        };
        Exec::Done(Ok(RunResult {
            run_id: stored.run_id.clone(),
            status: stored.status,
            output: stored.output.clone(),
            error: stored.error.clone(),
            state: stored,
        }))
    }
}

/// The run id the candidate sees: the scenario's, salted with a nonce drawn from the run's
/// seed (a recorded transcript names another session's), when it stays a safe id. Never
/// visible in a report: the salted run id is mapped back.
fn salted(run_id: &str, run_seed: u64) -> String {
    if run_id.len() + 13 <= 128 {
        let nonce = SplitMix64::new(run_seed ^ 0x006e_6f6e_6365).next_u64();
        format!("{run_id}.{:012x}", nonce & 0xffff_ffff_ffff)
    } else {
        run_id.to_owned()
    }
}

fn unsalt(value: Value, salted: &str, original: &str) -> Value {
    if salted == original {
        return value;
    }
    let text = value.to_string().replace(salted, original);
    serde_json::from_str(&text).unwrap_or(value)
}

/// A candidate engine process checked through the context protocol: an op-level
/// [`Adapter`]. `run` and `replay` are sessions the suite hosts (the report is built from
/// what the suite observed); every other op is a plain request/response (`op` message).
pub struct EngineProcess {
    command: String,
    cand: RefCell<Candidate>,
    next_op: u64,
}

impl EngineProcess {
    /// Parse `command` (split like `--adapter`, no shell) and start the candidate. `Err`
    /// only when the command cannot be parsed or started at all.
    pub fn start(command: &str, options: EngineOptions) -> Result<Self, AdapterError> {
        let argv = crate::conformance::split_command(command)
            .map_err(|e| AdapterError::Spawn(format!("cannot parse {command:?}: {e}")))?;
        let seed = options.session_seed.unwrap_or_else(fresh_seed);
        let cand = Candidate {
            argv,
            deadline: Deadline::after(options.deadline),
            seed,
            options,
            peer: None,
            name: None,
            capabilities: Vec::new(),
            broken: None,
            failures: 0,
            traffic: Traffic::default(),
        };
        let process = EngineProcess {
            command: command.to_owned(),
            cand: RefCell::new(cand),
            next_op: 0,
        };
        {
            let mut cand = process.cand.borrow_mut();
            if let Err(e) = cand.running()
                && e.starts_with("cannot start")
            {
                return Err(AdapterError::Spawn(e));
            }
        }
        Ok(process)
    }

    /// The capabilities the candidate declared in its `ready` message.
    pub fn capabilities(&self) -> Vec<String> {
        self.cand.borrow().capabilities.clone()
    }

    /// The session seed every run's id nonce and clock were drawn from (`--session-seed`
    /// reproduces them).
    pub fn session_seed(&self) -> u64 {
        self.cand.borrow().seed
    }

    /// What crossed the boundary so far.
    pub fn traffic(&self) -> Traffic {
        self.cand.borrow().traffic
    }

    fn op(&mut self, request: &Value) -> Result<Value, AdapterError> {
        self.next_op += 1;
        let id = self.next_op;
        let mut cand = self.cand.borrow_mut();
        let timeout = cand.deadline.clamp(cand.options.line_timeout);
        let peer = cand.running().map_err(AdapterError::Unavailable)?;
        if !peer.send(&json!({"type": "op", "id": id, "request": request})) {
            cand.kill();
            return Err(AdapterError::Exited(
                "the candidate closed its stdin".into(),
            ));
        }
        let line = match peer.recv(timeout, &format!("waiting for opResult {id}")) {
            Ok(line) => line,
            Err(e) => {
                cand.kill();
                return Err(e.into());
            }
        };
        match serde_json::from_str::<FromEngine>(&line) {
            Ok(FromEngine::OpResult { id: got, response }) if got == id => Ok(response),
            _ => {
                cand.kill();
                Err(AdapterError::Protocol(format!(
                    "expected {{\"type\": \"opResult\", \"id\": {id}, …}}, got {}",
                    clip(&line)
                )))
            }
        }
    }

    fn session(&mut self, request: &Value, replay: bool) -> Result<Value, AdapterError> {
        let Some(workflow) = request.get("workflow") else {
            return Ok(crate::service::bad_request("missing \"workflow\""));
        };
        let (mut scenario, options) = match session_inputs(request, workflow) {
            Ok(inputs) => inputs,
            Err(response) => return Ok(response),
        };
        let idempotent: Vec<String> = scenario
            .actions
            .iter()
            .filter(|(_, a)| a.idempotent)
            .map(|(id, _)| id.clone())
            .collect();
        let run_seed = self.cand.borrow().run_seed(request);
        let driver = RemoteEngine {
            cand: &self.cand,
            workflow,
            idempotent,
            shift: ClockShift::for_request(request, options.limits.virtual_ms, run_seed),
            salt: OutputSalt::avoiding(run_seed, scenario.secrets.values()),
        };
        let (original_id, salt, result) = if replay {
            let (original, from, original_id, salt) = match replay_inputs(request, run_seed) {
                Ok(inputs) => inputs,
                Err(response) => return Ok(response),
            };
            let result = Simulation::remote(
                &driver,
                workflow,
                &scenario,
                Box::new(MemoryStore::default()),
            )
            .options(&options)
            .replay(&original, from);
            // D-378, D-380: a report the engine did not write is not judged as a replay.
            if let Some(why) = result.as_ref().ok().and_then(|r| r.not_a_replay()) {
                return Err(AdapterError::Protocol(format!(
                    "the replay of run {original_id:?} {why}"
                )));
            }
            (original_id, salt, result)
        } else {
            let original_id = scenario.run_id.clone();
            let salt = salted(&original_id, run_seed);
            scenario.run_id.clone_from(&salt);
            let result = Simulation::remote(
                &driver,
                workflow,
                &scenario,
                Box::new(MemoryStore::default()),
            )
            .options(&options)
            .run();
            (original_id, salt, result)
        };
        session_response(request, result, &salt, &original_id)
    }
}

/// Whether `session` answers `request` itself, before starting a session (D-379): no
/// workflow, a scenario or budget it refuses, or (a replay) no usable run.
fn refused_before_session(request: &Value, replay: bool) -> bool {
    let Some(workflow) = request.get("workflow") else {
        return true;
    };
    session_inputs(request, workflow).is_err() || (replay && replay_inputs(request, 0).is_err())
}

/// A session's scenario (its faults reachable, D-121) and the run's budgets (`"limits"`,
/// as for the in-process `run` op); `Err` is the error response.
fn session_inputs(request: &Value, workflow: &Value) -> Result<(Scenario, SimOptions), Value> {
    let empty = json!({});
    let scenario: Scenario = load_scenario(request.get("scenario").unwrap_or(&empty))
        .map_err(|e| json!({"error": e.to_json()}))?;
    // D-121: a fault no run of this workflow tree can reach is the scenario's error.
    if let Err(e) = crate::sim::check_reachable(workflow, &scenario) {
        return Err(json!({"error": e.to_json()}));
    }
    let options: SimOptions = crate::service::sim::op_options(request)?;
    Ok((scenario, options))
}

/// A replay's inputs: the RunState (its id salted for the session), the step to replay
/// from, the original id and the salted one; `Err` is the error response.
fn replay_inputs(
    request: &Value,
    run_seed: u64,
) -> Result<(RunState, Option<&str>, String, String), Value> {
    let Some(run) = request.get("run") else {
        return Err(crate::service::bad_request(
            "missing \"run\" (the RunState to replay)",
        ));
    };
    let mut original: RunState = match serde_json::from_value(run.clone()) {
        Ok(r) => r,
        Err(e) => {
            return Err(json!({"error": {"code": "invalid_run", "path": "/run",
                "message": format!("\"run\" is not a RunState: {e}")}}));
        }
    };
    let from = match request.get("from") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(crate::service::bad_request("\"from\" must be a step id")),
    };
    let original_id = original.run_id.clone();
    let salt = if crate::sim::scenario::run_id_ok(&original_id) {
        salted(&original_id, run_seed)
    } else {
        original_id.clone()
    };
    original.run_id.clone_from(&salt);
    Ok((original, from, original_id, salt))
}

/// What a session answers: the report or the error, the salt taken back out and redacted
/// as the in-process op's (SEC-1); a candidate's protocol error ends the exchange.
fn session_response(
    request: &Value,
    result: Result<crate::sim::Report, SimError>,
    salt: &str,
    original_id: &str,
) -> Result<Value, AdapterError> {
    let response = match result {
        Ok(report) => json!({"ok": report.into_json()}),
        Err(SimError::Candidate(error))
            if error.get("code").and_then(Value::as_str) == Some(PROTOCOL_ERROR) =>
        {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default();
            return Err(AdapterError::Protocol(message.replace(salt, original_id)));
        }
        Err(e) => json!({"error": e.to_json()}),
    };
    // SEC-1: the same redaction sink as the in-process op.
    Ok(crate::service::sim::redacted(
        request,
        unsalt(response, salt, original_id),
    ))
}

impl Adapter for EngineProcess {
    fn name(&self) -> String {
        self.cand
            .borrow()
            .name
            .clone()
            .unwrap_or_else(|| self.command.clone())
    }

    /// The `ready` message's `capabilities` (the coarse names of docs/context-protocol.md or
    /// the fine ones of docs/capabilities.md), plus what every engine session does: `run`
    /// and `replay`. Names this suite does not know are ignored.
    fn capabilities(&self) -> crate::conformance::Capabilities {
        let declared = self.cand.borrow().capabilities.clone();
        crate::conformance::Capabilities::from_names(
            ["op.run", "op.replay"]
                .into_iter()
                .map(str::to_owned)
                .chain(declared.into_iter().filter(|n| {
                    n == "*"
                        || crate::conformance::capability::is_capability(n.trim_start_matches('-'))
                })),
        )
        .unwrap_or_else(|_| crate::conformance::Capabilities::engine_core())
    }

    /// The suite is the engine's `WorkflowContext`: the report is built from what it
    /// observed, never from what the engine says (D-14, D-102).
    fn evidence(
        &self,
        _: crate::conformance::adapter::sealed::Seal,
    ) -> crate::conformance::Evidence {
        crate::conformance::Evidence::Observed
    }

    /// D-379: a run or replay the suite refuses before any session starts never reaches
    /// the engine — the refusal is the suite's own answer (D-208's rule, at this seam).
    /// Decided by the same checks `session` makes first: a dialect document's import,
    /// the workflow's presence, the scenario and its faults' reach, the replay's run.
    fn unjudged(&self, case: &crate::conformance::Case) -> Option<&'static str> {
        let request = &case.request;
        let refused = match request.get("op").and_then(Value::as_str) {
            Some("run") if request.get("dialect").is_some() => {
                crate::service::dialect::plain_request(request)
                    .is_none_or(|plain| refused_before_session(&plain, false))
            }
            Some("run") => refused_before_session(request, false),
            Some("replay") => refused_before_session(request, true),
            _ => false,
        };
        refused.then_some(crate::conformance::capability::SEAM_ENGINE)
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        match request.get("op").and_then(Value::as_str) {
            // Issue 10: a WOML / YAML document is imported by the suite, then run by the
            // candidate engine like any w6w workflow.
            Some("run") if request.get("dialect").is_some() => {
                crate::service::dialect::run_with(request, |plain| self.session(plain, false))
            }
            Some("run") => self.session(request, false),
            Some("replay") => self.session(request, true),
            _ => self.op(request),
        }
    }
}

/// SEC-1: a `schedule` / `invokeCallable` call may carry `"secretDerived": [values]`, the
/// values the engine declared secret-derived (`WorkflowContext::secret_derived`) since its
/// last such call; the suite's host records them redacted.
fn declare_secret_derived<C: WorkflowContext>(host: &C, args: &Value) {
    for v in args
        .get("secretDerived")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        host.secret_derived(v);
    }
}
