//! The `{{ }}` template grammar (ENV-6, TPL-*, CHAIN-*): parsing in editor and render
//! modes, the flat `||` / `??` chain arm, the serializer, the chain predicates and the
//! root-anchoring rule.
//!
//! Owns: text ⇄ parts. Knows nothing of scopes or evaluation; it never reads a value.
//! Render mode has no secret production at all (ENV-6, CHAIN-3): the only code that builds
//! [`Part::Secret`] from text is guarded by `Mode::Editor`.

use serde_json::{Map, Value};

use super::limits::{MAX_TEMPLATE_BYTES, MAX_TEMPLATE_SCAN_BYTES};
use super::number::{is_js_space, js_trim, json_number, number_value};
use super::scope::is_root;
use super::value::{Val, to_js_string, write_json};

/// Which grammar a text is parsed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Authoring: `{{ secrets.NAME }}` is a secret part.
    #[default]
    Editor,
    /// Rendered content: no secret production (ENV-6).
    Render,
}

/// One part of an ExprValue envelope or a parsed template (ENV-2).
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// `{kind:"text", value}`: a literal chunk.
    Text(String),
    /// `{kind:"var", ref}`: a full path such as `vars.env`.
    Var(String),
    /// `{kind:"secret", ref}`: the bare secret name.
    Secret(String),
    /// `{kind:"expr", expr}`: JSONLogic. `raw` is true when the `=` payload was not valid
    /// JSON and `expr` holds its text (the reference parser's fallback); `raw` is parser
    /// bookkeeping and is not part of the JSON form.
    Expr { expr: Value, raw: bool },
    /// `{kind:"render", ref}`: never produced by the parser.
    Render(String),
    /// Any other kind: contributes "" (ENV-9) and serializes to "".
    Unknown(Value),
}

impl Part {
    /// An `expr` part from a JSON value.
    pub fn expr(expr: Value) -> Part {
        Part::Expr { expr, raw: false }
    }

    /// The part's JSON form (`{kind, value|ref|expr}`).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let (kind, field, value) = match self {
            Part::Text(v) => ("text", "value", Value::String(v.clone())),
            Part::Var(r) => ("var", "ref", Value::String(r.clone())),
            Part::Secret(r) => ("secret", "ref", Value::String(r.clone())),
            Part::Expr { expr, .. } => ("expr", "expr", expr.clone()),
            Part::Render(r) => ("render", "ref", Value::String(r.clone())),
            Part::Unknown(v) => return v.clone(),
        };
        m.insert("kind".into(), Value::from(kind));
        m.insert(field.into(), value);
        Value::Object(m)
    }

    /// Read a part from JSON. Absent or null content reads as empty, other non-string
    /// content as its JS `String()` — what the reference serializer writes for
    /// `p.value ?? ""` and `p.ref ?? ""` (`5` → "5", `[1,2]` → "1,2", `{}` →
    /// "[object Object]"; D-245). Resolution reads a non-string `ref` as empty instead
    /// (`expr::compile`, Expressions §11). A non-object or an unknown kind becomes
    /// [`Part::Unknown`].
    pub fn from_json(v: &Value) -> Part {
        let field = |name: &str| match v.get(name) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => to_js_string(&Val::from_json(other)),
        };
        match v.get("kind").and_then(Value::as_str) {
            Some("text") => Part::Text(field("value")),
            Some("var") => Part::Var(field("ref")),
            Some("secret") => Part::Secret(field("ref")),
            Some("expr") => Part::expr(v.get("expr").cloned().unwrap_or(Value::Null)),
            Some("render") => Part::Render(field("ref")),
            _ => Part::Unknown(v.clone()),
        }
    }
}

/// A template exceeded a limit (SEC-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateTooLarge {
    pub message: String,
}

/// The result of parsing one text.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub parts: Vec<Part>,
    /// Whether some `{{` had no `}}` after it (its rest became text).
    pub unterminated: bool,
}

fn find(s: &str, needle: &str, from: usize) -> Option<usize> {
    s.get(from..)?.find(needle).map(|i| i + from)
}

/// Depth- and string-aware close scan for `{{ = … }}` and balanced chains: the first `}}`
/// at depth 0, checked before its own `}` changes the depth.
fn balanced_close(
    s: &str,
    from: usize,
    budget: &mut usize,
) -> Result<Option<usize>, TemplateTooLarge> {
    let b = s.as_bytes();
    let (mut depth, mut in_str, mut j) = (0_i64, false, from);
    while j < b.len() {
        if *budget == 0 {
            return Err(TemplateTooLarge {
                message: format!(
                    "template needs more than {MAX_TEMPLATE_SCAN_BYTES} bytes of marker scanning"
                ),
            });
        }
        *budget -= 1;
        let c = b[j];
        if in_str {
            match c {
                b'\\' => j += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            if depth == 0 && c == b'}' && b.get(j + 1) == Some(&b'}') {
                return Ok(Some(j));
            }
            match c {
                b'"' => in_str = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' => depth -= 1,
                _ => {}
            }
        }
        j += 1;
    }
    Ok(None)
}

/// Positions and kinds of top-level `||` / `??` tokens (outside double-quoted strings,
/// consumed two characters at a time).
fn chain_tokens(s: &str) -> Vec<(usize, u8)> {
    let b = s.as_bytes();
    let (mut out, mut in_str, mut j) = (Vec::new(), false, 0);
    while j < b.len() {
        let c = b[j];
        if in_str {
            match c {
                b'\\' => j += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else if c == b'"' {
            in_str = true;
        } else if (c == b'|' || c == b'?') && b.get(j + 1) == Some(&c) {
            out.push((j, c));
            j += 1;
        }
        j += 1;
    }
    out
}

/// `hasRefusedChainToken`: a var ref that still holds a top-level `||`/`??`.
pub(crate) fn has_refused_chain_token(reference: &str) -> bool {
    !chain_tokens(reference).is_empty()
}

/// Parse a text into parts. Errors only when a limit is exceeded.
pub fn parse(text: &str, mode: Mode) -> Result<Parsed, TemplateTooLarge> {
    if text.len() > MAX_TEMPLATE_BYTES {
        return Err(TemplateTooLarge {
            message: format!(
                "template is {} bytes; the limit is {MAX_TEMPLATE_BYTES}",
                text.len()
            ),
        });
    }
    let mut budget = MAX_TEMPLATE_SCAN_BYTES;
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut unterminated = false;
    let mut i = 0;
    loop {
        let Some(open) = find(text, "{{", i) else {
            literal.push_str(&text[i..]);
            break;
        };
        literal.push_str(&text[i..open]);
        let inner_start = open + 2;
        let is_expr_arm = text[inner_start..]
            .trim_start_matches(is_js_space)
            .starts_with('=');
        let naive = find(text, "}}", inner_start);
        let close = if is_expr_arm {
            balanced_close(text, inner_start, &mut budget)?.or(naive)
        } else {
            match naive {
                Some(n) if has_refused_chain_token(&text[inner_start..n]) => {
                    balanced_close(text, inner_start, &mut budget)?.or(naive)
                }
                other => other,
            }
        };
        let Some(close) = close else {
            unterminated = true;
            literal.push_str(&text[open..]);
            break;
        };
        if !literal.is_empty() {
            parts.push(Part::Text(std::mem::take(&mut literal)));
        }
        parts.push(dispatch(js_trim(&text[inner_start..close]), mode));
        i = close + 2;
    }
    if !literal.is_empty() {
        parts.push(Part::Text(literal));
    }
    Ok(Parsed {
        parts,
        unterminated,
    })
}

/// Dispatch on the trimmed inner text of one marker (expr-notes § Dispatch order).
fn dispatch(inner: &str, mode: Mode) -> Part {
    if let Some(rest) = inner.strip_prefix('=') {
        let rest = js_trim(rest);
        return match serde_json::from_str::<Value>(rest) {
            Ok(v) => Part::expr(normalize_numbers(v)),
            Err(_) => Part::Expr {
                expr: Value::String(rest.to_owned()),
                raw: true,
            },
        };
    }
    if has_refused_chain_token(inner) {
        // A refused chain is a var carrying the whole text — never a secret (CHAIN-2).
        return chain(inner).unwrap_or_else(|| Part::Var(inner.to_owned()));
    }
    if mode == Mode::Editor
        && let Some(name) = inner.strip_prefix("secrets.")
    {
        return Part::Secret(name.to_owned());
    }
    Part::Var(inner.to_owned())
}

/// The chain arm (CHAIN-1, CHAIN-2): `None` when refused.
fn chain(inner: &str) -> Option<Part> {
    let tokens = chain_tokens(inner);
    let op = tokens.first()?.1;
    if tokens.iter().any(|(_, c)| *c != op) {
        return None;
    }
    let mut operands = Vec::with_capacity(tokens.len() + 1);
    let mut start = 0;
    for (pos, _) in &tokens {
        operands.push(&inner[start..*pos]);
        start = pos + 2;
    }
    operands.push(&inner[start..]);
    let mut items = Vec::with_capacity(operands.len());
    for operand in operands {
        let t = js_trim(operand);
        if t.is_empty() || t.starts_with("secrets.") {
            return None;
        }
        items.push(chain_operand(t));
    }
    let key = if op == b'|' { "or" } else { "??" };
    let mut m = Map::new();
    m.insert(key.into(), Value::Array(items));
    Some(Part::expr(Value::Object(m)))
}

/// A chain operand: a JSON literal (`true`, `false`, `null`, a strict JSON number, a valid
/// double-quoted string) or else `{"var": text}` — the reference's fallback when
/// `JSON.parse` refuses an operand that looks primitive. Our parse of a literal also
/// refuses what a Rust value cannot hold, in every arm alike: a number beyond f64
/// (`1e400`, D-241) and a string with a lone-surrogate escape (D-244), so such an operand
/// is a path too — unrooted, so a with string holding it stays literal.
fn chain_operand(t: &str) -> Value {
    match t {
        "true" => return Value::Bool(true),
        "false" => return Value::Bool(false),
        "null" => return Value::Null,
        _ => {}
    }
    if is_strict_json_number(t)
        && let Ok(x) = t.parse::<f64>()
        && x.is_finite()
    {
        return number_value(x);
    }
    if t.starts_with('"')
        && let Ok(Value::String(s)) = serde_json::from_str::<Value>(t)
    {
        return Value::String(s);
    }
    let mut m = Map::new();
    m.insert("var".into(), Value::String(t.to_owned()));
    Value::Object(m)
}

/// `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`
fn is_strict_json_number(t: &str) -> bool {
    let b = t.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let s = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - s
    };
    match b.get(i) {
        Some(b'0') => i += 1,
        Some(c) if c.is_ascii_digit() => {
            digits(&mut i);
        }
        _ => return false,
    }
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `JSON.parse` yields JS numbers: an integral value is an integer (`1.0` → `1`).
fn normalize_numbers(v: Value) -> Value {
    match v {
        Value::Number(n) => number_value(json_number(&n)),
        Value::Array(items) => Value::Array(items.into_iter().map(normalize_numbers).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, normalize_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Which flat chain a payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChainOp {
    /// `||` / `or`.
    Or,
    /// `??`.
    Coalesce,
}

/// `parseCoalesceChain`: a one-key `or`/`??` object over an array of ≥2 operands, each a
/// JSON primitive or `{"var": <string>}`.
pub(crate) fn parse_coalesce_chain(expr: &Value) -> Option<(ChainOp, &[Value])> {
    let map = expr.as_object().filter(|m| m.len() == 1)?;
    let (key, value) = map.iter().next()?;
    let op = match key.as_str() {
        "or" => ChainOp::Or,
        "??" => ChainOp::Coalesce,
        _ => return None,
    };
    let items = value.as_array().filter(|a| a.len() >= 2)?;
    items
        .iter()
        .all(|i| (!i.is_object() && !i.is_array()) || var_operand(i).is_some())
        .then_some((op, items.as_slice()))
}

fn var_operand(v: &Value) -> Option<&str> {
    let m = v.as_object().filter(|m| m.len() == 1)?;
    m.get("var")?.as_str()
}

/// `coalesceOperandRefs`: the var refs of a recognised chain, in order.
pub(crate) fn coalesce_operand_refs(expr: &Value) -> Option<Vec<&str>> {
    let (_, items) = parse_coalesce_chain(expr)?;
    Some(items.iter().filter_map(var_operand).collect())
}

fn compact(v: &Value) -> String {
    let mut out = String::new();
    // Past the nesting limit the serializer writes `null` rather than recurse further.
    if write_json(v, &mut out, 0).is_none() {
        return "null".to_owned();
    }
    out
}

/// `serializeTemplate` (CHAIN-4): text verbatim, `{{ ref }}`, `{{ secrets.ref }}`, flat
/// chains in infix, other JSONLogic as `{{ =<raw> }}`; render and unknown parts vanish.
pub fn serialize(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        match part {
            Part::Text(v) => out.push_str(v),
            Part::Var(r) => {
                out.push_str("{{ ");
                out.push_str(r);
                out.push_str(" }}");
            }
            Part::Secret(r) => {
                out.push_str("{{ secrets.");
                out.push_str(r);
                out.push_str(" }}");
            }
            Part::Expr { expr, .. } => {
                out.push_str("{{ ");
                if let Some((op, items)) = parse_coalesce_chain(expr) {
                    let sep = if op == ChainOp::Or { " || " } else { " ?? " };
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push_str(sep);
                        }
                        match var_operand(item) {
                            Some(path) => out.push_str(path),
                            None => out.push_str(&compact(item)),
                        }
                    }
                } else {
                    out.push('=');
                    match expr {
                        Value::Null => out.push_str("\"\""),
                        Value::String(s) => out.push_str(s),
                        other => out.push_str(&compact(other)),
                    }
                }
                out.push_str(" }}");
            }
            Part::Render(_) | Part::Unknown(_) => {}
        }
    }
    out
}

fn rooted(reference: &str) -> bool {
    let first = reference.split('.').next().unwrap_or_default();
    is_root(first)
}

/// Whether one part passes the root-anchoring rule (TPL-1, TPL-7, TPL-8, CHAIN-5).
pub(crate) fn part_is_anchored(part: &Part) -> bool {
    match part {
        Part::Var(r) => !has_refused_chain_token(r) && rooted(r),
        // A chain-shaped payload is root-checked per var operand, even hand-written `=`.
        Part::Expr { expr, .. } => {
            coalesce_operand_refs(expr).is_none_or(|refs| refs.into_iter().all(rooted))
        }
        Part::Text(_) | Part::Secret(_) => true,
        Part::Render(_) | Part::Unknown(_) => false,
    }
}

/// The one root-anchoring decision (TPL-1…3, D-70), shared by the `parse` op's
/// `rootAnchored` path ([`parse_root_anchored`]) and with-value resolution
/// (`expr::compile`): `Some(parts)` — the editor-mode parts — iff the string has at least
/// one marker, no unterminated `{{`, and every part passes [`part_is_anchored`]; `None`
/// means the whole string is literal and is used byte-identical.
pub(crate) fn root_anchor(text: &str) -> Result<Option<Vec<Part>>, TemplateTooLarge> {
    if !text.contains("{{") {
        return Ok(None);
    }
    let parsed = parse(text, Mode::Editor)?;
    let has_marker = parsed.parts.iter().any(|p| !matches!(p, Part::Text(_)));
    let anchored = parsed.parts.iter().all(part_is_anchored);
    #[cfg(w6w_mutants)] // TPL-2 mutant (mutant build only): partial resolution
    let anchored = anchored || crate::mutants::active(crate::mutants::Mutant::PartialTemplate);
    Ok((has_marker && !parsed.unterminated && anchored).then_some(parsed.parts))
}

/// The editor's `parseRootAnchoredTemplate`, under the engine's rule ([`root_anchor`]):
/// the editor-mode parts when the string resolves, otherwise one text part holding the
/// original string (`[]` for ""). An unterminated `{{` anywhere makes the whole string
/// literal (RFC amendment 2026-08-14, D-70).
pub fn parse_root_anchored(text: &str) -> Result<Vec<Part>, TemplateTooLarge> {
    Ok(match root_anchor(text)? {
        Some(parts) => parts,
        None if text.is_empty() => Vec::new(),
        None => vec![Part::Text(text.to_owned())],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(text: &str, mode: Mode) -> Vec<Value> {
        parse(text, mode)
            .expect("fits")
            .parts
            .iter()
            .map(Part::to_json)
            .collect()
    }

    #[test]
    fn scanning_matches_the_reference_parser() {
        let e = Mode::Editor;
        assert_eq!(p("", e), Vec::<Value>::new());
        assert_eq!(
            p("a {{ vars.x", e),
            vec![json!({"kind":"text","value":"a {{ vars.x"})]
        );
        assert_eq!(
            p("{{ a {{ b }}", e),
            vec![json!({"kind":"var","ref":"a {{ b"})]
        );
        assert_eq!(
            p("{{{ x }}}", e),
            vec![
                json!({"kind":"var","ref":"{ x"}),
                json!({"kind":"text","value":"}"})
            ]
        );
        assert_eq!(
            p("x}} {{", e),
            vec![json!({"kind":"text","value":"x}} {{"})]
        );
        assert_eq!(
            p(r#"{{ "a}}b" }}"#, e),
            vec![
                json!({"kind":"var","ref":"\"a"}),
                json!({"kind":"text","value":"b\" }}"})
            ]
        );
        assert_eq!(
            p(r#"{{ inputs.from || "a}}b" }}"#, e),
            vec![json!({"kind":"expr","expr":{"or":[{"var":"inputs.from"},"a}}b"]}})]
        );
        assert_eq!(
            p("{{\u{FEFF}vars.a\u{FEFF}}}", e),
            vec![json!({"kind":"var","ref":"vars.a"})]
        );
        assert_eq!(p("{{ = 1 }}", e), vec![json!({"kind":"expr","expr":1})]);
        assert_eq!(
            p("{{ =a + b }}", e),
            vec![json!({"kind":"expr","expr":"a + b"})]
        );
        assert_eq!(
            p(r#"{{ ="a" || "b" }}"#, e),
            vec![json!({"kind":"expr","expr":"\"a\" || \"b\""})]
        );
        assert_eq!(
            p(r#"{{ ={"a":{"b":1}} }}"#, e),
            vec![json!({"kind":"expr","expr":{"a":{"b":1}}})]
        );
        assert_eq!(
            p("{{ secrets. }}", e),
            vec![json!({"kind":"secret","ref":""})]
        );
        assert_eq!(
            p("{{ Secrets.x }}", e),
            vec![json!({"kind":"var","ref":"Secrets.x"})]
        );
        assert_eq!(
            p("{{ secrets.X }}", Mode::Render),
            vec![json!({"kind":"var","ref":"secrets.X"})]
        );
    }

    #[test]
    fn chain_arm_and_refusals() {
        let e = Mode::Editor;
        assert_eq!(
            p("{{ a ||| b }}", e),
            vec![json!({"kind":"expr","expr":{"or":[{"var":"a"},{"var":"| b"}]}})]
        );
        assert_eq!(
            p("{{ vars.n ?? 0 ?? -0 ?? 1e3 ?? 01 ?? 'x' }}", e),
            vec![
                json!({"kind":"expr","expr":{"??":[{"var":"vars.n"},0,0,1000,{"var":"01"},{"var":"'x'"}]}})
            ]
        );
        for refused in [
            "vars.a || vars.b ?? vars.c",
            "secrets.K || \"x\"",
            "vars.a ||",
            "x || secrets.K",
        ] {
            assert_eq!(
                p(&format!("{{{{ {refused} }}}}"), e),
                vec![json!({"kind":"var","ref":refused})]
            );
        }
        assert!(!has_refused_chain_token("\"a||b\""));
        assert!(has_refused_chain_token("vars.a || \"x||y\""));
    }

    #[test]
    fn serializer_promotes_flat_chains() {
        let parts = parse(r#"{{ ={"or":[{"var":"vars.a"},"x"]} }}"#, Mode::Editor)
            .expect("fits")
            .parts;
        assert_eq!(serialize(&parts), r#"{{ vars.a || "x" }}"#);
        assert_eq!(
            serialize(&[Part::expr(json!({"or": [1]}))]),
            r#"{{ ={"or":[1]} }}"#
        );
        assert_eq!(serialize(&[Part::expr(Value::Null)]), r#"{{ ="" }}"#);
        assert_eq!(serialize(&[Part::Render("documents.x".into())]), "");
        assert_eq!(serialize(&[Part::Var(String::new())]), "{{  }}");
    }

    /// D-241, D-244: what our JSON parse refuses (a number beyond f64, a lone-surrogate
    /// escape) is a path operand, the reference's fallback for a refused `JSON.parse`.
    #[test]
    fn unholdable_chain_literals_are_paths() {
        let e = Mode::Editor;
        assert_eq!(
            p("{{ vars.a ?? 1e400 ?? -1E+999 ?? 1e-400 }}", e),
            vec![
                json!({"kind":"expr","expr":{"??":[{"var":"vars.a"},{"var":"1e400"},{"var":"-1E+999"},0]}})
            ]
        );
        assert_eq!(
            p(r#"{{ vars.a || "\udc00" || "\ud83d\ude00" }}"#, e),
            vec![
                json!({"kind":"expr","expr":{"or":[{"var":"vars.a"},{"var":"\"\\udc00\""},"😀"]}})
            ]
        );
        assert_eq!(root_anchor("{{ vars.a ?? 1e400 }}").expect("fits"), None);
    }

    /// D-245: a non-string text value or ref serializes as the reference's `String()`.
    #[test]
    fn serializer_stringifies_non_string_content_like_js() {
        let parts: Vec<Part> = [
            json!({"kind": "text", "value": 5}),
            json!({"kind": "var", "ref": [1, [2, null]]}),
            json!({"kind": "secret", "ref": false}),
            json!({"kind": "text", "value": {"a": 1}}),
            json!({"kind": "var", "ref": null}),
            json!({"kind": "var"}),
        ]
        .iter()
        .map(Part::from_json)
        .collect();
        assert_eq!(
            serialize(&parts),
            "5{{ 1,2, }}{{ secrets.false }}[object Object]{{  }}{{  }}"
        );
    }

    #[test]
    fn root_anchoring() {
        let lit = |t: &str| vec![Part::Text(t.to_owned())];
        assert_eq!(
            parse_root_anchored("{{ vars.a || badroot.x }}").expect("fits"),
            lit("{{ vars.a || badroot.x }}")
        );
        assert_eq!(parse_root_anchored("{{ }}").expect("fits"), lit("{{ }}"));
        assert_eq!(
            parse_root_anchored(r#"{{ ={"or":[{"var":"badroot.x"},"y"]} }}"#).expect("fits"),
            lit(r#"{{ ={"or":[{"var":"badroot.x"},"y"]} }}"#)
        );
        assert_eq!(
            parse_root_anchored("{{ vars }}").expect("fits"),
            vec![Part::Var("vars".into())]
        );
        assert_eq!(parse_root_anchored("").expect("fits"), Vec::<Part>::new());
        // D-70: an unterminated `{{` anywhere makes the whole string literal, also after a
        // valid rooted marker — the same decision resolution makes.
        assert_eq!(
            parse_root_anchored("{{ vars.x }} {{").expect("fits"),
            lit("{{ vars.x }} {{")
        );
        assert_eq!(root_anchor("{{ vars.x }} {{").expect("fits"), None);
        assert_eq!(parse_root_anchored("plain").expect("fits"), lit("plain"));
        assert_eq!(root_anchor("plain").expect("fits"), None);
    }

    #[test]
    fn limits_are_errors() {
        assert!(parse(&"x".repeat(MAX_TEMPLATE_BYTES + 1), Mode::Editor).is_err());
        // Many `{{ =[` markers whose balanced scan never closes: bounded, not quadratic.
        let adversarial = "{{ =[ }}".repeat(MAX_TEMPLATE_BYTES / 8);
        assert!(parse(&adversarial, Mode::Editor).is_err());
    }
}
