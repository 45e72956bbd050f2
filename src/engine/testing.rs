//! A small in-memory host for the engine's unit tests (test builds only).
//!
//! Actions are scripted by their params, so a workflow says what each invocation does:
//! `fail: true` fails it (code `boom`, phase `execute`), `yields: n` makes it pend `n`
//! times before it ends (so, polled in launch order, fewer yields finish first — race and
//! fail-fast order without a clock); any other invocation succeeds with its params as
//! output. Checkpoints fold into one durable state, so `load` (resume) sees them.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use serde_json::{Map, Value, json};

use super::{Engine, RunResult, RunSeed};
use crate::host::{
    CallableRequest, HostError, InvokeError, InvokeRequest, LogLevel, RunInfo, RunTrigger,
    ScheduleDirective, WorkflowContext,
};
use crate::model::{KeyGate, Phase, RunState, RunStatePatch, StepError, Workflow};

/// The host's clock: fixed unless a test moves it (2026-01-01T00:00:00Z).
pub(crate) const NOW_MS: u64 = 1_767_225_600_000;

#[derive(Debug)]
pub(crate) struct TestHost {
    info: RunInfo,
    pub(crate) now: Cell<u64>,
    /// Every invocation's step id and params, in call order.
    pub(crate) invoked: RefCell<Vec<(String, Map<String, Value>)>>,
    /// Invocations in flight now, and the most there ever were.
    in_flight: Cell<usize>,
    pub(crate) max_in_flight: Cell<usize>,
    pub(crate) logs: RefCell<Vec<(LogLevel, String, Option<Value>)>>,
    pub(crate) scheduled: RefCell<Vec<ScheduleDirective>>,
    /// `schedule` fails (a store error) when set.
    pub(crate) refuse_schedule: Cell<bool>,
    /// `invoke_callable` calls: target, input, wait, depth.
    pub(crate) callables: RefCell<Vec<(Value, Value, bool, u32)>>,
    /// Each `invoke_callable`'s dispatch key (D-120), in call order.
    pub(crate) dispatch_ids: RefCell<Vec<String>>,
    /// Values the engine declared secret-derived.
    pub(crate) declared: RefCell<Vec<Value>>,
    pub(crate) secrets: Map<String, Value>,
    state: RefCell<Option<RunState>>,
}

impl TestHost {
    pub(crate) fn new() -> Self {
        TestHost {
            info: RunInfo {
                id: "r1".into(),
                workflow_id: "wf".into(),
                trigger: RunTrigger::Manual,
                attempt: 1,
            },
            now: Cell::new(NOW_MS),
            invoked: RefCell::new(Vec::new()),
            in_flight: Cell::new(0),
            max_in_flight: Cell::new(0),
            logs: RefCell::new(Vec::new()),
            scheduled: RefCell::new(Vec::new()),
            refuse_schedule: Cell::new(false),
            callables: RefCell::new(Vec::new()),
            dispatch_ids: RefCell::new(Vec::new()),
            declared: RefCell::new(Vec::new()),
            secrets: Map::new(),
            state: RefCell::new(None),
        }
    }

    /// A host whose store already holds `state` (what a crash left behind).
    pub(crate) fn with_state(state: RunState) -> Self {
        let host = TestHost::new();
        *host.state.borrow_mut() = Some(state);
        host
    }

    /// The step ids invoked, in call order.
    pub(crate) fn invoked_ids(&self) -> Vec<String> {
        self.invoked
            .borrow()
            .iter()
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The data of the first log line whose message contains `needle`.
    pub(crate) fn log_data(&self, needle: &str) -> Option<Value> {
        self.logs
            .borrow()
            .iter()
            .find(|(_, m, _)| m.contains(needle))
            .and_then(|(_, _, d)| d.clone())
    }
}

/// Pends `n` times (waking itself) before it is ready.
struct Yield(u64);

impl Future for Yield {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl WorkflowContext for TestHost {
    fn run(&self) -> &RunInfo {
        &self.info
    }

    async fn invoke(&self, req: InvokeRequest) -> Result<Value, InvokeError> {
        self.invoked
            .borrow_mut()
            .push((req.step_id.clone(), req.params.clone()));
        self.in_flight.set(self.in_flight.get() + 1);
        self.max_in_flight
            .set(self.max_in_flight.get().max(self.in_flight.get()));
        let yields = req
            .params
            .get("yields")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Yield(yields).await;
        self.in_flight.set(self.in_flight.get() - 1);
        if req.params.get("fail") == Some(&Value::Bool(true)) {
            return Err(StepError::new("boom", "scripted failure", Phase::Execute));
        }
        Ok(Value::Object(req.params))
    }

    fn action_idempotent(&self, _step_id: &str, _app: &str, _action: &str) -> bool {
        false
    }

    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>) {
        self.logs
            .borrow_mut()
            .push((level, message.to_owned(), data.cloned()));
    }

    async fn checkpoint(&self, patch: &RunStatePatch) -> Result<(), HostError> {
        let mut state = self.state.borrow_mut();
        let workflow_id = patch.workflow_id.as_deref().unwrap_or("wf");
        state
            .get_or_insert_with(|| RunState::new(&patch.run_id, workflow_id))
            .apply_owned(patch.clone());
        Ok(())
    }

    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError> {
        Ok(self.state.borrow().clone().filter(|s| s.run_id == run_id))
    }

    fn now_ms(&self) -> u64 {
        self.now.get()
    }

    async fn sleep(&self, ms: u64) {
        self.now.set(self.now.get().saturating_add(ms));
    }

    fn secrets(&self) -> Map<String, Value> {
        self.secrets.clone()
    }

    fn supports_schedule(&self) -> bool {
        true
    }

    async fn schedule(&self, directive: ScheduleDirective) -> Result<(), HostError> {
        if self.refuse_schedule.get() {
            return Err(HostError::Store("the schedule store is down".into()));
        }
        self.scheduled.borrow_mut().push(directive);
        Ok(())
    }

    fn secret_derived(&self, value: &Value) {
        self.declared.borrow_mut().push(value.clone());
    }

    async fn invoke_callable(&self, req: CallableRequest) -> Result<Value, InvokeError> {
        self.callables.borrow_mut().push((
            req.target.clone(),
            req.input.clone(),
            req.wait,
            req.depth,
        ));
        self.dispatch_ids.borrow_mut().push(req.dispatch_id);
        Ok(json!({"called": req.target, "input": req.input}))
    }
}

/// Poll `fut` to completion on this thread. Test futures only pend on [`Yield`], which
/// wakes itself, so re-polling at once is all a waker would do.
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = std::pin::pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..1_000_000 {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("the future did not finish in 1,000,000 polls");
}

/// A runnable workflow from `steps` (and `edges`), as validation would accept it: the
/// storage rules (`model`) and the graph rules (`plan`) that `crate::validate` combines —
/// the engine sits below `validate` (ARCHITECTURE.md#layers).
pub(crate) fn workflow(steps: Value, edges: Value) -> Workflow {
    let doc =
        json!({"manifestVersion": "2", "id": "wf", "name": "wf", "steps": steps, "edges": edges});
    let mut problems = match crate::model::storage_problems(&doc, KeyGate::Check, true) {
        Ok(problems) => problems,
        Err(too_deep) => vec![too_deep],
    };
    problems.extend(crate::plan::document_problems(&doc));
    if !problems.is_empty() {
        panic!("test workflow is invalid: {problems:?}");
    }
    match serde_json::from_value(doc) {
        Ok(w) => w,
        Err(e) => panic!("test workflow does not fit the model: {e}"),
    }
}

/// Run `wf` to its end on `host`.
pub(crate) fn run(wf: &Workflow, host: &TestHost) -> RunResult {
    let engine = match Engine::new(wf) {
        Ok(e) => e,
        Err(e) => panic!("engine: {e}"),
    };
    match block_on(engine.run(RunSeed::manual("r1"), host)) {
        Ok(r) => r,
        Err(e) => panic!("run: {e}"),
    }
}

/// A `@w6w/control` step.
pub(crate) fn control(id: &str, action: &str, with: Value) -> Value {
    json!({"id": id, "uses": {"app": "@w6w/control", "action": action}, "with": with})
}

/// An app step (scripted by its params, see the module doc).
pub(crate) fn act(id: &str, with: Value) -> Value {
    json!({"id": id, "uses": {"app": "demo", "action": "do"}, "with": with})
}
