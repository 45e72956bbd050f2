//! The workflow definition document: Workflow, Step, Edge, WorkflowVariable, RetryPolicy.
//!
//! Field names are exactly the RFC's (camelCase). Unknown fields are *preserved* in each
//! type's `extra` map so a document round-trips losslessly (see `docs/decisions.md`,
//! MODEL-round-trip). These types carry no behaviour beyond small accessors; save-time
//! checks live in `validate`, ordering in `plan`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Number, Value};

use super::extra::Extra;
use super::serde_util::{double_option, present, sized_vec, sized_vec_option};

/// A step id, an edge end, or a `uses` name: a string kept inline when it is at most 24
/// bytes (D-196). Nearly every id is that short, so a typed workflow holds no heap string
/// per id, and reading one (the planner hashes every step id and edge end) reads memory
/// that lies beside its step or edge. It derefs to `str`, compares with `str` and
/// `String`, and serializes as a JSON string.
pub type Id = compact_str::CompactString;

/// A workflow definition (RFC § Field reference › Workflow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Workflow {
    pub manifest_version: String,
    pub id: String,
    pub name: String,
    /// MODEL-5: optional machine key; `null` and absent both mean "no key".
    #[serde(
        default,
        deserialize_with = "double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub key: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A reference to the Trigger RFC's surface; opaque to the engine.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub trigger: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<Vec<WorkflowVariable>>,
    #[serde(deserialize_with = "sized_vec")]
    pub steps: Vec<Step>,
    #[serde(
        default,
        deserialize_with = "sized_vec_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub edges: Option<Vec<Edge>>,
    /// MODEL-1/MODEL-2: authoring presentation; never read by the engine.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub settings: Option<Value>,
    /// RUNERR-*: run-level retry (2026-08-21). `null` means no retry.
    #[serde(
        default,
        deserialize_with = "double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry: Option<Option<RetryPolicy>>,
    /// RUNERR-*: run-level onError, `"fail"` (default) or `"continue"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<CallableOnError>,
    /// RUNERR-7: run-level reroute target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reroute: Option<ErrorReroute>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Workflow {
    /// MODEL-1: `settings.autoSave ?? true` — only an explicit `false` turns it off.
    pub fn auto_save(&self) -> bool {
        self.setting_flag("autoSave")
    }

    /// MODEL-1: `settings.savePosition ?? true`.
    pub fn save_position(&self) -> bool {
        self.setting_flag("savePosition")
    }

    fn setting_flag(&self, name: &str) -> bool {
        !matches!(
            self.settings.as_ref().and_then(|s| s.get(name)),
            Some(Value::Bool(false))
        )
    }

    /// The edges, empty when absent.
    pub fn edges(&self) -> &[Edge] {
        self.edges.as_deref().unwrap_or(&[])
    }

    /// The declared variables, empty when absent.
    pub fn variables(&self) -> &[WorkflowVariable] {
        self.variables.as_deref().unwrap_or(&[])
    }

    /// The run-level retry policy, `None` when absent or `null`.
    pub fn retry_policy(&self) -> Option<&RetryPolicy> {
        self.retry.as_ref().and_then(Option::as_ref)
    }

    /// The stored key, `None` when absent or `null`.
    pub fn key(&self) -> Option<&str> {
        self.key.as_ref().and_then(Option::as_deref)
    }
}

/// A graph node: one Invocation (RFC § Step).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub id: Id,
    /// Required for a runnable step; a stored draft may leave parts of it unset (PLAN-9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<Uses>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<Map<String, Value>>,
    /// `null` means no retry (MODEL-3).
    #[serde(
        default,
        deserialize_with = "double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub retry: Option<Option<Box<RetryPolicy>>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_error: Option<OnError>,
    /// CTRL-10: never read by the engine.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub ports: Option<Box<Value>>,
    /// MODEL-2: never read by the engine.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub notes: Option<Box<Value>>,
    /// MODEL-2: never read by the engine.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub position: Option<Box<Value>>,
    /// MODEL-8 / FAN-*: absent means sequential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fan_out: Option<FanOut>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Step {
    /// The step's retry policy, `None` when absent or `null`.
    pub fn retry_policy(&self) -> Option<&RetryPolicy> {
        self.retry.as_ref().and_then(Option::as_deref)
    }

    /// ERR-1: `onError` defaults to `fail`.
    pub fn on_error(&self) -> OnError {
        let on_error = self.on_error.unwrap_or(OnError::Fail);
        #[cfg(w6w_mutants)] // ERR-3 mutant (mutant build only): continue-record records nothing
        if on_error == OnError::ContinueRecord
            && crate::mutants::active(crate::mutants::Mutant::ContinueRecordNotRecorded)
        {
            return OnError::Continue;
        }
        on_error
    }

    /// FAN-*: `fanOut` defaults to `sequential`.
    pub fn fan_out(&self) -> FanOut {
        self.fan_out.unwrap_or(FanOut::Sequential)
    }

    /// `uses.app`, when set.
    pub fn app(&self) -> Option<&str> {
        self.uses.as_ref().and_then(|u| u.app.as_deref())
    }

    /// `uses.action`, when set.
    pub fn action(&self) -> Option<&str> {
        self.uses.as_ref().and_then(|u| u.action.as_deref())
    }
}

/// `{ app, action, connection? }` — the Invocation target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Uses {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<Id>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Id>,
    /// `string | null`; `null` and absent both mean "no connection".
    #[serde(
        default,
        deserialize_with = "double_option",
        skip_serializing_if = "Option::is_none"
    )]
    pub connection: Option<Option<Id>>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Uses {
    /// The connection id, `None` when absent or `null`.
    pub fn connection(&self) -> Option<&str> {
        self.connection.as_ref().and_then(Option::as_deref)
    }
}

/// A directed dependency (RFC § Edge; amendment 2026-07-29 adds `when`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Edge {
    pub from: Id,
    pub to: Id,
    /// PLAN-6: omitted means `success`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when: Option<When>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Edge {
    /// PLAN-6: the effective outcome this edge follows.
    pub fn when(&self) -> When {
        self.when.unwrap_or(When::Success)
    }
}

/// Which outcome of the `from` step activates an edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum When {
    Success,
    Error,
}

impl When {
    pub fn as_str(self) -> &'static str {
        match self {
            When::Success => "success",
            When::Error => "error",
        }
    }
}

/// A workflow input, referenced as `vars.<key>` (MODEL-7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowVariable {
    pub key: String,
    /// Advisory: "string" | "number" | "boolean" | "object" | "array".
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// A present `null` default is a default of `null`.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub default: Option<Value>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Extension field of a RetryPolicy (docs/decisions.md D-32, WOML-10): a per-policy cap in
/// ms on each computed wait, applied before RETRY-5's 300000 ms. Only ever shortens a wait.
pub(crate) const EXT_MAX_DELAY_MS: &str = "x-w6w-maxDelayMs";

/// Extension field of a RetryPolicy (docs/decisions.md D-32, WOML-11): the error codes that
/// may be retried. When present, a failure whose code is not listed is never retried; a
/// listed one still needs the RFC's classification. Never adds a retry.
pub(crate) const EXT_RETRY_ON: &str = "x-w6w-retryOn";

/// How to retry a failing step or run (MODEL-3, RETRY-*).
///
/// Numbers are kept as written (`Number`) so a document round-trips exactly; use the
/// accessors for arithmetic. Well-formedness is checked by `validate`, not here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    pub max_attempts: Number,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<Number>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RetryPolicy {
    /// Total attempts including the first (RETRY-3). Saturates; a validated policy is ≥ 1.
    pub fn max_attempts(&self) -> u64 {
        if let Some(n) = self.max_attempts.as_u64() {
            #[cfg(w6w_mutants)] // RETRY-3 mutant (mutant build only): one attempt too many
            if crate::mutants::active(crate::mutants::Mutant::MaxAttemptsOffByOne) {
                return n.max(1).saturating_add(1);
            }
            return n.max(1);
        }
        match self.max_attempts.as_f64() {
            Some(f) if f >= 1.0 => {
                if f >= u64::MAX as f64 {
                    u64::MAX
                } else {
                    f as u64
                }
            }
            _ => 1,
        }
    }

    /// Base delay in ms (RETRY-4), default 0.
    pub fn delay_ms(&self) -> f64 {
        self.delay_ms
            .as_ref()
            .and_then(Number::as_f64)
            .filter(|d| d.is_finite() && *d >= 0.0)
            .unwrap_or(0.0)
    }

    /// Backoff strategy, default fixed.
    pub fn backoff(&self) -> Backoff {
        self.backoff.unwrap_or(Backoff::Fixed)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backoff {
    Fixed,
    Exponential,
}

/// Step-level failure handling once retries are exhausted (ERR-1…3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OnError {
    #[serde(rename = "fail")]
    Fail,
    #[serde(rename = "continue")]
    Continue,
    #[serde(rename = "continue-record")]
    ContinueRecord,
}

/// Run-level failure handling (2026-08-21): narrower than a step's `onError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallableOnError {
    Fail,
    Continue,
}

/// `Step.fanOut` (2026-10-07).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FanOut {
    Sequential,
    Parallel,
}

/// `{ target: Callable, with? }` (RUNERR-7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorReroute {
    /// `{ kind: "workflow", workflow }` or `{ kind: "function", function }`.
    pub target: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with: Option<Map<String, Value>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
