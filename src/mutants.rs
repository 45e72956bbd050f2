//! Deliberately broken behaviours ("mutants") the conformance suite must catch (issue 6),
//! compiled only in the dedicated mutant build (issue 11 item 2).
//!
//! Owns: the [`Mutant`] catalogue of *engine, expression and model* mutations and the
//! thread-local "active mutant". Each mutation itself is a `#[cfg(w6w_mutants)]` block at
//! the code it breaks (grep `cfg(w6w_mutants)`), which asks [`active`]. Host mutants (a
//! store that loses checkpoints) are broken `HostAdapter`s in `conformance::mutants`.
//!
//! Invariant: this module exists only under `cfg(w6w_mutants)`, which `build.rs` sets when
//! the environment variable `W6W_MUTANTS=1` is present at build time (or `RUSTFLAGS="--cfg
//! w6w_mutants"`). It is not a cargo feature, so no dependent crate can switch it on; the
//! default build — the shipped library and binary — contains no hook, no mutant name and no
//! `--mutant` flag (`tests/no_mutants.rs` checks the binary). It imports nothing from the
//! crate (a leaf of the layer order). Inert unless `conformance::mutants::with_mutant` set
//! it, for the duration of one closure on the calling thread. See `docs/decisions.md` D-100.

use std::cell::Cell;

/// One deliberate violation of one clause. Names are stable: the kill table and
/// `w6w-sim conformance --mutant NAME` use [`Mutant::name`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, strum::VariantArray)]
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
    /// Every engine/expression/model mutant, in declaration order (derived from the enum).
    pub const ALL: &'static [Mutant] = <Self as strum::VariantArray>::VARIANTS;

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

/// Whether `m` is this thread's active mutant: the question every mutation site asks.
pub(crate) fn active(m: Mutant) -> bool {
    ACTIVE.with(|a| a.get() == Some(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_set_mutant_is_active_and_clearing_restores() {
        assert_eq!(set_active(None), None);
        assert!(Mutant::ALL.iter().all(|&m| !active(m)));
        let prev = set_active(Some(Mutant::RetryAuth));
        assert!(active(Mutant::RetryAuth));
        assert!(!active(Mutant::SkipErrorEdges));
        assert_eq!(set_active(prev), Some(Mutant::RetryAuth));
        assert!(!active(Mutant::RetryAuth));
    }
}
