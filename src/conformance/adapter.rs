//! The op-level adapter seam: anything that answers op-service requests can be checked.
//!
//! Owns: the [`Adapter`] trait, its error type, and the in-process [`Reference`] adapter.
//! Refuses to know how a request is transported; [`super::process`] speaks the process
//! protocol, [`super::protocol`] serves an adapter over it.

use std::fmt;

use serde_json::Value;

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

    /// What this candidate supports; cases needing anything else are reported not
    /// applicable (never passed). Default: everything.
    fn capabilities(&self) -> super::Capabilities {
        super::Capabilities::all()
    }
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

    fn capabilities(&self) -> super::Capabilities {
        self.profile.clone()
    }
}

impl Adapter for Box<dyn Adapter> {
    fn name(&self) -> String {
        (**self).name()
    }

    fn handle(&mut self, request: &Value) -> Result<Value, AdapterError> {
        (**self).handle(request)
    }

    fn capabilities(&self) -> super::Capabilities {
        (**self).capabilities()
    }
}
