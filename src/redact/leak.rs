//! SEC-1 judged on what a candidate wrote (issue 38 item 1, docs/decisions.md D-207).
//!
//! Owns: [`Detector`], the session's secrets in every form a candidate could write them in,
//! and the walk that finds the first one in a message a candidate sent — **before** the
//! redaction sink has touched it. The sink ([`super::Scrubber`]) protects what the suite
//! stores and prints; this judges the candidate. A hit is named by the form it took and the
//! JSON Pointer of the field, never by the secret.
//!
//! Forms: the raw text (and its JSON-escaped spellings), standard and URL-safe base64 at
//! every byte alignment (so a secret inside a larger encoded blob is found too), hex in
//! either case, percent-encoding, and every 8-character piece of a longer secret. A needle
//! shorter than [`SUBSTRING_MIN`] characters is found only where it is a whole value: a
//! one-letter secret is in almost every word, and calling that a leak would fail every
//! honest candidate.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use memchr::memmem::Finder;
use serde_json::{Number, Value};

/// A raw secret shorter than this is found only as a whole value, never inside a text
/// (the redaction sink's own floor for declared values, [`super::DERIVED_NEEDLE_MIN`]).
pub(crate) const SUBSTRING_MIN: usize = super::DERIVED_NEEDLE_MIN;

/// The length of a piece of a secret that counts as the secret: any 8 characters in a row.
pub(crate) const PIECE: usize = 8;

/// The form a secret took where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The secret's text as it is (or JSON-escaped once or twice).
    Raw,
    /// A number equal to a numeric secret.
    Number,
    /// Standard or URL-safe base64 of its UTF-8 bytes.
    Base64,
    /// Hex of its UTF-8 bytes.
    Hex,
    /// Percent-encoded (as in a URL).
    Percent,
    /// Eight characters of it in a row.
    Piece,
}

impl Form {
    /// How a message names the form.
    pub fn describe(self) -> &'static str {
        match self {
            Form::Raw => "in plaintext",
            Form::Number => "as a number",
            Form::Base64 => "base64-encoded",
            Form::Hex => "hex-encoded",
            Form::Percent => "percent-encoded",
            Form::Piece => "as an 8-character piece",
        }
    }
}

/// Where a secret was found: the JSON Pointer of the field (a key's own pointer when the
/// key holds it) and the form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    pub pointer: String,
    pub form: Form,
}

/// The code of a run the simulator stopped because the engine under test wrote a secret.
pub(crate) const SECRET_LEAK: &str = "secret_leak";

impl Leak {
    /// The failure of `what` (e.g. `a "log" message`) holding this leak: names the message,
    /// the field and the form, never the secret.
    pub fn message(&self, what: &str) -> String {
        let field = if self.pointer.is_empty() {
            String::new()
        } else {
            format!(" at {}", self.pointer)
        };
        format!(
            "SEC-1: {what} the candidate wrote holds a secret of this session {}{field}; \
             secret plaintext must never reach a checkpoint, a log line or a reply (redact \
             secret-derived values before writing them)",
            self.form.describe()
        )
    }
}

struct Needle {
    text: String,
    form: Form,
    finder: Finder<'static>,
}

/// The secrets of one session, ready to look for in what a candidate wrote.
#[derive(Default)]
pub struct Detector {
    /// Found anywhere inside a string or a key (at least [`SUBSTRING_MIN`] characters).
    needles: Vec<Needle>,
    /// Found only where a string or a key is exactly one of them.
    whole: Vec<(String, Form)>,
    numbers: Vec<Number>,
    /// No text shorter than this holds a needle.
    shortest: usize,
}

impl std::fmt::Debug for Detector {
    /// Names how many needles there are, never a needle (D-81).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detector")
            .field("needles", &self.needles.len())
            .field("whole", &self.whole.len())
            .field("numbers", &self.numbers.len())
            .finish()
    }
}

impl Detector {
    /// Every string and number leaf of `secrets` (a scenario's `secrets` values) is a secret.
    pub fn new<'a>(secrets: impl IntoIterator<Item = &'a Value>) -> Self {
        let mut d = Detector::default();
        let mut found: Vec<(String, Form)> = Vec::new();
        for v in secrets {
            collect(v, &mut found, &mut d.numbers);
        }
        found.sort_by(|a, b| a.0.cmp(&b.0).then((a.1 as u8).cmp(&(b.1 as u8))));
        found.dedup_by(|a, b| a.0 == b.0);
        for (text, form) in found {
            let long_enough = match form {
                Form::Raw | Form::Number => text.chars().count() >= SUBSTRING_MIN,
                _ => text.chars().count() >= PIECE,
            };
            if long_enough {
                let finder = Finder::new(text.as_bytes()).into_owned();
                d.needles.push(Needle { text, form, finder });
            } else if !text.is_empty() {
                d.whole.push((text, form));
            }
        }
        // The plainest name first: a raw hit is reported as raw, not as a piece of itself.
        d.needles
            .sort_by(|a, b| (a.form as u8, b.text.len()).cmp(&(b.form as u8, a.text.len())));
        d.shortest = d.needles.iter().map(|n| n.text.len()).min().unwrap_or(0);
        d
    }

    /// No secret to look for.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty() && self.whole.is_empty() && self.numbers.is_empty()
    }

    /// The form of the first secret in `text` (a string value, a log line), if any.
    pub fn in_text(&self, text: &str) -> Option<Form> {
        if let Some((_, form)) = self.whole.iter().find(|(w, _)| w == text) {
            return Some(*form);
        }
        self.inside(text)
    }

    /// Only the needles long enough to be looked for inside a text: what a key or a number
    /// is checked against (a variable named `x` is no leak of the secret `"x"`, nor
    /// `"attempt": 1` of the secret `"1"`).
    fn inside(&self, text: &str) -> Option<Form> {
        if text.len() < self.shortest {
            return None;
        }
        self.needles
            .iter()
            .find(|n| n.finder.find(text.as_bytes()).is_some())
            .map(|n| n.form)
    }

    /// The first secret in `v` (keys, strings, numbers), its pointer relative to `base`;
    /// subtrees whose pointer `exempt` accepts are not looked at.
    pub fn in_value(&self, v: &Value, base: &str, exempt: &dyn Fn(&str) -> bool) -> Option<Leak> {
        if self.is_empty() {
            return None;
        }
        let mut pointer = base.to_owned();
        self.walk(v, &mut pointer, exempt)
    }

    fn walk(&self, v: &Value, pointer: &mut String, exempt: &dyn Fn(&str) -> bool) -> Option<Leak> {
        if exempt(pointer) {
            return None;
        }
        let hit = |form| {
            Some(Leak {
                pointer: pointer.clone(),
                form,
            })
        };
        match v {
            Value::String(s) => self.in_text(s).and_then(hit),
            Value::Number(n) => {
                if self
                    .numbers
                    .iter()
                    .any(|s| s == n || s.as_f64() == n.as_f64())
                {
                    return hit(Form::Number);
                }
                self.inside(&n.to_string()).and_then(hit)
            }
            Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(itoa::Buffer::new().format(i));
                let found = self.walk(item, pointer, exempt);
                pointer.truncate(len);
                found
            }),
            Value::Object(m) => m.iter().find_map(|(k, item)| {
                if is_clock_reading(k, item) {
                    return None;
                }
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                let found = match self.inside(k) {
                    Some(form) if !exempt(pointer) => Some(Leak {
                        pointer: pointer.clone(),
                        form,
                    }),
                    _ => self.walk(item, pointer, exempt),
                };
                pointer.truncate(len);
                found
            }),
            Value::Null | Value::Bool(_) => None,
        }
    }
}

/// A record's `startedAt` / `finishedAt` written as the host clock spells a time
/// (`YYYY-MM-DDTHH:MM:SS.mmmZ`) is a clock reading, not data: a `wait` until a secret time
/// finishes at that time (D-43), and the engine seam checks every such time was one the
/// suite's clock showed (D-104).
pub(crate) fn is_clock_reading(key: &str, v: &Value) -> bool {
    let Some(t) = v
        .as_str()
        .filter(|_| key == "startedAt" || key == "finishedAt")
    else {
        return false;
    };
    let b = t.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

fn collect(v: &Value, out: &mut Vec<(String, Form)>, numbers: &mut Vec<Number>) {
    match v {
        Value::String(s) if !s.is_empty() => forms(s, out),
        Value::Number(n) => {
            // Like a short text, a number of fewer than 4 characters is everywhere (an
            // attempt, a count): only a string that is exactly it counts.
            if n.to_string().chars().count() >= SUBSTRING_MIN {
                numbers.push(n.clone());
            }
            // A number rendered into text, in JSON's and in JavaScript's spelling.
            // Rendered into text, in JSON's and in JavaScript's spelling, then as any text.
            let js = crate::expr::number::number_to_string(crate::expr::number::json_number(n));
            forms(&n.to_string(), out);
            if js != n.to_string() {
                forms(&js, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect(i, out, numbers)),
        Value::Object(m) => m.values().for_each(|i| collect(i, out, numbers)),
        _ => {}
    }
}

/// The encoded forms of the secret `s` (base64, hex, percent, 8-character pieces) long
/// enough to look for inside a text: what a report scrubs besides the raw spellings.
pub(crate) fn encoded_forms(s: &str) -> Vec<String> {
    let mut all = Vec::new();
    forms(s, &mut all);
    all.into_iter()
        .filter(|(t, form)| *form != Form::Raw && t.chars().count() >= PIECE)
        .map(|(t, _)| t)
        .collect()
}

/// Every form of the secret `s` this module looks for.
fn forms(s: &str, out: &mut Vec<(String, Form)>) {
    for e in super::encodings(s) {
        out.push((e, Form::Raw));
    }
    let bytes = s.as_bytes();
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for shift in 0..3 {
            out.push((aligned_base64(engine, bytes, shift), Form::Base64));
        }
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    out.push((hex.to_ascii_uppercase(), Form::Hex));
    out.push((hex, Form::Hex));
    let percent: String = bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    if percent != s {
        out.push((percent.to_ascii_lowercase(), Form::Percent));
        out.push((percent.replace("%20", "+"), Form::Percent));
        out.push((percent, Form::Percent));
    }
    let chars: Vec<char> = s.chars().collect();
    if chars.len() > PIECE {
        for w in chars.windows(PIECE) {
            out.push((w.iter().collect(), Form::Piece));
        }
    }
}

/// The base64 characters that depend on `bytes` alone when they sit `shift` bytes into a
/// larger encoded buffer: the first characters also cover the bytes before, the last one
/// the bytes after.
fn aligned_base64(engine: &base64::engine::GeneralPurpose, bytes: &[u8], shift: usize) -> String {
    let mut buf = vec![0u8; shift];
    buf.extend_from_slice(bytes);
    let text = engine.encode(&buf);
    let start = (8 * shift).div_ceil(6);
    let end = (8 * buf.len()) / 6;
    text.get(start..end).unwrap_or_default().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn detector(secret: &Value) -> Detector {
        Detector::new([secret])
    }

    fn none(_: &str) -> bool {
        false
    }

    #[test]
    fn every_form_of_a_secret_is_found_and_named() {
        let secret = "sk_live_5ecret/9f8e 7d";
        let d = detector(&json!(secret));
        let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
        let cases = [
            (format!("Bearer {secret}"), Form::Raw),
            (
                format!("x{}y", STANDARD_NO_PAD.encode(secret)),
                Form::Base64,
            ),
            (
                URL_SAFE_NO_PAD.encode(format!("ab{secret}cd")),
                Form::Base64,
            ),
            (format!("0x{hex}"), Form::Hex),
            (hex.to_uppercase(), Form::Hex),
            ("k=sk_live_5ecret%2F9f8e%207d".to_owned(), Form::Percent),
            ("k=sk_live_5ecret%2f9f8e%207d".to_owned(), Form::Percent),
            ("…5ecret/9f…".to_owned(), Form::Piece),
        ];
        for (text, form) in cases {
            assert_eq!(d.in_text(&text), Some(form), "{text}");
        }
        assert_eq!(d.in_text("sk_live and 9f8e 7d apart"), None);
    }

    #[test]
    fn a_short_secret_is_found_only_as_a_whole_value() {
        let d = detector(&json!("e"));
        assert_eq!(d.in_text("expected"), None);
        assert_eq!(d.in_text("e"), Some(Form::Raw));
        let pin = detector(&json!({"pin": "4821"}));
        assert_eq!(pin.in_text("pin 4821 ok"), Some(Form::Raw));
        assert_eq!(pin.in_text("482"), None);
    }

    #[test]
    fn a_numeric_secret_is_found_encoded_too() {
        let d = detector(&json!(48213579));
        assert_eq!(
            d.in_text(&STANDARD_NO_PAD.encode("48213579")),
            Some(Form::Base64)
        );
        assert_eq!(d.in_text("pin=3438323133353739"), Some(Form::Hex));
    }

    #[test]
    fn numbers_and_keys_are_found_with_their_pointer() {
        let d = detector(&json!(48213579));
        let msg = json!({"args": {"patch": {"variables": {"n": 48213579}}}});
        assert_eq!(
            d.in_value(&msg, "", &none),
            Some(Leak {
                pointer: "/args/patch/variables/n".into(),
                form: Form::Number
            })
        );
        let text = json!({"a": ["x", {"pin=48213579": 1}]});
        assert_eq!(
            d.in_value(&text, "", &none).map(|l| l.pointer),
            Some("/a/1/pin=48213579".into())
        );
        let slash = json!({"a/b": "48213579"});
        assert_eq!(
            d.in_value(&slash, "/m", &none).map(|l| l.pointer),
            Some("/m/a~1b".into())
        );
    }

    #[test]
    fn an_exempt_subtree_is_not_read() {
        let d = detector(&json!("hunter2-secret"));
        let msg = json!({"args": {"params": {"k": "hunter2-secret"}, "x": 1}});
        let exempt = |p: &str| p == "/args/params";
        assert_eq!(d.in_value(&msg, "", &exempt), None);
        assert!(d.in_value(&msg, "", &none).is_some());
    }

    #[test]
    fn a_clock_reading_is_not_data() {
        let d = detector(&json!("2026-03-04T05:06:07Z"));
        let record = json!({"finishedAt": "2026-03-04T05:06:07.000Z"});
        assert_eq!(d.in_value(&record, "", &none), None);
        let elsewhere = json!({"note": "2026-03-04T05:06:07.000Z"});
        assert!(d.in_value(&elsewhere, "", &none).is_some());
        let not_a_time = json!({"finishedAt": "2026-03-04T05:06:07Z!"});
        assert!(d.in_value(&not_a_time, "", &none).is_some());
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let d = detector(&json!("hunter2-secret"));
        assert!(!format!("{d:?}").contains("hunter2"));
    }
}
