//! Script execution (issue 40): a WOML `<script>` body or a YAML `run` body, run as the body
//! of an async JavaScript function in an embedded QuickJS engine (`rquickjs`, D-280).
//!
//! Owns: one attempt of one script — a fresh runtime and context per attempt, the bindings
//! the dialect's text defines (WOML: `context.payload` with the deprecated alias
//! `context.trigger`, `context.steps`, `attempt`, `secrets`; YAML: `steps`, `attempt`; both:
//! `services`, `fetch`, `console`), a deterministic world (`Date`, timers and `Math.random`
//! on the virtual clock and the attempt's seed, time zone UTC), the bounds of
//! `crate::limits` (`SCRIPT_*`: heap, native stack, an interrupt budget for CPU loops,
//! virtual-clock events, returned bytes) and the classification of how the attempt ended
//! into WOML-11's failure kinds ([`FailureKind`]).
//! Invariants: the sandbox has no file, network, process, module loader or clock of its
//! own — the engine is built without QuickJS's libc and without `performance`, and every
//! call out (`services`, `fetch`, `console`) is a message to the [`Host`], answered there;
//! the same [`Attempt`] and answers give the same [`Outcome`], byte for byte; no script can
//! make this module panic, hang or outgrow its heap cap (a hostile script ends as a failed
//! attempt).
//! May not touch: the engine, the simulator, the store or the redaction sink — the caller
//! (`sim::host`) owns the world, records the calls and redacts what it writes.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use rquickjs::context::intrinsic;
use rquickjs::{Context, Ctx, Function, Object, Runtime};
use serde_json::{Value, json};

use crate::limits::{
    MAX_NESTING_DEPTH, SCRIPT_CALLS_MAX, SCRIPT_CONSOLE_LINE_CHARS_MAX, SCRIPT_CONSOLE_LINES_MAX,
    SCRIPT_INTERRUPT_BUDGET, SCRIPT_MEMORY_BYTES_MAX, SCRIPT_RETURN_BYTES_MAX,
    SCRIPT_STACK_BYTES_MAX, SCRIPT_TICKS_MAX, SCRIPT_WALL_MS_MAX,
};

const PRELUDE: &str = include_str!("prelude.js");

/// The builtins a script sees: the language, without `performance` (a wall clock) and
/// `WeakRef`/`FinalizationRegistry` (garbage-collector timing).
type Intrinsics = (
    intrinsic::Date,
    intrinsic::Eval,
    intrinsic::RegExpCompiler,
    intrinsic::RegExp,
    intrinsic::Json,
    intrinsic::Proxy,
    intrinsic::MapSet,
    intrinsic::TypedArrays,
    intrinsic::Promise,
    intrinsic::DOMException,
);

/// Which dialect's bindings a body gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// `context` (`payload`, `trigger`, `steps`), `attempt`, `secrets`, `services`, `fetch`,
    /// `console` (woml-steps.txt "Script bindings").
    Woml,
    /// `steps` (earlier steps by id), `attempt`, `services`, `fetch`, `console`.
    Yaml,
}

/// One attempt of one script.
#[derive(Debug, Clone)]
pub(crate) struct Attempt<'a> {
    pub body: &'a str,
    pub style: Style,
    /// WOML: `{"context": {"payload", "steps"}, "attempt": {...}, "secrets": {NAME: value}}`;
    /// YAML: `{"steps": {id: value}, "attempt": {...}}`.
    pub bindings: &'a Value,
    /// The virtual clock when the attempt starts (ms since the Unix epoch).
    pub start_ms: u64,
    /// `Math.random`'s state for this attempt.
    pub seed: [u32; 4],
    /// The `<config>` timeout on the virtual clock, if the workflow has one.
    pub timeout_ms: Option<u64>,
}

/// A `services.<service>.<method>(args, {name})` or `fetch(url, init)` call a script made.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Call {
    /// What the script asked: `{kind: "service", service, method, args, name}` or
    /// `{kind: "fetch", url, method, headers, body, name}`.
    pub request: Value,
    /// The virtual clock when it was made.
    pub at_ms: u64,
}

impl Call {
    fn text(&self, key: &str) -> Option<&str> {
        self.request.get(key).and_then(Value::as_str)
    }

    /// The scenario keys that may answer this call, most specific first: the call's
    /// `name`, then `METHOD URL` (a fetch, or a service call whose args carry a `url`), then
    /// `service.method`.
    pub(crate) fn keys(&self) -> Vec<String> {
        let mut keys = Vec::new();
        if let Some(name) = self.text("name") {
            keys.push(name.to_owned());
        }
        let (method, url) = if self.text("kind") == Some("fetch") {
            (self.text("method").map(str::to_owned), self.text("url"))
        } else {
            let args = self.request.get("args");
            let url = args.and_then(|a| a.get("url")).and_then(Value::as_str);
            let method = args
                .and_then(|a| a.get("method"))
                .and_then(Value::as_str)
                .unwrap_or("GET")
                .to_ascii_uppercase();
            (Some(method), url)
        };
        if let (Some(method), Some(url)) = (method, url) {
            keys.push(format!("{method} {url}"));
        }
        if let (Some(service), Some(m)) = (self.text("service"), self.text("method"))
            && self.text("kind") == Some("service")
        {
            keys.push(format!("{service}.{m}"));
        }
        keys
    }

    /// How a message names the call: `services.http.request` or `fetch`.
    pub(crate) fn callee(&self) -> String {
        match (self.text("kind"), self.text("service"), self.text("method")) {
            (Some("service"), Some(s), Some(m)) => format!("services.{s}.{m}"),
            _ => "fetch".to_owned(),
        }
    }
}

/// How the host answered a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// The call resolves with `output` after `latency_ms` on the virtual clock.
    Output { output: Value, latency_ms: u64 },
    /// The call rejects with an `Error` carrying `code`, `message` (and `details`).
    Error { error: Value, latency_ms: u64 },
    /// Nothing answers the call: the attempt fails with this message (no script can catch it).
    Unscripted(String),
}

/// What the script's outside world is: the simulator answers each call from the scenario
/// and writes console lines to the trace through its redaction sink.
pub(crate) trait Host {
    fn call(&mut self, call: &Call) -> Answer;
    /// One `console.log`/`info`/`debug`/`warn`/`error` line (`level` is `info`, `debug`,
    /// `warn` or `error`).
    fn console(&mut self, level: &str, text: &str, at_ms: u64);
}

/// WOML-11's script failure kinds this module decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// The body threw (or its promise rejected); the only kind retried automatically.
    Threw,
    /// The returned value has no JSON form (a function, a `BigInt`, a cycle …).
    InvalidJson,
    /// The returned JSON is longer than [`SCRIPT_RETURN_BYTES_MAX`] or nests deeper than
    /// the tool records.
    Size,
    /// Past the `<config>` timeout on the virtual clock, past the CPU budget, or never
    /// settling.
    Timeout,
}

impl FailureKind {
    /// The stable machine code (WOML-11's name).
    pub(crate) fn code(self) -> &'static str {
        match self {
            FailureKind::Threw => "script_threw",
            FailureKind::InvalidJson => "invalid_json",
            FailureKind::Size => "size",
            FailureKind::Timeout => "timeout",
        }
    }
}

/// A failed attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ended {
    /// The script returned this JSON value.
    Returned(Value),
    Failed(Failure),
    /// A run budget ran out (more than [`SCRIPT_CALLS_MAX`] calls): the run stops with
    /// `limit_exceeded`, as for any budget.
    OverBudget(String),
}

/// An attempt's end and the virtual time it took.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    pub ended: Ended,
    pub elapsed_ms: u64,
}

fn failed(kind: FailureKind, message: impl Into<String>, elapsed_ms: u64) -> Outcome {
    Outcome {
        ended: Ended::Failed(Failure {
            kind,
            message: message.into(),
        }),
        elapsed_ms,
    }
}

/// Run one attempt of a script against `host`.
pub(crate) fn run(attempt: &Attempt<'_>, host: &mut dyn Host) -> Outcome {
    // The interpreter recurses on the native stack: give it room beyond its own cap, on
    // whatever thread calls (QuickJS measures its cap from where the context is entered).
    stacker::maybe_grow(
        2 * SCRIPT_STACK_BYTES_MAX,
        4 * SCRIPT_STACK_BYTES_MAX,
        || run_here(attempt, host),
    )
}

/// What the sandbox's host function queued for the driver, in order.
enum Message {
    Call { id: i32, text: String, at_ms: u64 },
    Console { text: String, at_ms: u64 },
}

#[derive(Default)]
struct Mailbox {
    messages: Vec<Message>,
    calls: usize,
    console_lines: usize,
    over_budget: Option<String>,
}

fn run_here(attempt: &Attempt<'_>, host: &mut dyn Host) -> Outcome {
    let Ok(rt) = Runtime::new() else {
        return failed(FailureKind::Threw, "the script engine could not start", 0);
    };
    rt.set_memory_limit(SCRIPT_MEMORY_BYTES_MAX);
    rt.set_max_stack_size(SCRIPT_STACK_BYTES_MAX);
    let spent = Rc::new(Cell::new(0u64));
    let halt = Rc::new(Cell::new(false));
    {
        let (spent, halt) = (Rc::clone(&spent), Rc::clone(&halt));
        #[allow(clippy::disallowed_methods)]
        // real time: the wall guard on a hostile script (D-283)
        let started = std::time::Instant::now();
        let wall = std::time::Duration::from_millis(SCRIPT_WALL_MS_MAX);
        rt.set_interrupt_handler(Some(Box::new(move || {
            spent.set(spent.get().saturating_add(1));
            if started.elapsed() > wall {
                // D-283: past the wall guard counts as past the budget (same `timeout`).
                spent.set(SCRIPT_INTERRUPT_BUDGET.saturating_add(1));
            }
            halt.get() || spent.get() > SCRIPT_INTERRUPT_BUDGET
        })));
    }
    let Ok(context) = Context::custom::<Intrinsics>(&rt) else {
        return failed(FailureKind::Threw, "the script engine could not start", 0);
    };
    let mailbox = Rc::new(RefCell::new(Mailbox::default()));
    let mut driver = Driver {
        attempt,
        mailbox: &mailbox,
        spent: &spent,
        halt: &halt,
        ticks: 0,
    };
    context.with(|ctx| driver.drive(&ctx, host))
}

struct Driver<'r, 'a> {
    attempt: &'r Attempt<'a>,
    mailbox: &'r Rc<RefCell<Mailbox>>,
    spent: &'r Rc<Cell<u64>>,
    halt: &'r Rc<Cell<bool>>,
    ticks: u64,
}

/// The prelude's driver object: `begin`, `fire`, `outcome`, `deliver`, `nextAt`, `elapsed`.
struct Sandbox<'js> {
    fire: Function<'js>,
    outcome: Function<'js>,
    deliver: Function<'js>,
    next_at: Function<'js>,
    elapsed: Function<'js>,
}

/// How one step of the driver loop went.
enum Step {
    Go,
    Done(Outcome),
}

impl Driver<'_, '_> {
    fn over_cpu(&self) -> bool {
        self.spent.get() > SCRIPT_INTERRUPT_BUDGET
    }

    fn drive<'js>(&mut self, ctx: &Ctx<'js>, host: &mut dyn Host) -> Outcome {
        let sandbox = match self.install(ctx) {
            Ok(s) => s,
            Err(message) => return self.threw_or_timeout(ctx, message, 0),
        };
        loop {
            match self.step(ctx, &sandbox, host) {
                Step::Go => {}
                Step::Done(outcome) => return outcome,
            }
        }
    }

    /// Build the sandbox and start the body (which runs until its first `await`).
    fn install<'js>(&self, ctx: &Ctx<'js>) -> Result<Sandbox<'js>, String> {
        let mailbox = Rc::clone(self.mailbox);
        let halt = Rc::clone(self.halt);
        let host_fn = Function::new(ctx.clone(), move |kind: String, text: String, at: f64| {
            post(&mailbox, &halt, &kind, text, at)
        })
        .map_err(|e| e.to_string())?;
        let cfg = json!({
            "startMs": self.attempt.start_ms,
            "seed": self.attempt.seed,
            "style": match self.attempt.style { Style::Woml => "woml", Style::Yaml => "yaml" },
            "bindings": self.attempt.bindings.to_string(),
            "consoleChars": SCRIPT_CONSOLE_LINE_CHARS_MAX,
            "consoleLines": SCRIPT_CONSOLE_LINES_MAX,
        });
        let caught = |e: rquickjs::Error| exception_text(ctx, e);
        let cfg = ctx.json_parse(cfg.to_string()).map_err(caught)?;
        let setup: Function = ctx.eval(PRELUDE).map_err(caught)?;
        let driver: Object = setup.call((host_fn, cfg)).map_err(caught)?;
        let get = |name: &str| driver.get::<_, Function>(name).map_err(caught);
        let sandbox = Sandbox {
            fire: get("fire")?,
            outcome: get("outcome")?,
            deliver: get("deliver")?,
            next_at: get("nextAt")?,
            elapsed: get("elapsed")?,
        };
        let begin = get("begin")?;
        begin.call::<_, ()>((self.attempt.body,)).map_err(caught)?;
        Ok(sandbox)
    }

    fn elapsed(&self, sandbox: &Sandbox<'_>) -> u64 {
        sandbox
            .elapsed
            .call::<_, f64>(())
            .map_or(0, |ms| ms.max(0.0) as u64)
    }

    /// A JavaScript error out of the sandbox: the CPU budget's interrupt is a `timeout`,
    /// anything else the body threw.
    fn threw_or_timeout(&self, _ctx: &Ctx<'_>, message: String, elapsed_ms: u64) -> Outcome {
        if let Some(budget) = self.mailbox.borrow_mut().over_budget.take() {
            return Outcome {
                ended: Ended::OverBudget(budget),
                elapsed_ms,
            };
        }
        if self.over_cpu() {
            let budget = format!(
                "the script ran past its CPU budget (about {} million calls and loop \
                 iterations, or {SCRIPT_WALL_MS_MAX} ms of wall time) without settling",
                SCRIPT_INTERRUPT_BUDGET / 100
            );
            return failed(
                FailureKind::Timeout,
                budget,
                self.attempt.timeout_ms.unwrap_or(elapsed_ms),
            );
        }
        failed(FailureKind::Threw, message, elapsed_ms)
    }

    /// Run the queued jobs, answer what the script asked, and settle or move the clock.
    fn step<'js>(&mut self, ctx: &Ctx<'js>, sandbox: &Sandbox<'js>, host: &mut dyn Host) -> Step {
        // A job that throws (only the CPU budget's interrupt can: a rejection settles a
        // promise) counts as run; after the budget every job ends at once, so this ends.
        while ctx.execute_pending_job() {}
        if self.over_cpu() {
            let elapsed = self.elapsed(sandbox);
            return Step::Done(self.threw_or_timeout(ctx, String::new(), elapsed));
        }
        if let Some(done) = self.answer(ctx, sandbox, host) {
            return Step::Done(done);
        }
        if let Some(done) = self.settled(ctx, sandbox) {
            return Step::Done(done);
        }
        self.advance(ctx, sandbox)
    }

    /// Hand the host what the script queued: console lines and calls, in order.
    fn answer<'js>(
        &self,
        ctx: &Ctx<'js>,
        sandbox: &Sandbox<'js>,
        host: &mut dyn Host,
    ) -> Option<Outcome> {
        let (messages, over) = {
            let mut mailbox = self.mailbox.borrow_mut();
            (
                std::mem::take(&mut mailbox.messages),
                mailbox.over_budget.take(),
            )
        };
        for message in messages {
            match message {
                Message::Console { text, at_ms } => {
                    let line: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    let level = line.get("level").and_then(Value::as_str).unwrap_or("info");
                    let text = line.get("text").and_then(Value::as_str).unwrap_or_default();
                    host.console(level, text, at_ms);
                }
                Message::Call { id, text, at_ms } => {
                    let request = serde_json::from_str(&text).unwrap_or(Value::Null);
                    let call = Call { request, at_ms };
                    let answer = match host.call(&call) {
                        Answer::Unscripted(message) => {
                            let elapsed = self.elapsed(sandbox);
                            return Some(failed(FailureKind::Threw, message, elapsed));
                        }
                        Answer::Output { output, latency_ms } => {
                            json!({"latencyMs": latency_ms, "output": output})
                        }
                        Answer::Error { error, latency_ms } => {
                            json!({"latencyMs": latency_ms, "error": error})
                        }
                    };
                    if let Err(e) = sandbox.deliver.call::<_, ()>((id, answer.to_string())) {
                        let elapsed = self.elapsed(sandbox);
                        let message = exception_text(ctx, e);
                        return Some(self.threw_or_timeout(ctx, message, elapsed));
                    }
                }
            }
        }
        over.map(|message| Outcome {
            ended: Ended::OverBudget(message),
            elapsed_ms: self.elapsed(sandbox),
        })
    }

    /// The body's promise, if it has settled, classified.
    fn settled<'js>(&self, ctx: &Ctx<'js>, sandbox: &Sandbox<'js>) -> Option<Outcome> {
        let elapsed = self.elapsed(sandbox);
        let outcome = match sandbox.outcome.call::<_, Option<Vec<String>>>(()) {
            Ok(o) => o?,
            Err(e) => {
                let message = exception_text(ctx, e);
                return Some(self.threw_or_timeout(ctx, message, elapsed));
            }
        };
        let [kind, text] = <[String; 2]>::try_from(outcome).ok()?;
        Some(match kind.as_str() {
            "ok" => returned(&text, elapsed),
            "threw" => failed(FailureKind::Threw, text, elapsed),
            "size" => failed(
                FailureKind::Size,
                format!("the returned value is too large to write as JSON ({text})"),
                elapsed,
            ),
            _ => failed(
                FailureKind::InvalidJson,
                format!("the returned value is not JSON: {text}"),
                elapsed,
            ),
        })
    }

    /// Move the virtual clock to the next timer or settled call and fire it.
    fn advance<'js>(&mut self, ctx: &Ctx<'js>, sandbox: &Sandbox<'js>) -> Step {
        let elapsed = self.elapsed(sandbox);
        let next = sandbox.next_at.call::<_, f64>(()).unwrap_or(-1.0);
        if next < 0.0 {
            let message = "the script's promise never settles: it awaits something that \
                           nothing will resolve (no timer or call is pending)";
            let ms = self.attempt.timeout_ms.unwrap_or(elapsed);
            return Step::Done(failed(FailureKind::Timeout, message, ms));
        }
        let next = next as u64;
        if let Some(timeout) = self.attempt.timeout_ms
            && next.saturating_sub(self.attempt.start_ms) > timeout
        {
            let message = format!(
                "the script did not settle within the workflow's <config> timeout of {timeout} ms \
                 (virtual clock)"
            );
            return Step::Done(failed(FailureKind::Timeout, message, timeout));
        }
        self.ticks += 1;
        if self.ticks > SCRIPT_TICKS_MAX {
            let message = format!(
                "the script fired more than {SCRIPT_TICKS_MAX} timers and calls without settling"
            );
            let ms = self.attempt.timeout_ms.unwrap_or(elapsed);
            return Step::Done(failed(FailureKind::Timeout, message, ms));
        }
        match sandbox.fire.call::<_, bool>(()) {
            Ok(_) => Step::Go,
            Err(e) => {
                let message = format!("uncaught in a timer callback: {}", exception_text(ctx, e));
                let elapsed = self.elapsed(sandbox);
                Step::Done(self.threw_or_timeout(ctx, message, elapsed))
            }
        }
    }
}

/// The sandbox's one host function: queue a call (its id back) or a console line.
fn post(mailbox: &RefCell<Mailbox>, halt: &Cell<bool>, kind: &str, text: String, at: f64) -> i32 {
    let mut m = mailbox.borrow_mut();
    let at_ms = at.max(0.0) as u64;
    match kind {
        "call" => {
            m.calls += 1;
            if m.calls > SCRIPT_CALLS_MAX {
                m.over_budget.get_or_insert_with(|| {
                    format!("a script made more than {SCRIPT_CALLS_MAX} services/fetch calls in one attempt")
                });
                halt.set(true);
                return -1;
            }
            let id = i32::try_from(m.calls).unwrap_or(i32::MAX);
            m.messages.push(Message::Call { id, text, at_ms });
            id
        }
        _ => {
            // The prelude stops posting past the cap; this holds the cap whatever it does.
            m.console_lines += 1;
            if m.console_lines <= SCRIPT_CONSOLE_LINES_MAX {
                m.messages.push(Message::Console { text, at_ms });
            }
            0
        }
    }
}

/// The `ok` text of a settled body: JSON within the size and depth bounds, or `size`.
fn returned(text: &str, elapsed_ms: u64) -> Outcome {
    if text.len() > SCRIPT_RETURN_BYTES_MAX {
        return failed(
            FailureKind::Size,
            format!(
                "the returned JSON is {} bytes; a script returns at most {SCRIPT_RETURN_BYTES_MAX}",
                text.len()
            ),
            elapsed_ms,
        );
    }
    let deep = || {
        failed(
            FailureKind::Size,
            format!("the returned JSON nests deeper than {MAX_NESTING_DEPTH} levels"),
            elapsed_ms,
        )
    };
    match serde_json::from_str::<Value>(text) {
        Ok(v) if crate::limits::nests_deeper_than(&v, MAX_NESTING_DEPTH) => deep(),
        Ok(v) => Outcome {
            ended: Ended::Returned(v),
            elapsed_ms,
        },
        // JSON.stringify wrote it, so the only way serde_json refuses it is its depth limit.
        Err(_) => deep(),
    }
}

/// The message of the pending exception (`Name: message`), or of a non-exception error.
fn exception_text(ctx: &Ctx<'_>, e: rquickjs::Error) -> String {
    if !matches!(e, rquickjs::Error::Exception) {
        return e.to_string();
    }
    let v = ctx.catch();
    if let Some(o) = v.as_object() {
        let name: Option<String> = o.get("name").ok();
        let message: Option<String> = o.get("message").ok();
        if let Some(message) = message {
            return match name {
                Some(n) if !n.is_empty() => format!("{n}: {message}"),
                _ => message,
            };
        }
    }
    if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        return s;
    }
    "the script threw".to_owned()
}

#[cfg(test)]
mod tests;
