//! Continuing a run a previous process left in a store ([`super::Simulation::resume`]):
//! the run as recorded, refused when it came from another document ([`check_source`],
//! D-260), the newest world its journals hold (D-122), and how the new process life
//! begins — a fired schedule's token, or a restart after a real kill.

use serde_json::{Value, json};

use super::drive::Sim;
use super::driver::Mode;
use super::host::{self, CALL_DEPTH_MAX};
use super::{SimError, SimOptions, Store, StoredRun, WorldSnapshot};
use crate::engine::EngineError;
use crate::model::RunStatus;

/// Run `run_id` as `store` holds it, refused when it was started from another document
/// than `options.source`, and the world to go on from.
pub(super) fn recorded(
    store: &dyn Store,
    run_id: &str,
    options: &SimOptions,
) -> Result<(StoredRun, WorldSnapshot), SimError> {
    let stored = store
        .load(run_id)
        .map_err(|e| SimError::Store(e.0))?
        .ok_or_else(|| SimError::Engine(EngineError::RunNotFound(run_id.to_owned())))?;
    check_source(
        run_id,
        "resumed",
        stored.source.as_ref(),
        options.source.as_ref(),
    )?;
    let snap = latest_world(store, &stored, 0)
        .or_else(|| stored.world.clone())
        .unwrap_or_default();
    Ok((stored, snap))
}

/// Drive the recorded run `stored` on: with `token`, the schedule of its `wait` fires;
/// without, the previous process died and this one resumes from the last durable
/// checkpoint.
pub(super) fn continue_run(
    sim: &Sim<'_>,
    stored: &StoredRun,
    run_id: &str,
    token: Option<&str>,
) -> Result<(), SimError> {
    if let Some(token) = token {
        let mut w = sim.world.borrow_mut();
        w.event("resume", json!({"token": token}));
        // D-125: a manual resume is the schedule firing: the clock moves to the time the
        // wait was scheduled for (never backwards; an unknown token leaves it, and the
        // engine refuses the token).
        if let Some(&at_ms) = w.snap.fire_times.get(token) {
            w.snap.clock_ms = w.snap.clock_ms.max(at_ms);
            w.event(
                "schedule_fired",
                json!({"token": token, "note": "resume --token: the virtual clock moves to the wait's scheduled time"}),
            );
        }
        drop(w);
        return sim.drive(run_id, Mode::ResumeToken(token.to_owned()));
    }
    if !stored.state.status.is_terminal() && stored.state.status != RunStatus::Queued {
        let mut w = sim.world.borrow_mut();
        w.snap.crashes += 1;
        let after = w.snap.checkpoints;
        w.event(
            "process_restart",
            json!({"note": "the previous process stopped before the run ended; resuming from its last durable checkpoint",
                   "afterCheckpoint": after}),
        );
    }
    sim.drive(run_id, Mode::Resume)
}

/// D-260: a run continues only from the document that started it — a dialect run from
/// the same document (and the same import of it), a w6w run from a w6w workflow. Anything
/// else is refused before anything runs, never silently mixed.
pub fn check_source(
    run_id: &str,
    action: &'static str,
    recorded: Option<&Value>,
    given: Option<&Value>,
) -> Result<(), SimError> {
    let describe = |s: Option<&Value>| match s {
        None => "a w6w workflow".to_owned(),
        Some(v) => format!(
            "the {} document with sha256 {}",
            v.get("dialect").and_then(Value::as_str).unwrap_or("?"),
            v.get("documentSha256")
                .and_then(Value::as_str)
                .unwrap_or("?")
        ),
    };
    if recorded == given {
        return Ok(());
    }
    let same_document = recorded.and_then(|r| r.get("documentSha256"))
        == given.and_then(|g| g.get("documentSha256"))
        && recorded.is_some()
        && given.is_some();
    let message = if same_document {
        "it was started from this document imported with another manifest (the scenario's `manifest`); use the manifest it started with".to_owned()
    } else {
        format!(
            "it was started from {}, not {}; give the document it started with",
            describe(recorded),
            describe(given)
        )
    };
    Err(SimError::Engine(EngineError::NotResumable {
        run_id: run_id.to_owned(),
        action,
        message,
    }))
}

/// D-122: the newest world snapshot among `stored` and the child runs it dispatched
/// (a process killed inside a child last wrote the world into the child's journal).
fn latest_world(store: &dyn Store, stored: &StoredRun, depth: u32) -> Option<WorldSnapshot> {
    let mut best = stored.world.clone();
    if depth > CALL_DEPTH_MAX {
        return best;
    }
    let mut keys = vec!["reroute".to_owned()];
    dispatch_ids(
        &serde_json::to_value(&stored.state).unwrap_or_default(),
        &mut keys,
    );
    for key in keys {
        let child = host::child_run_id(&stored.state.run_id, &key);
        let Ok(Some(c)) = store.load(&child) else {
            continue;
        };
        if let Some(w) = latest_world(store, &c, depth + 1)
            && best
                .as_ref()
                .is_none_or(|b| (w.checkpoints, w.seq) > (b.checkpoints, b.seq))
        {
            best = Some(w);
        }
    }
    best
}

/// Every `dispatchId` recorded anywhere in a run state (call steps, in frames too).
fn dispatch_ids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(k)) = m.get("dispatchId")
                && !out.contains(k)
            {
                out.push(k.clone());
            }
            m.values().for_each(|x| dispatch_ids(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| dispatch_ids(x, out)),
        _ => {}
    }
}
