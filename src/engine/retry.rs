//! Retry classification and backoff (RETRY-1…5).
//!
//! Owns: whether a failed attempt may be retried and how long to wait before the next one.
//! Invariant: pure functions — the wait is *waited* by the host (`wait_before_retry`).

use crate::model::{Backoff, Phase, RetryPolicy, StepError};

/// RETRY-5: no single computed wait between two attempts exceeds this (WF 2026-10-04).
pub(crate) const WAIT_MS_MAX: u64 = 300_000;

pub(crate) use crate::model::{EXT_MAX_DELAY_MS, EXT_RETRY_ON};

/// [`retry_allowed`] narrowed by the policy's [`EXT_RETRY_ON`] list, when it has one.
pub(crate) fn retry_allowed_by(
    policy: Option<&RetryPolicy>,
    error: &StepError,
    idempotent: bool,
) -> bool {
    let listed = match policy.and_then(|p| p.extra.get(EXT_RETRY_ON)) {
        None => true,
        Some(serde_json::Value::Array(codes)) => {
            codes.iter().any(|c| c.as_str() == Some(&error.code))
        }
        // A malformed list is refused at save time; if one gets here, fail closed.
        Some(_) => false,
    };
    listed && retry_allowed(error, idempotent)
}

/// The engine's classification of retry safety (WF § StepError `retryable`; companion §3.4).
///
/// - `auth` is never retried (RETRY-1);
/// - `execute` is retried only when the action is idempotent or the error says
///   `retryable: true` (RETRY-2);
/// - `resolution` ("never retry as-is") and `output` (a publisher bug) are never retried.
pub(crate) fn retry_allowed(error: &StepError, idempotent: bool) -> bool {
    let allowed = match error.phase {
        Phase::Execute => idempotent || error.retryable,
        Phase::Auth | Phase::Resolution | Phase::Output => false,
    };
    #[cfg(w6w_mutants)] // RETRY-1 / RETRY-2 mutants (mutant build only)
    let allowed = match error.phase {
        Phase::Auth if crate::mutants::active(crate::mutants::Mutant::RetryAuth) => true,
        Phase::Execute if crate::mutants::active(crate::mutants::Mutant::RetryUnsafeExecute) => {
            true
        }
        _ => allowed,
    };
    allowed
}

/// RETRY-4/5: the wait before attempt `next_attempt` (≥ 2) under `policy`.
///
/// Fixed: `delayMs`. Exponential: `delayMs × 2^(n−1)` before retry n, i.e. before attempt
/// `n + 1` — the first retry waits `delayMs`, then 2×, 4×… (clauses.md RETRY-4; the same
/// 5/10/20/40 s series trigger.md works out for `delayMs: 5000`, companion §5 item 14).
/// Every wait is capped at [`WAIT_MS_MAX`]; a fractional wait rounds up (a wait is a
/// minimum), after the cap.
pub(crate) fn wait_before_attempt_ms(policy: Option<&RetryPolicy>, next_attempt: u64) -> u64 {
    let Some(policy) = policy else {
        return 0;
    };
    let base = policy.delay_ms();
    let raw = match policy.backoff() {
        Backoff::Fixed => base,
        Backoff::Exponential => {
            // Clamp the exponent so the factor stays finite: 0 × finite is 0, never NaN.
            let exponent = next_attempt.saturating_sub(2).min(1023) as i32;
            base * 2f64.powi(exponent)
        }
    };
    // D-32 / WOML-10: the policy's own cap, when it declares one, comes first.
    let raw = match policy
        .extra
        .get(EXT_MAX_DELAY_MS)
        .and_then(serde_json::Value::as_f64)
    {
        Some(cap) if cap >= 0.0 => raw.min(cap),
        _ => raw,
    };
    let capped = raw.min(WAIT_MS_MAX as f64);
    #[cfg(w6w_mutants)] // RETRY-5 mutant (mutant build only): no cap
    let capped = if crate::mutants::active(crate::mutants::Mutant::UncappedBackoff) {
        raw
    } else {
        capped
    };
    if capped.is_nan() || capped <= 0.0 {
        return 0;
    }
    capped.ceil() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(v: serde_json::Value) -> RetryPolicy {
        serde_json::from_value(v).expect("policy")
    }

    fn err(phase: Phase, retryable: bool) -> StepError {
        let mut e = StepError::new("x", "x", phase);
        e.retryable = retryable;
        e
    }

    #[test]
    fn classification_follows_phase_rules() {
        for idem in [false, true] {
            for r in [false, true] {
                assert!(!retry_allowed(&err(Phase::Auth, r), idem), "RETRY-1");
                assert!(!retry_allowed(&err(Phase::Resolution, r), idem));
                assert!(!retry_allowed(&err(Phase::Output, r), idem));
                assert_eq!(retry_allowed(&err(Phase::Execute, r), idem), idem || r);
            }
        }
    }

    #[test]
    fn waits_follow_the_formula_and_the_cap() {
        let fixed = policy(json!({"maxAttempts": 5, "delayMs": 1500}));
        assert_eq!(wait_before_attempt_ms(Some(&fixed), 2), 1500);
        assert_eq!(wait_before_attempt_ms(Some(&fixed), 9), 1500);
        let exp = policy(json!({"maxAttempts": 5, "backoff": "exponential", "delayMs": 5000}));
        let waits: Vec<u64> = (2..=5)
            .map(|n| wait_before_attempt_ms(Some(&exp), n))
            .collect();
        assert_eq!(waits, [5000, 10_000, 20_000, 40_000]);
        assert_eq!(wait_before_attempt_ms(Some(&exp), 8), 300_000, "RETRY-5");
        assert_eq!(wait_before_attempt_ms(Some(&exp), u64::MAX), 300_000);
        let zero = policy(json!({"maxAttempts": 5, "backoff": "exponential"}));
        assert_eq!(wait_before_attempt_ms(Some(&zero), 2000), 0);
        let huge = policy(json!({"maxAttempts": 2, "delayMs": 1e300}));
        assert_eq!(wait_before_attempt_ms(Some(&huge), 2), 300_000);
        let frac = policy(json!({"maxAttempts": 2, "delayMs": 0.2}));
        assert_eq!(wait_before_attempt_ms(Some(&frac), 2), 1);
        assert_eq!(wait_before_attempt_ms(None, 2), 0);
    }

    #[test]
    fn the_max_delay_extension_caps_before_the_ceiling() {
        let capped = policy(
            json!({"maxAttempts": 6, "backoff": "exponential", "delayMs": 1000,
            "x-w6w-maxDelayMs": 3000}),
        );
        let waits: Vec<u64> = (2..=6)
            .map(|n| wait_before_attempt_ms(Some(&capped), n))
            .collect();
        assert_eq!(waits, [1000, 2000, 3000, 3000, 3000]);
        let above = policy(
            json!({"maxAttempts": 9, "backoff": "exponential", "delayMs": 1000,
            "x-w6w-maxDelayMs": 3_600_000}),
        );
        assert_eq!(wait_before_attempt_ms(Some(&above), 9), 128_000);
        assert_eq!(
            wait_before_attempt_ms(Some(&above), 20),
            300_000,
            "RETRY-5 still holds"
        );
    }

    #[test]
    fn the_retry_on_extension_only_narrows() {
        let only = policy(json!({"maxAttempts": 3, "x-w6w-retryOn": ["script_threw"]}));
        let mut threw = err(Phase::Execute, true);
        threw.code = "script_threw".into();
        let mut timeout = err(Phase::Execute, true);
        timeout.code = "timeout".into();
        assert!(retry_allowed_by(Some(&only), &threw, false));
        assert!(
            !retry_allowed_by(Some(&only), &timeout, true),
            "unlisted: never retried"
        );
        let mut auth = err(Phase::Auth, true);
        auth.code = "script_threw".into();
        assert!(
            !retry_allowed_by(Some(&only), &auth, true),
            "RETRY-1 still holds"
        );
        let mut not_retryable = threw.clone();
        not_retryable.retryable = false;
        assert!(
            !retry_allowed_by(Some(&only), &not_retryable, false),
            "RETRY-2 still holds"
        );
        assert!(retry_allowed_by(None, &timeout, false));
        let bad = policy(json!({"maxAttempts": 3, "x-w6w-retryOn": "script_threw"}));
        assert!(
            !retry_allowed_by(Some(&bad), &threw, true),
            "malformed: fail closed"
        );
    }
}
