//! The public API is enough to implement every seam (issue 43 item 4, D-310): a host's
//! `RunStore` under a `HostAdapter`, a `WorkflowContext` and a `WorkflowEngine` booted by
//! an `EngineFactory` under an `EngineAdapter` — written with public paths only, as a crate
//! outside this one writes them. `tidy::the_compile_test_uses_public_paths_only` keeps
//! this file off `__internals`.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map, Value};
use w6w_sim::conformance::{self, Capabilities, EngineAdapter, HostAdapter, RunOptions};
use w6w_sim::engine::{
    Engine, EngineError, EngineFactory, ReferenceEngine, RunSeed, WorkflowEngine,
};
use w6w_sim::host::{
    CallableRequest, HostError, InvokeError, InvokeRequest, LogLevel, RunInfo, RunStore,
    ScheduleDirective, ScheduleEntry, SealingKey, StoreError, StoreFactory, WorkflowContext,
};
use w6w_sim::model::{RunState, RunStatePatch, Workflow};

/// A few clauses, no generated workflows: enough to drive every method these seams use.
fn options(clauses: &[&str]) -> RunOptions {
    RunOptions {
        clauses: clauses.iter().map(|c| (*c).to_owned()).collect(),
        generate: 0,
        ..RunOptions::default()
    }
}

// ---------------------------------------------------------------------------------------
// The host seam: a durable store (a map that outlives every store object opened on it).

type Medium = Rc<RefCell<(BTreeMap<String, RunState>, Vec<ScheduleEntry>)>>;

struct MapStore(Medium);

impl RunStore for MapStore {
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
        let mut medium = self.0.borrow_mut();
        let state = medium.0.entry(patch.run_id.clone()).or_insert_with(|| {
            RunState::new(
                &patch.run_id,
                patch.workflow_id.as_deref().unwrap_or_default(),
            )
        });
        state.apply(patch);
        Ok(())
    }

    fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
        self.0
            .borrow_mut()
            .0
            .insert(state.run_id.clone(), state.clone());
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
        Ok(self.0.borrow().0.get(run_id).cloned())
    }

    fn schedule(&mut self, entry: &ScheduleEntry) -> Result<(), StoreError> {
        self.0.borrow_mut().1.push(entry.clone());
        Ok(())
    }

    fn schedules(&self, run_id: &str) -> Result<Vec<ScheduleEntry>, StoreError> {
        let medium = self.0.borrow();
        Ok(medium
            .1
            .iter()
            .filter(|e| e.run_id == run_id)
            .cloned()
            .collect())
    }

    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), StoreError> {
        let mut medium = self.0.borrow_mut();
        medium
            .1
            .retain(|e| !(e.run_id == run_id && e.resume_token == resume_token));
        Ok(())
    }
}

#[derive(Default)]
struct MapHost {
    opened: Rc<Cell<u32>>,
}

impl HostAdapter for MapHost {
    fn name(&self) -> String {
        "map-host".into()
    }

    fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
        let medium = Medium::default();
        let opened = Rc::clone(&self.opened);
        Ok(Box::new(
            move || -> Result<Box<dyn RunStore>, StoreError> {
                opened.set(opened.get() + 1);
                Ok(Box::new(MapStore(Rc::clone(&medium))))
            },
        ))
    }
}

#[test]
fn a_host_written_against_the_public_api_passes_its_clauses() {
    let host = MapHost::default();
    let opened = Rc::clone(&host.opened);
    let report = conformance::run_host(host, &options(&["RUN-3", "CTRL-7"])).expect("loads");
    assert!(report.passed() > 0, "{}", report.to_text());
    report.assert_all_passed();
    assert!(
        opened.get() > 1,
        "the suite reopened the store after a crash"
    );
}

// ---------------------------------------------------------------------------------------
// The engine seam: an engine that runs the reference engine over its own context, which
// counts the checkpoints it forwards to the host's.

struct Counting<'c, C> {
    inner: &'c C,
    checkpoints: &'c Cell<u32>,
}

impl<C: WorkflowContext> WorkflowContext for Counting<'_, C> {
    fn run(&self) -> &RunInfo {
        self.inner.run()
    }
    async fn invoke(&self, req: InvokeRequest) -> Result<Value, InvokeError> {
        self.inner.invoke(req).await
    }
    fn action_idempotent(&self, step_id: &str, app: &str, action: &str) -> bool {
        self.inner.action_idempotent(step_id, app, action)
    }
    fn action_sensitive_output(&self, step_id: &str, app: &str, action: &str) -> bool {
        self.inner.action_sensitive_output(step_id, app, action)
    }
    fn log(&self, level: LogLevel, message: &str, data: Option<&Value>) {
        self.inner.log(level, message, data);
    }
    async fn checkpoint(&self, patch: &RunStatePatch) -> Result<(), HostError> {
        self.checkpoints.set(self.checkpoints.get() + 1);
        self.inner.checkpoint(patch).await
    }
    async fn load(&self, run_id: &str) -> Result<Option<RunState>, HostError> {
        self.inner.load(run_id).await
    }
    fn now_ms(&self) -> u64 {
        self.inner.now_ms()
    }
    async fn sleep(&self, ms: u64) {
        self.inner.sleep(ms).await;
    }
    async fn wait_before_retry(&self, step_id: Option<&str>, attempt: u32, ms: u64) {
        self.inner.wait_before_retry(step_id, attempt, ms).await;
    }
    fn secrets(&self) -> Map<String, Value> {
        self.inner.secrets()
    }
    fn sealing_key(&self) -> Option<SealingKey> {
        self.inner.sealing_key()
    }
    fn random_bytes(&self, out: &mut [u8]) -> bool {
        self.inner.random_bytes(out)
    }
    fn documents(&self) -> Value {
        self.inner.documents()
    }
    fn aborted(&self) -> bool {
        self.inner.aborted()
    }
    fn supports_schedule(&self) -> bool {
        self.inner.supports_schedule()
    }
    async fn schedule(&self, directive: ScheduleDirective) -> Result<(), HostError> {
        self.inner.schedule(directive).await
    }
    fn secret_derived(&self, value: &Value) {
        self.inner.secret_derived(value);
    }
    async fn invoke_callable(&self, req: CallableRequest) -> Result<Value, InvokeError> {
        self.inner.invoke_callable(req).await
    }
}

struct CountingEngine<'w> {
    engine: Engine<'w>,
    checkpoints: &'w Cell<u32>,
}

impl CountingEngine<'_> {
    fn over<'c, C>(&'c self, ctx: &'c C) -> Counting<'c, C> {
        Counting {
            inner: ctx,
            checkpoints: self.checkpoints,
        }
    }
}

impl WorkflowEngine for CountingEngine<'_> {
    async fn start<C: WorkflowContext>(&self, seed: RunSeed, ctx: &C) -> Result<(), EngineError> {
        WorkflowEngine::start(&self.engine, seed, &self.over(ctx)).await
    }
    async fn resume<C: WorkflowContext>(
        &self,
        run_id: &str,
        token: Option<&str>,
        ctx: &C,
    ) -> Result<(), EngineError> {
        WorkflowEngine::resume(&self.engine, run_id, token, &self.over(ctx)).await
    }
    async fn replay<C: WorkflowContext>(
        &self,
        run_id: &str,
        from: Option<&str>,
        ctx: &C,
    ) -> Result<(), EngineError> {
        WorkflowEngine::replay(&self.engine, run_id, from, &self.over(ctx)).await
    }
}

#[derive(Default)]
struct CountingFactory {
    checkpoints: Cell<u32>,
}

impl EngineFactory for CountingFactory {
    type Engine<'w> = CountingEngine<'w>;
    fn boot<'w>(&'w self, workflow: &'w Workflow) -> Result<CountingEngine<'w>, EngineError> {
        Ok(CountingEngine {
            engine: ReferenceEngine.boot(workflow)?,
            checkpoints: &self.checkpoints,
        })
    }
}

struct CountingAdapter(CountingFactory);

impl EngineAdapter for CountingAdapter {
    type Factory = CountingFactory;
    fn name(&self) -> String {
        "counting-engine".into()
    }
    fn factory(&self) -> &CountingFactory {
        &self.0
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::all()
    }
}

#[test]
fn an_engine_written_against_the_public_api_passes_its_clauses() {
    let factory = CountingFactory::default();
    let workflow = w6w_sim::load_workflow(&serde_json::json!({
        "manifestVersion": "2", "id": "wf_api", "name": "api",
        "steps": [{"id": "a", "uses": {"app": "crm", "action": "get"}}]
    }))
    .expect("a runnable workflow");
    let scenario = w6w_sim::sim::Scenario::default();
    let report = w6w_sim::sim::Simulation::with_engine(&factory, &workflow, &scenario)
        .run()
        .expect("runs");
    assert_eq!(report.run.status, w6w_sim::model::RunStatus::Succeeded);
    assert!(
        factory.checkpoints.get() > 0,
        "the engine checkpointed through the wrapper"
    );

    let report = conformance::run_engine(
        CountingAdapter(CountingFactory::default()),
        &options(&["RUN-4", "RETRY-2"]),
    )
    .expect("loads");
    assert!(report.passed() > 0, "{}", report.to_text());
    report.assert_all_passed();
}
