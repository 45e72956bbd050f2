//! `w6w-sim engine serve`: our engine behind the context protocol
//! (docs/context-protocol.md). Argument parsing only.

use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum ContextCommand {
    /// Speak the context protocol as an engine (docs/context-protocol.md).
    #[command(subcommand)]
    Engine(EngineCommand),
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum EngineCommand {
    /// Serve the reference engine on stdin/stdout: the suite is its WorkflowContext.
    Serve,
}

pub(crate) fn main(command: ContextCommand) -> ExitCode {
    match command {
        ContextCommand::Engine(EngineCommand::Serve) => {
            let stdin = std::io::stdin();
            let stdout = std::io::stdout();
            match crate::context_protocol::serve::serve_engine(
                &mut stdin.lock(),
                &mut stdout.lock(),
            ) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("w6w-sim engine serve: {e}");
                    ExitCode::from(2)
                }
            }
        }
    }
}
