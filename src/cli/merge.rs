//! `w6w-sim merge`: the JSON reports of a sharded campaign (`conformance --shard K/N
//! --json`) joined into the one report an unsharded run prints. Argument parsing and
//! printing only; the merge is `conformance::merge`.
//!
//! Exit codes: 0 every merged case and generated workflow passed, 1 some failed, 2 a usage
//! error, a file that cannot be read or is not JSON, or reports that are not the shards
//! 1..N of one campaign (`not_a_report`, `not_one_campaign`).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::conformance::merge::merge;

#[derive(Debug, clap::Subcommand)]
pub(crate) enum MergeCommand {
    /// Join the `--json` reports of shards 1..N of one conformance campaign into one
    /// report (text, or JSON with --json; JUnit with --junit FILE).
    Merge(MergeArgs),
}

#[derive(Debug, clap::Args)]
pub(crate) struct MergeArgs {
    /// The shards' reports (`w6w-sim conformance --shard K/N --json > FILE`), all N of them.
    #[arg(value_name = "REPORT.json", required = true)]
    reports: Vec<PathBuf>,
    /// Print the merged report as JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also write the merged report as JUnit XML to FILE.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

pub(crate) fn main(cmd: MergeCommand) -> ExitCode {
    let MergeCommand::Merge(args) = cmd;
    let mut parts = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        let name = crate::cli::input::display_name(path);
        match crate::cli::input::load_json(path) {
            Ok(v) => parts.push((name, v)),
            Err(e) => {
                eprintln!("w6w-sim merge: {}", e.describe(&name));
                return ExitCode::from(2);
            }
        }
    }
    let report = match merge(&parts) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("w6w-sim merge: {}: {e}", e.code());
            return ExitCode::from(2);
        }
    };
    if let Some(file) = &args.junit
        && let Err(e) = std::fs::write(file, report.to_junit())
    {
        eprintln!("w6w-sim merge: cannot write {}: {e}", file.display());
        return ExitCode::from(2);
    }
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_text());
    }
    if report.all_passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
