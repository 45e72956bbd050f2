//! `w6w-sim inspect FILE`: what a journal, a report or a RunState holds (issue 41 item 3).
//!
//! Invariant: parsing and printing only; one call into [`crate::sim::inspect`]. Read-only:
//! no lock taken, nothing written, nothing repaired (D-270). Exit codes: 0 when the file
//! was read; 1 when it is JSON but not a run; 2 for a damaged or unreadable file (with the
//! file and byte offset, as `resume` refuses it, D-61), a key problem or an I/O error.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum InspectCommand {
    /// Print what a run file holds — a store's journal (`DIR/<runId>.journal`), a report
    /// or a RunState: the folded run, its checkpoints and their virtual times, the
    /// trace-seq ceiling and any torn tail. Read-only: never locks, writes or repairs.
    Inspect(InspectArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct InspectArgs {
    /// The file: `DIR/<runId>.journal`, a `run` report, a store's `DIR/<runId>.json` or a
    /// RunState.
    file: PathBuf,
    /// Print the stable JSON shape `w6w-sim/inspect-1` instead of text.
    #[arg(long)]
    json: bool,
    /// The sealing key the journal was written with, to verify its records (D-251).
    /// Default: the W6W_SEALING_KEY environment variable; neither: an authenticated
    /// journal is read UNVERIFIED and the output says so (D-271). The key never unseals
    /// anything here.
    #[arg(long, value_name = "PATH")]
    key_file: Option<PathBuf>,
    /// Also write a picture of what the file holds to FILE: one self-contained HTML page,
    /// redacted as the JSON is.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

struct Fail(String, u8);

/// D-271: `--key-file`, else `W6W_SEALING_KEY`, checked as `run` checks it (D-250; no
/// scenario secrets to compare with here). An error names the source, never the material.
fn key(a: &InspectArgs) -> Result<Option<crate::host::SealingKey>, Fail> {
    use crate::host::{SEALING_KEY_ENV, SealingKey};
    let none = serde_json::Map::new();
    match &a.key_file {
        Some(path) => super::sim::read_key_file(path)
            .and_then(|material| SealingKey::from_material(&material, &none))
            .map(Some)
            .map_err(|e| {
                Fail(
                    format!("--key-file {}: {e} [{}]", path.display(), e.code()),
                    2,
                )
            }),
        None => match std::env::var_os(SEALING_KEY_ENV) {
            Some(v) if !v.is_empty() => SealingKey::from_material(v.as_encoded_bytes(), &none)
                .map(Some)
                .map_err(|e| Fail(format!("{SEALING_KEY_ENV}: {e} [{}]", e.code()), 2)),
            _ => Ok(None),
        },
    }
}

fn run(a: InspectArgs) -> Result<(), Fail> {
    let key = key(&a)?;
    let inspection = crate::sim::inspect::inspect(&a.file, key.as_ref())
        .map_err(|e| Fail(format!("{e} [{}]", e.code()), e.exit_code()))?;
    let text = if a.json {
        let mut t = serde_json::to_string_pretty(&inspection.to_json())
            .map_err(|e| Fail(format!("cannot serialize: {e}"), 2))?;
        t.push('\n');
        t
    } else {
        inspection.to_text()
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Fail(format!("cannot write the output: {e}"), 2))?;
    match &a.html {
        // Read-only (D-270): the picture never replaces the file it shows.
        Some(path) if same_file(path, &a.file) => Err(Fail(
            format!(
                "--html {}: that is the inspected file; inspect never writes it",
                path.display()
            ),
            2,
        )),
        Some(path) => std::fs::write(path, inspection.to_html()).map_err(|e| {
            Fail(
                format!("cannot write the HTML file {}: {e}", path.display()),
                2,
            )
        }),
        None => Ok(()),
    }
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Run `inspect`.
pub(crate) fn main(cmd: InspectCommand) -> ExitCode {
    let InspectCommand::Inspect(a) = cmd;
    match run(a) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(message, code)) => {
            eprintln!("w6w-sim inspect: {message}");
            ExitCode::from(code)
        }
    }
}
