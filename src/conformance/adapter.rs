//! The op-level adapter seam: anything that answers op-service requests can be checked.
//!
//! Owns: the [`Adapter`] trait, its error type, and the in-process [`Reference`] adapter.
//! Refuses to know how a request is transported; [`super::process`] speaks the process
//! protocol, [`super::protocol`] serves an adapter over it.

use std::fmt;

use serde_json::{Map, Value};

/// A candidate implementation under test: answers one op-service request at a time.
///
/// The request and response shapes are those of `w6w-sim eval` (`{"op": …}` in,
/// `{"ok": …}` or `{"error": {…}}` out). An `Err` means the adapter could not produce a
/// response at all (it died, timed out, wrote garbage); the case then fails whatever it
/// expected.
pub trait Adapter {
    /// A human-readable name for reports, e.g. `my-host 1.4.0`.
    fn name(&self) -> String;

    /// Answer one request.
    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError>;

    /// RUN-3/RUN-4 for a generated workflow: the answer to the `run` of `workflow` and
    /// `scenario`, then, if it is a report, the answers to
    /// [`crate::service::sim::crash_request`]`(workflow, scenario, k)` — the `run` with a crash
    /// right after checkpoint `k` — for each `k` of `points.select(its checkpoints)`; each
    /// exactly as [`Adapter::handle`] gives it, which is what the default asks. The
    /// in-process reference answers all of them from one simulation of the crash-free run,
    /// copied at each checkpoint (`sim::Simulation::crash_points`, D-180).
    fn run_and_crash_points(
        &mut self,
        workflow: &Value,
        scenario: &Map<String, Value>,
        points: &super::generate::CrashPoints,
    ) -> RunAndCrashes {
        crate::service::run_and_crash_points_with(workflow, scenario, &|k| points.select(k), |r| {
            self.handle(r)
        })
    }

    /// At most how many crash points a generated workflow is checked at on this seam
    /// (D-224; the host seam checks fewer, D-225). Default:
    /// [`CRASH_POINTS_SAMPLED`](super::generate::CRASH_POINTS_SAMPLED).
    fn crash_sample(&self) -> u64 {
        super::generate::CRASH_POINTS_SAMPLED
    }

    /// Whether this seam judges `case` at all: `None` when it does (the default), else the
    /// seam's name (`seam.host`): the case is then not run and reported not applicable, so
    /// a pass the suite's own reference earned is never counted as the candidate's (issue 38
    /// item 3, D-208).
    fn unjudged(&self, case: &super::Case) -> Option<&'static str> {
        let _ = case;
        None
    }

    /// What this candidate supports; cases needing anything else are reported not
    /// applicable (never passed). Default: everything.
    fn capabilities(&self) -> super::Capabilities {
        super::Capabilities::all()
    }

    /// Who stands behind this candidate's `run` / `replay` answers (D-102). Sealed: a
    /// candidate outside this crate cannot override it (the argument's type cannot be
    /// named there), so only the suite's own seams — the in-process reference, the Rust
    /// engine and host seams and the context protocol, where the suite observes every
    /// invocation and checkpoint itself — are [`Evidence::Observed`]. Any other adapter
    /// answers `run` / `replay` with a report it wrote itself: those cases fail (or are
    /// not applicable when its profile leaves out `op.run` / `op.replay`).
    #[doc(hidden)]
    fn evidence(&self, _: sealed::Seal) -> Evidence {
        Evidence::SelfReported
    }
}

/// What [`Adapter::run_and_crash_points`] answers: the crash-free run's answer, then one
/// answer per crash point.
pub type RunAndCrashes = (
    Result<Value, AdapterError>,
    Vec<Result<Value, AdapterError>>,
);

/// The seal of [`Adapter::evidence`]: public in a private module, so no code outside
/// this crate can name it, build one, or override the method.
pub(crate) mod sealed {
    /// Only this crate can make one.
    #[derive(Debug, Clone, Copy)]
    pub struct Seal(());

    impl Seal {
        pub(crate) fn new() -> Self {
            Seal(())
        }
    }
}

/// Who stands behind an adapter's `run` / `replay` answers (D-102).
///
/// A candidate crate implements [`Adapter`] freely …
///
/// ```
/// use serde_json::Value;
/// use w6w_sim::conformance::{Adapter, AdapterError};
/// struct Cache;
/// impl Adapter for Cache {
///     fn name(&self) -> String { "cache".into() }
///     fn handle(&mut self, r: &Value) -> Result<Value, AdapterError> { Ok(r.clone()) }
/// }
/// ```
///
/// … but cannot claim that its runs were observed: the method is sealed.
///
/// ```compile_fail
/// use serde_json::Value;
/// use w6w_sim::conformance::{Adapter, AdapterError, Evidence};
/// struct Cache;
/// impl Adapter for Cache {
///     fn name(&self) -> String { "cache".into() }
///     fn handle(&mut self, r: &Value) -> Result<Value, AdapterError> { Ok(r.clone()) }
///     fn evidence(&self, seal: w6w_sim::conformance::adapter::sealed::Seal) -> Evidence {
///         Evidence::Observed
///     }
/// }
/// ```
///
/// Nor borrow the reference's answer (no `Seal` can be made outside this crate):
///
/// ```compile_fail
/// use w6w_sim::conformance::{Adapter, Reference};
/// let seal = w6w_sim::conformance::adapter::sealed::Seal::new();
/// let _ = Reference.evidence(seal);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// The suite saw every invocation and checkpoint itself (its own host or context)
    /// and built the report from them.
    Observed,
    /// The adapter wrote the report it answers with; nothing it claims was observed.
    SelfReported,
}

/// The failure of an effectful case (or generated workflow) against a self-reporting
/// adapter; stable prefix `self_reported:`.
pub(crate) const SELF_REPORTED: &str = "self_reported: `run`/`replay` through the adapter protocol are \
answered with a report the adapter writes itself, so nothing in it was observed (an adapter \
replaying recorded answers would pass). Judge an engine with --engine 'CMD' or a host with \
--host 'CMD' (docs/context-protocol.md), where the suite observes every invocation and \
checkpoint itself; or declare a profile without op.run/op.replay (e.g. \
--capabilities '*,-op.run,-op.replay') to report these cases not applicable";

/// What `adapter` says about who stands behind its answers.
pub(crate) fn evidence_of(adapter: &dyn Adapter) -> Evidence {
    adapter.evidence(sealed::Seal::new())
}

/// Why an adapter produced no response. Codes are stable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdapterError {
    /// The process could not be started (`spawn`).
    Spawn(String),
    /// The hello/ack exchange failed (`handshake`).
    Handshake(String),
    /// No response within the per-request timeout (`timeout`).
    Timeout(String),
    /// The process exited or closed its stdout (`exited`).
    Exited(String),
    /// The process wrote something that is not a protocol message (`protocol`).
    Protocol(String),
    /// An earlier failure made the suite stop talking to the adapter (`unavailable`).
    Unavailable(String),
}

impl AdapterError {
    /// The stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            AdapterError::Spawn(_) => "spawn",
            AdapterError::Handshake(_) => "handshake",
            AdapterError::Timeout(_) => "timeout",
            AdapterError::Exited(_) => "exited",
            AdapterError::Protocol(_) => "protocol",
            AdapterError::Unavailable(_) => "unavailable",
        }
    }

    /// The human-readable reason, without the code.
    pub fn message(&self) -> &str {
        match self {
            AdapterError::Spawn(m)
            | AdapterError::Handshake(m)
            | AdapterError::Timeout(m)
            | AdapterError::Exited(m)
            | AdapterError::Protocol(m)
            | AdapterError::Unavailable(m) => m,
        }
    }
}

impl fmt::Display for AdapterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "adapter {}: {}", self.code(), self.message())
    }
}

impl std::error::Error for AdapterError {}

/// The built-in reference: this crate's op service, in process.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reference;

impl Adapter for Reference {
    fn name(&self) -> String {
        format!("w6w-sim reference {}", env!("CARGO_PKG_VERSION"))
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        Ok(crate::service::handle(request))
    }

    fn run_and_crash_points(
        &mut self,
        workflow: &Value,
        scenario: &Map<String, Value>,
        points: &super::generate::CrashPoints,
    ) -> RunAndCrashes {
        let (plain, crashes) =
            crate::service::run_and_crash_points(workflow, scenario, points.max, &|k| {
                points.select(k)
            });
        (Ok(plain), crashes.into_iter().map(Ok).collect())
    }

    /// The reference's runs are the simulator's: the suite's own host saw everything.
    fn evidence(&self, _: sealed::Seal) -> Evidence {
        Evidence::Observed
    }
}

/// Any closure over requests is an adapter; handy in a host crate's tests.
pub struct FnAdapter<F> {
    name: String,
    f: F,
}

impl<F: FnMut(&Value) -> Value> FnAdapter<F> {
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnAdapter {
            name: name.into(),
            f,
        }
    }
}

impl<F: FnMut(&Value) -> Value> Adapter for FnAdapter<F> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        Ok((self.f)(request))
    }
}

/// An adapter with a declared profile: cases needing anything else are not applicable.
pub struct WithCapabilities<A> {
    inner: A,
    profile: super::Capabilities,
}

impl<A: Adapter> WithCapabilities<A> {
    pub fn new(inner: A, profile: super::Capabilities) -> Self {
        WithCapabilities { inner, profile }
    }
}

impl<A: Adapter> Adapter for WithCapabilities<A> {
    fn name(&self) -> String {
        self.inner.name()
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        self.inner.handle(request)
    }

    fn run_and_crash_points(
        &mut self,
        workflow: &Value,
        scenario: &Map<String, Value>,
        points: &super::generate::CrashPoints,
    ) -> RunAndCrashes {
        self.inner.run_and_crash_points(workflow, scenario, points)
    }

    fn unjudged(&self, case: &super::Case) -> Option<&'static str> {
        self.inner.unjudged(case)
    }

    fn crash_sample(&self) -> u64 {
        self.inner.crash_sample()
    }

    fn capabilities(&self) -> super::Capabilities {
        self.profile.clone()
    }

    fn evidence(&self, seal: sealed::Seal) -> Evidence {
        self.inner.evidence(seal)
    }
}

impl Adapter for Box<dyn Adapter> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        (**self).handle(request)
    }

    fn run_and_crash_points(
        &mut self,
        workflow: &Value,
        scenario: &Map<String, Value>,
        points: &super::generate::CrashPoints,
    ) -> RunAndCrashes {
        (**self).run_and_crash_points(workflow, scenario, points)
    }

    fn unjudged(&self, case: &super::Case) -> Option<&'static str> {
        (**self).unjudged(case)
    }

    fn crash_sample(&self) -> u64 {
        (**self).crash_sample()
    }

    fn capabilities(&self) -> super::Capabilities {
        (**self).capabilities()
    }

    fn evidence(&self, seal: sealed::Seal) -> Evidence {
        (**self).evidence(seal)
    }
}
