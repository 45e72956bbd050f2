//! The simulated world: the virtual clock, the fault bookkeeping and the trace.
//!
//! Owns: every piece of nondeterminism a simulated run has — time, which faults fired,
//! how many times each action was invoked. Invariant: nothing here reads a real clock or
//! randomness; the same scenario always yields the same world history. The persistable
//! part ([`WorldSnapshot`]) is written with each checkpoint by the disk store, so a run
//! continued in a new process (`w6w-sim resume`) keeps its clock, counters and report.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::rc::Rc;

use crate::redact::Scrubber;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The virtual clock starts at 2026-01-01T00:00:00Z.
pub const EPOCH_MS: u64 = 1_767_225_600_000;

/// The part of the world that survives a process restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorldSnapshot {
    pub clock_ms: u64,
    /// Successful checkpoints of the top-level run, across restarts.
    pub checkpoints: u64,
    pub crashes: u64,
    /// Invocations so far per step id (selects the scripted outcome).
    pub invocation_counts: BTreeMap<String, u64>,
    /// Indices into `faults.crashInInvoke` that already fired.
    pub fired_invoke_faults: BTreeSet<usize>,
    /// RUN-7: the host's abort signal.
    pub aborted: bool,
    /// Report entries (already redacted and scrubbed).
    pub invocations: Vec<Invocation>,
    pub waits: Vec<Value>,
    pub calls: Vec<Value>,
    /// Serialized bytes of every checkpoint patch (the bench's linear-growth measure).
    pub checkpoint_bytes: u64,
    /// Next trace sequence number.
    pub seq: u64,
    /// Bytes of every checkpoint patch, top-level and composed (the recorded-bytes budget).
    #[serde(default)]
    pub recorded_bytes: u64,
    /// Every invocation, top-level and composed (the budget's counter).
    #[serde(default)]
    pub total_invocations: u64,
    /// CTRL-7: every `schedule` directive the host accepted, `{token, atMs}`, in order.
    #[serde(default)]
    pub schedules: Vec<Value>,
    /// CTRL-7: when each schedule token fires (the report's entry may be redacted).
    #[serde(default)]
    pub fire_times: BTreeMap<String, u64>,
    /// D-125: invocations the engine canceled before they settled (race/any losers,
    /// fail-fast iterations), with `canceledAtMs`.
    #[serde(default)]
    pub canceled: Vec<Value>,
}

impl Default for WorldSnapshot {
    fn default() -> Self {
        WorldSnapshot {
            clock_ms: EPOCH_MS,
            checkpoints: 0,
            crashes: 0,
            invocation_counts: BTreeMap::new(),
            fired_invoke_faults: BTreeSet::new(),
            aborted: false,
            invocations: Vec::new(),
            waits: Vec::new(),
            calls: Vec::new(),
            checkpoint_bytes: 0,
            seq: 0,
            recorded_bytes: 0,
            total_invocations: 0,
            schedules: Vec::new(),
            fire_times: BTreeMap::new(),
            canceled: Vec::new(),
        }
    }
}

/// One entry of the report's `invocations`: what the simulator was asked, with the params
/// redacted (SEC-1) and scrubbed. Typed so that a run does not build and keep an
/// eight-key JSON map per invocation (D-186); its JSON — [`Invocation::into_json`], and
/// serde's, which the disk journal writes — is the object the report always had:
/// `{stepId, app, action, connection, attempt, params, atMs}`, plus `runId` for a
/// child run's invocation (D-125).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
///
/// A long run keeps one per invocation to its end, so its texts are exactly sized boxes,
/// not growable strings (D-195).
pub struct Invocation {
    pub step_id: Box<str>,
    pub app: Box<str>,
    pub action: Box<str>,
    /// `null` when the step names no connection.
    pub connection: Option<Box<str>>,
    pub attempt: u32,
    /// The redacted params (an object; the string `"[redacted]"` if the whole object
    /// was declared secret-derived), held as compact JSON text (D-191).
    pub params: JsonText,
    pub at_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Box<str>>,
    /// Issue 40: what a script step's run did — `{"calls": [...]}`, every value already
    /// redacted and scrubbed (`sim::scripts`); `None` for a scripted or plain invocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<JsonText>,
}

impl Invocation {
    /// The report's JSON object, keys in the order serde writes them.
    pub fn into_json(self) -> Value {
        let mut m = Map::with_capacity(8);
        let text = |t: Box<str>| Value::String(t.into());
        m.insert("stepId".into(), text(self.step_id));
        m.insert("app".into(), text(self.app));
        m.insert("action".into(), text(self.action));
        m.insert(
            "connection".into(),
            self.connection.map_or(Value::Null, text),
        );
        m.insert("attempt".into(), Value::from(self.attempt));
        m.insert("params".into(), self.params.to_value());
        m.insert("atMs".into(), Value::from(self.at_ms));
        if let Some(id) = self.run_id {
            m.insert("runId".into(), text(id));
        }
        if let Some(script) = self.script {
            m.insert("script".into(), script.to_value());
        }
        Value::Object(m)
    }

    /// SEC-1: scrub every data field — the texts and the params — as the scrubber scrubs
    /// a JSON value (a declared secret-derived value is replaced wholly). The attempt and
    /// the virtual time are the record's structure, never data.
    pub fn scrub(&mut self, scrub: &Scrubber) {
        if scrub.is_empty() {
            return;
        }
        self.scrub_texts(scrub);
        scrub.json_text(&mut self.params);
        if let Some(script) = &mut self.script {
            scrub.json_text(script);
        }
    }

    /// [`Invocation::scrub`] without the params, for an entry whose params were scrubbed
    /// before they became text.
    pub(crate) fn scrub_texts(&mut self, scrub: &Scrubber) {
        if scrub.is_empty() {
            return;
        }
        let texts = [&mut self.step_id, &mut self.app, &mut self.action];
        for t in texts
            .into_iter()
            .chain(self.connection.as_mut())
            .chain(self.run_id.as_mut())
        {
            let mut v = Value::String(std::mem::take(t).into());
            scrub.value(&mut v);
            *t = match v {
                Value::String(s) => s.into(),
                other => other.to_string().into(),
            };
        }
    }
}

pub(crate) use crate::json::JsonText;

/// Reserves trace sequence numbers durably (a disk store's lease), so a process that
/// resumes a killed run never reuses a `seq` the dead one may have written.
pub trait SeqLease {
    /// Reserve numbers from `next` on; the new ceiling (every `seq` below it is safe).
    fn extend(&mut self, next: u64) -> Result<u64, String>;
}

/// The live world of one simulator invocation.
pub(crate) struct World {
    pub snap: WorldSnapshot,
    /// A crash was injected inside an invocation: the engine future must be dropped.
    pub crash_pending: bool,
    /// The simulator stopped the run (a budget ran out); the message says why.
    pub halt: Option<String>,
    /// Every event, in order (JSON objects with `seq`, `event`, `atMs`).
    pub trace: Vec<Value>,
    /// Where trace events are streamed as JSON lines as they happen (`--trace FILE`), so
    /// a killed process leaves its trace up to the kill.
    pub sink: Option<Box<dyn Write>>,
    /// Whether to keep `trace` in memory (the bench turns it off).
    pub keep_trace: bool,
    /// Pending virtual-time timers, `(deadline_ms, id)`: the executor jumps the clock to
    /// the first one when every task is blocked. Ties fire by id (creation order), never
    /// by insertion into a hash.
    pub timers: BTreeSet<(u64, u64)>,
    pub next_timer: u64,
    /// SEC-1: the run's redaction sink; every trace event passes through it.
    pub scrub: Rc<Scrubber>,
    /// The run's budgets, and whether one ran out (then `halt` says which).
    pub limits: super::Limits,
    pub limit_hit: bool,
    /// Bytes of trace events so far in this process.
    pub trace_bytes: u64,
    /// The durable lease on trace sequence numbers (disk stores): an event may use a
    /// `seq` below `seq_ceiling` only (`u64::MAX` without a lease).
    pub seq_lease: Option<Box<dyn SeqLease>>,
    pub seq_ceiling: u64,
    /// Keys of `invocation_counts` changed since the last durable top-level checkpoint
    /// (tracked only when the store keeps the world, which appends just those).
    pub counts_changed: Vec<String>,
    pub track_counts: bool,
    /// SEC-1 judged on what the engine wrote (`SimOptions::judge_secrets`), and whether it
    /// stopped the run (then `halt` says where).
    pub judge: Option<Rc<crate::redact::leak::Detector>>,
    pub leaked: bool,
    /// In a replay, the step ids whose records the top-level run's stored checkpoints
    /// wrote in this simulation (every process life): what
    /// [`Report::unwritten_steps`](super::Report) is read against (D-380). `None` (nothing
    /// tracked) in any other simulation.
    pub written_steps: Option<BTreeSet<String>>,
}

impl World {
    pub(crate) fn new(snap: WorldSnapshot) -> Self {
        World {
            snap,
            crash_pending: false,
            halt: None,
            trace: Vec::new(),
            sink: None,
            keep_trace: true,
            timers: BTreeSet::new(),
            next_timer: 0,
            scrub: Rc::new(Scrubber::default()),
            limits: super::Limits::DEFAULT,
            limit_hit: false,
            trace_bytes: 0,
            seq_lease: None,
            seq_ceiling: u64::MAX,
            counts_changed: Vec::new(),
            track_counts: false,
            judge: None,
            leaked: false,
            written_steps: None,
        }
    }

    /// This world as a process dying right now would leave it, for a simulation continued
    /// from here (`sim::Simulation::crash_points`): everything but the pending timers, which belong
    /// to the engine future the crash drops (each `Sleep` removes its own on drop); the
    /// redaction sink is copied with the secret-derived values it has learned. `None`
    /// when part of it cannot be copied: a trace streamed to a sink, a durable `seq` lease.
    pub(crate) fn fork_after_crash(&self) -> Option<World> {
        if self.sink.is_some() || self.seq_lease.is_some() {
            return None;
        }
        Some(World {
            snap: self.snap.clone(),
            crash_pending: self.crash_pending,
            halt: self.halt.clone(),
            trace: self.trace.clone(),
            sink: None,
            keep_trace: self.keep_trace,
            timers: BTreeSet::new(),
            next_timer: self.next_timer,
            // What it learned so far, not what the original run goes on to learn.
            scrub: Rc::new((*self.scrub).clone()),
            limits: self.limits,
            limit_hit: self.limit_hit,
            trace_bytes: self.trace_bytes,
            seq_lease: None,
            seq_ceiling: self.seq_ceiling,
            counts_changed: self.counts_changed.clone(),
            track_counts: self.track_counts,
            judge: self.judge.clone(),
            leaked: self.leaked,
            written_steps: self.written_steps.clone(),
        })
    }

    /// A crash fault fires (`fields` say which): the whole process dies, whichever run
    /// of the tree it was in; the executor drops the engine future at its next poll.
    pub(crate) fn crash(&mut self, fields: Value) {
        self.snap.crashes += 1;
        self.crash_pending = true;
        self.event("crash", fields);
    }

    pub(crate) fn now_ms(&self) -> u64 {
        self.snap.clock_ms
    }

    /// Register a timer at `deadline_ms`; its id.
    pub(crate) fn add_timer(&mut self, deadline_ms: u64) -> u64 {
        let id = self.next_timer;
        self.next_timer += 1;
        self.timers.insert((deadline_ms, id));
        id
    }

    /// Stop the run: the engine under test wrote a secret (`message` says where).
    pub(crate) fn leak(&mut self, message: String) {
        if self.halt.is_none() {
            self.leaked = true;
            self.halt = Some(message);
        }
    }

    /// Stop the run: a budget ran out (`limit_exceeded`).
    pub(crate) fn exceed(&mut self, message: String) {
        if self.halt.is_none() {
            self.limit_hit = true;
            self.halt = Some(message);
        }
    }

    /// Jump the clock to the earliest timer (never backwards) and drop every timer that
    /// is due. `false` when no timer is pending (or the virtual-time budget ran out: then
    /// `halt` is set).
    pub(crate) fn fire_next_timer(&mut self) -> bool {
        let Some(&(deadline, _)) = self.timers.first() else {
            return false;
        };
        if deadline > EPOCH_MS.saturating_add(self.limits.virtual_ms) {
            self.exceed(format!(
                "the run's virtual time would pass its limit of {} ms",
                self.limits.virtual_ms
            ));
            return false;
        }
        self.snap.clock_ms = self.snap.clock_ms.max(deadline);
        let now = self.snap.clock_ms;
        while self.timers.first().is_some_and(|&(d, _)| d <= now) {
            self.timers.pop_first();
        }
        true
    }

    /// Whether [`World::event`] records anything (the trace is kept or streamed).
    pub(crate) fn tracing(&self) -> bool {
        self.keep_trace || self.sink.is_some()
    }

    /// Record one trace event.
    pub(crate) fn event(&mut self, event: &str, mut fields: Value) {
        if !self.tracing() {
            return;
        }
        // SEC-1: the one door of the trace, memory and file alike.
        self.scrub.value(&mut fields);
        if self.snap.seq >= self.seq_ceiling
            && let Some(lease) = &mut self.seq_lease
        {
            match lease.extend(self.snap.seq) {
                Ok(ceiling) => self.seq_ceiling = ceiling,
                Err(message) => {
                    // Never write a `seq` a killed predecessor may have used: stop instead.
                    self.halt.get_or_insert(message);
                    return;
                }
            }
        }
        let mut obj = Map::new();
        obj.insert("seq".into(), json!(self.snap.seq));
        obj.insert("event".into(), json!(event));
        obj.insert("atMs".into(), json!(self.snap.clock_ms));
        if let Value::Object(f) = fields {
            obj.extend(f);
        }
        self.snap.seq += 1;
        let value = Value::Object(obj);
        let bytes = serde_json::to_vec(&value).map_or(0, |b| b.len() as u64 + 1);
        self.trace_bytes = self.trace_bytes.saturating_add(bytes);
        if self.trace_bytes > self.limits.trace_bytes {
            // Stop recording and stop the run: the trace must not outgrow its budget.
            self.exceed(format!(
                "the trace passed its limit of {} bytes",
                self.limits.trace_bytes
            ));
            return;
        }
        if let Some(sink) = &mut self.sink {
            // A trace write failure must not change the run: the sink keeps its first
            // error and the command fails once the run is over (`--trace`: D-211).
            let _ = serde_json::to_writer(&mut *sink, &value);
            let _ = sink.write_all(b"\n");
            let _ = sink.flush();
        }
        if self.keep_trace {
            self.trace.push(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(connection: Option<&str>, run_id: Option<&str>) -> Invocation {
        Invocation {
            step_id: "fetch".into(),
            app: "http".into(),
            action: "get".into(),
            connection: connection.map(Into::into),
            attempt: 2,
            params: JsonText::new(&json!({"url": "https://x.test/s3cr3t-token", "n": 1})),
            at_ms: EPOCH_MS + 5,
            run_id: run_id.map(Into::into),
            script: None,
        }
    }

    /// D-186: the typed entry's JSON is exactly serde's (what the disk journal writes and
    /// reads back), key order included, and it reads back to the same entry.
    #[test]
    fn an_invocation_is_the_report_object_serde_writes_and_reads() {
        for (c, r) in [
            (None, None),
            (Some("conn"), None),
            (None, Some("run_child")),
        ] {
            let e = entry(c, r);
            let by_serde = serde_json::to_value(&e).expect("serializable");
            let by_hand = e.clone().into_json();
            assert_eq!(by_hand, by_serde);
            let keys: Vec<&String> = by_hand
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .collect();
            let mut want = vec![
                "stepId",
                "app",
                "action",
                "connection",
                "attempt",
                "params",
                "atMs",
            ];
            if r.is_some() {
                want.push("runId");
            }
            assert_eq!(keys, want);
            assert_eq!(by_hand["connection"], c.map_or(Value::Null, Value::from));
            let back: Invocation = serde_json::from_value(by_serde).expect("reads back");
            assert_eq!(back, e);
        }
    }

    /// SEC-1: every data field of an entry is scrubbed, as the JSON object was; a declared
    /// secret-derived params object is replaced wholly.
    #[test]
    fn every_data_field_of_an_invocation_is_scrubbed() {
        let secret = json!("s3cr3t-token");
        let scrub = Scrubber::new([&secret]);
        let mut e = entry(Some("conn-s3cr3t-token"), Some("run-s3cr3t-token"));
        e.step_id = "s3cr3t-token".into();
        e.app = "app-s3cr3t-token".into();
        e.action = "s3cr3t-token-action".into();
        e.scrub(&scrub);
        let text = serde_json::to_string(&e.clone().into_json()).expect("json");
        assert!(!text.contains("s3cr3t-token"), "{text}");
        for field in [&e.step_id, &e.app, &e.action] {
            assert!(field.contains(crate::expr::REDACTED), "{field}");
        }
        let derived = entry(None, None);
        scrub.add_derived(&derived.params.to_value());
        let mut d = derived.clone();
        d.scrub(&scrub);
        assert_eq!(d.params.to_value(), json!(crate::expr::REDACTED));
        assert_eq!((d.attempt, d.at_ms), (derived.attempt, derived.at_ms));
    }
}
