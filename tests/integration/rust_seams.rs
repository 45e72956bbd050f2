//! The Rust seams (issue 9 item 3): a host crate's store, and the README's one-`#[test]`
//! snippet, exactly as a host author writes them.
//!
//! A crash is simulated by dropping the candidate's store object (unflushed) and opening a
//! fresh one from its factory; nothing asks the store to behave. So a store with a
//! volatile write-back cache must fail, naming RUN-3.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use w6w_sim::conformance::{self, HostAdapter, MemoryDisk, RunOptions, SimulatedHost};
use w6w_sim::host::{RunStore, StoreError, StoreFactory};
use w6w_sim::model::{RunState, RunStatePatch};

/// A store that acknowledges a checkpoint from its in-process cache and writes the cache
/// to the medium every `every`-th checkpoint — and, politely, when it is dropped. A real
/// SIGKILL runs no destructor; neither does the suite's crash.
struct WriteBackCache {
    disk: MemoryDisk,
    cache: BTreeMap<String, RunState>,
    dirty: u32,
    every: u32,
}

impl WriteBackCache {
    fn flush(&mut self) {
        for state in self.cache.values() {
            self.disk.set(state.clone());
        }
        self.dirty = 0;
    }
}

impl Drop for WriteBackCache {
    fn drop(&mut self) {
        self.flush();
    }
}

impl RunStore for WriteBackCache {
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
        let disk = self.disk.clone();
        let state = self.cache.entry(patch.run_id.clone()).or_insert_with(|| {
            disk.get(&patch.run_id).unwrap_or_else(|| {
                RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                )
            })
        });
        state.apply(patch);
        self.dirty += 1;
        if self.dirty >= self.every {
            self.flush();
        }
        Ok(())
    }

    fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
        self.cache.insert(state.run_id.clone(), state.clone());
        self.flush();
        Ok(())
    }

    fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
        Ok(self
            .cache
            .get(run_id)
            .cloned()
            .or_else(|| self.disk.get(run_id)))
    }
}

struct CachingHost {
    every: u32,
}

impl HostAdapter for CachingHost {
    fn name(&self) -> String {
        format!("write-back cache (flush every {})", self.every)
    }

    fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
        let disk = MemoryDisk::new();
        let every = self.every;
        Ok(Box::new(
            move || -> Result<Box<dyn RunStore>, StoreError> {
                Ok(Box::new(WriteBackCache {
                    disk: disk.clone(),
                    cache: BTreeMap::new(),
                    dirty: 0,
                    every,
                }))
            },
        ))
    }

    /// Its store keeps no `wait` timers (`RunStore::schedule`'s default, D-103): the
    /// `wait` cases are not applicable, not failures of the durability this host tests.
    fn capabilities(&self) -> conformance::Capabilities {
        conformance::Capabilities::all().without("schedule")
    }
}

fn cases_only() -> RunOptions {
    RunOptions {
        generate: 0,
        ..RunOptions::default()
    }
}

#[test]
fn a_write_back_cache_fails_naming_run_3() {
    for every in [2, 1_000] {
        let report =
            conformance::run_host(CachingHost { every }, &cases_only()).expect("suite loads");
        assert!(
            !report.all_passed(),
            "a volatile cache (flush every {every}) passed"
        );
        let durability: Vec<_> = report
            .cases
            .iter()
            .filter(|c| {
                c.outcome
                    .failures
                    .iter()
                    .any(|f| f.contains("checkpoint_not_durable") && f.contains("RUN-3"))
            })
            .collect();
        assert!(
            !durability.is_empty(),
            "no failure names the durability rule:\n{}",
            report.to_text()
        );
        let clauses_failed = |id: &str| {
            report
                .clauses
                .iter()
                .any(|r| r.clause == id && r.failed > 0)
        };
        assert!(clauses_failed("RUN-3") && clauses_failed("RUN-4"));
    }
}

#[test]
fn a_store_that_flushes_every_checkpoint_passes() {
    // The same store with the cache written through on every checkpoint is durable.
    conformance::run_host(CachingHost { every: 1 }, &cases_only())
        .expect("suite loads")
        .assert_all_passed();
}

/// A store whose medium is the store object itself: a fresh object per open sees
/// nothing. The reference's old `crash()` hook defaulted to doing nothing, so such a store
/// passed; dropping the object is what exposes it.
#[test]
fn a_store_without_a_medium_fails() {
    struct Forgetful;
    impl HostAdapter for Forgetful {
        fn name(&self) -> String {
            "forgetful".into()
        }
        fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
            Ok(Box::new(|| -> Result<Box<dyn RunStore>, StoreError> {
                Ok(Box::new(Volatile::default()))
            }))
        }
    }
    #[derive(Default)]
    struct Volatile(Rc<RefCell<BTreeMap<String, RunState>>>);
    impl RunStore for Volatile {
        fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
            let mut runs = self.0.borrow_mut();
            let s = runs.entry(patch.run_id.clone()).or_insert_with(|| {
                RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                )
            });
            s.apply(patch);
            Ok(())
        }
        fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
            self.0
                .borrow_mut()
                .insert(state.run_id.clone(), state.clone());
            Ok(())
        }
        fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
            Ok(self.0.borrow().get(run_id).cloned())
        }
    }
    let report = conformance::run_host(Forgetful, &cases_only()).expect("suite loads");
    let run_cases = report
        .cases
        .iter()
        .filter(|c| c.outcome.failures.iter().any(|f| f.contains("RUN-3")))
        .count();
    assert!(run_cases > 100, "only {run_cases} cases caught it");
}

/// The README's snippet, verbatim in its body, on a thread with the standard library's
/// default 2 MiB stack (what `cargo test` gives each test): the suite must not need a
/// larger one from its caller.
#[test]
fn the_readme_snippet_runs_on_a_default_stack() {
    fn w6w_conformance() {
        w6w_sim::conformance::run_host(SimulatedHost, &Default::default())
            .expect("suite loads")
            .assert_all_passed();
    }
    std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(w6w_conformance)
        .expect("spawn")
        .join()
        .expect("the snippet passes on a 2 MiB stack");
}

/// Far below the default: what a caller's stack is does not matter at all.
#[test]
fn the_suite_runs_on_a_tiny_caller_stack() {
    std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(|| {
            conformance::run_host(SimulatedHost, &cases_only())
                .expect("suite loads")
                .assert_all_passed();
        })
        .expect("spawn")
        .join()
        .expect("passes on a 128 KiB stack");
}

mod engine_seam {
    use w6w_sim::conformance::{
        self, Capabilities, EngineAdapter, ReferenceEngineAdapter, RunOptions,
    };
    use w6w_sim::engine::{Engine, EngineError, RunSeed};
    use w6w_sim::engine::{EngineFactory, WorkflowEngine};
    use w6w_sim::host::{InvokeRequest, OnExecuted, WorkflowContext};
    use w6w_sim::model::Workflow;

    #[test]
    fn the_reference_engine_passes_through_the_engine_seam() {
        conformance::run_engine(ReferenceEngineAdapter, &RunOptions::default())
            .expect("suite loads")
            .assert_all_passed();
    }

    /// The reference engine with one flaw switched on.
    #[derive(Clone, Copy, PartialEq)]
    enum Flaw {
        /// After a crash it loads nothing: it says the run is done.
        NoRecovery,
        /// Before the run it hands a secret to an action without naming its path (SEC-1
        /// makes naming it the engine's duty).
        LeaksASecret,
        /// Before the run it logs the host's first secret, hex-encoded (D-207).
        LogsASecret,
        /// A replay loads the recording and writes its status back unchanged: one
        /// checkpoint, no step record (D-380).
        ReplaysTheStatus,
    }

    struct Flawed<'w>(Engine<'w>, Flaw);

    const SECRET: &str = "hunter2-t0p \"secret\"";

    impl WorkflowEngine for Flawed<'_> {
        async fn start<C: WorkflowContext>(
            &self,
            seed: RunSeed,
            ctx: &C,
        ) -> Result<(), EngineError> {
            if self.1 == Flaw::LeaksASecret {
                let mut params = serde_json::Map::new();
                let token = format!("Bearer {SECRET}");
                params.insert("token".into(), serde_json::json!(token));
                params.insert("n".into(), serde_json::json!(1));
                let got = ctx
                    .invoke(InvokeRequest {
                        app: "http".into(),
                        action: "get".into(),
                        connection: None,
                        params,
                        step_id: "leak".into(),
                        attempt: 1,
                        on_executed: OnExecuted::new(),
                        secret_paths: Vec::new(),
                    })
                    .await;
                let echoed = got
                    .ok()
                    .and_then(|v| v["token"].as_str().map(str::to_owned));
                assert_eq!(echoed, Some(token), "the action gets the secret");
            }
            if self.1 == Flaw::LogsASecret
                && let Some(secret) = ctx
                    .secrets()
                    .values()
                    .find_map(|v| v.as_str().map(str::to_owned))
            {
                let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
                ctx.log(w6w_sim::host::LogLevel::Debug, &format!("auth {hex}"), None);
            }
            self.0.run(seed, ctx).await.map(drop)
        }
        async fn resume<C: WorkflowContext>(
            &self,
            run_id: &str,
            token: Option<&str>,
            ctx: &C,
        ) -> Result<(), EngineError> {
            match token {
                None if self.1 == Flaw::NoRecovery => Ok(()),
                _ => self.0.resume_with(run_id, token, ctx).await.map(drop),
            }
        }
        async fn replay<C: WorkflowContext>(
            &self,
            run_id: &str,
            from: Option<&str>,
            ctx: &C,
        ) -> Result<(), EngineError> {
            match self.1 {
                Flaw::ReplaysTheStatus => {
                    let recorded = ctx.load(run_id).await?;
                    let patch = w6w_sim::model::RunStatePatch {
                        run_id: run_id.to_owned(),
                        status: recorded.map(|r| r.status),
                        ..Default::default()
                    };
                    Ok(ctx.checkpoint(&patch).await?)
                }
                _ => self.0.replay(run_id, from, ctx).await.map(drop),
            }
        }
    }

    struct FlawedFactory(Flaw);
    impl EngineFactory for FlawedFactory {
        type Engine<'w> = Flawed<'w>;
        fn boot<'w>(&'w self, workflow: &'w Workflow) -> Result<Flawed<'w>, EngineError> {
            Engine::new(workflow).map(|e| Flawed(e, self.0))
        }
    }

    struct Candidate(Capabilities, FlawedFactory);
    impl EngineAdapter for Candidate {
        type Factory = FlawedFactory;
        fn name(&self) -> String {
            "flawed".into()
        }
        fn factory(&self) -> &FlawedFactory {
            &self.1
        }
        fn capabilities(&self) -> Capabilities {
            self.0.clone()
        }
    }

    #[test]
    fn an_engine_that_does_not_recover_fails_run_4_and_the_rest_is_not_applicable() {
        let options = RunOptions {
            generate: 0,
            ..RunOptions::default()
        };
        let report = conformance::run_engine(
            Candidate(Capabilities::engine_core(), FlawedFactory(Flaw::NoRecovery)),
            &options,
        )
        .expect("suite loads");
        let row = |id: &str| {
            report
                .clauses
                .iter()
                .find(|r| r.clause == id)
                .cloned()
                .expect(id)
        };
        assert!(row("RUN-4").failed > 0, "{}", report.to_text());
        // Pure ops it does not offer, controls, strands: not applicable, never passed.
        assert!(row("PLAN-1").passed == 0 && row("PLAN-1").not_applicable > 0);
        assert!(row("FAN-2").passed == 0 && row("FAN-2").not_applicable > 0);
        assert!(report.not_applicable() > 300, "{}", report.not_applicable());
        assert_eq!(
            report.passed() + report.failed() + report.not_applicable(),
            report.cases.len()
        );
        let last = report.to_text().lines().last().map(str::to_owned);
        assert_eq!(
            last,
            Some(format!(
                "{} passed, {} failed, {} not applicable",
                report.passed(),
                report.failed(),
                report.not_applicable()
            ))
        );
        // Claiming a capability it lacks makes those cases fail instead.
        let claimed = Capabilities::engine_core().with("op.plan");
        let report = conformance::run_engine(
            Candidate(claimed, FlawedFactory(Flaw::NoRecovery)),
            &options,
        )
        .expect("loads");
        let plan = report
            .clauses
            .iter()
            .find(|r| r.clause == "PLAN-5")
            .expect("PLAN-5");
        assert!(plan.failed > 0, "unsupported_op answers fail");
    }

    /// An engine that boots for any workflow and does nothing: every run, resume and
    /// replay ends at once, writing nothing.
    struct Idle;

    impl WorkflowEngine for Idle {
        async fn start<C: WorkflowContext>(&self, _: RunSeed, _: &C) -> Result<(), EngineError> {
            Ok(())
        }
        async fn resume<C: WorkflowContext>(
            &self,
            _: &str,
            _: Option<&str>,
            _: &C,
        ) -> Result<(), EngineError> {
            Ok(())
        }
        async fn replay<C: WorkflowContext>(
            &self,
            _: &str,
            _: Option<&str>,
            _: &C,
        ) -> Result<(), EngineError> {
            Ok(())
        }
    }

    impl EngineFactory for Idle {
        type Engine<'w> = Idle;
        fn boot<'w>(&'w self, _: &'w Workflow) -> Result<Idle, EngineError> {
            Ok(Idle)
        }
    }

    impl EngineAdapter for Idle {
        type Factory = Idle;
        fn name(&self) -> String {
            "idle".into()
        }
        fn factory(&self) -> &Idle {
            self
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities::all()
        }
    }

    /// D-379 at the Rust seam: against the whole suite an engine that does nothing passes
    /// nothing. It passed ten cases: answers the suite gives before booting an engine (an
    /// invalid workflow or scenario, an unknown budget, a fault no run reaches, a dialect
    /// document the import refuses), now not judged here, and said so.
    #[test]
    fn an_engine_that_does_nothing_passes_nothing_through_the_rust_seam() {
        let options = RunOptions {
            generate: 0,
            ..RunOptions::default()
        };
        let report = conformance::run_engine(Idle, &options).expect("suite loads");
        let passed: Vec<&str> = report
            .cases
            .iter()
            .filter(|c| c.passed())
            .map(|c| c.outcome.id.as_str())
            .collect();
        assert_eq!(passed, Vec::<&str>::new());
        let text = report.to_text();
        assert!(text.contains("Not judged at this seam: "), "{text}");
        // The reference through the same seam is judged on everything else, and passes it.
        let reference = conformance::run_engine(ReferenceEngineAdapter, &options).expect("loads");
        reference.assert_all_passed();
        assert_eq!(reference.not_applicable(), report.not_applicable());
    }

    /// D-378, D-380 through the Rust seam: an engine whose replay writes nothing, or only
    /// the recorded status, passes no replay of REPLAY and SEC-1 (the suite's store begins
    /// each replay holding the recording, which would otherwise be judged as the replay),
    /// and each replay of a finished run fails saying why.
    #[test]
    fn an_engine_that_does_not_replay_passes_no_replay_through_the_rust_seam() {
        let options = RunOptions {
            clauses: vec!["REPLAY".into(), "SEC-1".into()],
            generate: 0,
            ..RunOptions::default()
        };
        let suite = conformance::Suite::load_default().expect("cases");
        let replays: Vec<String> = suite
            .cases()
            .filter(|(_, c)| c.request["op"] == "replay")
            .map(|(_, c)| c.id.clone())
            .collect();
        let status_only = Candidate(Capabilities::all(), FlawedFactory(Flaw::ReplaysTheStatus));
        for (report, why) in [
            (
                conformance::run_engine(Idle, &options),
                "ended without writing one checkpoint",
            ),
            (
                conformance::run_engine(status_only, &options),
                "holding a record no checkpoint of the replay wrote",
            ),
        ] {
            let report = report.expect("suite loads");
            let judged: Vec<_> = report
                .cases
                .iter()
                .filter(|c| replays.contains(&c.outcome.id) && !c.not_applicable())
                .collect();
            assert!(judged.len() >= 10, "{} replays judged", judged.len());
            for case in &judged {
                assert!(!case.passed(), "{} passed", case.outcome.id);
            }
            for id in ["replay-determinism", "sec-replay-run-trigger-scrubbed"] {
                let said = judged
                    .iter()
                    .find(|c| c.outcome.id == id)
                    .map(|c| c.outcome.failures.join("\n"))
                    .unwrap_or_default();
                assert!(said.contains(why), "{id}: {said}");
            }
        }
    }

    /// SEC-1 is judged on what the engine wrote, before any redaction (D-207): an engine
    /// that logs the host's secret hex-encoded fails every case whose run has a secret,
    /// naming SEC-1 and the log line, never the secret; the same cases pass on the honest
    /// engine through the same seam.
    #[test]
    fn an_engine_that_logs_a_secret_fails_sec_1_through_the_rust_seam() {
        let options = RunOptions {
            clauses: vec!["SEC-1".into()],
            generate: 0,
            ..RunOptions::default()
        };
        let report = conformance::run_engine(
            Candidate(Capabilities::all(), FlawedFactory(Flaw::LogsASecret)),
            &options,
        )
        .expect("suite loads");
        let suite = conformance::Suite::load_default().expect("cases");
        let mut judged = 0;
        for case in &report.cases {
            let Some((_, c)) = suite.cases().find(|(_, c)| c.id == case.outcome.id) else {
                continue;
            };
            let secret = c
                .request
                .pointer("/scenario/secrets")
                .and_then(serde_json::Value::as_object)
                .and_then(|m| m.values().find_map(serde_json::Value::as_str));
            // The flaw is in `start`: a run (a replay starts no run).
            let effectful = c.request["op"] == "run"
                && w6w_sim::__internals::service::handle(&c.request)
                    .get("ok")
                    .is_some();
            let Some(secret) = secret.filter(|s| s.len() >= 4 && effectful) else {
                continue;
            };
            judged += 1;
            let said = case.outcome.failures.join("\n");
            assert!(
                said.contains("SEC-1: a log line") && said.contains("hex-encoded"),
                "{}: {said}",
                case.outcome.id
            );
            assert!(
                !said.contains(secret),
                "{} quotes the secret",
                case.outcome.id
            );
        }
        assert!(judged >= 10, "{judged} cases judged");
    }

    /// A candidate that hands a secret to an action without naming its path: the
    /// simulator's own scrubber still keeps every byte of it out of the report's invocation
    /// log (when the entry is made, before D-191 writes its params as text, and again when
    /// the report is built), while the action itself receives the secret.
    #[test]
    fn a_secret_an_engine_passes_without_its_path_never_reaches_the_invocation_log() {
        let workflow = w6w_sim::sim::load_workflow(&serde_json::json!({
            "manifestVersion": "2", "id": "wf_leak", "name": "leak",
            "steps": [{"id": "a", "uses": {"app": "echo", "action": "echo"}, "with": {"x": 1}}]
        }))
        .expect("workflow");
        let scenario = w6w_sim::sim::load_scenario(&serde_json::json!({"secrets": {"K": SECRET}}))
            .expect("scenario");
        let report = w6w_sim::sim::Simulation::with_engine(
            &FlawedFactory(Flaw::LeaksASecret),
            &workflow,
            &scenario,
        )
        .run()
        .expect("report");
        let leak = &report.world.invocations[0];
        assert_eq!(&*leak.step_id, "leak");
        assert_eq!(
            leak.params.to_value()["n"],
            1,
            "the rest of the params is kept"
        );
        // The entry itself, as the disk journal writes it, not only the printed report.
        let entry = serde_json::to_string(leak).expect("json");
        assert!(!entry.contains("hunter2"), "the secret leaked: {entry}");
        let text = serde_json::to_string(&report.into_json()).expect("json");
        for form in [SECRET.to_owned(), serde_json::json!(SECRET).to_string()] {
            let bare = form.trim_matches('"');
            assert!(!text.contains(bare), "the secret leaked: {text}");
        }
        assert!(
            text.contains(w6w_sim::__internals::expr::REDACTED),
            "{text}"
        );
    }
}

/// D-103: a `wait`'s schedule is the host's. A store that keeps checkpoints durably but
/// schedules only in the object's memory loses them when the suite restarts the host while
/// the run sleeps: every case that resumes a wait fails, naming CTRL-7; the reference's
/// medium (`MemoryDisk`) passes the same cases. A store that keeps no schedules at all fails
/// them too, unless its host declares a profile without `schedule` (then not applicable).
#[test]
fn a_host_that_forgets_schedules_fails_naming_ctrl_7() {
    struct Durable {
        inner: Box<dyn RunStore>,
        schedules: Vec<w6w_sim::host::ScheduleEntry>,
        keeps: bool,
    }
    impl RunStore for Durable {
        fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), StoreError> {
            self.inner.checkpoint(patch)
        }
        fn put(&mut self, state: &RunState) -> Result<(), StoreError> {
            self.inner.put(state)
        }
        fn load(&self, run_id: &str) -> Result<Option<RunState>, StoreError> {
            self.inner.load(run_id)
        }
        fn schedule(&mut self, entry: &w6w_sim::host::ScheduleEntry) -> Result<(), StoreError> {
            if !self.keeps {
                return Err(StoreError::Unsupported("schedule"));
            }
            self.schedules.push(entry.clone()); // memory only: gone with the process
            Ok(())
        }
        fn schedules(&self, run_id: &str) -> Result<Vec<w6w_sim::host::ScheduleEntry>, StoreError> {
            Ok(self
                .schedules
                .iter()
                .filter(|e| e.run_id == run_id)
                .cloned()
                .collect())
        }
    }
    struct Host {
        keeps: bool,
        profile: conformance::Capabilities,
    }
    impl HostAdapter for Host {
        fn name(&self) -> String {
            "forgets schedules".into()
        }
        fn storage(&mut self) -> Result<Box<dyn StoreFactory>, StoreError> {
            let mut disk = MemoryDisk::new().factory();
            let keeps = self.keeps;
            Ok(Box::new(
                move || -> Result<Box<dyn RunStore>, StoreError> {
                    Ok(Box::new(Durable {
                        inner: disk.open()?,
                        schedules: Vec::new(),
                        keeps,
                    }))
                },
            ))
        }
        fn capabilities(&self) -> conformance::Capabilities {
            self.profile.clone()
        }
    }
    let options = RunOptions {
        clauses: vec!["CTRL-7".into()],
        generate: 0,
        ..RunOptions::default()
    };
    let good = conformance::run_host(SimulatedHost, &options).expect("suite loads");
    good.assert_all_passed();
    let resumed: Vec<String> = good
        .cases
        .iter()
        .filter(|c| {
            c.outcome
                .response
                .pointer("/ok/schedules")
                // The top-level run's (a child run's schedule is the suite's, D-122).
                .is_some_and(|s| {
                    s.as_array()
                        .is_some_and(|a| a.iter().any(|e| e.get("runId").is_none()))
                })
        })
        .map(|c| c.outcome.id.clone())
        .collect();
    assert!(
        resumed.len() >= 2,
        "cases that fire a schedule: {resumed:?}"
    );

    let all = conformance::Capabilities::all();
    let forgetful = conformance::run_host(
        Host {
            keeps: true,
            profile: all.clone(),
        },
        &options,
    )
    .expect("suite loads");
    let failed: Vec<_> = forgetful.cases.iter().filter(|c| c.failed()).collect();
    assert!(failed.len() >= 2, "only {} failed", failed.len());
    for c in &failed {
        let text = c.outcome.response.to_string();
        assert!(text.contains("CTRL-7/RUN-3"), "{}: {text}", c.outcome.id);
    }
    for id in &resumed {
        assert!(
            failed.iter().any(|c| &c.outcome.id == id),
            "{id} resumed a wait from a forgotten schedule"
        );
    }

    let without = conformance::run_host(
        Host {
            keeps: false,
            profile: all.clone(),
        },
        &options,
    )
    .expect("suite loads");
    assert!(
        without.failed() >= failed.len(),
        "a host without schedules passed waits"
    );
    let declared = conformance::run_host(
        Host {
            keeps: false,
            profile: all.without("schedule"),
        },
        &options,
    )
    .expect("suite loads");
    assert_eq!(declared.failed(), 0, "{}", declared.to_text());
    assert!(declared.not_applicable() >= failed.len());
}
