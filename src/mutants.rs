//! Deliberately broken behaviours ("mutants") the conformance suite must catch (issue 6).
//!
//! Owns: the [`Mutant`] catalogue of *engine, expression and model* mutations, the
//! thread-local "active mutant", and one pass-through function per mutation point. Host
//! mutants (a store that loses checkpoints) are broken `HostAdapter`s in
//! `conformance::mutants` and need nothing here.
//!
//! Invariant: inert unless a test asked for it. The active mutant is a thread-local that
//! only `conformance::mutants::with_mutant` sets, for the duration of one closure on the
//! calling thread; every hook in the engine is a single call to a function below that
//! returns its `real` argument unchanged when its mutant is not active. The cost when
//! inert is one thread-local read per hook — always compiled (no cargo feature), so the
//! plain `cargo test --release` CI job runs the kill test against exactly the code that
//! ships. See `docs/decisions.md (Mutants)`.

use std::cell::Cell;
use std::collections::BinaryHeap;

use serde_json::{Map, Value};

use crate::model::{OnError, Phase, StepStatus};

/// One deliberate violation of one clause. Names are stable: the kill table and
/// `w6w-sim conformance --mutant NAME` use [`Mutant::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mutant {
    /// RETRY-1: auth errors are retried like execute errors.
    RetryAuth,
    /// RETRY-2: execute errors are retried without `idempotent` or `retryable: true`.
    RetryUnsafeExecute,
    /// RETRY-3: an integer `maxAttempts` allows one attempt too many.
    MaxAttemptsOffByOne,
    /// RETRY-5: exponential backoff without the 300000 ms cap.
    UncappedBackoff,
    /// EXPR-5: `secrets` appears on the generic data root (`{"var": ""}`).
    SecretsOnDataRoot,
    /// TPL-2: a string mixing rooted and unrooted markers is resolved part by part.
    PartialTemplate,
    /// ENV-4: a var part with an empty ref contributes the serialized data root.
    EmptyVarRefExposesScope,
    /// ENV-5: a render part whose ref is absent renders "" instead of failing.
    RenderUnresolvedAsEmpty,
    /// REPLAY-1: replay re-invokes steps that succeeded originally.
    ReplayReinvokesSucceeded,
    /// REPLAY-2: replay reuses failed steps' records instead of running them fresh.
    ReplayReusesFailed,
    /// ERR-3: `continue-record` behaves like `continue` (nothing in stepErrors).
    ContinueRecordNotRecorded,
    /// ERR-4: a step's error edges are ignored; its failure follows onError instead.
    SkipErrorEdges,
    /// ERR-6: a step is skipped when *any* inbound edge is skipped.
    SkipOnAnyInbound,
    /// META-1: meta is taken from the invoke result's `meta` key.
    MetaFromResult,
    /// RUNERR-6: a failed reroute target is reported as a handled (succeeded) run.
    RerouteFailureAsSuccess,
    /// MODEL-5: the key grammar is re-checked on a save that keeps a stored key.
    KeyRevalidated,
    /// PLAN-5: ties among ready steps go to the *last* declared step.
    TiesByReverseDeclaredOrder,
}

impl Mutant {
    /// Every engine/expression/model mutant, in a stable order.
    pub const ALL: [Mutant; 17] = [
        Mutant::RetryAuth,
        Mutant::RetryUnsafeExecute,
        Mutant::MaxAttemptsOffByOne,
        Mutant::UncappedBackoff,
        Mutant::SecretsOnDataRoot,
        Mutant::PartialTemplate,
        Mutant::EmptyVarRefExposesScope,
        Mutant::RenderUnresolvedAsEmpty,
        Mutant::ReplayReinvokesSucceeded,
        Mutant::ReplayReusesFailed,
        Mutant::ContinueRecordNotRecorded,
        Mutant::SkipErrorEdges,
        Mutant::SkipOnAnyInbound,
        Mutant::MetaFromResult,
        Mutant::RerouteFailureAsSuccess,
        Mutant::KeyRevalidated,
        Mutant::TiesByReverseDeclaredOrder,
    ];

    /// The stable kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::RetryAuth => "retry-auth-errors",
            Mutant::RetryUnsafeExecute => "retry-unsafe-execute-errors",
            Mutant::MaxAttemptsOffByOne => "max-attempts-off-by-one",
            Mutant::UncappedBackoff => "uncapped-exponential-backoff",
            Mutant::SecretsOnDataRoot => "secrets-on-data-root",
            Mutant::PartialTemplate => "partial-template-resolution",
            Mutant::EmptyVarRefExposesScope => "empty-var-ref-exposes-scope",
            Mutant::RenderUnresolvedAsEmpty => "render-unresolved-as-empty",
            Mutant::ReplayReinvokesSucceeded => "replay-reinvokes-succeeded",
            Mutant::ReplayReusesFailed => "replay-reuses-failed",
            Mutant::ContinueRecordNotRecorded => "continue-record-not-recorded",
            Mutant::SkipErrorEdges => "skip-error-edge-routing",
            Mutant::SkipOnAnyInbound => "skip-on-any-inbound-skip",
            Mutant::MetaFromResult => "meta-from-invoke-result",
            Mutant::RerouteFailureAsSuccess => "reroute-failure-as-success",
            Mutant::KeyRevalidated => "key-revalidated-on-unchanged-save",
            Mutant::TiesByReverseDeclaredOrder => "plan-ties-by-reverse-declared-order",
        }
    }

    /// The clause this mutant violates.
    pub fn clause(self) -> &'static str {
        match self {
            Mutant::RetryAuth => "RETRY-1",
            Mutant::RetryUnsafeExecute => "RETRY-2",
            Mutant::MaxAttemptsOffByOne => "RETRY-3",
            Mutant::UncappedBackoff => "RETRY-5",
            Mutant::SecretsOnDataRoot => "EXPR-5",
            Mutant::PartialTemplate => "TPL-2",
            Mutant::EmptyVarRefExposesScope => "ENV-4",
            Mutant::RenderUnresolvedAsEmpty => "ENV-5",
            Mutant::ReplayReinvokesSucceeded => "REPLAY-1",
            Mutant::ReplayReusesFailed => "REPLAY-2",
            Mutant::ContinueRecordNotRecorded => "ERR-3",
            Mutant::SkipErrorEdges => "ERR-4",
            Mutant::SkipOnAnyInbound => "ERR-6",
            Mutant::MetaFromResult => "META-1",
            Mutant::RerouteFailureAsSuccess => "RUNERR-6",
            Mutant::KeyRevalidated => "MODEL-5",
            Mutant::TiesByReverseDeclaredOrder => "PLAN-5",
        }
    }
}

thread_local! {
    static ACTIVE: Cell<Option<Mutant>> = const { Cell::new(None) };
}

/// Set (or clear) this thread's active mutant; returns the previous one. Only
/// `conformance::mutants::with_mutant` calls this, and it always restores.
pub(crate) fn set_active(m: Option<Mutant>) -> Option<Mutant> {
    ACTIVE.with(|a| a.replace(m))
}

/// Whether `m` is this thread's active mutant.
pub(crate) fn active(m: Mutant) -> bool {
    ACTIVE.with(|a| a.get() == Some(m))
}

// --- One pass-through per mutation point. Each returns `real` unless its mutant is active.

/// engine/retry.rs `retry_allowed` (RETRY-1, RETRY-2).
pub(crate) fn retry_allowed(phase: Phase, real: bool) -> bool {
    match phase {
        Phase::Auth if active(Mutant::RetryAuth) => true,
        Phase::Execute if active(Mutant::RetryUnsafeExecute) => true,
        _ => real,
    }
}

/// engine/retry.rs: the capped wait (RETRY-5).
pub(crate) fn capped_wait(raw: f64, real: f64) -> f64 {
    if active(Mutant::UncappedBackoff) {
        raw
    } else {
        real
    }
}

/// model/workflow.rs `RetryPolicy::max_attempts` for integers (RETRY-3).
pub(crate) fn max_attempts(real: u64) -> u64 {
    if active(Mutant::MaxAttemptsOffByOne) {
        real.saturating_add(1)
    } else {
        real
    }
}

/// expr/scope.rs `DataRoot::to_value` (EXPR-5).
pub(crate) fn data_root(root: &mut Map<String, Value>, secrets: &Map<String, Value>) {
    if active(Mutant::SecretsOnDataRoot) {
        root.insert("secrets".into(), Value::Object(secrets.clone()));
    }
}

/// expr/compile.rs `compile_string`: whether every marker is rooted (TPL-2).
pub(crate) fn all_anchored(real: bool) -> bool {
    real || active(Mutant::PartialTemplate)
}

/// expr/compile.rs: an envelope var part with an empty ref (ENV-4).
pub(crate) fn empty_var_ref(out: &mut String, root: impl FnOnce() -> Value) {
    if active(Mutant::EmptyVarRefExposesScope) {
        out.push_str(&root().to_string());
    }
}

/// expr/compile.rs `render`: whether an absent ref renders "" (ENV-5).
pub(crate) fn render_absent_as_empty(absent: impl FnOnce() -> bool) -> bool {
    active(Mutant::RenderUnresolvedAsEmpty) && absent()
}

/// engine/replay.rs: whether a recorded step is carried over (REPLAY-1, REPLAY-2).
pub(crate) fn replay_reuse(status: StepStatus, from: bool, real: bool) -> bool {
    match status {
        StepStatus::Succeeded if !from && active(Mutant::ReplayReinvokesSucceeded) => false,
        StepStatus::Failed if !from && active(Mutant::ReplayReusesFailed) => true,
        _ => real,
    }
}

/// model/workflow.rs `Step::on_error` (ERR-3).
pub(crate) fn on_error(real: OnError) -> OnError {
    match real {
        OnError::ContinueRecord if active(Mutant::ContinueRecordNotRecorded) => OnError::Continue,
        other => other,
    }
}

/// engine/routing.rs `has_error_edge` (ERR-4).
pub(crate) fn has_error_edge(real: bool) -> bool {
    real && !active(Mutant::SkipErrorEdges)
}

/// engine/routing.rs `step_skipped` (ERR-6): `any_skipped` is only evaluated when active.
pub(crate) fn step_skipped(real: bool, any_skipped: impl FnOnce() -> bool) -> bool {
    if active(Mutant::SkipOnAnyInbound) {
        any_skipped()
    } else {
        real
    }
}

/// engine/step.rs: the meta a succeeded attempt records (META-1).
pub(crate) fn meta<E>(
    result: &Result<Value, E>,
    real: Option<crate::model::StepMeta>,
) -> Option<crate::model::StepMeta> {
    if !active(Mutant::MetaFromResult) {
        return real;
    }
    match result {
        Ok(v) => v
            .get("meta")
            .and_then(crate::engine::normalize_meta)
            .or(real),
        Err(_) => real,
    }
}

/// engine/runerr.rs: the reroute dispatch's result (RUNERR-6).
pub(crate) fn reroute_result<E>(real: Result<Value, E>) -> Result<Value, E> {
    match real {
        Err(_) if active(Mutant::RerouteFailureAsSuccess) => Ok(Value::Null),
        other => other,
    }
}

/// model/key.rs `validate_save`: whether this save checks the key grammar (MODEL-5).
pub(crate) fn check_key(real: bool) -> bool {
    real || active(Mutant::KeyRevalidated)
}

/// plan/mod.rs `kahn`: the next ready step (PLAN-5). `ready` is a min-heap by declared
/// index; the mutant takes the largest instead.
pub(crate) fn pop_ready(ready: &mut BinaryHeap<std::cmp::Reverse<usize>>) -> Option<usize> {
    if !active(Mutant::TiesByReverseDeclaredOrder) {
        return ready.pop().map(|r| r.0);
    }
    let mut all = std::mem::take(ready).into_vec();
    all.sort_unstable();
    let first = (!all.is_empty()).then(|| all.remove(0).0);
    *ready = all.into();
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_are_inert_without_an_active_mutant() {
        assert_eq!(set_active(None), None);
        assert!(!retry_allowed(Phase::Auth, false));
        assert_eq!(max_attempts(3), 3);
        assert!(!all_anchored(false));
        assert!(has_error_edge(true));
        assert_eq!(on_error(OnError::ContinueRecord), OnError::ContinueRecord);
        let mut heap: BinaryHeap<std::cmp::Reverse<usize>> =
            [3, 1, 2].into_iter().map(std::cmp::Reverse).collect();
        assert_eq!(pop_ready(&mut heap), Some(1));
    }

    #[test]
    fn names_and_clauses_are_unique_and_catalogued() {
        let catalogue: Vec<String> = crate::conformance::clause_catalogue()
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let mut names = std::collections::BTreeSet::new();
        for m in Mutant::ALL {
            assert!(names.insert(m.name()), "duplicate name {}", m.name());
            assert!(catalogue.iter().any(|c| c == m.clause()), "{}", m.clause());
        }
    }

    #[test]
    fn the_reverse_tie_mutant_pops_the_largest() {
        let prev = set_active(Some(Mutant::TiesByReverseDeclaredOrder));
        let mut heap: BinaryHeap<std::cmp::Reverse<usize>> =
            [3, 1, 2].into_iter().map(std::cmp::Reverse).collect();
        let popped = pop_ready(&mut heap);
        set_active(prev);
        assert_eq!(popped, Some(3));
        assert_eq!(heap.len(), 2);
    }
}
