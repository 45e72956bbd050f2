//! A picture of a run (issue 41 item 4; D-290…D-296): `run` / `replay` / `resume` /
//! `inspect --html FILE` write one self-contained HTML page — a timeline on the virtual
//! clock, one lane per step or strand (attempts, backoff waits, crashes and restarts, waits
//! and their wake-ups, skipped, canceled and error-routed steps), each lane's recorded
//! input / output / error on click, and "what happened" in order.
//!
//! Owns: the run page's model ([`run_model`]: lanes, segments, marks and events, built from a
//! report's JSON and the trace) and the page shell every `--html` view shares ([`page`]:
//! inline CSS and script, the data as JSON in a `<script type="application/json">`, a
//! Content-Security-Policy that lets nothing but that one script and style run or load).
//!
//! Invariant: built ONLY from values already redacted for the report — the report's JSON,
//! the trace events the world scrubbed at its one door (`World::event`), inspect's JSON. It
//! never sees a scenario, a secret or a scrubber, so a page cannot show what the report does
//! not (SEC-1; issue 41 item 5). It does not fold checkpoints: the lanes are the final
//! RunState's records; a checkpoint patch is read only for the virtual time a step without
//! times (a skipped one) was recorded at. Every text reaches the page as JSON data that the
//! script puts into the DOM with `textContent`; the JSON is written with `<`, `>` and `&`
//! escaped, so no data byte can close the script element or open a tag (D-292).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::limits::{HTML_EVENTS_MAX, HTML_LANES_MAX, MAX_CONTROL_NESTING};

/// The page's style: one `<style>` element, allowed by its hash.
const CSS: &str = include_str!("html/page.css");
/// Helpers every page's script starts with (reading the data, making elements).
const COMMON_JS: &str = include_str!("html/common.js");
/// The run page's script.
const RUN_JS: &str = include_str!("html/run.js");

/// `v` as JSON that may stand inside a `<script>` element: `<`, `>` and `&` (and the two
/// line separators JavaScript once refused in strings) as `\uXXXX` escapes. They occur only
/// inside JSON strings, where the escape means the same character, so `JSON.parse` reads
/// back exactly `v` — and no `</script>` or `<!--` can appear in the page's bytes.
pub(crate) fn script_json(v: &Value) -> String {
    let text = v.to_string();
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// `'sha256-…'`: a CSP source that allows exactly this inline script or style.
fn csp_hash(text: &str) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    format!(
        "'sha256-{}'",
        base64::engine::general_purpose::STANDARD.encode(digest)
    )
}

/// One self-contained page: the data (read by the script from the element `#w6w-data`;
/// its `title` becomes the document's), the shared helpers and `script`. Not one byte of
/// data is written as markup. The Content-Security-Policy allows nothing but this style and
/// this script — no network, no other script, no image — so even a tag that reached the
/// page some other way could neither run nor load (D-292).
pub fn page(data: &Value, script: &str) -> String {
    let script = format!("{COMMON_JS}\n{script}");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src {style}; script-src {js}; base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>w6w-sim</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <noscript>This page draws its content with an inline script; the data is in the element #w6w-data.</noscript>\n\
         <main id=\"app\"></main>\n\
         <script type=\"application/json\" id=\"w6w-data\">{data}</script>\n\
         <script>{script}</script>\n</body>\n</html>\n",
        style = csp_hash(CSS),
        js = csp_hash(&script),
        data = script_json(data),
    )
}

/// What a run page is drawn from: values already redacted for the report.
#[derive(Debug, Clone, Default)]
pub(crate) struct RunSources<'a> {
    /// The command that produced it: `run`, `replay`, `resume` or `inspect`.
    pub command: &'a str,
    /// The report's JSON (`run`, `invocations`, `waits`, `canceled`, …) as printed; for
    /// `inspect`, `{"run": …}` and whatever else the file held.
    pub report: &'a Value,
    /// The run's trace events, in order (empty: none was kept — attempts then come from
    /// the report's `invocations`, without their ends, and crashes are not placed).
    pub trace: &'a [Value],
    /// The workflow's error edges (`from`, `to`), to name where a failed step was routed.
    pub error_edges: Vec<(String, String)>,
    /// inspect's journal checkpoints (`n`, `clockMs`, `steps`, …), listed as events.
    pub checkpoints: &'a [Value],
    /// Sentences shown under the headline (what the page cannot show, and why).
    pub notes: Vec<String>,
    /// The file the run was read from (`inspect`), shown among the facts.
    pub file: Option<&'a str>,
}

/// A time or span on one lane, in ms since the Unix epoch on the virtual clock.
#[derive(Debug, Clone)]
struct Segment {
    /// `attempt`, `backoff` or `waiting`.
    kind: &'static str,
    from: u64,
    to: u64,
    attempt: Option<u64>,
    /// `succeeded`, `failed`, `crashed`, `canceled`, `unknown` or empty.
    outcome: String,
    label: String,
    detail: Value,
}

#[derive(Debug, Clone)]
struct Lane {
    key: String,
    /// `run`, `step` or `strand` (a sub-block instance that never started a step).
    kind: &'static str,
    step: String,
    /// The frame path (`/loop.iterations[1]`), empty for the main graph.
    strand: String,
    /// The child run the lane belongs to (a `call` target), if not the run itself.
    run_id: Option<String>,
    depth: usize,
    status: String,
    note: String,
    from: Option<u64>,
    to: Option<u64>,
    record: Value,
    segments: Vec<Segment>,
    marks: Vec<Value>,
}

impl Lane {
    fn new(kind: &'static str, step: &str, strand: &str, depth: usize) -> Lane {
        Lane {
            key: format!("{strand}/{step}"),
            kind,
            step: step.to_owned(),
            strand: strand.to_owned(),
            run_id: None,
            depth,
            status: String::new(),
            note: String::new(),
            from: None,
            to: None,
            record: Value::Null,
            segments: Vec::new(),
            marks: Vec::new(),
        }
    }

    fn of_record(step: &str, strand: &str, depth: usize, rec: &Map<String, Value>) -> Lane {
        let mut lane = Lane::new("step", step, strand, depth);
        lane.status = str_of(rec.get("status")).to_owned();
        lane.from = rec.get("startedAt").and_then(time_ms);
        lane.to = rec.get("finishedAt").and_then(time_ms);
        if rec.get("canceled").and_then(Value::as_bool) == Some(true) {
            lane.note = "canceled before it settled".into();
        }
        // The record as the report holds it, less its sub-blocks (each is a lane of its own).
        let mut shown = rec.clone();
        shown.remove("iterations");
        shown.remove("branches");
        lane.record = Value::Object(shown);
        lane
    }

    /// The last instant the lane is known to cover.
    fn end(&self) -> Option<u64> {
        let seg = self.segments.iter().map(|s| s.to);
        self.to.into_iter().chain(seg).max()
    }

    fn to_json(&self) -> Value {
        let segments: Vec<Value> = self
            .segments
            .iter()
            .map(|s| {
                json!({"kind": s.kind, "from": s.from, "to": s.to, "attempt": s.attempt,
                       "outcome": s.outcome, "label": s.label, "detail": s.detail})
            })
            .collect();
        json!({
            "key": self.key, "kind": self.kind, "step": self.step,
            "strand": match &self.run_id {
                Some(r) => format!("child run {r}"),
                None => strand_label(&self.strand),
            },
            "runId": self.run_id, "depth": self.depth,
            "status": self.status, "note": self.note, "from": self.from, "to": self.to,
            "segments": segments, "marks": self.marks, "record": self.record,
        })
    }
}

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

/// A recorded RFC 3339 time (`startedAt`, …) in ms since the Unix epoch.
fn time_ms(v: &Value) -> Option<u64> {
    let ms = crate::plan::parse_timestamp_ms(v.as_str()?).ok()?;
    u64::try_from(ms).ok()
}

/// A frame path as a reader says it: `/loop.iterations[1]/fan.branches[0]` →
/// `loop › iteration 1 › fan › branch 0`.
fn strand_label(path: &str) -> String {
    path.split('/')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let Some((id, block)) = part.rsplit_once('.') else {
                return part.to_owned();
            };
            let (kind, rest) = block.split_once('[').unwrap_or((block, ""));
            let word = match kind {
                "iterations" => "iteration",
                "branches" => "branch",
                other => other,
            };
            format!("{id} › {word} {}", rest.trim_end_matches(']'))
        })
        .collect::<Vec<_>>()
        .join(" › ")
}

/// The lanes of a record map (the run's `steps`, or one sub-block instance) and, after
/// each control, one lane group per iteration or branch, recursively.
fn walk(records: &Map<String, Value>, strand: &str, depth: usize, lanes: &mut Vec<Lane>) {
    for (id, rec) in records {
        let Value::Object(rec) = rec else {
            continue;
        };
        lanes.push(Lane::of_record(id, strand, depth, rec));
        if depth >= MAX_CONTROL_NESTING {
            continue;
        }
        for kind in ["iterations", "branches"] {
            let Some(Value::Array(blocks)) = rec.get(kind) else {
                continue;
            };
            for (i, frame) in blocks.iter().enumerate() {
                let path = format!("{strand}/{id}.{kind}[{i}]");
                match frame {
                    Value::Object(m) if !m.is_empty() => walk(m, &path, depth + 1, lanes),
                    _ => {
                        let mut lane = Lane::new("strand", "", &path, depth + 1);
                        lane.key = path.clone();
                        lane.status = "not started".into();
                        lane.note = "never started".into();
                        lanes.push(lane);
                    }
                }
            }
        }
    }
}

/// Sub-block instances still running when the state was written (`frame:PATH` keys of a
/// run the file caught mid-control), each after its control's lanes.
fn running_frames(run: &Map<String, Value>, lanes: &mut Vec<Lane>) {
    for (key, frame) in run {
        let (Some(path), Value::Object(records)) = (key.strip_prefix("frame:"), frame) else {
            continue;
        };
        let depth = path.matches('/').count();
        let mut group = Vec::new();
        walk(records, path, depth, &mut group);
        // After the last lane of the control the frame belongs to (or at the end).
        let control = path.rsplit_once('.').map_or(path, |(c, _)| c);
        let at = lanes
            .iter()
            .rposition(|l| l.key == control || l.key.starts_with(&format!("{control}.")))
            .map_or(lanes.len(), |i| i + 1);
        lanes.splice(at..at, group);
    }
}

/// Field `k` of a trace event or report entry as a time in ms.
fn ms(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

/// The lane an invocation of `step` (in run `run_id`, with these params, started at `at`)
/// belongs to: the same step in the same run, preferring the record whose input is the
/// params and whose window has not closed by then; the first such lane on a tie.
fn lane_for(
    lanes: &[Lane],
    run_id: Option<&str>,
    step: &str,
    params: Option<&Value>,
    at: u64,
) -> Option<usize> {
    let mut best: Option<(u8, usize)> = None;
    for (i, l) in lanes.iter().enumerate() {
        if l.kind != "step" || l.step != step || l.run_id.as_deref() != run_id {
            continue;
        }
        let same_input = params.is_some_and(|p| l.record.get("input") == Some(p));
        let open = l.to.is_none_or(|t| at <= t);
        let score = u8::from(same_input) * 2 + u8::from(open);
        if best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| i)
}

/// The lane for an invocation, made for a child run's step the first time one is seen.
fn lane_or_child(
    lanes: &mut Vec<Lane>,
    run_id: Option<&str>,
    step: &str,
    params: Option<&Value>,
    at: u64,
) -> usize {
    if let Some(i) = lane_for(lanes, run_id, step, params, at) {
        return i;
    }
    let mut lane = Lane::new("step", step, "", 1);
    if let Some(r) = run_id {
        // A child run's step (a `call` target): its records are in the child's state.
        lane.key = format!("{r}/{step}");
        lane.run_id = Some(r.to_owned());
        lane.note = format!("in child run {r}");
    } else {
        lane.note = "no record in this run's state".into();
    }
    lanes.push(lane);
    lanes.len() - 1
}

/// An invocation's fields for its detail view: everything but the trace's bookkeeping.
fn detail_of(v: &Value) -> Value {
    let mut m = v.as_object().cloned().unwrap_or_default();
    for k in ["seq", "event"] {
        m.remove(k);
    }
    Value::Object(m)
}

/// Attempts from the trace's `invoke` events (start = settle time − latency), and the
/// invocations the engine canceled from the report's `canceled` list.
fn attempts(report: &Value, trace: &[Value], lanes: &mut Vec<Lane>) {
    let mut any = false;
    for e in trace.iter().filter(|e| str_of(e.get("event")) == "invoke") {
        any = true;
        let Some(end) = ms(e, "atMs") else { continue };
        let start = end.saturating_sub(ms(e, "latencyMs").unwrap_or(0));
        let run_id = e.get("runId").and_then(Value::as_str);
        let step = str_of(e.get("stepId"));
        let i = lane_or_child(lanes, run_id, step, e.get("params"), start);
        let attempt = ms(e, "attempt");
        let (outcome, why) = match e.get("error") {
            Some(err) => ("failed", format!(" · {}", str_of(err.get("code")))),
            None => ("succeeded", String::new()),
        };
        lanes[i].segments.push(Segment {
            kind: "attempt",
            from: start,
            to: end,
            attempt,
            outcome: outcome.into(),
            label: format!("attempt {}{why}", attempt.unwrap_or(0)),
            detail: detail_of(e),
        });
    }
    if !any {
        // No trace: the report's invocations, each at its start (its end is not recorded).
        for v in report["invocations"].as_array().into_iter().flatten() {
            entry_attempt(lanes, v, None, "unknown", "started; no trace");
        }
    }
    for v in report["canceled"].as_array().into_iter().flatten() {
        entry_attempt(
            lanes,
            v,
            Some("canceledAtMs"),
            "canceled",
            "canceled by the engine",
        );
    }
}

/// A report entry (`invocations`, `canceled`) as an attempt on its lane, from its `atMs`
/// to its field `end` (or the same instant).
fn entry_attempt(lanes: &mut Vec<Lane>, v: &Value, end: Option<&str>, outcome: &str, what: &str) {
    let Some(at) = ms(v, "atMs") else { return };
    let run_id = v.get("runId").and_then(Value::as_str);
    let i = lane_or_child(lanes, run_id, str_of(v.get("stepId")), v.get("params"), at);
    let attempt = ms(v, "attempt");
    lanes[i].segments.push(Segment {
        kind: "attempt",
        from: at,
        to: end.and_then(|k| ms(v, k)).unwrap_or(at),
        attempt,
        outcome: outcome.into(),
        label: format!("attempt {} · {what}", attempt.unwrap_or(0)),
        detail: detail_of(v),
    });
}

/// Backoff waits (`wait` events): before attempt N of a step, on the lane whose attempt N
/// starts soonest after the wait ends.
fn backoffs(trace: &[Value], lanes: &mut Vec<Lane>) {
    for e in trace.iter().filter(|e| str_of(e.get("event")) == "wait") {
        let (Some(at), Some(wait)) = (ms(e, "atMs"), ms(e, "ms")) else {
            continue;
        };
        let end = at.saturating_add(wait);
        let Some(step) = e.get("stepId").and_then(Value::as_str) else {
            // A run-level retry (RUNERR): the whole run waits before its next attempt.
            lanes[0].segments.push(Segment {
                kind: "backoff",
                from: at,
                to: end,
                attempt: ms(e, "attempt"),
                outcome: String::new(),
                label: format!(
                    "run-level retry: backoff {wait} ms before run attempt {}",
                    ms(e, "attempt").unwrap_or_default()
                ),
                detail: detail_of(e),
            });
            continue;
        };
        let run_id = e.get("runId").and_then(Value::as_str);
        let attempt = ms(e, "attempt");
        let next = lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| l.step == step && l.run_id.as_deref() == run_id)
            .filter_map(|(i, l)| {
                l.segments
                    .iter()
                    .filter(|s| s.kind == "attempt" && s.attempt == attempt && s.from >= end)
                    .map(|s| (s.from - end, i))
                    .min()
            })
            .min()
            .map(|(_, i)| i);
        let i = match next {
            Some(i) => i,
            None => lane_or_child(lanes, run_id, step, None, at),
        };
        lanes[i].segments.push(Segment {
            kind: "backoff",
            from: at,
            to: end,
            attempt,
            outcome: String::new(),
            label: format!(
                "backoff {wait} ms before attempt {}",
                attempt.unwrap_or_default()
            ),
            detail: detail_of(e),
        });
    }
}

/// Crashes, restarts and suspensions: marks on the run lane; an attempt a crash cut short
/// is marked crashed; a lane open across a suspension waits through it and wakes with it.
fn process_lives(trace: &[Value], lanes: &mut [Lane], end: u64) {
    let mut open: BTreeMap<String, u64> = BTreeMap::new();
    let mut suspensions: Vec<(u64, u64, String)> = Vec::new();
    for e in trace {
        let Some(at) = ms(e, "atMs") else { continue };
        let kind = str_of(e.get("event"));
        match kind {
            "crash" => mark_crash(e, at, lanes),
            "restart" | "process_abort" | "cancel" => {
                let label = match kind {
                    "restart" => format!(
                        "restart {}: {}",
                        ms(e, "restart").unwrap_or(0),
                        str_of(e.get("note"))
                    ),
                    "process_abort" => format!(
                        "process aborted after checkpoint {}",
                        ms(e, "afterCheckpoint").unwrap_or(0)
                    ),
                    _ => format!(
                        "run canceled after checkpoint {}",
                        ms(e, "afterCheckpoint").unwrap_or(0)
                    ),
                };
                let mark = if kind == "restart" {
                    "restart"
                } else {
                    "crash"
                };
                lanes[0]
                    .marks
                    .push(json!({"kind": mark, "at": at, "label": label}));
            }
            "schedule" => {
                open.insert(str_of(e.get("token")).to_owned(), at);
            }
            "schedule_fired" | "resume" => {
                let token = str_of(e.get("token"));
                if let Some(from) = open.remove(token) {
                    suspensions.push((from, at, format!("woke: {}", str_of(e.get("note")))));
                }
            }
            _ => {}
        }
    }
    for (_, from) in open {
        suspensions.push((
            from,
            end,
            "still suspended (queued) when the run stopped".into(),
        ));
    }
    for (from, to, label) in suspensions {
        draw_suspension(lanes, from, to, &label);
    }
}

/// When each step without times (a skipped one) was first recorded: the checkpoint that
/// first carried its record, by lane key. Only the main graph and running frames.
fn first_recorded(trace: &[Value]) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for e in trace
        .iter()
        .filter(|e| str_of(e.get("event")) == "checkpoint")
    {
        let (Some(at), Some(Value::Object(patch))) = (ms(e, "atMs"), e.get("patch")) else {
            continue;
        };
        for (k, v) in patch {
            let strand = match k.as_str() {
                "steps" => "",
                k => match k.strip_prefix("frame:") {
                    Some(path) => path,
                    None => continue,
                },
            };
            for id in v.as_object().into_iter().flat_map(Map::keys) {
                seen.entry(format!("{strand}/{id}")).or_insert(at);
            }
        }
    }
    seen
}

/// A crash: a mark on the run's lane and, for a crash inside an attempt, that attempt's
/// segment marked crashed (its result was never checkpointed).
fn mark_crash(e: &Value, at: u64, lanes: &mut [Lane]) {
    let step = e.get("stepId").and_then(Value::as_str);
    let label = match step {
        Some(s) => format!(
            "crash in step {s} attempt {}: {}",
            ms(e, "attempt").unwrap_or(0),
            str_of(e.get("note"))
        ),
        None => format!(
            "crash ({}) after checkpoint {}",
            str_of(e.get("fault")),
            ms(e, "afterCheckpoint").unwrap_or(0)
        ),
    };
    lanes[0]
        .marks
        .push(json!({"kind": "crash", "at": at, "label": label}));
    if let Some(step) = step {
        let attempt = ms(e, "attempt");
        let hit = lanes.iter_mut().filter(|l| l.step == step).find_map(|l| {
            l.segments
                .iter_mut()
                .rev()
                .find(|s| s.kind == "attempt" && s.attempt == attempt && s.to == at)
        });
        if let Some(s) = hit {
            s.outcome = "crashed".into();
            s.label = format!(
                "{} · crashed: result never checkpointed",
                s.label.split(" · ").next().unwrap_or_default()
            );
        }
    }
}

/// A suspension from `from` to `to`: a waiting segment and a wake mark on the run's lane
/// and on every step lane running across it.
fn draw_suspension(lanes: &mut [Lane], from: u64, to: u64, label: &str) {
    for (i, lane) in lanes.iter_mut().enumerate() {
        let covers = lane.from.is_some_and(|f| f <= from) && lane.to.is_none_or(|t| t >= to);
        if i > 0 && (lane.kind != "step" || lane.status == "skipped" || !covers) {
            continue;
        }
        lane.segments.push(Segment {
            kind: "waiting",
            from,
            to,
            attempt: None,
            outcome: String::new(),
            label: if i == 0 {
                "suspended (queued): no process runs it".into()
            } else {
                "waiting".into()
            },
            detail: json!({"suspendedAtMs": from, "resumedAtMs": to}),
        });
        lane.marks
            .push(json!({"kind": "wake", "at": to, "label": label}));
    }
}

/// The sentence of each trace event worth reading at 2 a.m., or `None` for bookkeeping
/// (checkpoints, loads, settled invocations and backoffs are drawn on the lanes).
// long: one flat match with an arm per trace event kind, each a sentence; split, the
// event kinds would no longer be listed in one place.
fn event_text(e: &Value) -> Option<(&'static str, String)> {
    let s = |k: &str| str_of(e.get(k)).to_owned();
    let n = |k: &str| ms(e, k).unwrap_or(0);
    let child = e
        .get("runId")
        .and_then(Value::as_str)
        .map(|r| format!("[{r}] "))
        .unwrap_or_default();
    let (level, text) = match str_of(e.get("event")) {
        "log" => {
            let level = match str_of(e.get("level")) {
                "warn" => "warn",
                "error" => "error",
                _ => "info",
            };
            (level, s("message"))
        }
        "crash" => match e.get("stepId").and_then(Value::as_str) {
            Some(step) => (
                "crash",
                format!(
                    "crash in step {step} attempt {}: {}",
                    n("attempt"),
                    s("note")
                ),
            ),
            None => (
                "crash",
                format!(
                    "crash ({}) right after checkpoint {}",
                    s("fault"),
                    n("afterCheckpoint")
                ),
            ),
        },
        "restart" => (
            "restart",
            format!("restart {}: {}", n("restart"), s("note")),
        ),
        "process_abort" => (
            "crash",
            format!(
                "the process aborted after checkpoint {}",
                n("afterCheckpoint")
            ),
        ),
        "cancel" => (
            "warn",
            format!(
                "the run was canceled after checkpoint {}",
                n("afterCheckpoint")
            ),
        ),
        "schedule" => (
            "wait",
            format!(
                "suspended until {} (token {})",
                e.get("fireAtMs")
                    .and_then(Value::as_u64)
                    .map_or_else(|| "[redacted]".into(), crate::host::iso8601_from_ms),
                s("token")
            ),
        ),
        "schedule_fired" => ("wait", format!("woke: {}", s("note"))),
        "resume" => ("wait", format!("resumed with token {}", s("token"))),
        "invoke_canceled" => (
            "warn",
            format!(
                "step {} attempt {} canceled: {}",
                s("stepId"),
                n("attempt"),
                s("note")
            ),
        ),
        "checkpoint_failed" => ("error", format!("checkpoint failed: {}", s("message"))),
        "schedule_failed" => ("error", format!("schedule failed: {}", s("message"))),
        "call" => (
            "info",
            format!(
                "dispatched {} as child run {}: {}",
                e.get("target").map(Value::to_string).unwrap_or_default(),
                s("childRunId"),
                s("status")
            ),
        ),
        _ => return None,
    };
    Some((level, format!("{child}{text}")))
}

/// The events list: the trace's readable events, or (inspect) the journal's checkpoints.
fn events(trace: &[Value], checkpoints: &[Value]) -> (Vec<Value>, usize) {
    let mut all: Vec<Value> = trace
        .iter()
        .filter_map(|e| {
            let (level, text) = event_text(e)?;
            Some(json!({"at": ms(e, "atMs"), "level": level, "text": text,
                        "step": e.get("stepId")}))
        })
        .collect();
    for c in checkpoints {
        let steps: Vec<String> = c["steps"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                format!(
                    "{} {} #{}",
                    str_of(s.get("id")),
                    str_of(s.get("status")),
                    ms(s, "attempt").unwrap_or(0)
                )
            })
            .collect();
        let what = match str_of(c.get("record")) {
            "snapshot" => "snapshot".to_owned(),
            _ if steps.is_empty() => format!("run {}", str_of(c.get("status"))),
            _ => steps.join(", "),
        };
        all.push(json!({"at": ms(c, "clockMs"), "level": "info",
            "text": format!("checkpoint {}: {what}", ms(c, "n").map_or_else(|| "?".into(), |n| n.to_string()))}));
    }
    let omitted = all.len().saturating_sub(HTML_EVENTS_MAX);
    all.truncate(HTML_EVENTS_MAX);
    (all, omitted)
}

/// Notes on failed lanes: where a failure went — down an error edge, on past it
/// (`onError`), or into the run's own error.
fn failure_notes(run: &Value, error_edges: &[(String, String)], lanes: &mut [Lane]) {
    let run_error_step = run["error"]["stepId"].as_str();
    let recorded: Vec<&str> = run["stepErrors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["stepId"].as_str())
        .collect();
    let ran: Vec<String> = lanes
        .iter()
        .filter(|l| l.kind == "step" && l.strand.is_empty() && l.status != "skipped")
        .map(|l| l.step.clone())
        .collect();
    for lane in lanes
        .iter_mut()
        .filter(|l| l.status == "failed" && l.run_id.is_none())
    {
        let targets: Vec<&str> = error_edges
            .iter()
            .filter(|(from, to)| lane.strand.is_empty() && *from == lane.step && ran.contains(to))
            .map(|(_, to)| to.as_str())
            .collect();
        let note = if !targets.is_empty() {
            format!("error-routed → {}", targets.join(", "))
        } else if lane.strand.is_empty() && run_error_step == Some(lane.step.as_str()) {
            "failed the run".to_owned()
        } else if lane.strand.is_empty() && recorded.contains(&lane.step.as_str()) {
            "failed; the run went on (its stepErrors record it)".to_owned()
        } else {
            continue;
        };
        lane.note = note;
    }
}

/// The headline: what happened to the run, and why, in a sentence or two.
fn headline(report: &Value, lanes: &[Lane]) -> String {
    let mut text = status_sentence(&report["run"], lanes);
    match report["crashes"].as_u64() {
        Some(0) | None => {}
        Some(1) => {
            text.push_str(" Its process crashed once and a fresh engine resumed it from the store.")
        }
        Some(n) => text.push_str(&format!(
            " Its process crashed {n} times; each time a fresh engine resumed it from the store."
        )),
    }
    text
}

fn status_sentence(run: &Value, lanes: &[Lane]) -> String {
    let status = str_of(run.get("status"));
    let err = &run["error"];
    let failed: Vec<&str> = lanes
        .iter()
        .filter(|l| l.kind == "step" && l.status == "failed")
        .map(|l| l.key.trim_start_matches('/'))
        .collect();
    match status {
        "failed" | "canceled" => {
            let at = err["stepId"]
                .as_str()
                .map(|s| format!("step {s}: "))
                .unwrap_or_default();
            format!(
                "The run {status} at {at}{} — {}",
                str_of(err.get("code")),
                str_of(err.get("message"))
            )
        }
        "succeeded" if failed.is_empty() => "The run succeeded.".into(),
        "succeeded" => format!(
            "The run succeeded; {} step record(s) failed and were handled: {}",
            failed.len(),
            failed.join(", ")
        ),
        "queued" => format!(
            "The run is suspended (queued), waiting to be resumed{}",
            run["resumeToken"]
                .as_str()
                .map(|t| format!(" with token {t}"))
                .unwrap_or_default()
        ),
        "running" => "The run had not ended when this was written: a process stopped mid-run (resume it from its store).".into(),
        other => format!("The run is {other}."),
    }
}

/// The run page's model: `{page, command, title, origin, end, summary, lanes, events, …}`,
/// every time in ms since the Unix epoch on the virtual clock (the page shows them from
/// `origin`).
pub(crate) fn run_model(src: &RunSources) -> Value {
    let run = &src.report["run"];
    let empty = Map::new();
    let run_map = run.as_object().unwrap_or(&empty);
    let mut lanes = vec![Lane::new("run", "", "", 0)];
    lanes[0].key = "run".into();
    lanes[0].status = str_of(run.get("status")).to_owned();
    lanes[0].record = json!({"runId": run.get("runId"), "workflowId": run.get("workflowId"),
        "status": run.get("status"), "error": run.get("error"), "output": run.get("output"),
        "stepErrors": run.get("stepErrors"), "trigger": run.get("trigger"),
        "variables": run.get("variables"), "runAttempt": run.get("runAttempt")});
    if let Some(Value::Object(steps)) = run.get("steps") {
        walk(steps, "", 0, &mut lanes);
    }
    running_frames(run_map, &mut lanes);
    attempts(src.report, src.trace, &mut lanes);
    backoffs(src.trace, &mut lanes);
    failure_notes(run, &src.error_edges, &mut lanes);
    place_untimed(src.trace, &mut lanes);
    let times = all_times(src, &lanes);
    let origin = times.iter().copied().min().unwrap_or(super::EPOCH_MS);
    let end = times.iter().copied().max().unwrap_or(origin);
    process_lives(src.trace, &mut lanes, end);
    lanes[0].from = Some(origin);
    lanes[0].to = Some(lanes.iter().filter_map(Lane::end).max().unwrap_or(end));
    let lanes_omitted = lanes.len().saturating_sub(HTML_LANES_MAX);
    lanes.truncate(HTML_LANES_MAX);
    let (events, events_omitted) = events(src.trace, src.checkpoints);
    let facts = facts(src, run, end - origin);
    let mut notes = src.notes.clone();
    if lanes_omitted > 0 {
        notes.push(format!(
            "{lanes_omitted} more lanes are not drawn (a page draws at most {HTML_LANES_MAX}); the report holds them all"
        ));
    }
    if events_omitted > 0 {
        notes.push(format!(
            "{events_omitted} more events are not listed (at most {HTML_EVENTS_MAX}); --trace writes every one"
        ));
    }
    let title = format!(
        "{} {} — {} {}",
        src.command,
        str_of(run.get("runId")),
        str_of(run.get("workflowId")),
        str_of(run.get("status"))
    );
    json!({
        "page": "run",
        "command": src.command,
        "title": title,
        "origin": origin,
        "end": end,
        "summary": {
            "status": run.get("status"),
            "headline": headline(src.report, &lanes),
            "error": run.get("error"),
            "facts": facts,
            "notes": notes,
        },
        "lanes": lanes.iter().map(Lane::to_json).collect::<Vec<_>>(),
        "events": events,
    })
}

/// Steps without times (skipped) are drawn at the checkpoint that recorded them.
fn place_untimed(trace: &[Value], lanes: &mut [Lane]) {
    let recorded = first_recorded(trace);
    for lane in lanes.iter_mut().skip(1) {
        if lane.status == "skipped" && lane.note.is_empty() {
            lane.note = "skipped: its incoming edges did not activate".into();
        }
        if lane.from.is_none() && lane.segments.is_empty() {
            let at = recorded.get(&lane.key).copied();
            lane.from = at;
            if let Some(at) = at {
                lane.marks.push(json!({"kind": lane.status, "at": at,
                    "label": format!("{} (recorded at this time)", lane.status)}));
            }
        }
    }
}

/// Every time the page knows of: trace events, lanes and their segments, checkpoints and
/// the report's clock.
fn all_times(src: &RunSources, lanes: &[Lane]) -> Vec<u64> {
    let trace_times = src.trace.iter().filter_map(|e| ms(e, "atMs"));
    let lane_times = lanes.iter().flat_map(|l| {
        let seg = l.segments.iter().flat_map(|s| [s.from, s.to]);
        l.from
            .into_iter()
            .chain(l.to)
            .chain(seg)
            .collect::<Vec<_>>()
    });
    let ckpt_times = src.checkpoints.iter().filter_map(|c| ms(c, "clockMs"));
    trace_times
        .chain(lane_times)
        .chain(ckpt_times)
        .chain(ms(src.report, "clockMs"))
        .collect()
}

/// The summary's facts: status, ids, virtual time, counts and the file.
fn facts(src: &RunSources, run: &Value, span_ms: u64) -> Vec<Value> {
    let mut facts = vec![
        json!(["status", run.get("status")]),
        json!(["run", run.get("runId")]),
        json!(["workflow", run.get("workflowId")]),
        json!(["virtual time", format!("{span_ms} ms")]),
    ];
    for (label, key) in [
        ("checkpoints", "checkpoints"),
        ("crashes", "crashes"),
        ("run attempt", "runAttempt"),
    ] {
        let v = src.report.get(key).or_else(|| run.get(key));
        if let Some(v) = v.filter(|v| !v.is_null()) {
            facts.push(json!([label, v]));
        }
    }
    if let Some(n) = src.report["invocations"].as_array().map(Vec::len) {
        facts.push(json!(["invocations", n]));
    }
    if let Some(file) = src.file {
        facts.push(json!(["file", file]));
    }
    facts
}

/// The run page: [`run_model`] drawn by the run script.
pub(crate) fn run_page(src: &RunSources) -> String {
    page(&run_model(src), RUN_JS)
}

/// What a command's page cannot show, for [`RunSources::notes`]: a resumed run's trace
/// starts at the resume.
pub(crate) fn command_notes(command: &str) -> Vec<String> {
    match command {
        "resume" => vec![
            "Resumed: the trace covers this command only — attempts, backoffs and crashes before it are not drawn; those steps show their records' times.".into(),
        ],
        _ => Vec::new(),
    }
}

/// A workflow's error edges (`from`, `to`), for [`RunSources::error_edges`].
pub(crate) fn error_edges(workflow: &crate::model::Workflow) -> Vec<(String, String)> {
    workflow
        .edges
        .iter()
        .flatten()
        .filter(|e| e.when() == crate::model::When::Error)
        .map(|e| (e.from.to_string(), e.to.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_reads_back_and_cannot_close_the_script() {
        let v = json!({"id": "</script><img src=x onerror=alert(1)>", "k&<>": "\u{2028}<!--"});
        let text = script_json(&v);
        for bad in ["<", ">", "&", "\u{2028}"] {
            assert!(!text.contains(bad), "{bad:?} in {text}");
        }
        let back: Value = serde_json::from_str(&text).expect("valid JSON");
        assert_eq!(back, v);
    }

    #[test]
    fn the_page_has_one_data_element_and_hashes_its_own_script() {
        let v = json!({"title": "</title><script>alert(1)</script>"});
        let html = page(&v, "document.title;");
        assert!(html.contains("<title>w6w-sim</title>"), "{html}");
        assert_eq!(html.matches("<script").count(), 2, "data + script only");
        assert_eq!(html.matches("</script>").count(), 2);
        let script = format!("{COMMON_JS}\ndocument.title;");
        assert!(html.contains(&csp_hash(&script)));
        assert!(html.contains(&csp_hash(CSS)));
        for asset in [CSS, COMMON_JS, RUN_JS] {
            assert!(!asset.to_ascii_lowercase().contains("</script"));
            assert!(!asset.contains("http://") && !asset.contains("https://"));
        }
    }

    #[test]
    fn strand_labels_read_as_a_path() {
        assert_eq!(strand_label(""), "");
        assert_eq!(
            strand_label("/loop.iterations[1]/fan.branches[0]"),
            "loop › iteration 1 › fan › branch 0"
        );
    }

    fn rec(status: &str, input: Value, from: &str, to: Option<&str>) -> Value {
        let mut r = json!({"stepId": "s", "status": status, "attempt": 1, "input": input,
                           "startedAt": from});
        if let Some(to) = to {
            r["finishedAt"] = json!(to);
        }
        r
    }

    #[test]
    fn attempts_find_their_iteration_by_input_and_backoffs_their_attempt() {
        let t = |ms: u64| crate::host::iso8601_from_ms(super::super::EPOCH_MS + ms);
        let run = json!({"runId": "r", "workflowId": "w", "status": "succeeded", "steps": {
        "loop": {"stepId": "loop", "status": "succeeded", "attempt": 1,
                 "startedAt": t(0), "finishedAt": t(900), "iterations": [
            {"f": rec("succeeded", json!({"i": 0}), &t(0), Some(&t(10)))},
            {"f": rec("succeeded", json!({"i": 1}), &t(500), Some(&t(900)))},
            {}
        ]}}});
        let e = super::super::EPOCH_MS;
        let trace = vec![
            json!({"event": "invoke", "atMs": e + 10, "stepId": "f", "attempt": 1, "params": {"i": 0}, "latencyMs": 10}),
            json!({"event": "invoke", "atMs": e + 20, "stepId": "f", "attempt": 1, "params": {"i": 1}, "latencyMs": 20, "error": {"code": "boom"}}),
            json!({"event": "wait", "atMs": e + 20, "stepId": "f", "attempt": 2, "ms": 480}),
            json!({"event": "invoke", "atMs": e + 900, "stepId": "f", "attempt": 2, "params": {"i": 1}, "latencyMs": 400}),
        ];
        let report = json!({"run": run});
        let m = run_model(&RunSources {
            command: "run",
            report: &report,
            trace: &trace,
            ..RunSources::default()
        });
        let keys: Vec<&str> = m["lanes"]
            .as_array()
            .expect("lanes")
            .iter()
            .map(|l| l["key"].as_str().expect("key"))
            .collect();
        assert_eq!(
            keys,
            [
                "run",
                "/loop",
                "/loop.iterations[0]/f",
                "/loop.iterations[1]/f",
                "/loop.iterations[2]"
            ]
        );
        let segs = |i: usize| -> Vec<(String, String)> {
            m["lanes"][i]["segments"]
                .as_array()
                .expect("segments")
                .iter()
                .map(|s| {
                    (
                        s["kind"].as_str().unwrap_or("").to_owned(),
                        s["outcome"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        };
        assert_eq!(segs(2), [("attempt".into(), "succeeded".into())]);
        assert_eq!(
            segs(3),
            [
                ("attempt".into(), "failed".into()),
                ("attempt".into(), "succeeded".into()),
                ("backoff".into(), String::new())
            ]
        );
        assert_eq!(m["lanes"][3]["segments"][2]["from"], json!(e + 20));
        assert_eq!(m["lanes"][3]["segments"][2]["to"], json!(e + 500));
        assert_eq!(m["lanes"][4]["note"], "never started");
        assert_eq!(m["summary"]["headline"], "The run succeeded.");
    }
}
