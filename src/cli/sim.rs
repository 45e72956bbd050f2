//! `w6w-sim run | replay | resume`: the simulated host on the command line.
//!
//! Invariant: parsing and printing only; every command is one call into [`crate::sim`].
//! Exit codes: 0 whenever a report is printed and its trace written whole (the run's
//! status is data), 1 when the workflow, scenario or run state is invalid or the run is
//! rejected before it starts, 2 on usage, I/O or JSON syntax errors — a `--trace` file
//! that could not be written too, after the report (the run happened; D-211).
//!
//! Crash-recovery testing: `--abort-after-checkpoint N` (hidden) or the environment
//! variable `W6W_SIM_ABORT_AFTER_CHECKPOINT=N` makes the process call
//! `std::process::abort()` right after checkpoint N (1-based, counted across restarts) is
//! durable — a real process death. `w6w-sim resume` then continues the run from the store.

use std::cell::RefCell;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::rc::Rc;

use serde_json::Value;

use crate::model::RunState;
use crate::sim::{self, Report, SimError, SimOptions, Simulation, StoreChoice};

/// Environment variable of the abort testing hook.
pub(crate) const ABORT_ENV: &str = "W6W_SIM_ABORT_AFTER_CHECKPOINT";

#[derive(Debug, clap::Subcommand)]
pub(crate) enum SimCommand {
    /// Run a workflow on the deterministic simulated host and print the report.
    Run(RunArgs),
    /// Replay a finished run (reusing recorded outputs) and print the report.
    Replay(ReplayArgs),
    /// Continue a run a killed process left in a store directory.
    Resume(ResumeArgs),
}

/// The run's budgets (`sim::Limits`); each exceeded one ends the run `limit_exceeded`.
#[derive(Debug, clap::Args)]
pub(crate) struct LimitArgs {
    /// Most action invocations the run may make (across restarts).
    #[arg(long, value_name = "N", default_value_t = sim::Limits::DEFAULT.invocations)]
    max_invocations: u64,
    /// Most virtual time the run may span from its start, in ms.
    #[arg(long, value_name = "MS", default_value_t = sim::Limits::DEFAULT.virtual_ms)]
    max_virtual_ms: u64,
    /// Most checkpoint bytes the run may record.
    #[arg(long, value_name = "BYTES", default_value_t = sim::Limits::DEFAULT.recorded_bytes)]
    max_recorded_bytes: u64,
    /// Most trace bytes the run may write.
    #[arg(long, value_name = "BYTES", default_value_t = sim::Limits::DEFAULT.trace_bytes)]
    max_trace_bytes: u64,
}

impl LimitArgs {
    fn limits(&self) -> sim::Limits {
        sim::Limits {
            invocations: self.max_invocations,
            virtual_ms: self.max_virtual_ms,
            recorded_bytes: self.max_recorded_bytes,
            trace_bytes: self.max_trace_bytes,
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The workflow document: w6w JSON, or WOML (.xml, .woml) / YAML (.yaml, .yml).
    workflow: PathBuf,
    /// Force the workflow's dialect (`w6w`, `woml`, `yaml`) instead of its extension.
    #[arg(long, value_parser = super::dialect::parse_dialect)]
    dialect: Option<crate::dialect::Dialect>,
    /// The scenario that drives the simulator (JSON).
    #[arg(long)]
    scenario: PathBuf,
    /// `memory`, or a directory: one append-only journal per run, locked while in use.
    #[arg(long, default_value = "memory")]
    store: String,
    /// Write every trace event to this file as JSON lines, as they happen.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Testing hook: abort the process right after this checkpoint is durable.
    #[arg(long, hide = true)]
    abort_after_checkpoint: Option<u64>,
    /// Stop when a `wait` suspends the run: print the queued state and its resume token
    /// (continue with `resume --token`). By default the schedule fires and the run goes on.
    #[arg(long)]
    stop_at_suspend: bool,
    /// Key material that seals outputs computed from a secret and authenticates the
    /// store's journal (D-250, D-251): a file of at least 32 random bytes kept outside the
    /// store. Default: the W6W_SEALING_KEY environment variable; neither: nothing is sealed
    /// and such an output reads "[redacted]" after a crash. resume and replay need the key
    /// the run was written with.
    #[arg(long, value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// Also write a picture of the run to FILE: one self-contained HTML page (a timeline on
    /// the virtual clock, each step's record on click), redacted as the report is. It keeps
    /// the trace in memory, so the trace budget applies as with --trace.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Keep WOML `<script>` / YAML `run` bodies carried, not executed: a script step the
    /// scenario does not script by id echoes its inputs, as before issue 40 (the scenario's
    /// `"scripts": {"run": false}` does the same).
    #[arg(long)]
    no_scripts: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ReplayArgs {
    /// The workflow document the run was started from: w6w JSON, or WOML (.xml, .woml) /
    /// YAML (.yaml, .yml) — a journal refuses any other document (D-260).
    workflow: PathBuf,
    /// Force the workflow's dialect (`w6w`, `woml`, `yaml`) instead of its extension.
    #[arg(long, value_parser = super::dialect::parse_dialect)]
    dialect: Option<crate::dialect::Dialect>,
    /// The run to replay: a RunState, a report (its `run`), or a store's run file
    /// (`DIR/<runId>.journal`, or the older `DIR/<runId>.json`).
    #[arg(long)]
    run: PathBuf,
    #[arg(long)]
    scenario: PathBuf,
    /// Re-run this step and all its graph descendants; reuse everything else.
    #[arg(long)]
    from: Option<String>,
    #[arg(long, default_value = "memory")]
    store: String,
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Key material that seals outputs computed from a secret and authenticates the
    /// store's journal (D-250, D-251): a file of at least 32 random bytes kept outside the
    /// store. Default: the W6W_SEALING_KEY environment variable; neither: nothing is sealed
    /// and such an output reads "[redacted]" after a crash. resume and replay need the key
    /// the run was written with.
    #[arg(long, value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// Also write a picture of the run to FILE: one self-contained HTML page (a timeline on
    /// the virtual clock, each step's record on click), redacted as the report is. It keeps
    /// the trace in memory, so the trace budget applies as with --trace.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Keep WOML `<script>` / YAML `run` bodies carried, not executed: a script step the
    /// scenario does not script by id echoes its inputs, as before issue 40 (the scenario's
    /// `"scripts": {"run": false}` does the same).
    #[arg(long)]
    no_scripts: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ResumeArgs {
    /// The workflow document the run was started from: w6w JSON, or WOML (.xml, .woml) /
    /// YAML (.yaml, .yml) — the journal refuses any other document (D-260).
    workflow: PathBuf,
    /// Force the workflow's dialect (`w6w`, `woml`, `yaml`) instead of its extension.
    #[arg(long, value_parser = super::dialect::parse_dialect)]
    dialect: Option<crate::dialect::Dialect>,
    /// The store directory the killed process used.
    #[arg(long)]
    store: PathBuf,
    /// The run id to continue.
    #[arg(long)]
    run: String,
    /// Resume a run a `wait` suspended, with the token its report gave (a wrong token is
    /// refused). Without it: continue a run a killed process left unfinished.
    #[arg(long)]
    token: Option<String>,
    /// Stop again at the next suspension instead of firing its schedule.
    #[arg(long)]
    stop_at_suspend: bool,
    #[arg(long)]
    scenario: PathBuf,
    #[arg(long)]
    trace: Option<PathBuf>,
    #[arg(long, hide = true)]
    abort_after_checkpoint: Option<u64>,
    /// Key material that seals outputs computed from a secret and authenticates the
    /// store's journal (D-250, D-251): a file of at least 32 random bytes kept outside the
    /// store. Default: the W6W_SEALING_KEY environment variable; neither: nothing is sealed
    /// and such an output reads "[redacted]" after a crash. resume and replay need the key
    /// the run was written with.
    #[arg(long, value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// Also write a picture of the run to FILE: one self-contained HTML page (a timeline on
    /// the virtual clock, each step's record on click), redacted as the report is. It keeps
    /// the trace in memory, so the trace budget applies as with --trace.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,

    /// Keep WOML `<script>` / YAML `run` bodies carried, not executed: a script step the
    /// scenario does not script by id echoes its inputs, as before issue 40 (the scenario's
    /// `"scripts": {"run": false}` does the same).
    #[arg(long)]
    no_scripts: bool,
    #[command(flatten)]
    limits: LimitArgs,
}

/// A failure before any report: message and exit code.
struct Fail(String, u8);

impl From<SimError> for Fail {
    fn from(e: SimError) -> Self {
        let mut msg = match &e {
            SimError::InvalidWorkflow(errors) => {
                let mut m = String::from("invalid workflow:");
                for err in errors {
                    let at = if err.path.is_empty() { "/" } else { &err.path };
                    m.push_str(&format!("\n  {at}: {} ({})", err.message, err.code));
                }
                m
            }
            SimError::InvalidScenario(errors) => {
                let mut m = String::from("invalid scenario:");
                for err in errors {
                    let at = if err.path.is_empty() { "/" } else { &err.path };
                    m.push_str(&format!("\n  {at}: {}", err.message));
                }
                m
            }
            other => format!("{} ({})", other, other.code()),
        };
        if let Ok(j) = serde_json::to_string(&e.to_json()) {
            msg.push_str(&format!("\nerror: {j}"));
        }
        Fail(msg, if e.is_input_error() { 1 } else { 2 })
    }
}

/// SEC-1: an error a run produced, through the run's redaction sink before it is printed.
fn sim_fail(scenario: &sim::Scenario) -> impl Fn(SimError) -> Fail + '_ {
    move |e| {
        let Fail(message, code) = Fail::from(e);
        let scrub = sim::Scrubber::new(scenario.secrets.values());
        Fail(scrub.line(&message), code)
    }
}

/// D-250: the operator's sealing key — `--key-file`, else `W6W_SEALING_KEY` — put on the
/// scenario (over a test key it carries), with fresh entropy for the run's seal id
/// (D-251). An error names where the material came from and why it was refused, never the
/// material.
fn with_operator_key(
    mut scenario: sim::Scenario,
    key_file: Option<&Path>,
) -> Result<sim::Scenario, Fail> {
    use crate::host::{SEALING_KEY_ENV, SealingKey};
    let key = match key_file {
        Some(path) => read_key_file(path)
            .and_then(|material| SealingKey::from_material(&material, &scenario.secrets))
            .map_err(|e| {
                Fail(
                    format!("--key-file {}: {e} [{}]", path.display(), e.code()),
                    2,
                )
            })?,
        None => match std::env::var_os(SEALING_KEY_ENV) {
            Some(v) if !v.is_empty() => {
                SealingKey::from_material(v.as_encoded_bytes(), &scenario.secrets)
                    .map_err(|e| Fail(format!("{SEALING_KEY_ENV}: {e} [{}]", e.code()), 2))?
            }
            _ => return Ok(scenario),
        },
    };
    scenario.sealing_key = Some(key);
    scenario.entropy = fresh_entropy();
    Ok(scenario)
}

/// A key file's bytes: a regular file of at most `SEALING_KEY_MAX_BYTES` (+ a line end);
/// an error names the path, never the content.
pub(crate) fn read_key_file(path: &Path) -> Result<Vec<u8>, crate::host::KeyError> {
    use crate::host::{KeyError, SEALING_KEY_MAX_BYTES};
    let unreadable = |message: String| KeyError::Unreadable {
        source_name: path.display().to_string(),
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| unreadable(e.to_string()))?;
    if !meta.is_file() {
        return Err(unreadable("not a regular file".into()));
    }
    if meta.len() > SEALING_KEY_MAX_BYTES as u64 + 2 {
        return Err(KeyError::TooLong {
            bytes: usize::try_from(meta.len()).unwrap_or(usize::MAX),
        });
    }
    std::fs::read(path).map_err(|e| unreadable(e.to_string()))
}

/// 64 bits from the OS (through std's randomly keyed hasher): the seal ids of two runs
/// under one key never repeat, whatever their seeds and run ids (D-251).
fn fresh_entropy() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x5ea1);
    h.finish()
}

fn read_json(path: &Path, what: &str) -> Result<Value, Fail> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Fail(format!("cannot read {what} {}: {e}", path.display()), 2))?;
    crate::json::parse(&text).map_err(|e| {
        Fail(
            format!(
                "{what} {} is not acceptable JSON (line {}, column {}): {e}",
                path.display(),
                e.line,
                e.column
            ),
            2,
        )
    })
}

fn store_choice(s: &str) -> StoreChoice {
    if s == "memory" {
        StoreChoice::Memory
    } else {
        StoreChoice::Dir(PathBuf::from(s))
    }
}

fn abort_hook(flag: Option<u64>) -> Result<Option<u64>, Fail> {
    if flag.is_some() {
        return Ok(flag);
    }
    match std::env::var(ABORT_ENV) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .map(Some)
            .map_err(|_| Fail(format!("{ABORT_ENV}={v:?} is not a checkpoint number"), 2)),
        Err(_) => Ok(None),
    }
}

/// `--trace FILE`: the file, which remembers its first write error and refuses every
/// write after it, so the trace on disk is whole up to a point and has no hole (D-211).
struct TraceFile {
    file: std::fs::File,
    failed: Rc<RefCell<Option<std::io::Error>>>,
}

impl TraceFile {
    fn check<T>(&self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            let mut failed = self.failed.borrow_mut();
            if failed.is_none() {
                *failed = Some(std::io::Error::new(e.kind(), e.to_string()));
            }
        }
        result
    }

    fn refuse_after_failure(&self) -> std::io::Result<()> {
        match self.failed.borrow().as_ref() {
            Some(e) => Err(std::io::Error::new(
                e.kind(),
                "an earlier write of the trace failed",
            )),
            None => Ok(()),
        }
    }
}

impl Write for TraceFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.refuse_after_failure()?;
        let written = self.file.write(buf);
        self.check(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.refuse_after_failure()?;
        let flushed = self.file.flush();
        self.check(flushed)
    }
}

/// The trace sink of one command, and how the command learns, once the run is over,
/// whether every event reached the file.
struct Trace {
    path: Option<PathBuf>,
    failed: Rc<RefCell<Option<std::io::Error>>>,
}

impl Trace {
    /// D-211: a trace that could not be written fails the command (exit 2), after the
    /// report is printed — the run happened, and a store holds it.
    fn finish(self) -> Result<(), Fail> {
        match (self.path, self.failed.borrow_mut().take()) {
            (Some(path), Some(e)) => Err(Fail(
                format!(
                    "cannot write the trace file {}: {e}; the trace stops before the run's end",
                    path.display()
                ),
                2,
            )),
            _ => Ok(()),
        }
    }
}

fn trace_sink(path: Option<&Path>) -> Result<(Option<Box<dyn Write>>, Trace), Fail> {
    let failed = Rc::new(RefCell::new(None));
    let trace = Trace {
        path: path.map(Path::to_owned),
        failed: Rc::clone(&failed),
    };
    let Some(path) = path else {
        return Ok((None, trace));
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| Fail(format!("cannot open trace file {}: {e}", path.display()), 2))?;
    let sink = std::io::BufWriter::new(TraceFile { file, failed });
    Ok((Some(Box::new(sink)), trace))
}

/// A RunState from a file holding a RunState, a report (`run`) or a store file (`state`).
fn run_state(doc: Value) -> Result<RunState, Fail> {
    let inner = match &doc {
        Value::Object(m) if m.contains_key("state") && !m.contains_key("runId") => m.get("state"),
        Value::Object(m) if m.contains_key("run") && !m.contains_key("runId") => m.get("run"),
        _ => Some(&doc),
    };
    let inner = inner.cloned().unwrap_or(Value::Null);
    serde_json::from_value(inner).map_err(|e| Fail(format!("--run is not a RunState: {e}"), 1))
}

/// Whether `--run` names a store's journal (`DIR/<runId>.journal`) rather than JSON.
fn run_file_is_journal(path: &Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok_and(|()| sim::journal::is_journal(&head))
}

/// The secrets of a scenario document as written (`secrets`), for scrubbing what is
/// printed before — or instead of — a loaded scenario: a validation error of the workflow
/// or of the scenario itself (issue 44 item 2, D-262).
fn raw_secrets(scenario: &Value) -> Vec<Value> {
    scenario
        .get("secrets")
        .and_then(Value::as_object)
        .map(|m| m.values().cloned().collect())
        .unwrap_or_default()
}

/// D-262: a message about the documents, through the scenario's redaction sink in every
/// encoding it knows, so no validation error quotes a value equal to a secret.
fn scrub_message(secrets: &[Value], message: &str) -> String {
    if secrets.is_empty() {
        return message.to_owned();
    }
    sim::Scrubber::new(secrets.iter()).prose(message)
}

/// What `run`, `resume` and `replay` run: a w6w workflow, or a WOML/YAML document imported
/// (D-260) with the scenario prepared for it, and what identifies that document.
struct Loaded {
    workflow: crate::model::Workflow,
    scenario: sim::Scenario,
    imported: Option<crate::dialect::Imported>,
    source: Option<Value>,
}

fn load(
    path: &Path,
    dialect: Option<crate::dialect::Dialect>,
    scenario_path: &Path,
    key_file: Option<&Path>,
) -> Result<Loaded, Fail> {
    use crate::dialect::{self, Dialect};
    let scenario_doc = read_json(scenario_path, "scenario")?;
    let secrets = raw_secrets(&scenario_doc);
    let scrub = |Fail(m, code): Fail| Fail(scrub_message(&secrets, &m), code);
    let dialect = dialect.unwrap_or_else(|| Dialect::from_path(path));
    if dialect == Dialect::W6w {
        let workflow =
            sim::load_workflow(&read_json(path, "workflow")?).map_err(|e| scrub(Fail::from(e)))?;
        let scenario = sim::load_scenario(&scenario_doc).map_err(|e| scrub(Fail::from(e)))?;
        let scenario = with_operator_key(scenario, key_file)?;
        return Ok(Loaded {
            workflow,
            scenario,
            imported: None,
            source: None,
        });
    }
    // Issue 10: a WOML or YAML document, imported and run on the same engine; the
    // scenario's `manifest` key supplies YML-3 schemas.
    let (scenario_doc, manifest_doc) = dialect::split_manifest(&scenario_doc);
    let manifest = match manifest_doc.as_ref().map(dialect::Manifest::from_json) {
        None => None,
        Some(Ok(m)) => Some(m),
        Some(Err(p)) => {
            return Err(scrub(Fail(
                format!("invalid scenario manifest:\n  {}", p.join("\n  ")),
                1,
            )));
        }
    };
    let bytes =
        std::fs::read(path).map_err(|e| Fail(format!("cannot read {}: {e}", path.display()), 2))?;
    let file = super::input::display_name(path);
    let imported = dialect::import(dialect, &bytes, manifest.as_ref())
        .map_err(|p| scrub(Fail(super::dialect::problems_text(&file, &p), 1)))?;
    let prepared = dialect::prepare_scenario(&imported, &scenario_doc).map_err(|e| {
        let code = if e.is_input_error() { 1 } else { 2 };
        scrub(Fail(format!("error: {}", e.to_json()), code))
    })?;
    let scenario = sim::load_scenario(&prepared).map_err(|e| scrub(Fail::from(e)))?;
    let workflow = sim::load_workflow(&imported.workflow).map_err(|e| scrub(Fail::from(e)))?;
    let scenario = with_operator_key(scenario, key_file)?;
    let source = Some(dialect::source_identity(&imported, &bytes));
    Ok(Loaded {
        workflow,
        scenario,
        imported: Some(imported),
        source,
    })
}

/// Print a report; a dialect run's gets the dialect's additions (`dialect`, WOML-13's
/// `result`, WOML-15's attempt bindings, YML-5's `bindings`) — after a resume or a replay
/// exactly as after a run (D-261). With `--html FILE`, the page is drawn from that same
/// printed JSON and the run's scrubbed trace, and written after the report (D-291).
fn print_loaded(
    loaded: &Loaded,
    mut report: Report,
    html: Option<(&Path, &str)>,
) -> Result<(), Fail> {
    let trace = std::mem::take(&mut report.trace);
    let mut out = report.into_json();
    if let Some(imported) = &loaded.imported {
        crate::dialect::decorate_report(imported, &mut out);
    }
    let text = serde_json::to_string_pretty(&out)
        .map_err(|e| Fail(format!("cannot serialize the report: {e}"), 2))?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}")
        .and_then(|()| stdout.flush())
        .map_err(|e| Fail(format!("cannot write the report: {e}"), 2))?;
    let Some((path, command)) = html else {
        return Ok(());
    };
    let page = sim::html::run_page(&sim::html::RunSources {
        command,
        report: &out,
        trace: &trace,
        error_edges: sim::html::error_edges(&loaded.workflow),
        notes: sim::html::command_notes(command),
        ..sim::html::RunSources::default()
    });
    std::fs::write(path, page).map_err(|e| {
        Fail(
            format!("cannot write the HTML file {}: {e}", path.display()),
            2,
        )
    })
}

fn run_cmd(a: RunArgs) -> Result<(), Fail> {
    let loaded = load(&a.workflow, a.dialect, &a.scenario, a.key_file.as_deref())?;
    let options = SimOptions {
        store: store_choice(&a.store),
        abort_after_checkpoint: abort_hook(a.abort_after_checkpoint)?,
        keep_trace: a.html.is_some(),
        stop_at_suspend: a.stop_at_suspend,
        limits: a.limits.limits(),
        judge_secrets: false,
        source: loaded.source.clone(),
        run_scripts: !a.no_scripts,
    };
    let (sink, trace) = trace_sink(a.trace.as_deref())?;
    let report = Simulation::new(&loaded.workflow, &loaded.scenario)
        .options(&options)
        .trace_sink(sink)
        .run()
        .map_err(sim_fail(&loaded.scenario))?;
    print_loaded(&loaded, report, a.html.as_deref().map(|p| (p, "run")))?;
    trace.finish()
}

fn replay_cmd(a: ReplayArgs) -> Result<(), Fail> {
    let loaded = load(&a.workflow, a.dialect, &a.scenario, a.key_file.as_deref())?;
    let scenario = &loaded.scenario;
    let original = if run_file_is_journal(&a.run) {
        let stored = sim::journal::read_run_file_keyed(&a.run, scenario.sealing_key.as_ref())
            .map_err(|e| Fail(format!("--run: {e} [{}]", e.code()), 1))?;
        // D-260: a journal says which document its run came from.
        sim::check_source(
            &stored.state.run_id,
            "replayed",
            stored.source.as_ref(),
            loaded.source.as_ref(),
        )
        .map_err(sim_fail(scenario))?;
        stored.state
    } else {
        run_state(read_json(&a.run, "run state")?)?
    };
    let options = SimOptions {
        store: store_choice(&a.store),
        abort_after_checkpoint: None,
        keep_trace: a.html.is_some(),
        stop_at_suspend: false,
        limits: a.limits.limits(),
        judge_secrets: false,
        source: loaded.source.clone(),
        run_scripts: !a.no_scripts,
    };
    let (sink, trace) = trace_sink(a.trace.as_deref())?;
    let report = Simulation::new(&loaded.workflow, scenario)
        .options(&options)
        .trace_sink(sink)
        .replay(&original, a.from.as_deref())
        .map_err(sim_fail(scenario))?;
    print_loaded(&loaded, report, a.html.as_deref().map(|p| (p, "replay")))?;
    trace.finish()
}

fn resume_cmd(a: ResumeArgs) -> Result<(), Fail> {
    let loaded = load(&a.workflow, a.dialect, &a.scenario, a.key_file.as_deref())?;
    let options = SimOptions {
        store: StoreChoice::Dir(a.store.clone()),
        abort_after_checkpoint: abort_hook(a.abort_after_checkpoint)?,
        keep_trace: a.html.is_some(),
        stop_at_suspend: a.stop_at_suspend,
        limits: a.limits.limits(),
        judge_secrets: false,
        source: loaded.source.clone(),
        run_scripts: !a.no_scripts,
    };
    let (sink, trace) = trace_sink(a.trace.as_deref())?;
    let report = Simulation::new(&loaded.workflow, &loaded.scenario)
        .options(&options)
        .trace_sink(sink)
        .resume(&a.run, a.token.as_deref())
        .map_err(sim_fail(&loaded.scenario))?;
    print_loaded(&loaded, report, a.html.as_deref().map(|p| (p, "resume")))?;
    trace.finish()
}

/// Run one simulator subcommand.
pub(crate) fn main(cmd: SimCommand) -> ExitCode {
    let (name, result) = match cmd {
        SimCommand::Run(a) => ("run", run_cmd(a)),
        SimCommand::Replay(a) => ("replay", replay_cmd(a)),
        SimCommand::Resume(a) => ("resume", resume_cmd(a)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(message, code)) => {
            eprintln!("w6w-sim {name}: {message}");
            ExitCode::from(code)
        }
    }
}
