//! `w6w-sim conformance` (run the suite) and `w6w-sim adapter serve` (the reference host
//! through the adapter protocol): argument parsing and printing only.
//!
//! Exit codes of `conformance`: 0 every selected case passed, 1 some case failed (an
//! adapter that dies, hangs or writes garbage fails cases; it is not a usage error), 2 the
//! suite could not start (malformed case file, unknown `--clause`, no case selected, an
//! adapter command that cannot be parsed or started) or the JUnit file cannot be written.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[cfg(w6w_mutants)]
use crate::conformance::mutants::{self, AnyMutant};
use crate::conformance::pool::{PoolPlan, run_pool};
use crate::conformance::shard::Shard;
use crate::conformance::{
    self, Adapter, ProcessAdapter, ProcessOptions, Reference, Selection, Suite, SuiteReport,
};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ConformanceCommand {
    /// Run the conformance suite against the built-in reference or a candidate adapter;
    /// prints a per-clause table and ends with `N passed, M failed`.
    Conformance(Box<ConformanceArgs>),
    /// Speak the adapter protocol (docs/adapter-protocol.md).
    #[command(subcommand)]
    Adapter(AdapterCommand),
}

#[derive(Debug, clap::Args)]
pub(crate) struct ConformanceArgs {
    /// Directory of case files (*.json) [default: the suite embedded in w6w-sim].
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// Only cases naming this clause (RETRY-2) or family (RETRY, every RETRY-n); repeatable.
    #[arg(long = "clause", value_name = "CLAUSE")]
    clauses: Vec<String>,
    /// Only cases whose id contains TEXT.
    #[arg(long = "case", value_name = "TEXT")]
    case_id: Option<String>,
    /// Print the report as one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write the per-clause table to FILE as one self-contained HTML page, with each
    /// failure's messages and the command that runs it again.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Check a candidate host: spawn 'CMD ARGS' (split like a simple shell, no shell runs)
    /// and speak the adapter protocol over its stdin/stdout.
    #[arg(long, value_name = "'CMD ARGS'")]
    adapter: Option<String>,
    /// Check a candidate ENGINE: spawn 'CMD ARGS' and speak the context protocol
    /// (docs/context-protocol.md); the suite is its WorkflowContext and builds every report
    /// from what it observed.
    #[arg(long, value_name = "'CMD ARGS'", conflicts_with_all = ["adapter", "host"])]
    engine: Option<String>,
    /// Check a candidate HOST: spawn 'CMD ARGS' and run our engine on its durable state over
    /// the context protocol; the suite SIGKILLs it at every crash point (RUN-3/RUN-4).
    #[arg(long, value_name = "'CMD ARGS'", conflicts_with = "adapter")]
    host: Option<String>,
    /// How long a candidate (--adapter, --engine or --host) may take to write its next
    /// line, in milliseconds; one that takes longer is killed and that case fails.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    timeout_ms: u64,
    /// How long --adapter or --engine may take to start and answer the hello, in
    /// milliseconds (a --host has --timeout-ms for its hello).
    #[arg(long, value_name = "MS", default_value_t = 30_000)]
    startup_timeout_ms: u64,
    /// Overall wall-clock bound of a run against --adapter, --engine or --host, in seconds
    /// (0: none); cases left when it passes fail at once, naming it.
    #[arg(long, value_name = "SECONDS", default_value_t = conformance::DEFAULT_DEADLINE.as_secs())]
    deadline: u64,
    /// For each failing case, also run the reference and print a field-level diff.
    #[arg(long)]
    diff_reference: bool,
    /// Also check N generated workflows + scenarios against the model (crash at every
    /// checkpoint, replay, retry counts, secrets) [default: 200 for the bundled suite,
    /// 0 with --cases, --clause or --case]. A failure writes the shrunk workflow and
    /// scenario to ./w6w-failure-SEED.{workflow,scenario}.json.
    #[arg(long, value_name = "N")]
    generate: Option<usize>,
    /// Seed of the first generated workflow; workflow i uses SEED + i [default: a fresh
    /// random seed every run, printed in the report, so generated workflows cannot be
    /// precomputed; --shard needs an explicit one, the same for every shard].
    #[arg(long, value_name = "SEED")]
    seed: Option<u64>,
    /// With --engine: the seed every session's run id nonce and clock are drawn from
    /// [default: a fresh random seed, printed on stderr]. The same seed gives the engine
    /// the same messages again (docs/context-protocol.md, "Anti-cheat").
    #[arg(long, value_name = "S", requires = "engine")]
    session_seed: Option<u64>,
    /// The candidate's capability profile, comma-separated (`*` everything, `-NAME` all
    /// but, or names such as `op.run,op.replay,strands`; see docs/capabilities.md): cases
    /// needing anything else are reported not applicable. [default: what the adapter's
    /// ack declares, else everything]
    #[arg(long, value_name = "LIST")]
    capabilities: Option<String>,
    /// Directory for generated failures' shrunk workflow and scenario files (created if
    /// needed) [default: a `w6w-sim-failures` folder in the system's temp directory].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only shard K of N (e.g. 2/4) of the selected cases and generated seeds, so a CI
    /// matrix of N jobs splits one campaign deterministically (a case by a stable hash of
    /// its id, generated workflow i when i mod N = K-1).
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Judge cases on N candidates at once: N processes of --adapter/--engine/--host (each
    /// command's `{job}` becomes 1..N, e.g. a --host store directory per process, which
    /// --host needs when N > 1), or N threads of the reference. The report is the one
    /// --jobs 1 prints, save its timings [default: 1].
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: u16,
    /// Run against a built-in mutant (a deliberately broken engine or host) by name.
    /// Only in the mutant build (`W6W_MUTANTS=1 cargo build`; docs/decisions.md D-100).
    #[cfg(w6w_mutants)]
    #[arg(long, value_name = "NAME", conflicts_with_all = ["adapter", "engine", "host"])]
    mutant: Option<String>,
    /// Run the cases against every built-in mutant and print the kill table (exit 0 iff
    /// every mutant is killed by a case naming its clause). Only in the mutant build.
    #[cfg(w6w_mutants)]
    #[arg(long, conflicts_with_all = ["adapter", "mutant", "json", "engine", "host"])]
    mutants: bool,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum AdapterCommand {
    /// Serve the built-in reference host over the adapter protocol on stdin/stdout.
    Serve,
}

pub(crate) fn main(command: ConformanceCommand) -> ExitCode {
    match command {
        ConformanceCommand::Conformance(args) => conformance(&args),
        ConformanceCommand::Adapter(AdapterCommand::Serve) => serve(),
    }
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("w6w-sim conformance: {message}");
    ExitCode::from(2)
}

fn conformance(args: &ConformanceArgs) -> ExitCode {
    let (suite, selection, shard, seed) = match selected_suite(args) {
        Ok(selected) => selected,
        Err(code) => return code,
    };
    #[cfg(w6w_mutants)]
    if args.mutants {
        let rows = mutants::kill_table(&suite, &selection, &AnyMutant::all());
        print!("{}", mutants::kill_table_text(&rows));
        let all_killed = rows.iter().all(|r| r.killed() && !r.killed_by.is_empty());
        return if all_killed {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        };
    }
    let filtered = args.cases.is_some() || !args.clauses.is_empty() || args.case_id.is_some();
    let generate = args.generate.unwrap_or(if filtered {
        0
    } else {
        conformance::generate::DEFAULT_GENERATE
    });
    #[cfg(w6w_mutants)]
    let mutant = args.mutant.as_deref();
    #[cfg(not(w6w_mutants))]
    let mutant: Option<&str> = None;
    let profile = match candidate_profile(args, mutant) {
        Ok(profile) => profile,
        Err(code) => return code,
    };
    let session_seed = session_seed(args);
    let make = |job: usize| -> Result<Box<dyn Adapter>, String> {
        let adapter = candidate(args, mutant, session_seed, job + 1)?;
        Ok(match &profile {
            Some(p) => Box::new(conformance::WithCapabilities::new(adapter, p.clone())),
            None => adapter,
        })
    };
    let mut progress = Progress::new();
    let plan = PoolPlan {
        jobs: usize::from(args.jobs),
        diff_reference: args.diff_reference,
        generate,
        seed,
        shard,
    };
    let mut report = match run_pool(&make, &suite, &selection, plan, &mut |done, total, id| {
        progress.tick(done, total, id)
    }) {
        Ok(report) => report,
        Err(e) => return usage_error(e),
    };
    progress.clear();
    report.candidate_args = candidate_args(args, mutant);
    report.shard = shard.map(|s| s.to_string());
    if generate == 0 && args.generate.is_none() && filtered {
        report.generated_note = Some(no_generated_note(args));
    }
    let mut status = if report.all_passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    };
    if !write_generated_failures(args, &mut report) {
        status = ExitCode::from(2);
    }
    write_reports(args, &report, status)
}

/// The suite, what the filters select (limited to `--shard`), the shard and the first
/// generated seed; `Err` is the usage error already printed.
fn selected_suite(
    args: &ConformanceArgs,
) -> Result<(Suite, Selection, Option<Shard>, u64), ExitCode> {
    // Without --cases: the suite embedded in this binary, from any directory.
    let loaded = match &args.cases {
        Some(dir) => Suite::load(dir),
        None => Suite::load_embedded(),
    };
    let dir = args
        .cases
        .clone()
        .unwrap_or_else(|| PathBuf::from("the bundled suite"));
    let suite = loaded.map_err(|e| {
        let n = e.problems.len();
        usage_error(format!(
            "cannot load the cases ({n} problem{}):\n{e}",
            if n == 1 { "" } else { "s" }
        ))
    })?;
    let selection = Selection::new(&args.clauses, args.case_id.as_deref()).map_err(usage_error)?;
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(usage_error)?;
    // D-215: a fresh seed per run, unless one is given; shards must share theirs.
    let seed = match (args.seed, shard) {
        (Some(seed), _) => seed,
        (None, Some(_)) => {
            return Err(usage_error(
                "--shard needs --seed S, the same for every shard (e.g. the CI run's number), so \
                 the shards draw one campaign's generated workflows",
            ));
        }
        (None, None) => conformance::generate::fresh_seed(),
    };
    if !suite.cases().any(|(_, c)| selection.selects(c)) {
        return Err(usage_error(format!(
            "no case in {} matches the selection (--clause / --case)",
            dir.display()
        )));
    }
    // An empty shard is fine (a matrix may have more jobs than a narrow selection has
    // cases); only an empty selection is a usage error.
    let selection = match shard {
        Some(s) => selection.with_shard(s),
        None => selection,
    };
    Ok((suite, selection, shard, seed))
}

/// The `--capabilities` profile, once the candidate flags are checked (a known mutant, a
/// `{job}` in `--host` with `--jobs`); `Err` is the usage error already printed.
fn candidate_profile(
    args: &ConformanceArgs,
    mutant: Option<&str>,
) -> Result<Option<conformance::Capabilities>, ExitCode> {
    let profile = match args.capabilities.as_deref().map(|list| {
        conformance::Capabilities::from_names(list.split(',').filter(|n| !n.trim().is_empty()))
    }) {
        None => None,
        Some(Ok(p)) => Some(p),
        Some(Err(e)) => return Err(usage_error(format!("--capabilities: {e}"))),
    };
    #[cfg(w6w_mutants)]
    if let Some(name) = mutant
        && AnyMutant::by_name(name).is_none()
    {
        let names: Vec<&str> = AnyMutant::all().into_iter().map(|m| m.name()).collect();
        return Err(usage_error(format!(
            "no mutant named {name:?}; known: {}",
            names.join(", ")
        )));
    }
    #[cfg(not(w6w_mutants))]
    let _ = mutant;
    let jobs = usize::from(args.jobs);
    if jobs > 1
        && let Some(host) = &args.host
        && !host.contains(JOB)
    {
        return Err(usage_error(format!(
            "--jobs {jobs} with --host: the {jobs} host processes would share one store; put \
             {JOB} in the command where each needs its own (e.g. --dir /tmp/store-{JOB}), it \
             becomes 1..{jobs}"
        )));
    }
    Ok(profile)
}

/// With `--engine`: one session seed for every process (D-215, D-222), printed once.
fn session_seed(args: &ConformanceArgs) -> Option<u64> {
    args.engine.as_ref().map(|_| {
        let seed = args
            .session_seed
            .unwrap_or_else(conformance::generate::fresh_seed);
        eprintln!(
            "w6w-sim conformance: session seed {seed} (--session-seed {seed} gives the engine the same run ids and clocks)"
        );
        seed
    })
}

/// The flags every printed repro command carries, so it names the candidate that was
/// tested.
fn candidate_args(args: &ConformanceArgs, mutant: Option<&str>) -> String {
    let mut candidate_args = String::new();
    for (flag, command) in [
        ("--adapter", &args.adapter),
        ("--engine", &args.engine),
        ("--host", &args.host),
    ] {
        if let Some(command) = command {
            candidate_args.push_str(&format!(" {flag} {}", shell_quote(command)));
        }
    }
    if let Some(name) = mutant {
        candidate_args.push_str(&format!(" --mutant {}", shell_quote(name)));
    }
    if let Some(list) = &args.capabilities {
        candidate_args.push_str(&format!(" --capabilities {}", shell_quote(list)));
    }
    if let Some(dir) = &args.cases {
        candidate_args.push_str(&format!(
            " --cases {}",
            shell_quote(&dir.display().to_string())
        ));
    }
    candidate_args
}

/// Why a filtered run checked no generated workflows, naming the filter.
fn no_generated_note(args: &ConformanceArgs) -> String {
    format!(
        "No generated workflows: {} selects cases only; add --generate N to also run N of them",
        if args.cases.is_some() {
            "--cases"
        } else if !args.clauses.is_empty() {
            "--clause"
        } else {
            "--case"
        }
    )
}

/// Every generated failure replays from one command: write its shrunk inputs to the
/// output directory (never the working directory unless asked to). `false` when a file
/// could not be written (said on stderr).
fn write_generated_failures(args: &ConformanceArgs, report: &mut SuiteReport) -> bool {
    if report.generated_failed() == 0 {
        return true;
    }
    let mut written = true;
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("w6w-sim-failures"));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("w6w-sim conformance: cannot create {}: {e}", dir.display());
        written = false;
    }
    for f in report.generated.iter().flat_map(|g| &g.failures) {
        let (w, s) = SuiteReport::failure_files(f.seed);
        for (name, doc) in [(&w, &f.workflow), (&s, &f.scenario)] {
            let path = dir.join(name);
            let text = serde_json::to_string_pretty(doc).unwrap_or_default();
            if let Err(e) = std::fs::write(&path, text + "\n") {
                eprintln!("w6w-sim conformance: cannot write {}: {e}", path.display());
                written = false;
            }
        }
    }
    report.failure_dir = Some(dir);
    written
}

/// Write `--junit` and `--html`, then print the report (text or `--json`): the exit
/// status, 2 when a file or stdout could not be written.
fn write_reports(args: &ConformanceArgs, report: &SuiteReport, mut status: ExitCode) -> ExitCode {
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, report.to_junit())
    {
        eprintln!(
            "w6w-sim conformance: cannot write the JUnit report {}: {e}",
            path.display()
        );
        status = ExitCode::from(2);
    }
    if let Some(path) = &args.html
        && let Err(e) = std::fs::write(path, conformance::html::suite_page(report))
    {
        eprintln!(
            "w6w-sim conformance: cannot write the HTML report {}: {e}",
            path.display()
        );
        status = ExitCode::from(2);
    }
    let text = if args.json {
        serde_json::to_string_pretty(&report.to_json()).map(|mut s| {
            s.push('\n');
            s
        })
    } else {
        Ok(report.to_text())
    };
    let printed = text
        .map_err(std::io::Error::other)
        .and_then(|t| std::io::stdout().lock().write_all(t.as_bytes()));
    if printed.is_err() {
        return ExitCode::from(2);
    }
    status
}

/// Quote a word for a POSIX shell (and for `--adapter`'s own splitter): bare when safe.
pub(crate) fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The placeholder a candidate command may hold for the job number (`--jobs`).
const JOB: &str = "{job}";

/// Candidate `job` (1-based) of the run: a process of --adapter/--engine/--host with
/// `{job}` in its command replaced, a mutant, or the reference.
fn candidate(
    args: &ConformanceArgs,
    mutant: Option<&str>,
    session_seed: Option<u64>,
    job: usize,
) -> Result<Box<dyn Adapter>, String> {
    use crate::context_protocol::{EngineOptions, EngineProcess, host_seam::HostProcess};
    let deadline = (args.deadline > 0).then(|| Duration::from_secs(args.deadline));
    let numbered = |command: &str| command.replace(JOB, &job.to_string());
    #[cfg(w6w_mutants)]
    if let Some(m) = mutant.and_then(AnyMutant::by_name) {
        return Ok(m.adapter());
    }
    let _ = mutant;
    if let Some(command) = &args.engine {
        let options = EngineOptions {
            line_timeout: Duration::from_millis(args.timeout_ms),
            startup_timeout: Duration::from_millis(args.startup_timeout_ms),
            deadline,
            session_seed,
            ..EngineOptions::default()
        };
        let engine =
            EngineProcess::start(&numbered(command), options).map_err(|e| e.to_string())?;
        return Ok(Box::new(engine));
    }
    if let Some(command) = &args.host {
        let host = HostProcess::start(&numbered(command), Duration::from_millis(args.timeout_ms))?;
        return Ok(Box::new(conformance::EngineOnHost::new(
            host.with_deadline(deadline),
        )));
    }
    if let Some(command) = &args.adapter {
        let options = ProcessOptions {
            request_timeout: Duration::from_millis(args.timeout_ms),
            startup_timeout: Duration::from_millis(args.startup_timeout_ms),
            deadline,
            ..ProcessOptions::default()
        };
        return ProcessAdapter::start(&numbered(command), options)
            .map(|a| Box::new(a) as Box<dyn Adapter>)
            .map_err(|e| e.to_string());
    }
    Ok(Box::new(Reference))
}

/// A one-line progress indicator on stderr, only when stderr is a terminal.
struct Progress {
    on: bool,
    last: Option<std::time::Instant>,
}

impl Progress {
    fn new() -> Self {
        Progress {
            on: std::io::stderr().is_terminal(),
            last: None,
        }
    }

    fn tick(&mut self, done: usize, total: usize, id: &str) {
        if !self.on {
            return;
        }
        // Redraw at most every 50 ms: a fast suite must not be slowed by its own progress.
        #[allow(clippy::disallowed_methods)] // real time: throttling terminal output
        let now = std::time::Instant::now();
        if done < total
            && self
                .last
                .is_some_and(|t| now.duration_since(t) < Duration::from_millis(50))
        {
            return;
        }
        self.last = Some(now);
        let id: String = id.chars().take(60).collect();
        eprint!("\r\x1b[2K[{done}/{total}] {id}");
    }

    fn clear(&self) {
        if self.on {
            eprint!("\r\x1b[2K");
        }
    }
}

fn serve() -> ExitCode {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    match conformance::protocol::serve(&mut stdin.lock(), &mut stdout.lock(), &mut Reference) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("w6w-sim adapter serve: {e}");
            ExitCode::from(2)
        }
    }
}
