//! Generated workflows and scenarios, checked against an independent model (issue 6
//! item 4): `w6w-sim conformance --generate N --seed S`.
//!
//! Owns: a tiny seeded PRNG ([`SplitMix64`]), the generator of random DAG workflows with
//! scripted scenarios ([`Generated`]), the model of the semantics written out naively and
//! independently of the engine ([`Generated::model`]), the property check over op-level
//! responses ([`check`], so any [`Adapter`] — in process, a process, a mutant — is checked),
//! and a greedy shrinker ([`shrink`]). Refuses to know how the adapter runs anything.
//!
//! Workflow `i` of a batch seeded `S` is generated from seed `S + i` alone, so
//! `--generate 1 --seed S+i` reproduces it. Properties, per workflow:
//! - **model**: run status, each step's status, attempt and number of invocations, the run
//!   error's step and the stepErrors are what retry classification (RETRY-1…3), onError
//!   (ERR-1…3) and edge routing (ERR-4…6, PLAN-5) allow;
//! - **crash**: a crash right after checkpoint k, for every k the crash-free run made (up
//!   to [`CRASH_POINTS_MAX`]), ends in the same RunState (RUN-3, RUN-4);
//! - **replay**: replaying the finished run gives the same status, outputs and run output
//!   with zero invocations of originally succeeded steps (REPLAY-1);
//! - **secrets**: no response contains the secret's plaintext (SEC-1);
//! - **plan** and **validate** (`generate/graph.rs`, D-382), for a candidate whose profile
//!   has those ops: `plan` answers the model's PLAN-4/5 order, `validate` accepts the
//!   workflow and names the one defect the seed plants in a copy of it;
//! - **logic**, **resolve**, **parse** and **serialize** (`generate/expr.rs`, D-383): the
//!   seed's JSONLogic expression, `with` block and template text evaluate, resolve, parse
//!   and serialize as the dialect does (the reference is its oracle).
//!
//! A candidate without runs is judged on the pure ops alone ([`PureChecks`]), so no profile
//! is judged only on the published cases.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::{Adapter, AdapterError};

mod expr;
mod graph;

/// Which pure ops a generated seed is judged on (D-382, D-383): of what the profile offers,
/// those the seam judges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PureChecks {
    /// PLAN-4/5: the `plan` answer of the workflow is the model's order.
    pub(crate) plan: bool,
    /// PLAN-1/2/3/8: the workflow validates; with the seed's defect planted, `validate`
    /// names that defect's code at its path.
    pub(crate) validate: bool,
    /// The seed's JSONLogic expression evaluates as the dialect does.
    pub(crate) logic: bool,
    /// The seed's `with` block resolves as the dialect does.
    pub(crate) resolve: bool,
    /// The seed's template text parses as the dialect does.
    pub(crate) parse: bool,
    /// The parts of the seed's template text serialize as the dialect does.
    pub(crate) serialize: bool,
}

impl PureChecks {
    /// The ops `profile` offers that `adapter`'s seam judges: a seam that answers an op
    /// with the suite's own reference (the host seam's pure ops, D-208) is not judged on it.
    pub(crate) fn for_seam(adapter: &dyn Adapter, profile: &super::Capabilities) -> Self {
        let judged = |op: &str| {
            let probe = super::Case {
                id: format!("generated-{op}"),
                clauses: Vec::new(),
                description: String::new(),
                request: json!({"op": op}),
                expect: Map::new(),
                requires: Vec::new(),
            };
            profile.supports(&format!("op.{op}")) && adapter.unjudged(&probe).is_none()
        };
        PureChecks {
            plan: judged("plan"),
            validate: judged("validate"),
            logic: judged("logic"),
            resolve: judged("resolve"),
            parse: judged("parse"),
            serialize: judged("serialize"),
        }
    }

    /// Whether any pure op is judged.
    pub(crate) fn any(self) -> bool {
        self.plan || self.validate || self.logic || self.resolve || self.parse || self.serialize
    }
}

/// The secret every generated scenario carries; it must never appear in a response.
pub const SECRET: &str = "S3CRET-gen-7f3a9c";
/// The test sealing key material of every generated scenario (D-250): the simulated host
/// holds it outside its store.
pub(crate) const SEALING_KEY: &str = "gen-key-Kq93vLx0Zt7mWb2Nc8Rd5Yp1Hs6Jf4Ge";

/// Crash points checked per workflow (every checkpoint of a generated run fits).
pub(crate) use crate::limits::{CRASH_POINTS_HOST_SAMPLED, CRASH_POINTS_MAX, CRASH_POINTS_SAMPLED};

/// The batch size `w6w-sim conformance` runs unless `--generate` says otherwise.
pub(crate) const DEFAULT_GENERATE: usize = 200;

/// The seed of the default batch (any fixed value: the batch must be reproducible).
pub(crate) const DEFAULT_SEED: u64 = 6;

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny, well-mixed, seedable PRNG. Ours, so the
/// sequence for a seed never changes under a dependency upgrade.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

/// Which crash points a generated workflow is checked at, from how many checkpoints its
/// crash-free run wrote: every one up to `sampled`; past that, the first two, the last two
/// (of at most `max`) and the rest drawn from `seed` — each point costs a candidate
/// process a kill and a restart (D-224).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrashPoints {
    /// No point past this checkpoint is asked about.
    pub max: u64,
    /// At most this many points.
    pub sampled: u64,
    /// Draws the points past the first and last two.
    pub seed: u64,
}

impl CrashPoints {
    /// Every checkpoint up to `max`.
    pub fn every(max: u64) -> Self {
        CrashPoints {
            max,
            sampled: max,
            seed: 0,
        }
    }

    /// The crash points, ascending, for a run that wrote `checkpoints` checkpoints.
    pub fn select(&self, checkpoints: u64) -> Vec<u64> {
        let n = checkpoints.min(self.max);
        if n <= self.sampled.max(4) {
            return (1..=n).collect();
        }
        let mut chosen = std::collections::BTreeSet::from([1, 2, n - 1, n]);
        let mut rng = SplitMix64::new(self.seed ^ 0x0063_7261_7368);
        // `n > 4` here: the middle 3..=n-2 holds n - 4 points, more than are wanted.
        while (chosen.len() as u64) < self.sampled {
            chosen.insert(3 + rng.below(n - 4));
        }
        chosen.into_iter().collect()
    }
}

/// A fresh random seed, for generated workflows and engine sessions (D-215): not
/// reproducible on purpose — what uses it prints it, and `--seed` / `--session-seed`
/// reproduce it. Kept below 10^9 so it reads the same as a JSON number anywhere.
pub(crate) fn fresh_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(0x5eed);
    h.finish() % 1_000_000_000
}

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`0` when `n == 0`); the modulo bias is irrelevant here.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next_u64() % n }
    }

    /// True with probability `percent`/100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// One scripted outcome of an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenOutcome {
    /// 0 output, 1 echo, 2 error.
    pub kind: u8,
    /// Index into [`PHASES`] (errors only).
    pub phase: u8,
    pub retryable: bool,
    pub latency_ms: u64,
}

/// One generated step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenStep {
    /// Index into [`ON_ERROR`].
    pub on_error: u8,
    pub max_attempts: u64,
    pub exponential: bool,
    pub delay_ms: u64,
    pub idempotent: bool,
    pub outcomes: Vec<GenOutcome>,
    pub uses_secret: bool,
    /// Binds `up` to this step's output.
    pub reads: Option<usize>,
}

/// A generated workflow and scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    pub seed: u64,
    pub steps: Vec<GenStep>,
    /// `(from, to, error lane?)` by step index; empty means an implicit chain.
    pub edges: Vec<(usize, usize, bool)>,
    /// Whether the scenario scripts step metadata (`onExecuted`, META-*): only for a
    /// candidate whose profile has `meta`, optional in the RFC.
    pub meta: bool,
}

pub(crate) const ON_ERROR: [&str; 3] = ["fail", "continue", "continue-record"];
pub(crate) const PHASES: [&str; 4] = ["resolution", "auth", "execute", "output"];

fn sid(i: usize) -> String {
    format!("s{i}")
}

/// The model's prediction for one step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStep {
    pub status: &'static str,
    pub attempt: u64,
    pub invocations: u64,
}

/// The model's prediction for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model {
    pub status: &'static str,
    pub steps: BTreeMap<String, ModelStep>,
    pub error_step: Option<String>,
    pub step_errors: Vec<String>,
}

impl Generated {
    /// The workflow and scenario for `seed`: 1–6 steps; random success/error edges over a
    /// random topological order (so plan order differs from declared order), or none (an
    /// implicit chain); random onError, retry policies, idempotency, scripted outcomes in
    /// every phase, and a secret flowing through a variable into params and echoes.
    pub fn from_seed(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let n = 1 + rng.below(6) as usize;
        let steps = (0..n)
            .map(|_| {
                let outcomes = (0..1 + rng.below(3))
                    .map(|_| GenOutcome {
                        kind: rng.below(3) as u8,
                        phase: rng.below(4) as u8,
                        retryable: rng.chance(50),
                        latency_ms: rng.below(4),
                    })
                    .collect();
                GenStep {
                    on_error: rng.below(3) as u8,
                    max_attempts: 1 + rng.below(3),
                    exponential: rng.chance(50),
                    delay_ms: rng.below(3000),
                    idempotent: rng.chance(50),
                    outcomes,
                    uses_secret: rng.chance(50),
                    reads: rng.chance(50).then(|| rng.below(n as u64) as usize),
                }
            })
            .collect();
        // A random topological order: Fisher-Yates over the indices.
        let mut perm: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            perm.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut edges = BTreeSet::new();
        if !rng.chance(20) {
            for _ in 0..rng.below(2 * n as u64) {
                let (x, y) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
                let err = rng.chance(30);
                if x != y {
                    let (f, t) = if perm[x] < perm[y] { (x, y) } else { (y, x) };
                    edges.insert((f, t, err));
                }
            }
        }
        Generated {
            seed,
            steps,
            edges: edges.into_iter().collect(),
            meta: true,
        }
    }

    /// The checkpoints a crash is checked after (D-224): every one while there are at most
    /// `sampled` (a seam's [`Adapter::crash_sample`]), else that many drawn from this
    /// workflow's seed — the same for every variant shrinking makes of it.
    pub fn crash_points(&self, sampled: u64) -> CrashPoints {
        CrashPoints {
            max: CRASH_POINTS_MAX,
            sampled,
            seed: self.seed,
        }
    }

    /// The same workflow for a profile: without scripted metadata when it lacks `meta`
    /// (issue 38 item 4: drawn from the declared profile, not silently not applicable).
    pub fn for_profile(mut self, profile: &super::Capabilities) -> Self {
        self.meta = profile.supports("meta");
        self
    }

    /// The workflow document.
    pub fn workflow(&self) -> Value {
        let steps: Vec<Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut with = Map::new();
                with.insert("i".into(), json!(i));
                if s.uses_secret {
                    with.insert("sec".into(), json!({"$": "vars.s"}));
                }
                if let Some(j) = s.reads {
                    with.insert(
                        "up".into(),
                        json!({"$": format!("steps.{}.output", sid(j))}),
                    );
                }
                json!({
                    "id": sid(i),
                    "uses": {"app": "app", "action": "act"},
                    "with": with,
                    "retry": {"maxAttempts": s.max_attempts,
                              "backoff": if s.exponential { "exponential" } else { "fixed" },
                              "delayMs": s.delay_ms},
                    "onError": ON_ERROR[usize::from(s.on_error) % 3],
                })
            })
            .collect();
        let mut wf = json!({"manifestVersion": "2", "id": "wf_gen", "name": "generated",
                            "variables": [{"key": "s", "type": "string"}], "steps": steps});
        if !self.edges.is_empty() {
            wf["edges"] = self
                .edges
                .iter()
                .map(|&(f, t, e)| {
                    if e {
                        json!({"from": sid(f), "to": sid(t), "when": "error"})
                    } else {
                        json!({"from": sid(f), "to": sid(t)})
                    }
                })
                .collect();
        }
        wf
    }

    /// The scenario document, with `faults` as its fault plan.
    pub fn scenario(&self, faults: Value) -> Value {
        let actions: Map<String, Value> = self
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let outcomes: Vec<Value> = s
                    .outcomes
                    .iter()
                    .enumerate()
                    .map(|(k, o)| {
                        let mut v = match o.kind {
                            0 => json!({"output": {"step": i, "k": k}}),
                            1 => json!({"echo": true}),
                            _ => json!({"error": {"code": format!("e{i}_{k}"),
                                                  "message": format!("failure {k} of {} carrying {SECRET}", sid(i)),
                                                  "phase": PHASES[usize::from(o.phase) % 4],
                                                  "retryable": o.retryable}}),
                        };
                        v["latencyMs"] = json!(o.latency_ms);
                        v
                    })
                    .collect();
                let mut action = json!({"idempotent": s.idempotent, "outcomes": outcomes});
                if self.meta {
                    action["meta"] =
                        json!({"app": "app", "version": format!("v{i}"), "action": "act"});
                }
                (sid(i), action)
            })
            .collect();
        // D-250, D-252: the host holds a (test) sealing key, so an output computed from
        // the secret survives a crash and the crashed run still equals the crash-free one.
        json!({"variables": {"s": SECRET}, "secrets": {"S": SECRET},
               "sealingKey": SEALING_KEY, "actions": actions, "faults": faults})
    }

    /// PLAN-5: Kahn's algorithm, always taking the lowest declared index that is ready.
    fn plan_order(&self) -> Vec<usize> {
        let n = self.steps.len();
        let mut order: Vec<usize> = Vec::with_capacity(n);
        let mut done = vec![false; n];
        while order.len() < n {
            let next =
                (0..n).find(|&i| !done[i] && self.edges.iter().all(|&(f, t, _)| t != i || done[f]));
            // Generated graphs are acyclic; a cycle would only shorten the prediction.
            let Some(next) = next else { break };
            done[next] = true;
            order.push(next);
        }
        order
    }

    /// The semantics, written out as plainly as possible and independently of the engine.
    pub fn model(&self) -> Model {
        let order = self.plan_order();
        let mut skipped: BTreeSet<(usize, usize, bool)> = BTreeSet::new();
        let mut m = Model {
            status: "succeeded",
            steps: BTreeMap::new(),
            error_step: None,
            step_errors: Vec::new(),
        };
        for &i in &order {
            let inbound: Vec<_> = self.edges.iter().filter(|e| e.1 == i).collect();
            let out: Vec<_> = self.edges.iter().filter(|e| e.0 == i).copied().collect();
            // ERR-6: skipped iff there is an inbound edge and every one is skipped.
            if !inbound.is_empty() && inbound.iter().all(|e| skipped.contains(e)) {
                let skip = ModelStep {
                    status: "skipped",
                    attempt: 0,
                    invocations: 0,
                };
                m.steps.insert(sid(i), skip);
                skipped.extend(out);
                continue;
            }
            let s = &self.steps[i];
            let mut attempt = 0;
            let succeeded = loop {
                attempt += 1;
                let o = &s.outcomes[((attempt - 1) as usize).min(s.outcomes.len() - 1)];
                if o.kind != 2 {
                    break true;
                }
                // RETRY-1/2: only execute errors, and only idempotent or retryable ones.
                let retryable =
                    PHASES[usize::from(o.phase) % 4] == "execute" && (s.idempotent || o.retryable);
                // RETRY-3: maxAttempts counts every attempt.
                if !(retryable && attempt < s.max_attempts) {
                    break false;
                }
            };
            let status = if succeeded { "succeeded" } else { "failed" };
            m.steps.insert(
                sid(i),
                ModelStep {
                    status,
                    attempt,
                    invocations: attempt,
                },
            );
            let has_error_edge = out.iter().any(|e| e.2);
            if succeeded {
                skipped.extend(out.iter().filter(|e| e.2));
            } else if has_error_edge {
                skipped.extend(out.iter().filter(|e| !e.2));
            } else if s.on_error.is_multiple_of(3) {
                m.status = "failed";
                m.error_step = Some(sid(i));
                break;
            } else if s.on_error % 3 == 2 {
                m.step_errors.push(sid(i));
            }
        }
        m
    }

    /// Every one-step-smaller variant, for the shrinker: drop a step, an edge, an outcome,
    /// an attempt, a flag.
    fn smaller(&self) -> Vec<Generated> {
        let mut out = Vec::new();
        let n = self.steps.len();
        if n > 1 {
            for j in 0..n {
                let mut g = self.clone();
                g.steps.remove(j);
                let shift = |i: usize| if i > j { i - 1 } else { i };
                g.edges = g
                    .edges
                    .iter()
                    .filter(|e| e.0 != j && e.1 != j)
                    .map(|&(f, t, e)| (shift(f), shift(t), e))
                    .collect();
                for s in &mut g.steps {
                    s.reads = s.reads.filter(|&r| r != j).map(shift);
                }
                out.push(g);
            }
        }
        for k in 0..self.edges.len() {
            let mut g = self.clone();
            g.edges.remove(k);
            out.push(g);
        }
        for i in 0..n {
            let s = &self.steps[i];
            let mut push = |f: &dyn Fn(&mut GenStep)| {
                let mut g = self.clone();
                f(&mut g.steps[i]);
                if g != *self {
                    out.push(g);
                }
            };
            if s.outcomes.len() > 1 {
                push(&|s| {
                    s.outcomes.pop();
                });
            }
            push(&|s| s.max_attempts = s.max_attempts.saturating_sub(1).max(1));
            push(&|s| s.uses_secret = false);
            push(&|s| s.reads = None);
            push(&|s| s.exponential = false);
            push(&|s| s.delay_ms = 0);
            push(&|s| s.on_error = 0);
            for o in 0..s.outcomes.len() {
                push(&|s| s.outcomes[o].latency_ms = 0);
            }
        }
        out
    }
}

/// Why a generated workflow failed.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// `model`, `crash`, `replay`, `secrets`, `plan`, `validate`, `logic`, `resolve` or
    /// `adapter`.
    pub property: &'static str,
    pub message: String,
    /// The scenario's fault plan that shows it (`{}` for none).
    pub faults: Value,
    /// The failure needs a replay of the crash-free run to show.
    pub replay: bool,
}

fn violation(property: &'static str, message: String) -> Violation {
    Violation {
        property,
        message,
        faults: json!({}),
        replay: false,
    }
}

/// Send one request; a missing or error response is a violation of `property`.
fn ask(
    adapter: &mut dyn Adapter,
    request: &Value,
    property: &'static str,
) -> Result<Value, Violation> {
    judge(adapter.handle(request), &request["op"], property)
}

/// `run` with every sealed output's envelope and the run's seal id replaced by a marker:
/// what they hold is the engine's business, that they are there is the suite's (D-251).
fn opaque_seals(run: &Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(m) => {
                for (k, x) in m.iter_mut() {
                    if (k == "encryptedOutput" || k == "sealId") && x.is_string() {
                        *x = Value::String("[sealed]".into());
                    } else {
                        walk(x);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    let mut out = run.clone();
    walk(&mut out);
    out
}

/// The report in one answer to an `op` request; a missing or error answer is a violation
/// of `property`, an answer holding the secret a violation of `secrets`.
fn judge(
    response: Result<Value, AdapterError>,
    op: &Value,
    property: &'static str,
) -> Result<Value, Violation> {
    let response = response.map_err(|e| violation("adapter", e.to_string()))?;
    if holds_secret(&response) {
        return Err(violation(
            "secrets",
            format!("the {op} response contains the secret's plaintext"),
        ));
    }
    match response {
        Value::Object(mut m) if m.get("ok").is_some_and(Value::is_object) => {
            Ok(m.remove("ok").unwrap_or_default())
        }
        other => Err(violation(
            property,
            format!("expected a report, got {}", cap(&other.to_string())),
        )),
    }
}

/// Finds a needle (the campaign's [`SECRET`]) in text written to it in any chunks.
struct Scan {
    finder: memchr::memmem::Finder<'static>,
    /// The last `needle.len() - 1` bytes of the text so far: a secret split across two
    /// writes is found in this tail followed by the next write's first bytes.
    tail: Vec<u8>,
    found: bool,
}
impl std::io::Write for Scan {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if !self.found {
            let keep = self.finder.needle().len().saturating_sub(1);
            // A match across the boundary starts in the tail and ends within the
            // first `keep` bytes of this write; any other lies inside this write.
            self.tail.extend_from_slice(&buf[..buf.len().min(keep)]);
            self.found = self.finder.find(&self.tail).is_some() || self.finder.find(buf).is_some();
            if buf.len() >= keep {
                self.tail.clear();
                self.tail.extend_from_slice(&buf[buf.len() - keep..]);
            } else {
                let excess = self.tail.len().saturating_sub(keep);
                self.tail.drain(..excess);
            }
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Scan {
    fn new(needle: &[u8]) -> Scan {
        Scan {
            finder: memchr::memmem::Finder::new(needle).into_owned(),
            tail: Vec::new(),
            found: false,
        }
    }
}

/// SEC-1: whether `response`, as the JSON text a client would read, holds [`SECRET`].
fn holds_secret(response: &Value) -> bool {
    if confined_to_strings(SECRET) {
        let finder = memchr::memmem::Finder::new(SECRET);
        in_some_string(response, &finder)
    } else {
        in_json_text(response, SECRET)
    }
}

/// Whether every occurrence of `needle` in any compact JSON text (serde_json's) lies
/// inside the raw text of one string token — so the text holds it exactly when a key or
/// a string value does. True when the needle:
/// - is made of characters serde_json never escapes and that end no token (letters,
///   digits, `-`, `_`, `.`), so a match neither crosses a token's edge nor an escape's
///   backslash;
/// - does not start with a character that an escape can end in (`b f n r t u`, hex
///   digits: `\u001f` holds `u001f`), so no match starts inside an escape;
/// - holds a character that no number and no `true` / `false` / `null` holds.
fn confined_to_strings(needle: &str) -> bool {
    let quiet = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let escape_tail =
        |c: char| c.is_ascii_hexdigit() || matches!(c, 'b' | 'f' | 'n' | 'r' | 't' | 'u');
    let outside_strings = |c: char| c.is_ascii_digit() || "+-.eEtruefalsn".contains(c);
    needle.chars().all(quiet)
        && needle.chars().next().is_some_and(|c| !escape_tail(c))
        && needle.chars().any(|c| !outside_strings(c))
}

/// Whether a key or a string value anywhere in `v` holds the needle.
fn in_some_string(v: &Value, finder: &memchr::memmem::Finder<'_>) -> bool {
    let has = |t: &str| finder.find(t.as_bytes()).is_some();
    match v {
        Value::String(t) => has(t),
        Value::Array(items) => items.iter().any(|i| in_some_string(i, finder)),
        Value::Object(m) => m.iter().any(|(k, v)| has(k) || in_some_string(v, finder)),
        _ => false,
    }
}

/// Whether `v`'s compact JSON text holds `needle` (serialized into a scanner, never into
/// one string).
fn in_json_text(response: &Value, needle: &str) -> bool {
    let mut scan = Scan::new(needle.as_bytes());
    // Writing into `Scan` cannot fail, and a `Value` always serializes; the buffer hands
    // it chunks, not serde's token-sized writes.
    let mut buffered = std::io::BufWriter::with_capacity(4096, &mut scan);
    let _ = serde_json::to_writer(&mut buffered, response);
    drop(buffered);
    scan.found
}

fn cap(s: &str) -> String {
    use crate::limits::GENERATED_TEXT_CLIP_BYTES as MAX;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

fn invocations(report: &Value, step: &str) -> u64 {
    report["invocations"].as_array().map_or(0, |a| {
        a.iter().filter(|i| i["stepId"] == step).count() as u64
    })
}

fn check_model(report: &Value, m: &Model) -> Result<(), String> {
    let run = &report["run"];
    let mut problems = Vec::new();
    if run["status"] != m.status {
        problems.push(format!(
            "run status {} (model: {})",
            run["status"], m.status
        ));
    }
    for (id, want) in &m.steps {
        let got = &run["steps"][id];
        if got["status"] != want.status {
            problems.push(format!(
                "{id}: status {} (model: {})",
                got["status"], want.status
            ));
        }
        if got["attempt"].as_u64() != Some(want.attempt) {
            problems.push(format!(
                "{id}: attempt {} (model: {})",
                got["attempt"], want.attempt
            ));
        }
        let n = invocations(report, id);
        if n != want.invocations {
            problems.push(format!(
                "{id}: invoked {n} times (model: {})",
                want.invocations
            ));
        }
    }
    let reached = run["steps"].as_object().map_or(0, Map::len);
    if reached != m.steps.len() {
        problems.push(format!(
            "{reached} steps recorded (model: {})",
            m.steps.len()
        ));
    }
    let error_step = run["error"]["stepId"].as_str().map(str::to_owned);
    if error_step != m.error_step {
        problems.push(format!(
            "run error at {error_step:?} (model: {:?})",
            m.error_step
        ));
    }
    let recorded: Vec<String> = run["stepErrors"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["stepId"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    if recorded != m.step_errors {
        problems.push(format!(
            "stepErrors {recorded:?} (model: {:?})",
            m.step_errors
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn succeeded_outputs(run: &Value) -> BTreeMap<&str, &Value> {
    run["steps"]
        .as_object()
        .map(|steps| {
            steps
                .iter()
                .filter(|(_, r)| r["status"] == "succeeded")
                .map(|(k, r)| (k.as_str(), &r["output"]))
                .collect()
        })
        .unwrap_or_default()
}

/// Check every property of one generated workflow against `adapter`.
pub fn check(adapter: &mut dyn Adapter, g: &Generated) -> Result<(), Violation> {
    let workflow = g.workflow();
    // Built once; each request carries it with its own fault plan.
    let scenario = g.scenario(json!({}));
    let Value::Object(scenario_map) = &scenario else {
        return Err(violation(
            "adapter",
            "a generated scenario is an object".into(),
        ));
    };
    // The crash-free run, then a crash right after each of its checkpoints.
    let points = g.crash_points(adapter.crash_sample());
    let (plain, answers) = adapter.run_and_crash_points(&workflow, scenario_map, &points);
    let plain = judge(plain, &json!("run"), "model")?;
    check_model(&plain, &g.model()).map_err(|m| violation("model", m))?;

    // RUN-3/RUN-4: a crash right after any checkpoint ends in the same RunState.
    let chosen = points.select(plain["checkpoints"].as_u64().unwrap_or(0));
    if answers.len() != chosen.len() {
        return Err(violation(
            "adapter",
            format!(
                "asked about crashes after checkpoints {chosen:?}, got {} answers",
                answers.len()
            ),
        ));
    }
    for (k, answer) in chosen.into_iter().zip(answers) {
        check_crash(&plain, k, answer)?;
    }
    check_replay(adapter, workflow, plain, scenario)
}

/// RUN-3/RUN-4: the run with a crash right after checkpoint `k` ends in the crash-free
/// run's RunState, with one crash reported.
fn check_crash(
    plain: &Value,
    k: u64,
    answer: Result<Value, AdapterError>,
) -> Result<(), Violation> {
    let faults = json!({"crashAfterCheckpoint": [k]});
    let crashed = judge(answer, &json!("run"), "crash").map_err(|mut v| {
        v.faults = faults.clone();
        v
    })?;
    let fail = |message: String| Violation {
        property: "crash",
        message,
        faults: faults.clone(),
        replay: false,
    };
    if crashed["crashes"] != 1 {
        return Err(fail(format!(
            "crash after checkpoint {k}: {} crashes reported",
            crashed["crashes"]
        )));
    }
    // Equal documents (the usual answer) need no field-level walk. Ciphertext is
    // compared by presence only (D-251): an engine may draw its nonces, and one behind
    // the protocol binds each run's own run id.
    if !crate::json::json_same(&plain["run"], &crashed["run"])
        && let Some(d) =
            crate::json::json_diff(&opaque_seals(&plain["run"]), &opaque_seals(&crashed["run"]))
                .first()
    {
        return Err(fail(format!(
            "crash after checkpoint {k}: the final RunState differs from the crash-free run at {} ({} without the crash, {} with it)",
            d.pointer,
            d.expected
                .as_ref()
                .map_or_else(|| "nothing".into(), |v| cap(&v.to_string())),
            d.actual
                .as_ref()
                .map_or_else(|| "nothing".into(), |v| cap(&v.to_string())),
        )));
    }
    Ok(())
}

/// REPLAY-1: replaying the crash-free run keeps its status and outputs, and invokes no
/// step that succeeded.
fn check_replay(
    adapter: &mut dyn Adapter,
    workflow: Value,
    mut plain: Value,
    scenario: Value,
) -> Result<(), Violation> {
    // REPLAY-1: same status and outputs; succeeded steps are not invoked again.
    // The workflow, the crash-free run and the scenario move into the request (`json!`
    // would copy them again); the run is read back from it.
    let run = plain.get_mut("run").map(Value::take).unwrap_or_default();
    let request = Value::Object(Map::from_iter([
        ("op".to_owned(), Value::from("replay")),
        ("workflow".to_owned(), workflow),
        ("run".to_owned(), run),
        ("scenario".to_owned(), scenario),
    ]));
    let replayed = ask(adapter, &request, "replay").map_err(|mut v| {
        v.replay = true;
        v
    })?;
    let original = &request["run"];
    let fail = |message: String| Violation {
        property: "replay",
        message,
        faults: json!({}),
        replay: true,
    };
    if replayed["run"]["status"] != original["status"] {
        return Err(fail(format!(
            "replay ended {} (original: {})",
            replayed["run"]["status"], original["status"]
        )));
    }
    let succeeded = succeeded_outputs(original);
    if succeeded_outputs(&replayed["run"]) != succeeded
        || replayed["run"]["output"] != original["output"]
    {
        return Err(fail(
            "replay changed the outputs of succeeded steps or of the run".into(),
        ));
    }
    for id in succeeded.keys() {
        let n = invocations(&replayed, id);
        if n > 0 {
            return Err(fail(format!(
                "replay invoked {id}, which succeeded originally, {n} time(s)"
            )));
        }
    }
    Ok(())
}

/// What one generated workflow is judged on at a seam.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Properties {
    /// The run properties of [`check`]: model, crash, replay, secrets.
    pub(crate) runs: bool,
    /// The pure-op properties (D-382, D-383).
    pub(crate) pure: PureChecks,
}

impl Properties {
    /// The run properties alone.
    #[cfg(test)]
    pub(crate) const RUNS: Properties = Properties {
        runs: true,
        pure: PureChecks {
            plan: false,
            validate: false,
            logic: false,
            resolve: false,
            parse: false,
            serialize: false,
        },
    };
}

/// Every property `props` names, of `g`, against `adapter`: the pure ops' first (one op
/// request each, `validate` two), then the runs'.
pub(crate) fn check_properties(
    adapter: &mut dyn Adapter,
    g: &Generated,
    props: Properties,
) -> Result<(), Violation> {
    graph::check_graph(adapter, g, props.pure)?;
    expr::check_expr(adapter, g.seed, props.pure)?;
    if props.runs {
        check(adapter, g)?;
    }
    Ok(())
}

/// Greedily shrink a failing workflow: keep taking the first smaller variant that still
/// fails `props`, until none does (bounded by `budget` checks).
pub(crate) fn shrink(
    adapter: &mut dyn Adapter,
    g: &Generated,
    v: &Violation,
    props: Properties,
    budget: usize,
) -> (Generated, Violation) {
    let (mut best, mut why) = (g.clone(), v.clone());
    let mut spent = 0;
    'outer: loop {
        for candidate in best.smaller() {
            if spent >= budget {
                break 'outer;
            }
            spent += 1;
            if let Err(v) = check_properties(adapter, &candidate, props) {
                best = candidate;
                why = v;
                continue 'outer;
            }
        }
        break;
    }
    (best, why)
}

/// One failing generated workflow, shrunk.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedFailure {
    /// The seed that generated it (`--generate 1 --seed SEED` reproduces it).
    pub seed: u64,
    /// The shrunk failure.
    pub violation: Violation,
    /// The shrunk workflow and scenario (the scenario carries the failing fault plan).
    pub workflow: Value,
    pub scenario: Value,
    /// Steps before and after shrinking.
    pub steps_before: usize,
    pub steps_after: usize,
}

/// What a generated batch found.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratedReport {
    pub seed: u64,
    /// Workflows checked (this shard's part of `span`).
    pub count: usize,
    /// The seeds considered: `seed .. seed + span`.
    pub span: usize,
    /// `K/N` when only one shard of the seeds ran.
    pub shard: Option<String>,
    pub failures: Vec<GeneratedFailure>,
    /// Every seed this shard considered, in order (`count` of them).
    pub seeds: Vec<u64>,
    /// Workflows needing a capability the candidate's profile lacks: not run.
    pub not_applicable: usize,
    /// Their seeds.
    pub not_applicable_seeds: Vec<u64>,
    /// What they needed that the profile lacks (every name, sorted): the report says why.
    pub missing: Vec<String>,
    /// Workflows not run because the candidate's `run` / `replay` answers are
    /// self-reported ([`super::SELF_REPORTED`], D-102): counted as failed.
    pub self_reported: usize,
    /// Seeds judged on the pure ops alone — what the candidate's `plan`, `validate`,
    /// `logic`, `resolve`, `parse` and `serialize` answer of their draws — because their runs need what the
    /// profile lacks (in `missing`; D-382, D-383). Counted as passed or failed.
    pub pure_only: usize,
    pub elapsed: Duration,
}

impl GeneratedReport {
    pub fn passed(&self) -> usize {
        self.count - self.failed() - self.not_applicable
    }

    /// Workflows that failed a property, or could not be judged (self-reported).
    pub fn failed(&self) -> usize {
        self.failures.len() + self.self_reported
    }
}

/// How many candidate checks the shrinker may spend per failure.
pub(crate) use crate::limits::SHRINK_BUDGET;

/// Run `count` generated workflows (seeds `seed`, `seed + 1`, …) against `adapter`.
pub(crate) fn run_generated(adapter: &mut dyn Adapter, count: usize, seed: u64) -> GeneratedReport {
    run_generated_shard(adapter, count, seed, None)
}

/// [`run_generated`], only the seeds of `shard` (`--shard K/N`): workflow `i` of `count`
/// runs in shard `i mod N`.
pub(crate) fn run_generated_shard(
    adapter: &mut dyn Adapter,
    count: usize,
    seed: u64,
    shard: Option<super::shard::Shard>,
) -> GeneratedReport {
    // One stack segment for the whole batch: an in-process simulation that finds its
    // caller's stack short would otherwise map (and fault in) a fresh one per request.
    crate::sim::with_stack(|| batch(adapter, count, seed, shard))
}

fn batch(
    adapter: &mut dyn Adapter,
    count: usize,
    seed: u64,
    shard: Option<super::shard::Shard>,
) -> GeneratedReport {
    #[allow(clippy::disallowed_methods)] // real time: the report states the batch's speed
    let started = Instant::now();
    let judge = super::runner::Judge::of(adapter, false);
    let outcomes = seed_indices(count, shard)
        .map(|i| judge.seed(adapter, seed.wrapping_add(i as u64)))
        .collect();
    assemble(outcomes, count, seed, shard, started.elapsed())
}

/// The indices of the generated workflows `shard` takes, of `count`.
pub(crate) fn seed_indices(
    count: usize,
    shard: Option<super::shard::Shard>,
) -> impl Iterator<Item = usize> {
    (0..count).filter(move |&i| shard.is_none_or(|sh| sh.takes_seed_index(i as u64)))
}

/// What became of one generated workflow.
pub(crate) enum SeedOutcome {
    Passed(u64),
    /// Outside the profile: what it needed that the profile lacks.
    NotApplicable(u64, Vec<String>),
    /// Not run: the candidate's reports are self-written (D-102).
    SelfReported(u64),
    Failed(Box<GeneratedFailure>),
    /// Judged on the pure ops alone (D-382): its runs need what the profile lacks
    /// (listed); the failure, if it failed.
    PureOnly(u64, Vec<String>, Option<Box<GeneratedFailure>>),
}

impl super::runner::Judge {
    /// One generated workflow: drawn for the profile, run, and shrunk when it fails.
    pub(crate) fn seed(&self, adapter: &mut dyn Adapter, s: u64) -> SeedOutcome {
        let g = Generated::from_seed(s).for_profile(&self.profile);
        let request = json!({"op": "run", "workflow": g.workflow(),
                             "scenario": g.scenario(json!({}))});
        let mut needs = super::capability::required_by_request(&request);
        needs.insert("op.replay".into());
        let lacks = self.profile.missing(&needs);
        let pure = self.pure();
        let runs = lacks.is_empty();
        if !runs && !pure.any() {
            return SeedOutcome::NotApplicable(s, lacks);
        }
        if runs && !self.observed() {
            return SeedOutcome::SelfReported(s);
        }
        let props = Properties { runs, pure };
        let failure = check_properties(adapter, &g, props).err().map(|v| {
            // A drawn expression, `with` block or template does not depend on the
            // workflow: a smaller workflow would show the same failure, so none is sought.
            let (small, v) = if expr::DRAWN.contains(&v.property) {
                (g.clone(), v)
            } else {
                shrink(adapter, &g, &v, props, SHRINK_BUDGET)
            };
            Box::new(GeneratedFailure {
                seed: s,
                workflow: small.workflow(),
                scenario: small.scenario(v.faults.clone()),
                violation: v,
                steps_before: g.steps.len(),
                steps_after: small.steps.len(),
            })
        });
        match (runs, failure) {
            (false, failure) => SeedOutcome::PureOnly(s, lacks, failure),
            (true, None) => SeedOutcome::Passed(s),
            (true, Some(f)) => SeedOutcome::Failed(f),
        }
    }
}

/// The report of judged generated workflows, in seed order.
pub(crate) fn assemble(
    outcomes: Vec<SeedOutcome>,
    count: usize,
    seed: u64,
    shard: Option<super::shard::Shard>,
    elapsed: std::time::Duration,
) -> GeneratedReport {
    let mut report = GeneratedReport {
        seed,
        count: outcomes.len(),
        span: count,
        shard: shard.map(|s| s.to_string()),
        failures: Vec::new(),
        seeds: Vec::with_capacity(outcomes.len()),
        not_applicable: 0,
        not_applicable_seeds: Vec::new(),
        missing: Vec::new(),
        self_reported: 0,
        pure_only: 0,
        elapsed,
    };
    let mut missing = BTreeSet::new();
    for outcome in outcomes {
        match outcome {
            SeedOutcome::Passed(s) => report.seeds.push(s),
            SeedOutcome::NotApplicable(s, lacks) => {
                report.seeds.push(s);
                report.not_applicable += 1;
                report.not_applicable_seeds.push(s);
                missing.extend(lacks);
            }
            SeedOutcome::SelfReported(s) => {
                report.seeds.push(s);
                report.self_reported += 1;
            }
            SeedOutcome::Failed(f) => {
                report.seeds.push(f.seed);
                report.failures.push(*f);
            }
            SeedOutcome::PureOnly(s, lacks, failure) => {
                report.seeds.push(s);
                report.pure_only += 1;
                missing.extend(lacks);
                report.failures.extend(failure.map(|f| *f));
            }
        }
    }
    report.missing = missing.into_iter().collect();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::Reference;

    /// D-224: the sampled crash points are distinct, ascending, within the run, hold both
    /// ends, and depend only on the seed.
    #[test]
    fn crash_points_are_every_one_or_a_seeded_sample_holding_both_ends() {
        for checkpoints in 0..100 {
            for seed in 0..20 {
                let points = CrashPoints {
                    max: CRASH_POINTS_MAX,
                    sampled: CRASH_POINTS_SAMPLED,
                    seed,
                };
                let chosen = points.select(checkpoints);
                let n = checkpoints.min(CRASH_POINTS_MAX);
                assert_eq!(chosen.len() as u64, n.min(CRASH_POINTS_SAMPLED));
                assert!(chosen.windows(2).all(|w| w[0] < w[1]), "{chosen:?}");
                assert!(chosen.iter().all(|&k| (1..=n).contains(&k)));
                if n > 0 {
                    assert!(chosen.contains(&1) && chosen.contains(&n), "{chosen:?}");
                }
                assert_eq!(chosen, points.select(checkpoints));
            }
        }
        let a = CrashPoints {
            max: 64,
            sampled: 12,
            seed: 1,
        }
        .select(60);
        let b = CrashPoints {
            max: 64,
            sampled: 12,
            seed: 2,
        }
        .select(60);
        assert_ne!(a, b, "different seeds crash at different points");
        assert_eq!(
            CrashPoints::every(64).select(70),
            (1..=64).collect::<Vec<_>>()
        );
    }

    #[test]
    fn seeds_reproduce_and_differ() {
        assert_eq!(Generated::from_seed(7), Generated::from_seed(7));
        let distinct: BTreeSet<String> = (0..50)
            .map(|s| Generated::from_seed(s).workflow().to_string())
            .collect();
        assert!(distinct.len() > 45, "{}", distinct.len());
    }

    /// The reference answers the plain run and every crash point from one simulation
    /// copied at each checkpoint; the answers must be byte for byte what each request gets
    /// on its own (the default, through `handle`).
    #[test]
    fn the_references_crash_points_answer_as_each_request_does() {
        let mut one_by_one =
            crate::conformance::FnAdapter::new("handle", |r: &Value| crate::service::handle(r));
        let mut points = 0;
        for seed in 0..120 {
            let g = Generated::from_seed(seed);
            let (workflow, scenario) = (g.workflow(), g.scenario(json!({})));
            let Value::Object(scenario) = scenario else {
                panic!("a scenario is an object")
            };
            for chosen in [
                CrashPoints::every(CRASH_POINTS_MAX),
                CrashPoints::every(3),
                g.crash_points(CRASH_POINTS_SAMPLED),
                g.crash_points(CRASH_POINTS_HOST_SAMPLED),
            ] {
                let fast = Reference.run_and_crash_points(&workflow, &scenario, &chosen);
                let slow = one_by_one.run_and_crash_points(&workflow, &scenario, &chosen);
                assert!(fast == slow, "seed {seed}, {chosen:?}: the answers differ");
                points += fast.1.len();
            }
        }
        assert!(points > 600, "{points} crash points compared");
        // A scenario the service refuses: the same refusal, and no crash asked about.
        let bad = serde_json::Map::from_iter([("actions".to_string(), json!(5))]);
        let wf = Generated::from_seed(1).workflow();
        let every = CrashPoints::every(CRASH_POINTS_MAX);
        let fast = Reference.run_and_crash_points(&wf, &bad, &every);
        let slow = one_by_one.run_and_crash_points(&wf, &bad, &every);
        assert!(fast == slow && fast.1.is_empty(), "{fast:?}");
        assert_eq!(
            fast.0.as_ref().ok().and_then(|a| a.pointer("/error/code")),
            Some(&json!("invalid_scenario"))
        );
    }

    proptest::proptest! {
        /// Written in any chunks, the scan finds the needle exactly when the whole text
        /// holds it.
        #[test]
        fn the_scan_finds_the_needle_across_any_chunking(
            text in "[ab]{0,40}",
            cuts in proptest::collection::vec(0usize..41, 0..8),
        ) {
            use std::io::Write as _;
            let needle = b"abba";
            let mut cuts: Vec<usize> = cuts.into_iter().filter(|&c| c <= text.len()).collect();
            cuts.sort_unstable();
            let mut scan = Scan::new(needle);
            let mut at = 0;
            for cut in cuts.into_iter().chain([text.len()]) {
                scan.write_all(&text.as_bytes()[at..cut]).unwrap();
                at = cut;
            }
            proptest::prop_assert_eq!(scan.found, text.contains("abba"), "{:?}", text);
        }
    }

    /// The needle split across writes, down to one byte per write, and a needle-free
    /// text whose chunks would spell it if the tail were not trimmed.
    #[test]
    fn the_scan_finds_a_needle_split_across_writes() {
        use std::io::Write as _;
        let scan = |chunks: &[&str]| {
            let mut scan = Scan::new(b"abba");
            for c in chunks {
                scan.write_all(c.as_bytes()).unwrap();
            }
            scan.found
        };
        assert!(scan(&["baaaaaab", "ba"]));
        assert!(scan(&["x", "a", "b", "b", "a"]));
        assert!(scan(&["ab", "", "ba"]));
        assert!(!scan(&["ab", "xba"]));
        assert!(!scan(&["a", "b", "x", "b", "a"]));
    }

    /// Values made of pieces of a needle, escapes, numbers and literals.
    fn tricky() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let text = "(S3C|RET|Su001f|u001f|\\\\|\"|\u{1f}|\n|n|1e5|tru|e|-|x|ab){0,4}";
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            Just(json!(1e300)),
            text.prop_map(Value::String),
        ];
        crate::json::arb_tree(leaf, text)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::default())]

        /// For a needle confined to strings, looking in keys and string values finds it
        /// exactly when the JSON text holds it; needles the guard refuses are shown to
        /// need the text (they occur across tokens or inside escapes).
        #[test]
        fn looking_in_strings_is_reading_the_text_for_a_confined_needle(v in tricky()) {
            for needle in ["S3C", "S3CRET", "RETS3C", "S3CRETx", SECRET] {
                proptest::prop_assert!(confined_to_strings(needle));
                let finder = memchr::memmem::Finder::new(needle);
                proptest::prop_assert_eq!(
                    in_some_string(&v, &finder),
                    in_json_text(&v, needle),
                    "{} in {}", needle, v
                );
            }
        }
    }

    #[test]
    fn the_guard_refuses_needles_that_escape_strings() {
        // Each occurs in a text whose strings do not hold it.
        for (needle, v) in [
            ("u001f", json!(["\u{1f}"])),
            ("n1", json!(["a\n1"])),
            ("1e+300", json!([1e300])),
            ("true", json!([true])),
            ("a\",\"b", json!(["a", "b"])),
            ("1,2", json!([1, 2])),
        ] {
            assert!(!confined_to_strings(needle), "{needle}");
            assert!(in_json_text(&v, needle), "{needle} in {v}");
            assert!(
                !in_some_string(&v, &memchr::memmem::Finder::new(needle)),
                "{needle}"
            );
        }
        assert!(!confined_to_strings(""));
        assert!(confined_to_strings(SECRET));
    }

    #[test]
    fn the_secret_is_found_wherever_the_serializer_splits_it() {
        for pad in 4070..4110 {
            let hit = json!({"a": format!("{}{SECRET}tail", "x".repeat(pad))});
            assert!(holds_secret(&hit), "pad {pad}");
            assert!(in_json_text(&hit, SECRET), "pad {pad}");
            let near = json!({"a": format!("{}{}", "x".repeat(pad), &SECRET[1..])});
            assert!(!holds_secret(&near), "pad {pad}");
            assert!(!in_json_text(&near, SECRET), "pad {pad}");
        }
        assert!(holds_secret(&json!({SECRET: 1})), "in a key");
        assert!(!holds_secret(&json!({"ok": {}})));
    }

    #[test]
    fn the_reference_satisfies_every_property() {
        let report = run_generated(&mut Reference, 40, 1);
        assert!(report.failures.is_empty(), "{:?}", report.failures);
    }

    /// Issue 38 item 4: a profile without `meta` (optional in the RFC) gets workflows whose
    /// scenarios script no metadata — run and judged, not silently not applicable; a
    /// profile without `op.replay` gets none, and the report says what they needed.
    #[test]
    fn generated_workflows_are_drawn_from_the_declared_profile() {
        let core = super::super::Capabilities::engine_core();
        let mut no_meta = super::super::WithCapabilities::new(Reference, core.clone());
        let report = run_generated(&mut no_meta, 10, 1);
        assert_eq!(
            (report.not_applicable, report.failed()),
            (0, 0),
            "{report:?}"
        );
        assert!(
            Generated::from_seed(1)
                .for_profile(&core)
                .scenario(json!({}))["actions"]
                .as_object()
                .is_some_and(|a| a.values().all(|v| v.get("meta").is_none()))
        );
        let mut no_replay =
            super::super::WithCapabilities::new(Reference, core.without("op.replay"));
        let report = run_generated(&mut no_replay, 3, 1);
        assert_eq!(report.not_applicable, 3);
        assert_eq!(report.missing, vec!["op.replay".to_owned()]);
    }

    #[test]
    fn shrinking_keeps_a_failure_and_makes_it_smaller() {
        // An adapter that drops every stepErrors entry: continue-record workflows fail the
        // model property; the shrinker must keep failing while removing what is irrelevant.
        let mut broken = crate::conformance::FnAdapter::new("drops stepErrors", |r: &Value| {
            let mut v = crate::service::handle(r);
            if let Some(run) = v.pointer_mut("/ok/run") {
                run["stepErrors"] = json!([]);
            }
            v
        });
        let failing = (0..500)
            .map(Generated::from_seed)
            .find(|g| g.steps.len() > 2 && check(&mut broken, g).is_err())
            .expect("some seed records a stepError");
        let v = check(&mut broken, &failing).expect_err("fails");
        let (small, why) = shrink(&mut broken, &failing, &v, Properties::RUNS, SHRINK_BUDGET);
        assert!(check(&mut broken, &small).is_err(), "still fails");
        assert!(small.steps.len() < failing.steps.len(), "{small:?}");
        assert_eq!(why.property, "model", "{why:?}");
        assert!(
            check(&mut Reference, &small).is_ok(),
            "the reference passes it"
        );
    }
}
