//! Checkpoint bookkeeping: every state change is a [`RunStatePatch`] (RUN-2).
//!
//! Owns: the engine's mirror of the durable RunState, and where a step's record lives
//! ([`Frame`]). Invariant: the mirror changes only by applying a patch *after* the host's
//! `checkpoint` returned (RUN-3), so the engine never acts on a state the host could lose;
//! checkpoints are serialized — one in flight, in completion order (FAN-5) — by one async
//! lock that every commit takes.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::EngineError;
use crate::host::WorkflowContext;
use crate::json::JsonText;
use crate::model::{FRAME_PREFIX, FrameRecords, RunState, RunStatePatch, StepError, StepExecution};

/// SEC-1 taint: a record whose output is secret-derived wholly carries `"secretDerived":
/// true` — a control or wait whose params read a secret or a secret-derived value (the
/// engine computed it), or an app step whose action the host declares sensitive (D-275).
/// Its output (and error message, and any data `extra` such as a wait's `scheduledFor`) is
/// recorded as `"[redacted]"` wholly; the live value still reaches the scope, which marks
/// `steps.<id>` tainted so everything computed from it is tainted too. The flag is durable,
/// so a resumed run re-taints the same scope entries. Any other app step's output is
/// tainted only where it holds secret material (`taint::OUTPUT_TAINT`, D-274).
pub(crate) const SECRET_DERIVED: &str = "secretDerived";

/// Mark `record` secret-derived when its resolved params carry any secret path.
pub(crate) fn mark_secret_derived(record: &mut StepExecution, resolved: &crate::expr::Resolved) {
    if !resolved.secret_paths.is_empty() {
        record
            .extra
            .insert(SECRET_DERIVED.into(), Value::Bool(true));
    }
}

/// Whether `record` is secret-derived (see [`SECRET_DERIVED`]).
pub(crate) fn is_secret_derived(record: &StepExecution) -> bool {
    record.extra.get(SECRET_DERIVED) == Some(&Value::Bool(true))
}

/// The recorded form of a record: a secret-derived one's data replaced by `"[redacted]"`
/// wholly, any other output's secret references by `"[redacted]"` (D-112).
pub(crate) fn redact_record(record: &mut StepExecution) {
    // D-112: an output's secret references are recorded as "[redacted]".
    super::sealed::display(record);
    if !is_secret_derived(record) {
        return;
    }
    let redacted = || Value::String(crate::expr::REDACTED.to_owned());
    if let Some(out) = &mut record.output
        && !out.is_null()
    {
        *out = JsonText::new(&redacted());
    }
    if let Some(e) = &mut record.error {
        e.message = crate::expr::REDACTED.to_owned();
    }
    if let Some(v) = record.extra.get_mut("scheduledFor") {
        *v = redacted();
    }
}

/// Where a walk's step records live: the run's `steps` (the main graph), or one sub-block
/// instance's frame ([`RunState::frames`]) while its control runs. A control's terminal
/// record folds its frames into `iterations` / `branches` and clears them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    /// `None` for the main graph; else the frame's key, e.g. `frame:/loop.iterations[3]`.
    key: Option<String>,
}

impl Frame {
    pub(crate) fn main() -> Self {
        Frame { key: None }
    }

    /// The frame's key (`""`: the main graph), which a sealed output is bound to (D-251).
    pub(crate) fn key(&self) -> &str {
        self.key.as_deref().unwrap_or_default()
    }

    /// Whether this is the main graph's frame (not a sub-block instance's).
    pub(crate) fn is_main(&self) -> bool {
        self.key.is_none()
    }

    /// The frames of the `n` instances (`kind` = `iterations` / `branches`) of control `id`.
    pub(crate) fn children(&self, id: &str, kind: &str, n: usize) -> Vec<Frame> {
        let prefix = self.child_prefix(id);
        let mut digits = itoa::Buffer::new();
        (0..n)
            .map(|index| {
                // `{prefix}{kind}[{index}]`, the index written by `itoa` (what `fmt`
                // writes, without its machinery: one key per foreach item).
                let index = digits.format(index);
                let mut key = String::with_capacity(prefix.len() + kind.len() + index.len() + 2);
                key.push_str(&prefix);
                key.push_str(kind);
                key.push('[');
                key.push_str(index);
                key.push(']');
                Frame { key: Some(key) }
            })
            .collect()
    }

    /// The prefix of every frame (nested ones included) that control `id` owns.
    pub(crate) fn child_prefix(&self, id: &str) -> String {
        match &self.key {
            None => format!("{FRAME_PREFIX}/{id}."),
            Some(k) => format!("{k}/{id}."),
        }
    }
}

/// A frame's records as the mirror holds them: typed (every frame this crate wrote), or
/// the JSON a store gave back that typed records would not reproduce (D-188).
#[derive(Debug)]
pub(crate) enum FrameView {
    Typed(Arc<FrameRecords>),
    Json(Map<String, Value>),
}

/// What one step-record commit carries besides the record.
#[derive(Debug, Default)]
pub(crate) struct Extras {
    /// ERR-3 and friends: failures kept in the run's end state.
    pub(crate) step_errors: Vec<StepError>,
    /// Run-level `extra` keys to set (`null` removes).
    pub(crate) extra: Map<String, Value>,
    /// Remove every frame with one of these prefixes (a control's frames).
    pub(crate) clear_prefixes: Vec<String>,
}

#[derive(Debug)]
pub(crate) struct Journal {
    state: RefCell<RunState>,
    /// The last folded patch, emptied with its run id and capacity kept: the next
    /// checkpoint's patch (D-186).
    spare: RefCell<Option<RunStatePatch>>,
    // FAN-5: one checkpoint in flight; tokio's mutex is FIFO, so completion order holds.
    lock: tokio::sync::Mutex<()>,
    wait_seq: Cell<u64>,
    /// D-120: the last `call<n>` dispatch key minted in this run (`extra.callSeq`).
    call_seq: Cell<u64>,
    /// SEC-1 (D-274): the run's secrets in every form, built when a record is first sealed.
    detector: std::cell::OnceCell<crate::redact::leak::Detector>,
}

impl Journal {
    pub(crate) fn new(state: RunState) -> Self {
        let wait_seq = state
            .extra
            .get("waitSeq")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let call_seq = state
            .extra
            .get("callSeq")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        Journal {
            state: RefCell::new(state),
            spare: RefCell::new(None),
            lock: tokio::sync::Mutex::new(()),
            wait_seq: Cell::new(wait_seq),
            call_seq: Cell::new(call_seq),
            detector: std::cell::OnceCell::new(),
        }
    }

    /// The run's `secrets` in every form a step output could hold them in (D-274). The
    /// host's secrets do not change during a run; the first call builds it.
    pub(crate) fn detector(&self, secrets: &Map<String, Value>) -> &crate::redact::leak::Detector {
        self.detector
            .get_or_init(|| crate::redact::leak::Detector::new(secrets.values()))
    }

    /// A patch for this run with nothing set yet.
    pub(crate) fn patch(&self) -> RunStatePatch {
        let state = self.state.borrow();
        match self.spare.take() {
            Some(spare) if spare.run_id == state.run_id => spare,
            _ => RunStatePatch {
                run_id: state.run_id.clone(),
                ..RunStatePatch::default()
            },
        }
    }

    /// Fold a patch the host made durable into the mirror; keep it, emptied, for the next.
    fn fold(&self, mut patch: RunStatePatch) {
        self.state.borrow_mut().apply_draining(&mut patch);
        self.spare.replace(Some(patch));
    }

    /// Make `patch` durable through the host, then fold it into the mirror.
    pub(crate) async fn commit<C: WorkflowContext>(
        &self,
        ctx: &C,
        patch: RunStatePatch,
    ) -> Result<(), EngineError> {
        let _one_in_flight = self.lock.lock().await;
        ctx.checkpoint(&patch).await?;
        self.fold(patch);
        Ok(())
    }

    /// Commit one step record into `frame`, with its consequences, as one checkpoint.
    /// The frame object is read and rebuilt under the lock, so two steps of one frame
    /// committing at once never lose each other's record.
    pub(crate) async fn commit_step<C: WorkflowContext>(
        &self,
        ctx: &C,
        frame: &Frame,
        mut record: StepExecution,
        extras: Extras,
    ) -> Result<(), EngineError> {
        redact_record(&mut record); // SEC-1: a secret-derived record is recorded redacted
        let _one_in_flight = self.lock.lock().await;
        let mut patch = self.patch();
        {
            let state = self.state.borrow();
            for prefix in &extras.clear_prefixes {
                let owned = |k: &&String| k.starts_with(prefix.as_str());
                for key in state.frames.keys().filter(owned) {
                    patch.frames.insert(key.clone(), None);
                }
                // A frame key left as JSON (not one this crate wrote) goes too.
                for key in state.extra.keys().filter(owned) {
                    patch.extra.insert(key.clone(), Value::Null);
                }
            }
            let record = Arc::new(record);
            match &frame.key {
                None => {
                    patch.steps.insert(record.step_id.clone(), record);
                }
                Some(key) => match state.extra.get(key) {
                    // D-188: a frame the store gave back as JSON (not what typed records
                    // write) is upserted as JSON, its other members kept verbatim.
                    Some(Value::Object(json)) => {
                        let mut object = json.clone();
                        let step_id = record.step_id.clone();
                        object.insert(step_id, Arc::unwrap_or_clone(record).into_json());
                        patch.extra.insert(key.clone(), Value::Object(object));
                    }
                    _ => {
                        // The frame with this record set (upsert, order kept): the others
                        // are shared, not copied.
                        let mut records = state
                            .frames
                            .get(key)
                            .map_or_else(FrameRecords::default, |f| (**f).clone());
                        // A step's second checkpoint replaces its first: no new key.
                        match records.get_mut(&record.step_id) {
                            Some(slot) => *slot = record,
                            None => {
                                records.insert(record.step_id.clone(), record);
                            }
                        }
                        patch.frames.insert(key.clone(), Some(Arc::new(records)));
                    }
                },
            }
        }
        patch.step_errors = extras.step_errors;
        patch.extra.extend(extras.extra);
        ctx.checkpoint(&patch).await?;
        self.fold(patch);
        Ok(())
    }

    /// The record of `step_id` in `frame`, if one was checkpointed.
    pub(crate) fn lookup(&self, frame: &Frame, step_id: &str) -> Option<Arc<StepExecution>> {
        let Some(key) = &frame.key else {
            return self.step(step_id);
        };
        let state = self.state.borrow();
        if let Some(records) = state.frames.get(key) {
            return records.get(step_id).cloned();
        }
        // D-188: a frame kept as JSON; its record read as it always was.
        let json = state.extra.get(key)?.get(step_id)?;
        StepExecution::deserialize(json).ok().map(Arc::new)
    }

    /// Every record of `frame`, in checkpoint order (none for the main graph's).
    pub(crate) fn frame_records(&self, frame: &Frame) -> Option<FrameView> {
        let key = frame.key.as_ref()?;
        let state = self.state.borrow();
        if let Some(records) = state.frames.get(key) {
            return Some(FrameView::Typed(Arc::clone(records)));
        }
        let json = state.extra.get(key)?.as_object()?;
        Some(FrameView::Json(json.clone()))
    }

    /// CTRL-7: the next wait sequence number (part of a resume token; persisted as
    /// `extra.waitSeq` by the wait's own checkpoint).
    /// D-120: the next call dispatch number (persist it as `extra.callSeq`).
    pub(crate) fn next_call_seq(&self) -> u64 {
        let n = self.call_seq.get() + 1;
        self.call_seq.set(n);
        n
    }

    pub(crate) fn next_wait_seq(&self) -> u64 {
        let n = self.wait_seq.get() + 1;
        self.wait_seq.set(n);
        n
    }

    /// The record of `step_id` in the main graph, shared with the state (D-182).
    pub(crate) fn step(&self, step_id: &str) -> Option<Arc<StepExecution>> {
        self.state.borrow().steps.get(step_id).cloned()
    }

    pub(crate) fn variables(&self) -> Value {
        Value::Object(self.state.borrow().variables.clone())
    }

    pub(crate) fn extra(&self, key: &str) -> Option<Value> {
        self.state.borrow().extra.get(key).cloned()
    }

    pub(crate) fn run_id(&self) -> String {
        self.state.borrow().run_id.clone()
    }

    /// Read the mirror in place (a whole-state copy is O(run)).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&RunState) -> T) -> T {
        f(&self.state.borrow())
    }

    pub(crate) fn into_state(self) -> RunState {
        self.state.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::Frame;

    /// A frame key is `{prefix}{kind}[{index}]`, as `fmt` wrote it: the key a store reads
    /// back and a resumed run looks its records up by (D-188), for every number of digits.
    #[test]
    fn child_frame_keys_name_the_control_kind_and_index() {
        let keys = |f: &Frame, n| -> Vec<String> {
            f.children("loop", "iterations", n)
                .into_iter()
                .filter_map(|c| c.key)
                .collect()
        };
        let main = keys(&Frame::main(), 12_346);
        for index in [0, 9, 10, 99, 100, 12_345] {
            assert_eq!(main[index], format!("frame:/loop.iterations[{index}]"));
        }
        let outer = Frame {
            key: Some("frame:/par.branches[2]".to_owned()),
        };
        assert_eq!(
            keys(&outer, 11)[10],
            "frame:/par.branches[2]/loop.iterations[10]"
        );
    }
}
