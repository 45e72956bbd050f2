//! `w6w-sim inspect FILE`: what a run file holds, read-only (issue 41 item 3; D-270…D-274).
//!
//! Owns: telling a journal (`DIR/<runId>.journal`), a report (`run`'s JSON), a store's
//! legacy run file (`w6w-sim/run-1`) and a bare RunState apart, and the two views of what
//! they hold — a text summary and the stable `--json` shape `w6w-sim/inspect-1`.
//!
//! Invariant: nothing here writes, locks or repairs. A journal is read through
//! [`super::journal::inspect_journal`] — the store's own fold, never a second parser — so a
//! file the store would refuse is refused here with the same file, offset and code, and a
//! torn tail is shown (where it starts, how long it is), never cut. It deliberately does
//! not know secrets or keys beyond verifying tags: it shows what the file holds, which the
//! engine redacted and sealed before writing (SEC-1), exactly as a report shows it; it
//! never opens an envelope.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::journal::{self, Authentication, Inspected, JournalError, RecordKind, RecordSeen};
use super::world::EPOCH_MS;
use crate::host::SealingKey;
use crate::model::RunState;

/// The `--json` format tag (D-272).
pub(crate) const INSPECT_FORMAT: &str = "w6w-sim/inspect-1";

/// Why a file could not be inspected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InspectError {
    /// The journal reader refused the file (damage with its offset, a key problem, …).
    #[error("{0}")]
    Journal(#[from] JournalError),
    #[error("{}: {message}", path.display())]
    Io { path: PathBuf, message: String },
    /// Not a journal and not JSON.
    #[error("{}: not a journal, a report or a RunState: {message}", path.display())]
    Unrecognized { path: PathBuf, message: String },
    /// JSON, but neither a report, a store's run file nor a RunState.
    #[error("{}: JSON, but not a report, a run file or a RunState: {message}", path.display())]
    NotARun { path: PathBuf, message: String },
}

impl InspectError {
    /// Stable machine code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            InspectError::Journal(e) => e.code(),
            InspectError::Io { .. } => "store_io",
            InspectError::Unrecognized { .. } => "inspect_unrecognized",
            InspectError::NotARun { .. } => "inspect_not_a_run",
        }
    }

    /// The CLI's exit code: 1 for JSON that is not a run (invalid input), 2 for damage,
    /// I/O and unreadable files — as `resume` exits on a damaged journal (D-61).
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            InspectError::NotARun { .. } => 1,
            _ => 2,
        }
    }
}

/// What kind of file was inspected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    Journal,
    Report,
    LegacyRunFile,
    RunState,
}

impl FileKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            FileKind::Journal => "journal",
            FileKind::Report => "report",
            FileKind::LegacyRunFile => "legacyRunFile",
            FileKind::RunState => "runState",
        }
    }
}

/// What a journal adds to the run: its records and how it ends.
#[derive(Debug, Clone)]
pub(crate) struct JournalView {
    pub format: String,
    pub authentication: Authentication,
    pub file_bytes: u64,
    pub records: Vec<RecordSeen>,
    pub seq_ceiling: u64,
    /// Where the whole records end (the torn tail's offset when there is one).
    pub whole_bytes: u64,
    pub torn_bytes: u64,
}

/// A file inspected.
#[derive(Debug, Clone)]
pub(crate) struct Inspection {
    pub file: PathBuf,
    pub kind: FileKind,
    pub state: RunState,
    /// The world's clock and checkpoint count, when the file holds the world.
    pub clock_ms: Option<u64>,
    pub checkpoints: Option<u64>,
    pub journal: Option<JournalView>,
    /// What a report held besides its run (`invocations`, `waits`, `canceled`, `crashes`,
    /// …), as the report printed it — already redacted; for the `--html` picture (D-294).
    pub report: Option<Map<String, Value>>,
}

/// Read `path` and say what it holds. With `key`, a journal is verified (D-251); without
/// one, an authenticated journal is read unverified and [`Authentication::Unverified`]
/// says so (D-271). Nothing is written and no lock is taken.
pub(crate) fn inspect(path: &Path, key: Option<&SealingKey>) -> Result<Inspection, InspectError> {
    let bytes = std::fs::read(path).map_err(|e| InspectError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if journal::is_journal(&bytes) {
        let Inspected {
            folded,
            records,
            format,
            authentication,
        } = journal::inspect_journal(path, &bytes, key)?;
        return Ok(Inspection {
            file: path.to_owned(),
            kind: FileKind::Journal,
            clock_ms: folded.world.as_ref().map(|w| w.clock_ms),
            checkpoints: folded.world.as_ref().map(|w| w.checkpoints),
            journal: Some(JournalView {
                format,
                authentication,
                file_bytes: bytes.len() as u64,
                records,
                seq_ceiling: folded.seq_ceiling,
                whole_bytes: folded.len,
                torn_bytes: folded.torn,
            }),
            state: folded.state,
            report: None,
        });
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| InspectError::Unrecognized {
        path: path.to_owned(),
        message: "no journal magic, and not UTF-8 text".into(),
    })?;
    let doc = crate::json::parse(text).map_err(|e| InspectError::Unrecognized {
        path: path.to_owned(),
        message: format!(
            "no journal magic, and not JSON (line {}, column {}: {e})",
            e.line, e.column
        ),
    })?;
    from_json(path, doc)
}

fn from_json(path: &Path, doc: Value) -> Result<Inspection, InspectError> {
    let not_a_run = |message: String| InspectError::NotARun {
        path: path.to_owned(),
        message,
    };
    let Value::Object(mut m) = doc else {
        return Err(not_a_run("not a JSON object".into()));
    };
    let num = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_u64);
    let (kind, state, clock_ms, checkpoints, report) = if m.contains_key("runId") {
        (FileKind::RunState, Value::Object(m), None, None, None)
    } else if let Some(run) = m.remove("run") {
        let (c, n) = (num(&m, "clockMs"), num(&m, "checkpoints"));
        (FileKind::Report, run, c, n, Some(m))
    } else if let Some(state) = m.remove("state") {
        // D-63: `w6w-sim/run-1`, a store's whole-file run (`{format, state, world}`).
        let world = m.get("world").and_then(Value::as_object);
        let c = world.and_then(|w| num(w, "clockMs"));
        let n = world.and_then(|w| num(w, "checkpoints"));
        (FileKind::LegacyRunFile, state, c, n, None)
    } else {
        return Err(not_a_run(
            "it has no `runId` (a RunState), `run` (a report) or `state` (a run file)".into(),
        ));
    };
    let state: RunState = serde_json::from_value(state)
        .map_err(|e| not_a_run(format!("its {} is not a RunState: {e}", kind.as_str())))?;
    Ok(Inspection {
        file: path.to_owned(),
        kind,
        state,
        clock_ms,
        checkpoints,
        journal: None,
        report,
    })
}

/// `+N ms` on the virtual clock (from the simulator's epoch) and the instant it is.
fn at(ms: u64) -> String {
    format!(
        "+{} ms ({})",
        ms.saturating_sub(EPOCH_MS),
        crate::host::iso8601_from_ms(ms)
    )
}

/// One line of an error message (a recorded message may hold line breaks).
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Inspection {
    /// The text summary (D-273): what happened, when, and why — run, steps, checkpoints,
    /// the trace-sequence ceiling and the tail.
    pub(crate) fn to_text(&self) -> String {
        let mut o = String::new();
        let s = &self.state;
        let _ = writeln!(o, "file:        {}", self.file.display());
        let _ = writeln!(o, "kind:        {}", self.kind.as_str());
        if let Some(j) = &self.journal {
            let _ = writeln!(o, "format:      {}", j.format);
            let auth = match j.authentication {
                Authentication::None => "none (written without a sealing key)".to_owned(),
                Authentication::Verified => {
                    "verified (every record's tag checked under the key given)".to_owned()
                }
                Authentication::Unverified => "NOT VERIFIED: the journal is authenticated, but no key was given (--key-file or W6W_SEALING_KEY), so its records may have been changed; give the key to verify".to_owned(),
            };
            let _ = writeln!(o, "auth:        {auth}");
        }
        let _ = writeln!(o, "run:         {}", s.run_id);
        let _ = writeln!(o, "workflow:    {}", s.workflow_id);
        let _ = writeln!(o, "status:      {}", s.status.as_str());
        if let Some(e) = &s.error {
            let _ = writeln!(o, "error:       {} — {}", e.code, one_line(&e.message));
        }
        if let Some(ms) = self.clock_ms {
            let _ = writeln!(o, "clock:       {}", at(ms));
        }
        let _ = writeln!(o, "steps:       {}", s.steps.len());
        for (id, r) in &s.steps {
            let mut line = format!("  {id:<16} {:<10} attempt {}", r.status.as_str(), r.attempt);
            if let Some(e) = &r.error {
                let _ = write!(line, "  {} — {}", e.code, one_line(&e.message));
            }
            let _ = writeln!(o, "{line}");
        }
        for e in &s.step_errors {
            let _ = writeln!(
                o,
                "  recorded error: {} {} — {}",
                e.step_id.as_deref().unwrap_or("(run)"),
                e.code,
                one_line(&e.message)
            );
        }
        match &self.journal {
            Some(j) => journal_text(&mut o, j),
            None => {
                if let Some(n) = self.checkpoints {
                    let _ = writeln!(
                        o,
                        "checkpoints: {n} (a {} keeps no times for them; inspect the journal for those)",
                        self.kind.as_str()
                    );
                }
            }
        }
        o
    }

    /// The `--json` shape `w6w-sim/inspect-1` (D-272).
    pub(crate) fn to_json(&self) -> Value {
        let s = &self.state;
        let steps: Vec<Value> = s
            .steps
            .iter()
            .map(|(id, r)| {
                json!({
                    "id": id,
                    "status": r.status.as_str(),
                    "attempt": r.attempt,
                    "errorCode": r.error.as_ref().map(|e| e.code.clone()),
                })
            })
            .collect();
        let journal = self.journal.as_ref().map(|j| {
            let checkpoints: Vec<Value> = checkpoint_records(j)
                .map(|r| {
                    json!({
                        "n": r.checkpoints,
                        "record": match r.kind { RecordKind::Snapshot => "snapshot", _ => "checkpoint" },
                        "offset": r.offset,
                        "clockMs": r.clock_ms,
                        "status": r.status.map(|st| st.as_str()),
                        "steps": r.steps.iter().map(|(id, st, a)| json!({"id": id, "status": st.as_str(), "attempt": a})).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "format": j.format,
                "authentication": j.authentication.as_str(),
                "bytes": j.file_bytes,
                "records": j.records.len(),
                "checkpoints": checkpoints,
                "seqCeiling": j.seq_ceiling,
                "torn": (j.torn_bytes > 0).then(|| json!({"offset": j.whole_bytes, "bytes": j.torn_bytes})),
            })
        });
        json!({
            "format": INSPECT_FORMAT,
            "file": self.file.display().to_string(),
            "kind": self.kind.as_str(),
            "summary": {
                "runId": s.run_id,
                "workflowId": s.workflow_id,
                "status": s.status.as_str(),
                "errorCode": s.error.as_ref().map(|e| e.code.clone()),
                "clockMs": self.clock_ms,
                "checkpoints": self.checkpoints,
                "steps": steps,
            },
            "journal": journal,
            "run": s.clone().into_json(),
        })
    }
}

impl Inspection {
    /// The picture of what the file holds (`inspect --html`, D-294): the run page drawn
    /// from [`Inspection::to_json`] — the same redacted values the JSON shows — plus, for a
    /// report, the entries it printed beside its run. A journal keeps no trace, so its
    /// checkpoints are listed with their times instead of attempts and crashes.
    pub(crate) fn to_html(&self) -> String {
        let j = self.to_json();
        let mut report = self.report.clone().unwrap_or_default();
        report.insert("run".into(), j["run"].clone());
        for (k, v) in [
            ("clockMs", self.clock_ms),
            ("checkpoints", self.checkpoints),
        ] {
            if let Some(v) = v {
                report.entry(k).or_insert(json!(v));
            }
        }
        let report = Value::Object(report);
        let checkpoints = j["journal"]["checkpoints"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut notes = vec![match self.kind {
            FileKind::Journal => "Drawn from a journal: the lanes are the folded run's records; a journal keeps no trace, so attempts, backoffs and crashes are not drawn — its checkpoints are listed with their virtual times.".to_owned(),
            FileKind::Report => "Drawn from a report: attempts are placed at their start (a report keeps no trace: their ends, backoffs and crashes are not drawn; run with --html for those).".to_owned(),
            _ => format!("Drawn from a {}: only its records' own times.", self.kind.as_str()),
        }];
        if let Some(jv) = &self.journal {
            if jv.authentication == Authentication::Unverified {
                notes.push("NOT VERIFIED: the journal is authenticated, but no key was given (--key-file or W6W_SEALING_KEY), so its records may have been changed.".into());
            }
            if jv.torn_bytes > 0 {
                notes.push(format!(
                    "Torn tail: {} bytes at offset {} (an append that never finished); not shown.",
                    jv.torn_bytes, jv.whole_bytes
                ));
            }
        }
        let file = self.file.display().to_string();
        super::html::run_page(&super::html::RunSources {
            command: "inspect",
            report: &report,
            checkpoints: &checkpoints,
            notes,
            file: Some(&file),
            ..super::html::RunSources::default()
        })
    }
}

/// The records that are checkpoints of the run (a snapshot is one too: the first
/// checkpoint, or the state a compaction carried over).
fn checkpoint_records(j: &JournalView) -> impl Iterator<Item = &RecordSeen> {
    j.records
        .iter()
        .filter(|r| matches!(r.kind, RecordKind::Snapshot | RecordKind::Checkpoint))
}

fn journal_text(o: &mut String, j: &JournalView) {
    let _ = writeln!(
        o,
        "records:     {} whole, {} of {} bytes",
        j.records.len(),
        j.whole_bytes,
        j.file_bytes
    );
    let _ = writeln!(o, "checkpoints: {}", checkpoint_records(j).count());
    for r in checkpoint_records(j) {
        let n = r.checkpoints.map_or_else(|| "?".into(), |n| n.to_string());
        let when = r.clock_ms.map_or_else(|| "(no clock)".into(), at);
        let what = match r.kind {
            RecordKind::Snapshot => "snapshot".to_owned(),
            _ => r
                .steps
                .iter()
                .map(|(id, st, a)| format!("{id} {} #{a}", st.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let status = r.status.map_or("", |st| st.as_str());
        let _ = writeln!(
            o,
            "  #{n:<4} {when:<36} @{:<8} run {status:<10} {what}",
            r.offset
        );
    }
    let _ = writeln!(o, "trace seq:   ceiling {}", j.seq_ceiling);
    if j.torn_bytes > 0 {
        let _ = writeln!(
            o,
            "torn tail:   yes, {} bytes at offset {} (an append that never finished, or a live writer mid-append; the store drops it at its next write; inspect leaves it)",
            j.torn_bytes, j.whole_bytes
        );
    } else {
        let _ = writeln!(o, "torn tail:   no");
    }
}
