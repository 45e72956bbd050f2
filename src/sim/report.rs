//! What a simulation gives: the [`Report`] — the run as the store finally holds it, the
//! world the simulator observed, the trace — and its JSON form.

use serde_json::{Map, Value, json};

use super::scenario::Scenario;
use super::world::{self, WorldSnapshot};
use crate::model::RunState;

/// The outcome of a simulation.
#[derive(Debug, Clone)]
pub struct Report {
    /// The RunState as finally loaded from the store.
    pub run: RunState,
    pub world: WorldSnapshot,
    /// Every event, in order (empty when `keep_trace` is off).
    pub trace: Vec<Value>,
    /// D-121: the scenario's faults that did not fire, `{fault, …}` (empty when all did).
    pub unfired: Vec<Value>,
    /// In a replay, the ids of the step records in `run` that no checkpoint of this
    /// simulation wrote, in `run`'s order: records of the recording it began with that no
    /// process life rewrote (D-380; empty in any other simulation; not part of the JSON
    /// report).
    pub unwritten_steps: Vec<String>,
}

impl Report {
    /// Why a replay of an engine under test that reached this report did not replay, if
    /// it did not (D-378, D-380). The simulator's store begins a replay holding the
    /// recording it was handed, so a report the engine did not write is that recording,
    /// judged as if the engine had walked it. RFC § Replay: "The engine walks the plan";
    /// § Execution: "After every step, the engine persists a StepExecution … plus the
    /// run's updated status" — a replay persists every step it walks, one whose recorded
    /// output it reuses too. So: no checkpoint at all is not a replay (D-378), and
    /// neither is a report holding a step record no checkpoint of the replay wrote (D-380).
    pub fn not_a_replay(&self) -> Option<String> {
        if self.world.checkpoints == 0 {
            return Some("ended without writing one checkpoint: a replay walks the plan and checkpoints each step it re-executes (RFC § Replay; REPLAY-1), so a report made of the recording alone is not judged as a replay".into());
        }
        let (first, more) = self.unwritten_steps.split_first()?;
        let others = match more.len() {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        Some(format!(
            "ended with step {first:?}{others} holding a record no checkpoint of the replay wrote: a replay persists a StepExecution for every step it walks, a reused output too (RFC § Replay, § Execution; REPLAY-1), so a record left from the recording is not judged as replayed"
        ))
    }

    /// The report (issue 4 item 6): `{run, invocations, waits, checkpoints, crashes,
    /// clockMs}`, plus `calls` when the run dispatched a reroute target.
    pub fn to_json(&self) -> Value {
        self.clone().into_json()
    }

    /// [`Report::to_json`], moving the recorded entries instead of copying them.
    pub fn into_json(self) -> Value {
        let world = self.world;
        let mut m = Map::new();
        m.insert("run".into(), self.run.into_json());
        let invocations = world
            .invocations
            .into_iter()
            .map(world::Invocation::into_json);
        m.insert("invocations".into(), Value::Array(invocations.collect()));
        m.insert("waits".into(), Value::Array(world.waits));
        m.insert("checkpoints".into(), json!(world.checkpoints));
        m.insert("crashes".into(), json!(world.crashes));
        m.insert("clockMs".into(), json!(world.clock_ms));
        // Each list below only when it holds something.
        for (key, list) in [
            // Reroute targets the run dispatched.
            ("calls", world.calls),
            // CTRL-7: every suspension the run went through, and when it fired.
            ("schedules", world.schedules),
            // D-125: invocations the engine canceled (race/any losers, fail-fast).
            ("canceled", world.canceled),
            // D-121: faults this simulation did not reach (a scenario says what it did).
            ("unfiredFaults", self.unfired),
        ] {
            if !list.is_empty() {
                m.insert(key.into(), Value::Array(list));
            }
        }
        Value::Object(m)
    }
}

/// D-121: the faults of `scenario` that did not fire by the end of this simulation.
pub(super) fn unfired_faults(scenario: &Scenario, snap: &WorldSnapshot) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, n) in scenario.faults.crash_after_checkpoint.iter().enumerate() {
        if *n > snap.checkpoints {
            out.push(
                json!({"fault": "crashAfterCheckpoint", "index": i, "afterCheckpoint": n,
                            "why": format!("the run tree made {} checkpoints", snap.checkpoints)}),
            );
        }
    }
    for (i, f) in scenario.faults.crash_in_invoke.iter().enumerate() {
        if !snap.fired_invoke_faults.contains(&i) {
            out.push(json!({"fault": "crashInInvoke", "index": i, "step": f.step,
                            "attempt": f.attempt,
                            "why": "no run of the tree invoked that step with that attempt"}));
        }
    }
    if let Some(n) = scenario.cancel_after_checkpoint
        && n > snap.checkpoints
    {
        out.push(
            json!({"fault": "cancelAfterCheckpoint", "afterCheckpoint": n,
                        "why": format!("the run tree made {} checkpoints", snap.checkpoints)}),
        );
    }
    out
}
