//! The host seam: our engine runs on a candidate host process's durable state.
//!
//! Owns: [`HostProcess`], a `conformance::HostAdapter` whose stores are a host process
//! spoken to over the context protocol (`state.checkpoint` / `state.load`), and the real
//! crash: at every crash point of a scenario the suite `SIGKILL`s the host's process group
//! and starts a fresh process. Invariant: the suite keeps its own fold of every checkpoint
//! the host *acknowledged*; whenever the host loads a run, it must load exactly that state
//! (RUN-3: durable before acknowledging; RUN-4: the restarted process resumes from it). A
//! host that acknowledges before persisting, or buffers writes in memory, fails with an
//! error naming RUN-3/RUN-4.
//!
//! Invocations, the clock and the fault plan stay the suite's (the simulator's scripted
//! actions answer every invoke); the host owns only what the RFC makes it own here:
//! durability. Each store is a fresh `namespace`, so cases never see each other's runs.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::message::FromHost;
use crate::conformance::HostAdapter;
use crate::host::{RunStore, ScheduleEntry, StoreError as HostStoreError, StoreFactory};
use crate::json::json_eq;
use crate::model::{PatchField, RunState, RunStatePatch};
use crate::process::{Deadline, Peer, clip};
use crate::sim::StoreError;

/// The live host process, shared by the stores of one suite run.
struct Conn {
    argv: Vec<String>,
    timeout: Duration,
    peer: Option<Peer>,
    name: Option<String>,
    /// The `ready` message's `capabilities` (empty: none declared).
    capabilities: Vec<String>,
    next_id: u64,
    kills: u64,
    /// The suite run's wall-clock bound (`--deadline`).
    deadline: Deadline,
}

/// How a failed handshake's message starts: such a host started, so it is judged.
const HANDSHAKE: &str = "host handshake: ";

impl Conn {
    fn peer(&mut self) -> Result<&mut Peer, StoreError> {
        if self.deadline.passed() {
            self.kill();
            return Err(StoreError(format!(
                "the run's overall deadline of {} s passed; the host is not asked again \
                 (--deadline)",
                self.deadline.total().as_secs()
            )));
        }
        if self.peer.is_none() {
            let mut peer =
                Peer::spawn(&self.argv, "the host").map_err(|e| StoreError(e.to_string()))?;
            let ready = peer
                .handshake(
                    &super::hello("host"),
                    self.deadline.clamp(self.timeout),
                    "waiting for the host's ready message",
                    super::parse_ready,
                )
                .map_err(|e| StoreError(format!("{HANDSHAKE}{e}")))?;
            self.name = Some(ready.name);
            self.capabilities = ready.capabilities;
            self.next_id = 0;
            self.peer = Some(peer);
        }
        self.peer
            .as_mut()
            .ok_or_else(|| StoreError("the host is not running".into()))
    }

    fn call(&mut self, member: &str, args: Value) -> Result<Value, StoreError> {
        self.next_id += 1;
        let id = self.next_id;
        let timeout = self.deadline.clamp(self.timeout);
        let peer = self.peer()?;
        let line = if peer.send(&json!({"type": "call", "id": id, "member": member, "args": args}))
        {
            peer.recv(
                timeout,
                &format!("waiting for the host's answer to {member} (call {id})"),
            )
            .map_err(|e| e.to_string())
        } else {
            Err(format!(
                "the host closed its stdin before call {id}{}",
                peer.stderr_note()
            ))
        };
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                self.kill();
                return Err(StoreError(format!("the host process: {e}")));
            }
        };
        match serde_json::from_str::<FromHost>(&line) {
            Ok(FromHost::Answer { id: got, ok, error }) if got == id => match error {
                Some(e) => Err(StoreError(format!("the host refused {member}: {e}"))),
                None => Ok(ok),
            },
            _ => {
                self.kill();
                Err(StoreError(format!(
                    "the host answered call {id} with {}",
                    clip(&line)
                )))
            }
        }
    }

    fn kill(&mut self) {
        if let Some(mut peer) = self.peer.take() {
            peer.kill();
        }
    }
}

/// A store kept by the host process, checked against what it acknowledged.
struct ProcessStore {
    conn: Rc<RefCell<Conn>>,
    namespace: String,
    /// The suite's fold of every checkpoint the host acknowledged, per run (shared by every
    /// store opened on this namespace, across kills).
    acked: Rc<RefCell<BTreeMap<String, RunState>>>,
}

/// The host process failed to answer: the host contract's error.
fn unavailable(e: StoreError) -> HostStoreError {
    HostStoreError::Unavailable(e.0)
}

/// The whole state as one patch (a replay seeds its store with the original run).
fn whole(state: &RunState) -> RunStatePatch {
    RunStatePatch {
        run_id: state.run_id.clone(),
        workflow_id: Some(state.workflow_id.clone()),
        reset_steps: true,
        status: Some(state.status),
        variables: Some(state.variables.clone()),
        output: state.output.clone(),
        error: state.error.clone(),
        clear: vec![
            PatchField::Output,
            PatchField::Error,
            PatchField::StepErrors,
        ],
        steps: state.steps.clone(),
        step_errors: state.step_errors.clone(),
        extra: state.extra.clone(),
        frames: state
            .frames
            .iter()
            .map(|(k, f)| (k.clone(), Some(Arc::clone(f))))
            .collect(),
    }
}

impl RunStore for ProcessStore {
    fn checkpoint(&mut self, patch: &RunStatePatch) -> Result<(), HostStoreError> {
        self.conn
            .borrow_mut()
            .call(
                "state.checkpoint",
                json!({"namespace": self.namespace, "patch": patch}),
            )
            .map_err(unavailable)?;
        self.acked
            .borrow_mut()
            .entry(patch.run_id.clone())
            .or_insert_with(|| {
                RunState::new(
                    &patch.run_id,
                    patch.workflow_id.as_deref().unwrap_or_default(),
                )
            })
            .apply(patch);
        Ok(())
    }

    fn put(&mut self, state: &RunState) -> Result<(), HostStoreError> {
        self.acked.borrow_mut().remove(&state.run_id);
        self.checkpoint(&whole(state))
    }

    fn load(&self, run_id: &str) -> Result<Option<RunState>, HostStoreError> {
        let got = self
            .conn
            .borrow_mut()
            .call(
                "state.load",
                json!({"namespace": self.namespace, "runId": run_id}),
            )
            .map_err(unavailable)?;
        let loaded: Option<RunState> = match got {
            Value::Null => None,
            v => Some(serde_json::from_value(v).map_err(|e| {
                HostStoreError::Corrupt(format!("the host's state.load answered no RunState: {e}"))
            })?),
        };
        if let Some(acked) = self.acked.borrow().get(run_id) {
            let want = serde_json::to_value(acked).unwrap_or(Value::Null);
            let got = loaded
                .as_ref()
                .and_then(|l| serde_json::to_value(l).ok())
                .unwrap_or(Value::Null);
            if !json_eq(&want, &got) {
                let steps = |v: &Value| {
                    v.get("steps")
                        .and_then(Value::as_object)
                        .map_or(0, serde_json::Map::len)
                };
                return Err(HostStoreError::Corrupt(format!(
                    "RUN-3/RUN-4: the host loaded a state that is not the last one it acknowledged \
                     (acknowledged: status {} with {} step records; loaded: {}) — a checkpoint must \
                     be durable before state.checkpoint returns, and survive a SIGKILL",
                    want.get("status").unwrap_or(&Value::Null),
                    steps(&want),
                    if got.is_null() {
                        "nothing".to_owned()
                    } else {
                        format!(
                            "status {} with {} step records",
                            got.get("status").unwrap_or(&Value::Null),
                            steps(&got)
                        )
                    }
                )));
            }
        }
        Ok(loaded)
    }

    /// CTRL-7 (D-103): the host keeps the schedule, durably before it answers.
    fn schedule(&mut self, entry: &ScheduleEntry) -> Result<(), HostStoreError> {
        self.conn
            .borrow_mut()
            .call(
                "schedule",
                json!({"namespace": self.namespace, "runId": entry.run_id,
                       "resumeToken": entry.resume_token, "fireAtMs": entry.fire_at_ms}),
            )
            .map(drop)
            .map_err(|e| member_error(e, "schedule"))
    }

    fn schedules(&self, run_id: &str) -> Result<Vec<ScheduleEntry>, HostStoreError> {
        let got = self
            .conn
            .borrow_mut()
            .call(
                "schedule.pending",
                json!({"namespace": self.namespace, "runId": run_id}),
            )
            .map_err(|e| member_error(e, "schedule"))?;
        serde_json::from_value(got).map_err(|e| {
            HostStoreError::Corrupt(format!(
                "the host's schedule.pending answered no list of {{runId, resumeToken, fireAtMs}}: {e}"
            ))
        })
    }

    fn unschedule(&mut self, run_id: &str, resume_token: &str) -> Result<(), HostStoreError> {
        self.conn
            .borrow_mut()
            .call(
                "schedule.fired",
                json!({"namespace": self.namespace, "runId": run_id, "resumeToken": resume_token}),
            )
            .map(drop)
            .map_err(|e| member_error(e, "schedule"))
    }
}

/// A refused schedule member: `unsupported_member` means the host keeps no schedules.
fn member_error(e: StoreError, member: &'static str) -> HostStoreError {
    if e.0.contains("\"unsupported_member\"") {
        HostStoreError::Unsupported(member)
    } else {
        unavailable(e)
    }
}

/// A candidate host process as a [`HostAdapter`]: `w6w-sim conformance --host 'CMD'`.
pub struct HostProcess {
    command: String,
    conn: Rc<RefCell<Conn>>,
    stores: u64,
    salt: String,
}

impl HostProcess {
    /// Parse `command` and start the host (`Err`: it cannot be parsed or started).
    pub fn start(command: &str, timeout: Duration) -> Result<Self, String> {
        let argv = crate::conformance::split_command(command)
            .map_err(|e| format!("cannot parse {command:?}: {e}"))?;
        let conn = Conn {
            argv,
            timeout,
            peer: None,
            name: None,
            capabilities: Vec::new(),
            next_id: 0,
            kills: 0,
            deadline: Deadline::after(None),
        };
        let conn = Rc::new(RefCell::new(conn));
        // A host that cannot be started at all is the caller's error (exit 2). One that
        // starts but fails its handshake is a broken candidate: every case that needs it
        // fails naming the handshake, as at the adapter and engine seams (D-376).
        match conn.borrow_mut().peer() {
            Err(e) if !e.0.starts_with(HANDSHAKE) => return Err(e.0),
            _ => {}
        }
        let salt = {
            use std::hash::{BuildHasher, Hasher};
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u8(1);
            format!("{:08x}", h.finish() & 0xffff_ffff)
        };
        Ok(HostProcess {
            command: command.to_owned(),
            conn,
            stores: 0,
            salt,
        })
    }

    /// Bound the whole suite run against this host to `total` of wall-clock time from
    /// now (`--deadline`; `None`: unbounded, the default): once it passes the host is
    /// killed and every later case fails at once, naming it.
    pub fn with_deadline(self, total: Option<Duration>) -> Self {
        self.conn.borrow_mut().deadline = Deadline::after(total);
        self
    }

    /// How many times the suite killed the host at a crash point.
    pub fn kills(&self) -> u64 {
        self.conn.borrow().kills
    }
}

impl HostAdapter for HostProcess {
    fn name(&self) -> String {
        self.conn
            .borrow()
            .name
            .clone()
            .unwrap_or_else(|| self.command.clone())
    }

    /// The `ready` message's `capabilities` (e.g. `["*", "-schedule"]` for a host that
    /// keeps no schedules); everything when it declared none. Unknown names are ignored.
    fn capabilities(&self) -> crate::conformance::Capabilities {
        let declared = self.conn.borrow().capabilities.clone();
        if declared.is_empty() {
            return crate::conformance::Capabilities::all();
        }
        crate::conformance::Capabilities::from_names(declared.into_iter().filter(|n| {
            n == "*" || crate::conformance::capability::is_capability(n.trim_start_matches('-'))
        }))
        .unwrap_or_else(|_| crate::conformance::Capabilities::all())
    }

    /// One namespace per run. The suite reopens the store after every crash point (and
    /// once more before it reads the report): a reopen is a real crash — the host's process
    /// group gets `SIGKILL` and a fresh process starts, which must load what was
    /// acknowledged.
    fn storage(&mut self) -> Result<Box<dyn StoreFactory>, HostStoreError> {
        self.stores += 1;
        let conn = Rc::clone(&self.conn);
        let namespace = format!("s{}-{}", self.stores, self.salt);
        let acked = Rc::new(RefCell::new(BTreeMap::new()));
        let mut opened = false;
        Ok(Box::new(
            move || -> Result<Box<dyn RunStore>, HostStoreError> {
                if opened {
                    let mut c = conn.borrow_mut();
                    c.kills += 1;
                    c.kill();
                }
                opened = true;
                conn.borrow_mut().peer().map_err(unavailable)?;
                Ok(Box::new(ProcessStore {
                    conn: Rc::clone(&conn),
                    namespace: namespace.clone(),
                    acked: Rc::clone(&acked),
                }))
            },
        ))
    }
}
