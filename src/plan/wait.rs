//! The `wait` control's time parameters (CTRL-7): ISO-8601 durations and RFC 3339
//! timestamps, parsed strictly into milliseconds.
//!
//! Owns: two small pure parsers. Refuses to know the clock: an `until` in the past is a
//! run-time matter for the engine and its host, not a plan-time error.
//!
//! Decisions (see `docs/decisions.md (Controls at plan time)`, CTRL-7): durations take weeks, days, hours,
//! minutes and seconds — never years or months, whose length depends on the calendar;
//! only the seconds may carry a fraction. Fractions finer than a millisecond round *up*,
//! so a wait never ends before the time the author asked for.

/// Milliseconds per unit, for `W`, `D`, `H`, `M` (minutes) and `S`.
const MS_PER_WEEK: u64 = 7 * MS_PER_DAY;
const MS_PER_DAY: u64 = 24 * MS_PER_HOUR;
const MS_PER_HOUR: u64 = 60 * MS_PER_MINUTE;
const MS_PER_MINUTE: u64 = 60 * MS_PER_SECOND;
const MS_PER_SECOND: u64 = 1000;

/// The longest duration or timestamp text we look at; anything longer is refused before
/// parsing, so a pathological string costs nothing.
pub(crate) use crate::limits::MAX_TIME_TEXT_LEN;

/// Parse an ISO-8601 duration (`PT5M`, `P1DT2H`, `PT0.5S`, `P2W`) into milliseconds.
///
/// Grammar: `P` then, in this order and each at most once, `nW`, `nD`, then optionally
/// `T` followed by at least one of `nH`, `nM`, `n[.f]S`. At least one component; all
/// numbers are unsigned decimal integers.
pub(crate) fn parse_duration_ms(text: &str) -> Result<u64, String> {
    if text.len() > MAX_TIME_TEXT_LEN {
        return Err(format!(
            "is longer than {MAX_TIME_TEXT_LEN} characters, which no duration needs"
        ));
    }
    let Some(rest) = text.strip_prefix('P') else {
        return Err("must start with 'P' (for example \"PT5M\" or \"P1DT2H\")".to_owned());
    };
    let (date, time) = match rest.split_once('T') {
        Some((d, t)) => {
            if t.is_empty() {
                return Err("has a 'T' with no hours, minutes or seconds after it".to_owned());
            }
            (d, Some(t))
        }
        None => (rest, None),
    };
    let mut total: u64 = 0;
    let mut components = 0usize;
    for (number, designator) in components_of(date)? {
        let unit_ms = match designator {
            'W' => MS_PER_WEEK,
            'D' => MS_PER_DAY,
            'Y' | 'M' => {
                return Err(format!(
                    "uses '{designator}' (years or months) before 'T'; their length depends on the calendar, so write days or weeks instead"
                ));
            }
            other => return Err(format!("has an unknown date designator '{other}'")),
        };
        add(&mut total, integer(number, designator)?, unit_ms)?;
        components += 1;
    }
    check_order(date, &['W', 'D'])?;
    if let Some(time) = time {
        let parts = components_of(time)?;
        check_order(time, &['H', 'M', 'S'])?;
        for (number, designator) in parts {
            match designator {
                'H' => add(&mut total, integer(number, designator)?, MS_PER_HOUR)?,
                'M' => add(&mut total, integer(number, designator)?, MS_PER_MINUTE)?,
                'S' => {
                    let (whole, fraction) = match number.split_once('.') {
                        Some((w, f)) => (w, Some(f)),
                        None => (number, None),
                    };
                    add(&mut total, integer(whole, 'S')?, MS_PER_SECOND)?;
                    if let Some(f) = fraction {
                        add(&mut total, fraction_ms(f)?, 1)?;
                    }
                }
                other => return Err(format!("has an unknown time designator '{other}'")),
            }
            components += 1;
        }
    }
    if components == 0 {
        return Err("names no weeks, days, hours, minutes or seconds".to_owned());
    }
    Ok(total)
}

/// `total += amount × unit_ms`, refusing overflow.
fn add(total: &mut u64, amount: u64, unit_ms: u64) -> Result<(), String> {
    *total = amount
        .checked_mul(unit_ms)
        .and_then(|ms| total.checked_add(ms))
        .ok_or_else(|| "is too long to represent in milliseconds".to_owned())?;
    Ok(())
}

/// Split `12D3H` into `[("12", 'D'), ("3", 'H')]`.
fn components_of(text: &str) -> Result<Vec<(&str, char)>, String> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c.is_ascii_digit() || c == '.' {
            continue;
        }
        if !c.is_ascii_uppercase() {
            return Err(format!("has an unexpected character {c:?}"));
        }
        if start == i {
            return Err(format!("has the designator '{c}' with no number before it"));
        }
        out.push((&text[start..i], c));
        start = i + c.len_utf8();
    }
    if start != text.len() {
        return Err("ends with a number that has no designator after it".to_owned());
    }
    Ok(out)
}

/// Designators must appear in `allowed` order, each at most once.
fn check_order(text: &str, allowed: &[char]) -> Result<(), String> {
    let mut next = 0;
    for c in text.chars().filter(|c| c.is_ascii_uppercase()) {
        match allowed[next..].iter().position(|a| *a == c) {
            Some(p) => next += p + 1,
            None if allowed.contains(&c) => {
                return Err(format!(
                    "repeats or misorders '{c}'; the order is {}",
                    allowed.iter().collect::<String>()
                ));
            }
            None => {} // reported by the caller as an unknown designator
        }
    }
    Ok(())
}

fn integer(text: &str, designator: char) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "has {text:?} before '{designator}'; only seconds may have a fraction"
        ));
    }
    text.parse::<u64>()
        .map_err(|_| "is too long to represent in milliseconds".to_owned())
}

/// Milliseconds from the digits after a decimal point, rounded up.
fn fraction_ms(digits: &str) -> Result<u64, String> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("has a malformed fraction of a second".to_owned());
    }
    let mut ms = 0u64;
    for (i, b) in digits.bytes().enumerate() {
        let d = u64::from(b - b'0');
        if i < 3 {
            ms = ms * 10 + d;
        } else if d != 0 {
            // Finer than a millisecond: round up so the wait is never shorter.
            let scale = 10u64.pow(3 - digits.len().min(3) as u32);
            return Ok(ms * scale + 1);
        }
    }
    Ok(ms * 10u64.pow(3 - digits.len().min(3) as u32))
}

/// Parse an RFC 3339 timestamp (`2026-03-01T09:30:00Z`, `…T09:30:00.250+02:00`) into
/// milliseconds since the Unix epoch (UTC). A leap second (`:60`) counts as the first
/// millisecond-run of the next minute, as plain arithmetic gives.
pub(crate) fn parse_timestamp_ms(text: &str) -> Result<i64, String> {
    if text.len() > MAX_TIME_TEXT_LEN {
        return Err(format!(
            "is longer than {MAX_TIME_TEXT_LEN} characters, which no timestamp needs"
        ));
    }
    let b = text.as_bytes();
    let bad = not_a_timestamp;
    let digits = |range: std::ops::Range<usize>| digits_in(b, range);
    let sep = |i: usize, c: u8| b.get(i).is_some_and(|x| x.eq_ignore_ascii_case(&c));
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return Err(bad());
    }
    let (Some(year), Some(month), Some(day), Some(hour), Some(minute), Some(second)) = (
        digits(0..4),
        digits(5..7),
        digits(8..10),
        digits(11..13),
        digits(14..16),
        digits(17..19),
    ) else {
        return Err(bad());
    };
    let (fraction_ms_part, offset_minutes) = fraction_and_offset(text)?;
    if !(1..=12).contains(&month) {
        return Err(format!("has month {month:02}, outside 01–12"));
    }
    let month_days = days_in_month(year, month);
    if day < 1 || day > month_days {
        return Err(format!(
            "has day {day:02}, but {year:04}-{month:02} has {month_days} days"
        ));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(format!(
            "has the time {hour:02}:{minute:02}:{second:02}, outside 00:00:00–23:59:60"
        ));
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Ok(seconds * 1000 + fraction_ms_part)
}

/// The problem of a text that is not an RFC 3339 timestamp at all.
fn not_a_timestamp() -> String {
    "is not an RFC 3339 timestamp (YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM), for example \"2026-03-01T09:30:00Z\")"
        .to_owned()
}

/// The decimal number `b[range]` spells, when the range exists and holds only digits.
fn digits_in(b: &[u8], range: std::ops::Range<usize>) -> Option<i64> {
    let part = b.get(range)?;
    part.iter()
        .all(u8::is_ascii_digit)
        .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
}

/// What follows a timestamp's seconds (from byte 19): its milliseconds (an optional
/// fraction) and its offset from UTC in minutes (`Z` or `±HH:MM`, ending the text).
fn fraction_and_offset(text: &str) -> Result<(i64, i64), String> {
    let b = text.as_bytes();
    let bad = not_a_timestamp;
    let mut at = 19;
    let mut fraction_ms_part = 0i64;
    if b.get(at) == Some(&b'.') {
        let start = at + 1;
        let mut end = start;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        let frac = text.get(start..end).unwrap_or_default();
        fraction_ms_part = i64::try_from(fraction_ms(frac)?).map_err(|_| bad())?;
        at = end;
    }
    let offset_minutes = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == b.len() && b.get(at + 3) == Some(&b':') => {
            let (Some(oh), Some(om)) = (digits_in(b, at + 1..at + 3), digits_in(b, at + 4..at + 6))
            else {
                return Err(bad());
            };
            if oh > 23 || om > 59 {
                return Err("has an offset outside ±23:59".to_owned());
            }
            let minutes = oh * 60 + om;
            if *sign == b'-' { -minutes } else { minutes }
        }
        _ => return Err(bad()),
    };
    Ok((fraction_ms_part, offset_minutes))
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_7_durations_parse_to_milliseconds() {
        for (text, ms) in [
            ("PT5M", 300_000),
            ("P1DT2H", 93_600_000),
            ("PT0.5S", 500),
            ("PT1.25S", 1250),
            ("PT0.0001S", 1),
            ("PT0.0010S", 1),
            ("PT0S", 0),
            ("P2W", 1_209_600_000),
            ("P1W1D", 691_200_000),
            ("PT1H30M15S", 5_415_000),
            ("P0D", 0),
        ] {
            assert_eq!(parse_duration_ms(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn ctrl_7_malformed_durations_are_refused_with_a_reason() {
        for (text, reason) in [
            ("5M", "must start with 'P'"),
            ("P", "names no"),
            ("PT", "'T' with no"),
            ("P1Y", "years or months"),
            ("P1M", "years or months"),
            ("PT1.5M", "only seconds"),
            ("PT5", "no designator"),
            ("PTM", "no number"),
            ("PT5M1H", "misorders"),
            ("PT1S1S", "repeats"),
            ("P1DT", "'T' with no"),
            ("-PT5M", "must start with 'P'"),
            ("PT5m", "unexpected character"),
            ("PT1.S", "malformed fraction"),
            ("P99999999999999999999D", "too long"),
            ("P9999999999999W", "too long"),
            ("P1X", "unknown date designator"),
        ] {
            let err = parse_duration_ms(text).expect_err(text);
            assert!(err.contains(reason), "{text}: {err}");
        }
        let long = format!("PT{}S", "1".repeat(80));
        assert!(parse_duration_ms(&long).is_err());
    }

    #[test]
    fn ctrl_7_timestamps_parse_to_epoch_milliseconds() {
        for (text, ms) in [
            ("1970-01-01T00:00:00Z", 0),
            ("2026-01-01T00:00:00Z", 1_767_225_600_000),
            ("2026-01-01T02:00:00+02:00", 1_767_225_600_000),
            ("2025-12-31T23:00:00-01:00", 1_767_225_600_000),
            ("2026-01-01t00:00:00.250z", 1_767_225_600_250),
            ("2024-02-29T12:00:00Z", 1_709_208_000_000),
            ("1969-12-31T23:59:59.9991Z", -1 + 1),
            ("2016-12-31T23:59:60Z", 1_483_228_800_000),
        ] {
            assert_eq!(parse_timestamp_ms(text), Ok(ms), "{text}");
        }
    }

    #[test]
    fn ctrl_7_malformed_timestamps_are_refused() {
        for text in [
            "2026-01-01",
            "2026-01-01T00:00:00",
            "2026-01-01 00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00+0200",
            "+2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00ZZ",
            "",
        ] {
            assert!(parse_timestamp_ms(text).is_err(), "{text}");
        }
    }
}
