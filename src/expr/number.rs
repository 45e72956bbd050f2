//! JavaScript number semantics the dialect inherits: `Number(string)`, `String(number)`,
//! `String.prototype.trim` whitespace, and how an f64 result becomes JSON.
//!
//! Owns: the JS artefacts expr-notes lists under "Porting hazards" that concern numbers and
//! whitespace. Knows nothing of JSONLogic operators or templates.

use serde_json::{Number, Value};

/// JS `WhiteSpace` + `LineTerminator` (what `trim()` and `\s` strip). Unlike Rust's
/// `char::is_whitespace` this includes U+FEFF and excludes U+0085 (NEL).
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'
            | '\u{000A}'
            | '\u{000B}'
            | '\u{000C}'
            | '\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// JS `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// JS `Number(string)` (StringToNumber): trimmed; empty → 0; `Infinity` with an optional
/// sign; `0x`/`0o`/`0b` integer literals (unsigned); otherwise a decimal literal or NaN.
/// Rust's `f64::from_str` is only called on text this function has already validated,
/// because it also accepts `inf`, `nan` and `infinity`, which JS does not.
pub(crate) fn string_to_number(s: &str) -> f64 {
    let t = js_trim(s);
    if t.is_empty() {
        return 0.0;
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let bytes = t.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return radix_to_number(&t[2..], radix);
        }
    }
    if is_decimal_literal(bytes) {
        t.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

fn radix_to_number(digits: &str, radix: u32) -> f64 {
    let mut acc = 0.0_f64;
    for c in digits.chars() {
        match c.to_digit(radix) {
            Some(d) => acc = acc * f64::from(radix) + f64::from(d),
            None => return f64::NAN,
        }
    }
    acc
}

/// `StrDecimalLiteral`: `[+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?`.
fn is_decimal_literal(b: &[u8]) -> bool {
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - s;
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        if i < b.len() && matches!(b[i], b'+' | b'-') {
            i += 1;
        }
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return false;
        }
    }
    i == b.len()
}

/// JS `Number.prototype.toString()` (radix 10): `5` → "5", `0.1+0.2` →
/// "0.30000000000000004", `1e21` → "1e+21", `-0` → "0", NaN → "NaN".
pub(crate) fn number_to_string(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_owned();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_owned();
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, which is exactly the
    // digit string ECMA-262 Number::toString asks for; only the layout differs.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let e10: i64 = exp.parse().unwrap_or(0);
    let k = digits.len() as i64;
    let n = e10 + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}

/// An f64 result as JSON the way `JSON.stringify` writes it: NaN and ±Infinity become
/// `null`, `-0` becomes `0`, and an integral value is a JSON integer (`5`, not `5.0`).
pub(crate) fn number_value(x: f64) -> Value {
    if !x.is_finite() {
        return Value::Null;
    }
    if x == 0.0 {
        return Value::from(0);
    }
    // 2^63 bounds the i64 range; integral values beyond it stay floats (`1e300`).
    if x.fract() == 0.0 && x.abs() < 9_223_372_036_854_775_808.0 {
        return Value::from(x as i64);
    }
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A JSON number as the f64 JS would hold for it.
pub(crate) fn json_number(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_number_follows_js() {
        for (s, want) in [
            ("", 0.0),
            (" 12 ", 12.0),
            ("0x10", 16.0),
            ("0b101", 5.0),
            ("0o17", 15.0),
            ("1e3", 1000.0),
            (".5", 0.5),
            ("5.", 5.0),
            ("-Infinity", f64::NEG_INFINITY),
            ("\u{FEFF}7\u{FEFF}", 7.0),
        ] {
            assert_eq!(string_to_number(s), want, "{s:?}");
        }
        for s in [
            "3px", "inf", "nan", "infinity", "-0x10", "1e", ".", "+", "1_000", "\u{85}1",
        ] {
            assert!(string_to_number(s).is_nan(), "{s:?}");
        }
    }

    #[test]
    fn to_string_follows_js() {
        for (x, want) in [
            (5.0, "5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (-0.0, "0"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (1.5e-10, "1.5e-10"),
            (-2.5, "-2.5"),
            (123456789.125, "123456789.125"),
            (f64::INFINITY, "Infinity"),
            (f64::NAN, "NaN"),
        ] {
            assert_eq!(number_to_string(x), want);
        }
    }

    #[test]
    fn json_output() {
        assert_eq!(number_value(5.0), Value::from(5));
        assert_eq!(number_value(-0.0), Value::from(0));
        assert_eq!(number_value(f64::NAN), Value::Null);
        assert_eq!(number_value(f64::NEG_INFINITY), Value::Null);
        assert_eq!(number_value(0.5), serde_json::json!(0.5));
    }
}
