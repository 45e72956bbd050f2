//! The command-line interface: argument parsing and printing only.
//!
//! Invariant: every command is a thin call into the library; exit codes are 0 (success),
//! 1 (the input is invalid), 2 (usage, I/O or JSON syntax error).
//!
//! Adding a command family: put it in its own file as a `#[derive(Subcommand)]` enum with
//! a `run(cmd) -> ExitCode` function, then add one `mod` line, one `#[command(flatten)]`
//! variant to [`Command`] and one arm to the `match` in [`main`] — the way `model` does.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod conformance;
mod context;
mod dialect;
mod input;
mod inspect;
mod matrix;
mod merge;
mod model;
mod sim;

#[derive(Debug, Parser)]
#[command(
    name = "w6w-sim",
    version,
    about = "Reference engine, simulated host and conformance suite for w6w workflows"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// `validate`, `plan`: save-time checks and the execution order of workflow documents.
    #[command(flatten)]
    Model(model::ModelCommand),
    /// JSON-lines service on stdin/stdout: one response line per request line.
    Eval,
    #[command(flatten)]
    Conf(conformance::ConformanceCommand),
    #[command(flatten)]
    Sim(sim::SimCommand),
    /// `inspect`: what a journal, a report or a RunState holds, read-only (issue 41).
    #[command(flatten)]
    Inspect(inspect::InspectCommand),
    #[command(flatten)]
    Matrix(matrix::MatrixCommand),
    #[command(flatten)]
    Merge(merge::MergeCommand),
    #[command(flatten)]
    Context(context::ContextCommand),
    /// `import`: WOML / YAML documents into w6w (issue 10).
    #[command(flatten)]
    Dialect(dialect::DialectCommand),
}

/// Entry point of the `w6w-sim` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Model(cmd) => model::run(cmd),
        Command::Eval => eval(),
        Command::Conf(c) => conformance::main(c),
        Command::Sim(cmd) => sim::main(cmd),
        Command::Inspect(cmd) => inspect::main(cmd),
        Command::Matrix(cmd) => matrix::main(cmd),
        Command::Merge(cmd) => merge::main(cmd),
        Command::Context(cmd) => context::main(cmd),
        Command::Dialect(cmd) => dialect::main(cmd),
    }
}

fn eval() -> ExitCode {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    let mut stdin = stdin.lock();
    loop {
        let line =
            match crate::process::read_line(&mut stdin, crate::service::MAX_REQUEST_LINE_BYTES) {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => {
                    eprintln!("w6w-sim eval: cannot read stdin: {e}");
                    return ExitCode::from(2);
                }
            };
        let response = match line {
            // D-214: every line is answered, a blank one too (`bad_request`), so a client
            // that counts its lines never waits for an answer that does not come.
            crate::process::Line::Complete(bytes) => crate::service::handle_bytes(&bytes),
            crate::process::Line::TooLong { bytes } => {
                serde_json::to_string(&crate::service::bad_request(format!(
                    "request line of {bytes} bytes exceeds the {}-byte limit",
                    crate::service::MAX_REQUEST_LINE_BYTES
                )))
                .unwrap_or_default()
            }
        };
        if writeln!(stdout, "{response}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
