//! The command-line interface: argument parsing and printing only.
//!
//! Invariant: every command is a thin call into the library; exit codes are 0 (success),
//! 1 (the input is invalid), 2 (usage, I/O or JSON syntax error).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    /// JSON-lines service on stdin/stdout: one response line per request line.
    Eval,
    #[command(flatten)]
    Sim(sim::SimCommand),
}

/// Entry point of the `w6w-sim` binary.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Eval => eval(),
        Command::Sim(cmd) => sim::main(cmd),
    }
}

fn eval() -> ExitCode {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else {
            eprintln!("w6w-sim eval: cannot read stdin (not UTF-8?)");
            return ExitCode::from(2);
        };
        if line.trim().is_empty() {
            continue;
        }
        let response = crate::service::handle_line(&line);
        if writeln!(stdout, "{response}")
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return ExitCode::from(2);
        }
    }
    ExitCode::SUCCESS
}
