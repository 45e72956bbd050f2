//! The session clock of the engine seam (D-104): the suite's virtual clock, moved by a
//! random number of days per run, so a recorded transcript cannot be replayed.
//!
//! Owns: [`ClockShift`] — whether a run is shifted (only when nothing in its request looks
//! like a timestamp, so no authored time can be moved), the translation of every time at
//! the boundary (suite → candidate: `now` and every canonical timestamp string moved
//! forward; candidate → suite: every timestamp in the session's window moved back), and the
//! check that the times a candidate writes into its step records are times the suite's
//! clock showed in this session. Invariant: the simulator, its store and the report only
//! ever see canonical times, so reports stay byte-identical across sessions.

use std::cell::RefCell;
use std::collections::BTreeSet;

use serde_json::Value;

use crate::conformance::generate::SplitMix64;
use crate::host::iso8601_from_ms;
use crate::sim::world::EPOCH_MS;

use crate::limits::{
    CLOCK_SHIFT_DAYS_MAX as MAX_SHIFT_DAYS, CLOCK_SHIFT_DAYS_MIN as MIN_SHIFT_DAYS,
};
const DAY_MS: u64 = 86_400_000;

/// How one run's clock is shifted for the candidate, and which times it was shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClockShift {
    /// Added to every time the candidate sees (0: not shifted).
    ms: u64,
    /// How far past the epoch a run's clock can reach (its virtual-time limit).
    window: u64,
    /// Every canonical time the candidate was shown during this run, over all its process
    /// lives: each `now`, and each timestamp in what the suite sent (a `state.load`
    /// answer, an echoed output). An engine's step times are these, exactly.
    shown: RefCell<BTreeSet<u64>>,
}

impl ClockShift {
    /// Not shifted.
    pub(crate) fn none() -> Self {
        ClockShift {
            ms: 0,
            window: 0,
            shown: RefCell::default(),
        }
    }

    /// A fresh random shift for a run of `request` whose clock can move `window` ms, or
    /// none when the request holds anything that looks like a timestamp (an authored
    /// `until`, a date in an action's output: moving those would change the run) or the
    /// window is too long to keep the shifted and canonical ranges apart. `/run` (a replay's
    /// original RunState) is not scanned: its times are an engine's, translated like any.
    /// The shift is drawn from `seed` (the run's, from the session seed, D-215).
    pub(crate) fn for_request(request: &Value, window: u64, seed: u64) -> Self {
        let mut scanned = request.clone();
        if let Value::Object(m) = &mut scanned {
            m.remove("run");
        }
        if window >= MIN_SHIFT_DAYS * DAY_MS / 2 || holds_a_timestamp(&scanned) {
            return ClockShift::none();
        }
        let mut rng = SplitMix64::new(seed ^ 0x63_6c_6f_63_6b);
        let days = MIN_SHIFT_DAYS + rng.below(MAX_SHIFT_DAYS - MIN_SHIFT_DAYS);
        ClockShift {
            ms: days * DAY_MS,
            window,
            shown: RefCell::default(),
        }
    }

    /// Whether this run is shifted.
    pub(crate) fn active(&self) -> bool {
        self.ms > 0
    }

    /// A canonical clock reading as the candidate sees it (remembered as shown).
    pub(crate) fn now(&self, canonical: u64) -> u64 {
        if self.active() {
            self.shown.borrow_mut().insert(canonical);
        }
        canonical.saturating_add(self.ms)
    }

    /// Suite → candidate: every canonical timestamp string moves forward (and is
    /// remembered as shown).
    pub(crate) fn outbound(&self, v: &mut Value) {
        if self.active() {
            self.map(v, EPOCH_MS, |ms| {
                self.shown.borrow_mut().insert(ms);
                ms.saturating_add(self.ms)
            });
        }
    }

    /// Candidate → suite: every timestamp string in the session's window moves back.
    pub(crate) fn inbound(&self, v: &mut Value) {
        if self.active() {
            self.map(v, EPOCH_MS + self.ms, |ms| ms - self.ms);
        }
    }

    /// Whether `text` (a time a candidate wrote into a step record) is exactly one this
    /// run's session clock showed it. A time from another session's clock is not: even
    /// when the two shifts happen to lie close, a recorded time matches a shown one only
    /// if they differ by exactly the difference of the shifts, to the millisecond.
    pub(crate) fn shown(&self, text: &str) -> bool {
        !self.active()
            || canonical_ms(text)
                .and_then(|ms| ms.checked_sub(self.ms))
                .is_some_and(|ms| self.shown.borrow().contains(&ms))
    }

    fn map(&self, v: &mut Value, from: u64, f: impl Fn(u64) -> u64 + Copy) {
        match v {
            Value::String(s) => {
                if let Some(ms) = canonical_ms(s)
                    && (from..=from.saturating_add(self.window)).contains(&ms)
                {
                    *s = iso8601_from_ms(f(ms));
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.map(i, from, f)),
            Value::Object(m) => m.values_mut().for_each(|i| self.map(i, from, f)),
            _ => {}
        }
    }
}

/// The ms of a timestamp written exactly as the engine writes one
/// (`YYYY-MM-DDTHH:MM:SS.mmmZ`, [`iso8601_from_ms`]); anything else is not a time here.
fn canonical_ms(text: &str) -> Option<u64> {
    if text.len() != 24 || !text.ends_with('Z') || text.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    let ms = crate::plan::parse_timestamp_ms(text).ok()?;
    let ms = u64::try_from(ms).ok()?;
    (iso8601_from_ms(ms) == text).then_some(ms)
}

/// Whether any string or key of `v` contains `DDDD-DD-DDT` (the start of an ISO 8601
/// date-time, in any of the formats a workflow may author).
fn holds_a_timestamp(v: &Value) -> bool {
    fn looks(s: &str) -> bool {
        s.as_bytes().windows(11).any(|w| {
            w[..4].iter().all(u8::is_ascii_digit)
                && w[4] == b'-'
                && w[5..7].iter().all(u8::is_ascii_digit)
                && w[7] == b'-'
                && w[8..10].iter().all(u8::is_ascii_digit)
                && (w[10] == b'T' || w[10] == b't' || w[10] == b' ')
        })
    }
    match v {
        Value::String(s) => looks(s),
        Value::Array(items) => items.iter().any(holds_a_timestamp),
        Value::Object(m) => m.iter().any(|(k, i)| looks(k) || holds_a_timestamp(i)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WINDOW: u64 = crate::limits::DEFAULT_VIRTUAL_MS_MAX;

    #[test]
    fn a_request_with_a_time_is_not_shifted_and_others_are_shifted_differently() {
        let plain = json!({"op": "run", "workflow": {"steps": []}, "scenario": {}});
        let a = ClockShift::for_request(&plain, WINDOW, 1);
        let b = ClockShift::for_request(&plain, WINDOW, 2);
        assert!(a.active() && b.active());
        assert_ne!(a.ms, b.ms, "a fresh shift per seed");
        assert_eq!(
            a,
            ClockShift::for_request(&plain, WINDOW, 1),
            "a seed reproduces it"
        );
        assert!(a.ms >= MIN_SHIFT_DAYS * DAY_MS && a.ms.is_multiple_of(DAY_MS));
        for timed in [
            json!({"workflow": {"steps": [{"with": {"until": "2026-01-01T00:05:00Z"}}]}}),
            json!({"scenario": {"actions": {"a": {"output": "due 2030-02-03 10:00"}}}}),
            json!({"variables": {"2026-01-01T00:00:00Z": 1}}),
        ] {
            assert!(
                !ClockShift::for_request(&timed, WINDOW, 1).active(),
                "{timed}"
            );
        }
        // A replay's original run carries an engine's times: translated, not a reason.
        let replay = json!({"op": "replay", "run": {"steps": {"a": {"startedAt": "2026-01-01T00:00:00.000Z"}}}});
        assert!(ClockShift::for_request(&replay, WINDOW, 1).active());
        assert!(!ClockShift::for_request(&plain, MIN_SHIFT_DAYS * DAY_MS, 1).active());
    }

    #[test]
    fn times_round_trip_and_only_times_move() {
        let shift = ClockShift {
            ms: 100_000 * DAY_MS,
            window: WINDOW,
            shown: RefCell::default(),
        };
        let canonical = json!({"steps": {"a": {"startedAt": "2026-01-01T00:00:01.000Z",
            "output": ["2026-01-01T00:00:01.000Z", "2026-01-01T00:00:01Z", "run_1", 5]}},
            "old": "1999-01-01T00:00:00.000Z"});
        let mut v = canonical.clone();
        shift.outbound(&mut v);
        let seen = v["steps"]["a"]["startedAt"]
            .as_str()
            .expect("a time")
            .to_owned();
        assert_eq!(seen, iso8601_from_ms(EPOCH_MS + 1000 + shift.ms));
        assert!(shift.shown(&seen));
        assert!(
            !shift.shown("2026-01-01T00:00:01.000Z"),
            "a canonical time was never shown"
        );
        assert_eq!(
            v["steps"]["a"]["output"][1], "2026-01-01T00:00:01Z",
            "not the engine's format"
        );
        assert_eq!(
            v["old"], "1999-01-01T00:00:00.000Z",
            "outside the run's window"
        );
        shift.inbound(&mut v);
        assert_eq!(v, canonical);
        assert_eq!(shift.now(EPOCH_MS), EPOCH_MS + shift.ms);
        assert!(
            shift.shown(&iso8601_from_ms(EPOCH_MS + shift.ms)),
            "a now it sent"
        );
        assert!(
            !shift.shown(&iso8601_from_ms(EPOCH_MS + 5 + shift.ms)),
            "a time in the window that was never sent"
        );
        let none = ClockShift::none();
        assert!(none.shown("anything"));
    }
}
