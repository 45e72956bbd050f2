//! A YAML document as a tree that remembers where every node came from.
//!
//! Owns: turning saphyr-parser's event stream (YAML 1.2; docs/decisions.md D-30) into
//! [`Y`] nodes with 1-based positions, with the checks the parser leaves to its caller:
//! duplicate keys, non-scalar keys, one document per stream, nesting depth
//! ([`DEPTH_MAX`]) and a node budget that counts alias expansion ([`NODES_MAX`], the
//! billion-laughs guard). Plain scalars resolve by the YAML 1.2 core schema.
//! Invariant: the builder is iterative (an explicit stack), so no document can overflow
//! the Rust stack while it is built; conversions recurse at most [`DEPTH_MAX`] deep.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};
use serde_json::{Map, Number, Value};

use super::{DEPTH_MAX, NODES_MAX, Pos, Problem};
use crate::limits::YAML_KEY_CHARS_MAX;

/// A node and where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Y {
    pub node: N,
    pub pos: Pos,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum N {
    Null,
    Bool(bool),
    Number(Number),
    Str(String),
    Seq(Vec<Y>),
    /// Keys in document order; keys are unique (checked while building).
    Map(Vec<(String, Pos, Y)>),
}

impl Y {
    pub(crate) fn kind(&self) -> &'static str {
        match self.node {
            N::Null => "null",
            N::Bool(_) => "a boolean",
            N::Number(_) => "a number",
            N::Str(_) => "a string",
            N::Seq(_) => "a list",
            N::Map(_) => "a map",
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.node {
            N::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The JSON value (recursion bounded by the depth checked at build time).
    pub(crate) fn to_json(&self) -> Value {
        match &self.node {
            N::Null => Value::Null,
            N::Bool(b) => Value::Bool(*b),
            N::Number(n) => Value::Number(n.clone()),
            N::Str(s) => Value::String(s.clone()),
            N::Seq(items) => Value::Array(items.iter().map(Y::to_json).collect()),
            N::Map(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, _, v)| (k.clone(), v.to_json()))
                    .collect::<Map<String, Value>>(),
            ),
        }
    }

    fn size(&self) -> usize {
        // Iterative, so a huge alias target costs no stack.
        let mut n = 0;
        let mut stack = vec![self];
        while let Some(y) = stack.pop() {
            n += 1;
            match &y.node {
                N::Seq(items) => stack.extend(items.iter()),
                N::Map(entries) => stack.extend(entries.iter().map(|(_, _, v)| v)),
                _ => {}
            }
        }
        n
    }
}

fn pos(span: &Span) -> Pos {
    Pos {
        line: span.start.line(),
        column: span.start.col() + 1,
    }
}

enum Frame {
    Seq {
        items: Vec<Y>,
        pos: Pos,
        anchor: usize,
    },
    Map {
        entries: Vec<(String, Pos, Y)>,
        /// Each key's first position: the duplicate check is a hash probe (D-218).
        seen: HashMap<String, Pos>,
        key: Option<(String, Pos)>,
        pos: Pos,
        anchor: usize,
    },
}

fn err(code: &'static str, path: &str, at: Pos, message: impl Into<String>) -> Problem {
    Problem::new(code, Some("SEC-2"), path, at, message)
}

/// The JSON Pointer of the node about to be added under the current stack.
fn path_of(stack: &[Frame]) -> String {
    let mut p = String::new();
    for f in stack {
        match f {
            Frame::Seq { items, .. } => p.push_str(&format!("/{}", items.len())),
            Frame::Map {
                key: Some((k, _)), ..
            } => {
                p.push('/');
                p.push_str(&crate::model::pointer_token(k));
            }
            Frame::Map { key: None, .. } => {}
        }
    }
    p
}

/// Parse one YAML document into a positioned tree.
pub(crate) fn parse(text: &str) -> Result<Y, Problem> {
    let mut parser = Parser::new_from_str(text);
    let mut tree = Tree::default();
    while let Some(next) = parser.next_event() {
        let (event, span) = next.map_err(|e| scan_problem(&e))?;
        let at = pos(&span);
        let done = tree.event(event, at)?;
        if tree.nodes > NODES_MAX {
            return Err(err(
                "limit_exceeded",
                &path_of(&tree.stack),
                at,
                format!("the document has more than {NODES_MAX} nodes (aliases expanded)"),
            ));
        }
        let Some((y, anchor)) = done else {
            continue;
        };
        if anchor != 0 {
            tree.anchors.insert(anchor, y.clone());
        }
        tree.place(y)?;
    }
    Ok(tree.root.unwrap_or(Y {
        node: N::Null,
        pos: Pos::START,
    }))
}

/// A scanner error as a problem: the scanner's own flow-nesting bound is our depth limit
/// too.
fn scan_problem(e: &saphyr_parser::ScanError) -> Problem {
    let m = e.marker();
    let code = if e.info().contains("recursion limit") {
        "limit_exceeded"
    } else {
        "syntax_error"
    };
    err(
        code,
        "",
        Pos {
            line: m.line(),
            column: m.col() + 1,
        },
        format!("not well-formed YAML: {}", e.info()),
    )
}

/// The tree being built from the parser's events.
#[derive(Default)]
struct Tree {
    stack: Vec<Frame>,
    anchors: HashMap<usize, Y>,
    /// Nodes so far, aliases expanded (bounded by [`NODES_MAX`]).
    nodes: usize,
    root: Option<Y>,
    documents: usize,
}

impl Tree {
    /// One event: a node it completes (with its anchor id, 0 for none), if any.
    fn event(&mut self, event: Event<'_>, at: Pos) -> Result<Option<(Y, usize)>, Problem> {
        Ok(match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing | Event::DocumentEnd => None,
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(err(
                        "syntax_error",
                        "",
                        at,
                        "a workflow is one YAML document; found a second one",
                    ));
                }
                None
            }
            Event::Alias(id) => {
                let target = self.anchors.get(&id).cloned().ok_or_else(|| {
                    err(
                        "syntax_error",
                        &path_of(&self.stack),
                        at,
                        "an alias must refer to an anchor defined (and closed) before it",
                    )
                })?;
                self.nodes = self.nodes.saturating_add(target.size());
                let node = target.node;
                Some((Y { node, pos: at }, 0))
            }
            Event::Scalar(value, style, anchor, tag) => {
                self.nodes += 1;
                let is_str_tag = tag.as_ref().is_some_and(|t| {
                    t.suffix == "str" && (t.handle == "tag:yaml.org,2002:" || t.handle == "!!")
                });
                let node = if style != ScalarStyle::Plain || is_str_tag {
                    N::Str(value.into_owned())
                } else {
                    resolve_plain(&value)
                        .map_err(|m| err("syntax_error", &path_of(&self.stack), at, m))?
                };
                Some((Y { node, pos: at }, anchor))
            }
            Event::SequenceStart(anchor, _) => {
                self.open(Frame::Seq {
                    items: Vec::new(),
                    pos: at,
                    anchor,
                })?;
                None
            }
            Event::MappingStart(anchor, _) => {
                self.open(Frame::Map {
                    entries: Vec::new(),
                    seen: HashMap::new(),
                    key: None,
                    pos: at,
                    anchor,
                })?;
                None
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(),
        })
    }

    /// A list or map closes: the node it was, with its anchor id.
    fn close(&mut self) -> Option<(Y, usize)> {
        match self.stack.pop()? {
            Frame::Seq { items, pos, anchor } => {
                let node = N::Seq(items);
                Some((Y { node, pos }, anchor))
            }
            Frame::Map {
                entries,
                pos,
                anchor,
                ..
            } => {
                let node = N::Map(entries);
                Some((Y { node, pos }, anchor))
            }
        }
    }

    /// A list or map opens: within the depth bound, and never as a map key.
    fn open(&mut self, frame: Frame) -> Result<(), Problem> {
        let at = match &frame {
            Frame::Seq { pos, .. } | Frame::Map { pos, .. } => *pos,
        };
        self.nodes += 1;
        if self.stack.len() >= DEPTH_MAX {
            return Err(err(
                "limit_exceeded",
                &path_of(&self.stack),
                at,
                format!("the document nests deeper than {DEPTH_MAX} levels"),
            ));
        }
        if let Some(Frame::Map { key: None, .. }) = self.stack.last() {
            return Err(err(
                "invalid_key",
                &path_of(&self.stack),
                at,
                "a map key must be a scalar (a string), not a list or a map",
            ));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// A completed node goes where the stack says: the root, a list item, a map value, or
    /// a map key (checked: a scalar, not too long, not a duplicate).
    fn place(&mut self, y: Y) -> Result<(), Problem> {
        let key_expected = match self.stack.last_mut() {
            None => {
                self.root = Some(y);
                return Ok(());
            }
            Some(Frame::Seq { items, .. }) => {
                items.push(y);
                return Ok(());
            }
            Some(Frame::Map { entries, key, .. }) => match key.take() {
                Some((k, kpos)) => {
                    entries.push((k, kpos, y));
                    return Ok(());
                }
                None => y,
            },
        };
        let k = self.key(&key_expected)?;
        if let Some(Frame::Map { seen, key, .. }) = self.stack.last_mut() {
            seen.insert(k.clone(), key_expected.pos);
            *key = Some((k, key_expected.pos));
        }
        Ok(())
    }

    /// The text of a map key: a scalar within [`YAML_KEY_CHARS_MAX`] characters, not seen
    /// before in its map (YML-1).
    fn key(&self, y: &Y) -> Result<String, Problem> {
        let k = match &y.node {
            N::Str(s) => s.clone(),
            N::Null => "null".to_owned(),
            N::Bool(b) => b.to_string(),
            N::Number(n) => n.to_string(),
            N::Seq(_) | N::Map(_) => {
                return Err(err(
                    "invalid_key",
                    "",
                    y.pos,
                    "a map key must be a scalar (a string), not a list or a map",
                ));
            }
        };
        if k.len() > YAML_KEY_CHARS_MAX && k.chars().count() > YAML_KEY_CHARS_MAX {
            // D-221: a key is in the path of every problem under it.
            return Err(err(
                "limit_exceeded",
                &path_of(&self.stack),
                y.pos,
                format!(
                    "a map key is longer than {YAML_KEY_CHARS_MAX} characters (YAML's \
                     own bound for an implicit key)"
                ),
            ));
        }
        #[cfg(test)]
        super::work::add(1);
        if let Some(Frame::Map { seen, .. }) = self.stack.last()
            && let Some(first) = seen.get(&k)
        {
            let mut p = path_of(&self.stack);
            p.push('/');
            p.push_str(&crate::model::pointer_token(&k));
            return Err(Problem::new(
                "duplicate_key",
                Some("YML-1"),
                p,
                y.pos,
                format!(
                    "duplicate key {k:?} (first at line {}, column {}): YAML map keys are unique",
                    first.line, first.column
                ),
            ));
        }
        Ok(k)
    }
}

/// YAML 1.2 core schema for a plain scalar.
fn resolve_plain(s: &str) -> Result<N, String> {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(N::Null),
        "true" | "True" | "TRUE" => return Ok(N::Bool(true)),
        "false" | "False" | "FALSE" => return Ok(N::Bool(false)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" | "-.inf" | "-.Inf" | "-.INF"
        | ".nan" | ".NaN" | ".NAN" => {
            return Err(format!(
                "{s} is not representable in JSON; quote it if it is meant as text"
            ));
        }
        _ => {}
    }
    let int_body = s.strip_prefix(['-', '+']).unwrap_or(s);
    if !int_body.is_empty() && int_body.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = s.parse::<i64>() {
            return Ok(N::Number(i.into()));
        }
        if let Ok(u) = int_body.parse::<u64>()
            && !s.starts_with('-')
        {
            return Ok(N::Number(u.into()));
        }
    }
    for (prefix, radix) in [("0o", 8), ("0x", 16)] {
        if let Some(digits) = s.strip_prefix(prefix)
            && !digits.is_empty()
            && let Ok(u) = u64::from_str_radix(digits, radix)
        {
            return Ok(N::Number(u.into()));
        }
    }
    if is_core_float(s)
        && let Ok(f) = s.parse::<f64>()
    {
        return Number::from_f64(f)
            .map(N::Number)
            .ok_or_else(|| format!("{s} is out of range"));
    }
    Ok(N::Str(s.to_owned()))
}

/// `[-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`
fn is_core_float(s: &str) -> bool {
    let b = s.strip_prefix(['-', '+']).unwrap_or(s).as_bytes();
    let mut i = 0;
    let int_digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int_digits;
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac_digits;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        let exp = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if exp == 0 {
            return false;
        }
        i += exp;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scalars_resolve_by_the_core_schema() {
        let y = parse(
            "a: 1\nb: -2.5\nc: true\nd: ~\ne: '1'\nf: 0x1F\ng: hello world\nh: 1e3\ni: !!str 12\n",
        )
        .expect("parses");
        assert_eq!(
            y.to_json(),
            json!({"a": 1, "b": -2.5, "c": true, "d": null, "e": "1", "f": 31,
                   "g": "hello world", "h": 1000.0, "i": "12"})
        );
    }

    #[test]
    fn positions_are_one_based() {
        let y = parse("steps:\n  - a:\n      x: 1\n").expect("parses");
        let N::Map(e) = &y.node else { panic!("map") };
        assert_eq!(e[0].1, Pos { line: 1, column: 1 });
        let N::Seq(items) = &e[0].2.node else {
            panic!("seq")
        };
        assert_eq!(items[0].pos.line, 2);
    }

    #[test]
    fn duplicate_keys_are_refused_with_both_positions() {
        let e = parse("steps:\n  - a: {x: 1}\nsteps: []\n").expect_err("duplicate");
        assert_eq!(e.code, "duplicate_key");
        assert_eq!(e.path, "/steps");
        assert_eq!((e.line, e.column), (3, 1));
        assert!(
            e.message.contains("first at line 1, column 1"),
            "{}",
            e.message
        );
        let nested = parse("a:\n  b: 1\n  b: 2\n").expect_err("duplicate");
        assert_eq!(nested.path, "/a/b");
    }

    #[test]
    fn malformed_deep_and_explosive_documents_get_clear_errors() {
        let e = parse("a: [1, 2\nb: 3\n").expect_err("unclosed");
        assert_eq!(e.code, "syntax_error");
        assert!(e.line >= 1);
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(parse(&deep).expect_err("deep").code, "limit_exceeded");
        let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            bomb.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n",
                p = i - 1
            ));
        }
        assert_eq!(parse(&bomb).expect_err("bomb").code, "limit_exceeded");
        assert_eq!(
            parse("a: 1\n---\nb: 2\n").expect_err("two").code,
            "syntax_error"
        );
        assert_eq!(parse("? [a]\n: 1\n").expect_err("key").code, "invalid_key");
        assert_eq!(parse("a: .nan\n").expect_err("nan").code, "syntax_error");
        let long = "k".repeat(YAML_KEY_CHARS_MAX + 1);
        let e = parse(&format!("a:\n  ? {long}\n  : 1\n")).expect_err("long key");
        assert_eq!(
            (e.code, e.path.as_str(), e.line),
            ("limit_exceeded", "/a", 2)
        );
        let at_limit = "é".repeat(YAML_KEY_CHARS_MAX);
        assert!(parse(&format!("? {at_limit}\n: 1\n")).is_ok());
    }

    /// D-218: a key is checked against its map's keys with one hash probe, so a map of 10×
    /// the keys is ~10× the work (it was a scan of every earlier key: quadratic), and a
    /// duplicate among many is still found with both positions.
    #[test]
    fn duplicate_key_checks_cost_linear_work() {
        let map = |n: usize, flow: bool| -> String {
            if flow {
                let keys: Vec<String> = (0..n).map(|i| format!("k{i}: 1")).collect();
                format!("m: {{{}}}\n", keys.join(", "))
            } else {
                (0..n).map(|i| format!("k{i}: 1\n")).collect()
            }
        };
        for flow in [false, true] {
            let work = |n: usize| crate::dialect::work::of(|| parse(&map(n, flow)).map(|_| ())).1;
            let (small, big) = (work(1_000), work(10_000));
            assert!(big <= 20 * small, "flow {flow}: {small} → {big} units");
            assert!(big >= 10_000, "every key is checked");
        }
        let e = parse(&format!("{}k5: 2\n", map(10_000, false))).expect_err("duplicate");
        assert_eq!((e.code, e.line, e.column), ("duplicate_key", 10_001, 1));
        assert!(
            e.message.contains("first at line 6, column 1"),
            "{}",
            e.message
        );
    }

    #[test]
    fn aliases_expand() {
        let y = parse("base: &b {q: 1}\ncopy: *b\n").expect("parses");
        assert_eq!(y.to_json(), json!({"base": {"q": 1}, "copy": {"q": 1}}));
    }
}
