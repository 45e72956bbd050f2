//! `w6w-sim validate` and `w6w-sim plan`: thin wrappers over `validate::validate_save` and
//! `plan::plan`.
//!
//! Human output is for people (file, path, code, what is wrong, how to fix it); `--json`
//! is for machines (one object per file per line). Exit codes: 0 all valid, 1 any
//! invalid, 2 any file unreadable or not JSON (that outranks "invalid": the check did not
//! run to completion).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::input::{LoadError, display_name, load_json};
use crate::model::{ValidationCode, ValidationError, errors_to_json};
use crate::validate::{ValidateOptions, validate_save};

#[derive(Debug, Subcommand)]
pub(crate) enum ModelCommand {
    /// Check workflow documents against the save-time rules of the spec, reporting every
    /// problem with a JSON Pointer. Exit 0: all valid; 1: any invalid; 2: a file could not
    /// be read or is not JSON.
    Validate(ValidateArgs),
    /// Print a workflow's execution order as a JSON array of step ids. Exit 1 (with the
    /// problems on stderr) when the workflow is invalid.
    Plan(PlanArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ValidateArgs {
    /// Print one JSON object per file, `{"file", "ok", "errors"}`, instead of a report.
    #[arg(long)]
    json: bool,
    /// Also require runnability: at least one step, every step's `uses.app` and
    /// `uses.action` set (PLAN-9). Without it, incomplete drafts are valid. For WOML and
    /// YAML: also refuse, as `unsupported_construct`, what the simulator cannot run
    /// (without it the document is judged against its text alone).
    #[arg(long)]
    runnable: bool,
    /// The stored document the files would replace: a `key` it already has is never
    /// re-checked against the key grammar (MODEL-5). Without it, each file is a first save.
    #[arg(long, value_name = "FILE")]
    previous: Option<PathBuf>,
    /// Force the dialect of every file (`w6w`, `woml`, `yaml`); by default `.xml`/`.woml`
    /// are WOML, `.yaml`/`.yml` YAML, anything else w6w JSON.
    #[arg(long, value_parser = super::dialect::parse_dialect)]
    dialect: Option<crate::dialect::Dialect>,
    /// Action input schemas for YAML documents (YML-3).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    /// Workflow documents (JSON, WOML or YAML). `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Also require runnability (PLAN-9), as `validate --runnable` does.
    #[arg(long)]
    runnable: bool,
    /// The workflow document (JSON). `-` reads standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
}

pub(crate) fn run(cmd: ModelCommand) -> ExitCode {
    match cmd {
        ModelCommand::Validate(args) => validate(&args),
        ModelCommand::Plan(args) => plan(&args),
    }
}

fn validate(args: &ValidateArgs) -> ExitCode {
    use super::dialect::Checked;
    let previous = match &args.previous {
        None => None,
        Some(path) => match load_previous(path) {
            Some(doc) => Some(doc),
            None => return ExitCode::from(2),
        },
    };
    let opts = ValidateOptions {
        runnable: args.runnable,
    };
    let manifest = match super::dialect::load_manifest(args.manifest.as_deref()) {
        Ok(m) => m,
        Err((m, code)) => {
            eprintln!("w6w-sim validate: {m}");
            return ExitCode::from(code);
        }
    };
    let mut stdout = std::io::stdout().lock();
    let (mut valid, mut invalid, mut unreadable) = (0usize, 0usize, 0usize);
    for path in &args.files {
        // Issue 10: WOML and YAML documents go to their front-end.
        let dialect = args
            .dialect
            .unwrap_or_else(|| crate::dialect::Dialect::from_path(path));
        let checked = if dialect == crate::dialect::Dialect::W6w {
            validate_w6w(path, previous.as_ref(), opts, args.json)
        } else {
            let check = dialect_check(args.runnable);
            super::dialect::validate_file(path, dialect, manifest.as_ref(), args.json, check)
        };
        let line = match checked {
            Checked::Valid(l) => {
                valid += 1;
                l
            }
            Checked::Invalid(l) => {
                invalid += 1;
                l
            }
            Checked::Unreadable(l) if args.json => {
                unreadable += 1;
                l
            }
            Checked::Unreadable(l) => {
                unreadable += 1;
                eprintln!("w6w-sim validate: {l}");
                continue;
            }
        };
        if writeln!(stdout, "{line}").is_err() {
            return ExitCode::from(2);
        }
    }
    if !args.json && args.files.len() > 1 {
        let summary = summary(valid, invalid, unreadable, args.files.len());
        if writeln!(stdout, "{summary}").is_err() {
            return ExitCode::from(2);
        }
    }
    if unreadable > 0 {
        ExitCode::from(2)
    } else if invalid > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The `--previous` document, or `None` once the reason it cannot be read is printed.
fn load_previous(path: &std::path::Path) -> Option<Value> {
    load_json(path)
        .map_err(|e| {
            let e = e.describe(&display_name(path));
            eprintln!("w6w-sim validate: --previous {e}");
        })
        .ok()
}

/// What `validate` checks in a WOML or YAML document: `--runnable` adds runnability.
fn dialect_check(runnable: bool) -> crate::dialect::Check {
    if runnable {
        crate::dialect::Check::Runnable
    } else {
        crate::dialect::Check::Document
    }
}

/// The closing line of a many-file `validate`: `V of N files valid, I invalid, U could
/// not be checked`.
fn summary(valid: usize, invalid: usize, unreadable: usize, total: usize) -> String {
    let mut summary = format!("{valid} of {total} files valid");
    if invalid > 0 {
        summary.push_str(&format!(", {invalid} invalid"));
    }
    if unreadable > 0 {
        summary.push_str(&format!(", {unreadable} could not be checked"));
    }
    summary
}

/// One w6w document checked, as the line `validate` prints for it (an unreadable one's
/// line goes to stderr without `--json`).
fn validate_w6w(
    path: &std::path::Path,
    previous: Option<&Value>,
    opts: ValidateOptions,
    as_json: bool,
) -> super::dialect::Checked {
    use super::dialect::Checked;
    let file = display_name(path);
    match load_json(path).map(|doc| validate_save(&doc, previous, opts)) {
        Ok(Ok(_)) if as_json => {
            Checked::Valid(json!({"file": file, "ok": true, "errors": []}).to_string())
        }
        Ok(Ok(_)) => Checked::Valid(format!("{file}: valid")),
        Ok(Err(errors)) if as_json => Checked::Invalid(
            json!({"file": file, "ok": false, "errors": errors_to_json(&errors)}).to_string(),
        ),
        Ok(Err(errors)) => Checked::Invalid(human_report(&file, &errors)),
        Err(load) if as_json => Checked::Unreadable(load_failure_json(&file, &load).to_string()),
        Err(load) => Checked::Unreadable(load.describe(&file)),
    }
}

fn load_failure_json(file: &str, load: &LoadError) -> Value {
    json!({"file": file, "ok": false, "errors": [], "error": load.to_json()})
}

fn plan(args: &PlanArgs) -> ExitCode {
    let file = display_name(&args.file);
    let doc = match load_json(&args.file) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("w6w-sim plan: {}", e.describe(&file));
            return ExitCode::from(2);
        }
    };
    let opts = ValidateOptions {
        runnable: args.runnable,
    };
    let planned = validate_save(&doc, None, opts)
        .and_then(|w| crate::plan::plan(&w).map(|p| json!(p.ids(&w))));
    match planned {
        Ok(ids) => {
            if writeln!(std::io::stdout().lock(), "{ids}").is_err() {
                return ExitCode::from(2);
            }
            ExitCode::SUCCESS
        }
        Err(errors) => {
            eprintln!("{}", human_report(&file, &errors));
            ExitCode::from(1)
        }
    }
}

/// The report a person reads: one block per problem with the path, the code, what is
/// wrong and how to fix it.
fn human_report(file: &str, errors: &[ValidationError]) -> String {
    let count = match errors.len() {
        1 => "1 problem".to_owned(),
        n => format!("{n} problems"),
    };
    let mut out = format!("{file}: invalid ({count})");
    for e in errors {
        let path = if e.path.is_empty() {
            "(the document)"
        } else {
            &e.path
        };
        out.push_str(&format!(
            "\n  {path}  [{}]\n    {}\n    fix: {}",
            e.code,
            e.message,
            hint(e)
        ));
    }
    out
}

/// How to fix a problem, in one sentence.
fn hint(e: &ValidationError) -> &'static str {
    match e.code {
        ValidationCode::DuplicateStepId => {
            "rename one of the steps (and the edges and steps.<id> references that mean it)"
        }
        ValidationCode::DanglingEdge => {
            "point the edge at an existing step id, or add the step it names"
        }
        ValidationCode::Cycle => {
            "remove or reverse one edge of the cycle; a workflow's edges must form a DAG"
        }
        ValidationCode::InvalidEdgeWhen => {
            "set when to \"success\" or \"error\", or remove it for a success edge"
        }
        ValidationCode::DottedStepId => {
            "rename the step without '.', e.g. with '-' or '_', and update references to it"
        }
        ValidationCode::InvalidRetryPolicy => {
            if e.path.ends_with("/maxAttempts") {
                "set maxAttempts to a whole number >= 1 (1 means a single attempt)"
            } else if e.path.ends_with("/delayMs") {
                "set delayMs to a number of milliseconds >= 0, or remove it (default 0)"
            } else if e.path.ends_with("/backoff") {
                "set backoff to \"fixed\" or \"exponential\", or remove it (default \"fixed\")"
            } else {
                "write retry as an object such as {\"maxAttempts\": 3}, or null for no retry"
            }
        }
        ValidationCode::InvalidKey => {
            "choose a key such as \"daily-report\": 3-39 characters, a-z first, then a-z, 0-9 or single '-'"
        }
        ValidationCode::NoSteps => "add at least one step before running the workflow",
        ValidationCode::InvalidType => "change the value to the type the message names",
        ValidationCode::MissingField => "add the field the message names",
        ValidationCode::InvalidValue => "use one of the values the message names",
        ValidationCode::NestingTooDeep => "flatten the value; deeper nesting is refused",
        ValidationCode::SubBlockEdge
        | ValidationCode::UnknownControl
        | ValidationCode::UnsupportedWait
        | ValidationCode::UnsupportedStrategy
        | ValidationCode::ParamInvalid => "see the message; the step's control is not plannable",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_in_a_report_has_path_code_message_and_fix() {
        let errors = vec![
            ValidationError::new(ValidationCode::Cycle, "/edges", "the edges form a cycle"),
            ValidationError::new(ValidationCode::InvalidType, "", "not an object"),
        ];
        let report = human_report("w.json", &errors);
        assert!(report.starts_with("w.json: invalid (2 problems)"));
        assert!(report.contains("/edges  [cycle]\n    the edges form a cycle\n    fix: remove"));
        assert!(report.contains("(the document)  [invalid_type]"));
    }

    #[test]
    fn retry_hints_follow_the_field() {
        let at = |p: &str| {
            hint(&ValidationError::new(
                ValidationCode::InvalidRetryPolicy,
                p,
                "m",
            ))
        };
        assert!(at("/retry/maxAttempts").contains("maxAttempts"));
        assert!(at("/steps/0/retry/delayMs").contains("delayMs"));
        assert!(at("/steps/0/retry/backoff").contains("backoff"));
        assert!(at("/retry").contains("null for no retry"));
    }
}
