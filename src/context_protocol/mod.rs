//! The w6w context protocol, version 1: a `WorkflowContext` across a process boundary
//! (`docs/context-protocol.md`, schemas under `docs/schemas/context/`).
//!
//! Owns: the two process seams of the conformance suite.
//! - **Engine under test** ([`suite`]): the suite *is* the engine's `WorkflowContext`. It
//!   tells a candidate engine process to run / resume / replay; every context member the
//!   engine uses is a message the suite answers from the scenario through the simulator's
//!   own host ([`crate::sim`]: scripted actions, virtual clock, faults), and the suite
//!   stores the checkpoints. The report is built from what the suite observed, never from
//!   what the candidate says; crashes are `SIGKILL`s of the candidate's process group.
//!   [`serve`] is the other end — our engine behind the protocol (`w6w-sim engine serve`).
//! - **Host under test** ([`host_seam`]): our engine runs on a candidate host process's
//!   durable state (`state.checkpoint` / `state.load`); the suite `SIGKILL`s the host after
//!   acknowledged checkpoints and checks that what it acknowledged is what loads (RUN-3/4).
//!
//! Invariant: the protocol is deterministic by construction — lockstep turns. The suite
//! sends one message; the candidate settles everything that message made runnable and says
//! `idle`, listing the calls it still waits on. Virtual time moves only while the candidate
//! is idle, so the same scenario gives the same report byte for byte. Everything at the
//! boundary is bounded ([`crate::process`]): line length, per-line and per-session deadlines, and a
//! kill that reaches the candidate's whole process group.

pub(crate) mod host_seam;
pub(crate) mod message;
pub(crate) mod salt;
pub(crate) mod serve;
pub(crate) mod shift;
pub(crate) mod suite;

use serde_json::{Value, json};

use crate::process::clip;

/// The longest line either side reads, in bytes.
pub(crate) use crate::limits::PEER_LINE_BYTES_MAX as MAX_LINE_BYTES;
pub use suite::{EngineOptions, EngineProcess};

/// The `protocol` field of the hello and the ready message.
pub(crate) const PROTOCOL: &str = "w6w-context";
/// The protocol version this crate speaks.
pub(crate) const VERSION: u64 = 1;

/// The capability names a candidate engine may declare in its `ready` message (the suite
/// reports cases outside a declared profile as not applicable; see docs/context-protocol.md).
pub(crate) const CAPABILITIES: &[&str] = &[
    "ops",
    "schedule",
    "strands",
    "controls",
    "call",
    "documents",
    "meta",
    "extended-dialect",
    "signal",
    "templates",
    "chains",
    "envelope",
    "workflow.retry",
    "workflow.onError",
    "ext.retryOn",
    "ext.maxDelayMs",
    "ext.sensitiveOutput",
    "reference-vocabulary",
];

/// The hello the suite sends a candidate first (`role`: `engine` or `host`).
pub(crate) fn hello(role: &str) -> Value {
    json!({"type": "hello", "protocol": PROTOCOL, "version": VERSION, "role": role,
           "suite": {"name": "w6w-sim", "version": env!("CARGO_PKG_VERSION")}})
}

/// A candidate's `ready` answer to the hello, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ready {
    /// `name version` for reports.
    pub name: String,
    /// What the candidate declared it supports (names from [`CAPABILITIES`]; unknown
    /// names are kept so a newer candidate is not refused).
    pub capabilities: Vec<String>,
}

/// Check a `ready` line.
pub(crate) fn parse_ready(line: &str) -> Result<Ready, String> {
    let v: Value = serde_json::from_str(line)
        .map_err(|e| format!("the first line is not JSON ({e}): {}", clip(line)))?;
    if v.get("protocol").and_then(Value::as_str) != Some(PROTOCOL)
        || v.get("type").and_then(Value::as_str) != Some("ready")
    {
        return Err(format!(
            "expected {{\"type\": \"ready\", \"protocol\": \"{PROTOCOL}\", …}}, got {}",
            clip(line)
        ));
    }
    if let Some(e) = v.get("error") {
        return Err(format!("the candidate refused the hello: {e}"));
    }
    if v.get("version").and_then(Value::as_u64) != Some(VERSION) {
        return Err(format!(
            "the candidate speaks version {}, this suite speaks {VERSION}",
            v.get("version")
                .map_or_else(|| "nothing".into(), Value::to_string)
        ));
    }
    let imp = v.get("implementation");
    let Some(name) = imp
        .and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    else {
        return Err("the ready message needs \"implementation\": {\"name\": …}".into());
    };
    let name = match imp.and_then(|i| i.get("version")).and_then(Value::as_str) {
        Some(version) if !version.is_empty() => format!("{name} {version}"),
        _ => name.to_owned(),
    };
    let capabilities = match v.get("capabilities") {
        // No declaration: judged on everything (as an adapter ack without one).
        None | Some(Value::Null) => vec!["*".to_owned()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|c| {
                c.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| format!("capabilities must be strings, got {c}"))
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("capabilities must be an array, got {other}")),
    };
    Ok(Ready { name, capabilities })
}

/// The `ready` message an implementation answers the hello with.
pub(crate) fn ready(name: &str, version: &str, capabilities: &[&str]) -> Value {
    json!({"type": "ready", "protocol": PROTOCOL, "version": VERSION,
           "implementation": {"name": name, "version": version},
           "capabilities": capabilities})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_messages_are_checked() {
        let ok = ready("js-engine", "0.1", &["strands"]).to_string();
        assert_eq!(
            parse_ready(&ok),
            Ok(Ready {
                name: "js-engine 0.1".into(),
                capabilities: vec!["strands".into()]
            })
        );
        for bad in [
            "nope",
            r#"{"type":"ready","protocol":"w6w-context","version":2,"implementation":{"name":"x"}}"#,
            r#"{"type":"ready","protocol":"w6w-adapter","version":1,"implementation":{"name":"x"}}"#,
            r#"{"type":"ready","protocol":"w6w-context","version":1,"implementation":{}}"#,
            r#"{"type":"ready","protocol":"w6w-context","version":1,"implementation":{"name":"x"},"capabilities":[1]}"#,
        ] {
            assert!(parse_ready(bad).is_err(), "{bad}");
        }
    }
}

#[cfg(test)]
mod reference_profile {
    use crate::conformance::capability::{CAPABILITIES as NAMES, Capabilities};

    /// The reference engine's `ready` declares every capability there is: a name added to
    /// the suite and forgotten here would turn the reference's own cases not applicable.
    #[test]
    fn the_reference_declares_every_capability() {
        // Every engine runs and replays: the ready list names what lies beyond that core.
        let core = ["op.run", "op.replay"];
        let declared =
            Capabilities::from_names(super::CAPABILITIES.iter().chain(&core)).expect("known names");
        for (name, _) in NAMES {
            assert!(
                declared.supports(name),
                "{name} missing from the ready list"
            );
        }
    }
}
