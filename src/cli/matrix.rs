//! `w6w-sim matrix`: the suite against several candidates, one per-clause × candidate
//! table in Markdown and JSON. Argument parsing and printing only.
//!
//! Exit codes: 0 the matrix was written (whatever the candidates scored: it is a report,
//! not a gate — gate with `w6w-sim conformance`), 2 usage errors, a candidate that cannot
//! start, or an output file that cannot be written.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use crate::conformance::generate::run_generated;
#[cfg(w6w_mutants)]
use crate::conformance::mutants::AnyMutant;
use crate::conformance::{
    self, Adapter, CandidateKind, CandidateSpec, Capabilities, EngineOnHost, EngineOnSim, Matrix,
    ProcessAdapter, ProcessOptions, Reference, ReferenceEngineAdapter, Selection, Suite,
    WithCapabilities,
};
use crate::context_protocol::{EngineOptions, EngineProcess, host_seam::HostProcess};

#[derive(Debug, clap::Subcommand)]
pub(crate) enum MatrixCommand {
    /// Run the suite against several candidates and write a per-clause × candidate table
    /// (Markdown on stdout or --markdown FILE, JSON with --json FILE).
    Matrix(Box<MatrixArgs>),
}

#[derive(Debug, clap::Args)]
pub(crate) struct MatrixArgs {
    /// A column: NAME=KIND where KIND is `reference`, `reference-engine`,
    /// `adapter:'CMD ARGS'`, `engine:'CMD ARGS'` (context protocol), `host:'CMD ARGS'`
    /// or `mutant:NAME`; repeatable, in column order.
    #[arg(long = "candidate", value_name = "NAME=KIND", required = true)]
    candidates: Vec<String>,
    /// A candidate's capability profile, NAME=LIST (LIST as for `conformance
    /// --capabilities`); repeatable.
    #[arg(long = "capabilities", value_name = "NAME=LIST")]
    capabilities: Vec<String>,
    /// Directory of case files [default: the suite embedded in w6w-sim].
    #[arg(long, value_name = "DIR")]
    cases: Option<PathBuf>,
    /// Only cases naming this clause or family; repeatable.
    #[arg(long = "clause", value_name = "CLAUSE")]
    clauses: Vec<String>,
    /// Only cases whose id contains TEXT.
    #[arg(long = "case", value_name = "TEXT")]
    case_id: Option<String>,
    /// Also check N generated workflows per candidate (counted in its totals, not in the
    /// clause rows).
    #[arg(long, value_name = "N", default_value_t = 0)]
    generate: usize,
    /// Write the Markdown table to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Also write the matrix as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the matrix to FILE as one self-contained HTML page, with each failure's
    /// messages and the command that runs it again.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Per-request timeout for adapter candidates, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 10_000)]
    timeout_ms: u64,
}

fn usage_error(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("w6w-sim matrix: {message}");
    ExitCode::from(2)
}

pub(crate) fn main(command: MatrixCommand) -> ExitCode {
    let MatrixCommand::Matrix(args) = command;
    let specs = match candidate_specs(&args) {
        Ok(specs) => specs,
        Err(code) => return code,
    };
    let loaded = match &args.cases {
        Some(dir) => Suite::load(dir),
        None => Suite::load_embedded(),
    };
    let suite = match loaded {
        Ok(s) => s,
        Err(e) => return usage_error(format!("cannot load the cases:\n{e}")),
    };
    let selection = match Selection::new(&args.clauses, args.case_id.as_deref()) {
        Ok(s) => s,
        Err(e) => return usage_error(e),
    };
    let process = ProcessOptions {
        request_timeout: Duration::from_millis(args.timeout_ms),
        ..ProcessOptions::default()
    };
    let mut columns = Vec::new();
    for spec in &specs {
        let mut adapter = match open(spec, &process) {
            Ok(a) => a,
            Err(e) => return usage_error(format!("candidate {:?}: {e}", spec.name)),
        };
        let report = column(&args, spec, adapter.as_mut(), &suite, &selection);
        columns.push((spec.name.clone(), report));
    }
    write_matrix(&args, &specs, &Matrix { columns })
}

/// The candidates named on the command line, each with its `--capabilities` profile;
/// `Err` is the usage error already printed.
fn candidate_specs(args: &MatrixArgs) -> Result<Vec<CandidateSpec>, ExitCode> {
    let mut specs = Vec::new();
    for text in &args.candidates {
        match CandidateSpec::parse(text) {
            Ok(s) if specs.iter().any(|o: &CandidateSpec| o.name == s.name) => {
                return Err(usage_error(format!(
                    "two candidates are named {:?}",
                    s.name
                )));
            }
            Ok(s) => specs.push(s),
            Err(e) => return Err(usage_error(e)),
        }
    }
    for text in &args.capabilities {
        let Some((name, list)) = text.split_once('=') else {
            return Err(usage_error(format!(
                "--capabilities {text:?}: expected NAME=LIST"
            )));
        };
        let Some(spec) = specs.iter_mut().find(|s| s.name == name.trim()) else {
            return Err(usage_error(format!(
                "--capabilities {text:?}: no candidate named {name:?}"
            )));
        };
        match Capabilities::from_names(list.split(',').filter(|n| !n.trim().is_empty())) {
            Ok(p) => spec.capabilities = Some(p),
            Err(e) => return Err(usage_error(format!("--capabilities {text:?}: {e}"))),
        }
    }
    Ok(specs)
}

/// One candidate's column: the selected cases, then any generated workflows.
fn column(
    args: &MatrixArgs,
    spec: &CandidateSpec,
    adapter: &mut dyn conformance::Adapter,
    suite: &Suite,
    selection: &Selection,
) -> conformance::SuiteReport {
    let mut report = conformance::run_suite(adapter, suite, selection, false, &mut |_, _, _| {});
    if args.generate > 0 {
        report.add_generated(run_generated(
            adapter,
            args.generate,
            conformance::generate::DEFAULT_SEED,
        ));
    }
    eprintln!(
        "w6w-sim matrix: {}: {} passed, {} failed, {} not applicable",
        spec.name,
        report.passed(),
        report.failed(),
        report.not_applicable()
    );
    report
}

/// Print the matrix as Markdown (or write it to `--markdown`), and write `--json` and
/// `--html`: the exit status, 2 when something could not be written.
fn write_matrix(args: &MatrixArgs, specs: &[CandidateSpec], matrix: &Matrix) -> ExitCode {
    let markdown = matrix.to_markdown();
    let mut status = ExitCode::SUCCESS;
    match &args.markdown {
        Some(path) => {
            if let Err(e) = std::fs::write(path, &markdown) {
                eprintln!("w6w-sim matrix: cannot write {}: {e}", path.display());
                status = ExitCode::from(2);
            }
        }
        None => {
            if std::io::stdout()
                .lock()
                .write_all(markdown.as_bytes())
                .is_err()
            {
                return ExitCode::from(2);
            }
        }
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&matrix.to_json()).unwrap_or_default() + "\n";
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("w6w-sim matrix: cannot write {}: {e}", path.display());
            status = ExitCode::from(2);
        }
    }
    if let Some(path) = &args.html {
        let reruns: Vec<_> = specs.iter().map(|s| rerun(args, &s.name)).collect();
        let page = conformance::html::matrix_page("w6w conformance matrix", matrix, &reruns);
        if let Err(e) = std::fs::write(path, page) {
            eprintln!("w6w-sim matrix: cannot write {}: {e}", path.display());
            status = ExitCode::from(2);
        }
    }
    status
}

/// The command that runs one column's cases again: `w6w-sim matrix` with that candidate
/// alone (its profile and the case directory too); generated seeds have no such command.
fn rerun(args: &MatrixArgs, name: &str) -> conformance::html::Rerun {
    use super::conformance::shell_quote;
    let named = |text: &&String| text.split_once('=').is_some_and(|(n, _)| n.trim() == name);
    let mut case = String::from("w6w-sim matrix");
    for text in args.candidates.iter().filter(named) {
        case.push_str(&format!(" --candidate {}", shell_quote(text)));
    }
    for text in args.capabilities.iter().filter(named) {
        case.push_str(&format!(" --capabilities {}", shell_quote(text)));
    }
    if let Some(dir) = &args.cases {
        case.push_str(&format!(
            " --cases {}",
            shell_quote(&dir.display().to_string())
        ));
    }
    conformance::html::Rerun { case, seed: None }
}

/// A candidate as an adapter the suite can run: the in-process kinds, or a process behind
/// the adapter protocol or the context protocol. It lives here, the one layer above both
/// the suite and the process seams (ARCHITECTURE.md#layers).
fn open(spec: &CandidateSpec, process: &ProcessOptions) -> Result<Box<dyn Adapter>, String> {
    let adapter: Box<dyn Adapter> = match &spec.kind {
        CandidateKind::Reference => Box::new(Reference),
        CandidateKind::ReferenceEngine => Box::new(EngineOnSim::new(ReferenceEngineAdapter)),
        CandidateKind::Adapter(cmd) => {
            Box::new(ProcessAdapter::start(cmd, process.clone()).map_err(|e| e.to_string())?)
        }
        CandidateKind::Engine(cmd) => {
            let options = EngineOptions {
                line_timeout: process.request_timeout,
                startup_timeout: process.startup_timeout,
                deadline: process.deadline,
                ..EngineOptions::default()
            };
            Box::new(EngineProcess::start(cmd, options).map_err(|e| e.to_string())?)
        }
        CandidateKind::Host(cmd) => Box::new(EngineOnHost::new(
            HostProcess::start(cmd, process.request_timeout)?.with_deadline(process.deadline),
        )),
        #[cfg(w6w_mutants)]
        CandidateKind::Mutant(name) => AnyMutant::by_name(name)
            .map(AnyMutant::adapter)
            .ok_or_else(|| format!("no mutant named {name:?}"))?,
    };
    Ok(match &spec.capabilities {
        Some(p) => Box::new(WithCapabilities::new(adapter, p.clone())),
        None => adapter,
    })
}
