//! Tidy checks run as a test, so CI is just `cargo test`: every source file documents
//! itself, no debugging leftovers, no unfinished code on a reachable path, one-way
//! layering (ARCHITECTURE.md#layers) and no I/O, clock or randomness in the pure layers.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every `.rs` file under `src/` with its text, sorted by path.
pub(crate) fn sources() -> Vec<(PathBuf, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p, text)
        })
        .collect()
}

#[test]
fn every_source_file_starts_with_a_module_doc() {
    for (path, text) in sources() {
        assert!(
            text.trim_start().starts_with("//!"),
            "{} must start with a `//!` comment saying what the module owns",
            path.display()
        );
    }
}

#[test]
fn no_debugging_or_unfinished_code_in_src() {
    let banned = ["dbg!(", "todo!(", "unimplemented!(", "println!(\"DEBUG"];
    for (path, text) in sources() {
        for (n, line) in text.lines().enumerate() {
            for b in banned {
                assert!(
                    !line.contains(b),
                    "{}:{}: contains {b}",
                    path.display(),
                    n + 1
                );
            }
        }
    }
}

#[test]
fn every_case_file_names_clauses() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance/cases");
    for entry in std::fs::read_dir(&dir).expect("cases dir").flatten() {
        let text = std::fs::read_to_string(entry.path()).expect("readable");
        assert!(
            text.contains("\"clauses\""),
            "{} has no clause tags",
            entry.path().display()
        );
    }
}

// ---------------------------------------------------------------------------------------
// The public API (D-310, D-311): five public modules and the hidden `__internals`; the
// compile test implements every seam without the latter.

/// The only modules `src/lib.rs` may declare `pub`.
const PUBLIC_MODULES: &[&str] = &[
    "model",
    "host",
    "engine",
    "sim",
    "conformance",
    "__internals",
];

/// The names of the top-level modules a crate root declares `pub` (`pub mod x;` or `pub mod
/// x {` at the start of a line; modules nested in an inline one are its business), in code
/// (comments and strings do not count).
fn pub_mods(root: &str) -> Vec<String> {
    code_only(root)
        .lines()
        .filter_map(|line| line.strip_prefix("pub mod "))
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn the_crate_root_declares_only_the_public_modules_pub() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("src/lib.rs");
    let mut got = pub_mods(&lib);
    got.sort();
    let mut want: Vec<String> = PUBLIC_MODULES.iter().map(|m| (*m).to_owned()).collect();
    want.sort();
    assert_eq!(
        got, want,
        "src/lib.rs's `pub mod`s vs the public modules (D-310); every other module is private"
    );
    assert_eq!(
        pub_mods("// pub mod a;\npub mod b {\n    pub mod c;\n}\nmod d;\n"),
        ["b"],
        "the checker sees top-level modules only, and skips comments"
    );
}

#[test]
fn the_compile_test_uses_public_paths_only() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("tests/integration/public_api.rs");
    let text = std::fs::read_to_string(&path).expect("tests/integration/public_api.rs");
    assert!(
        !code_only(&text).contains("__internals"),
        "{} must implement the seams from public paths only (D-310)",
        path.display()
    );
    assert!(
        code_only(&text).contains("impl RunStore for"),
        "it implements the store"
    );
}

// ---------------------------------------------------------------------------------------
// One-way layering (ARCHITECTURE.md#layers). The order is written twice on purpose — here
// and in ARCHITECTURE.md — and `the_layer_order_is_the_one_architecture_md_documents`
// keeps the two equal, so the document cannot drift from what is enforced.

/// Modules that import nothing from the crate.
const LEAVES: &[&str] = &["limits", "mutants"];

/// Every other top-level module, lowest first: a module may use only modules earlier in
/// this list, and the leaves.
const LAYERS: &[&str] = &[
    "json",
    "model",
    "plan",
    "validate",
    "expr",
    "redact",
    "script",
    "host",
    "engine",
    "sim",
    "dialect",
    "service",
    "process",
    "conformance",
    "context_protocol",
    "cli",
];

/// The source with every comment, string and character literal blanked to spaces (line
/// breaks kept), so what is left is code and line numbers still match.
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let n = c.len();
    let mut out = String::with_capacity(src.len());
    let blank = |out: &mut String, part: &[char]| {
        out.extend(part.iter().map(|&ch| if ch == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < n {
        let after_ident = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        let end = if c[i..].starts_with(&['/', '/']) {
            c[i..]
                .iter()
                .position(|&ch| ch == '\n')
                .map_or(n, |p| i + p)
        } else if c[i..].starts_with(&['/', '*']) {
            let (mut depth, mut j) = (0usize, i);
            while j < n {
                if c[j..].starts_with(&['/', '*']) {
                    depth += 1;
                    j += 2;
                } else if c[j..].starts_with(&['*', '/']) {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j.min(n)
        } else if let Some(end) = (!after_ident).then(|| raw_string_end(&c, i)).flatten() {
            end
        } else if c[i] == '"' {
            let mut j = i + 1;
            while j < n && c[j] != '"' {
                j += if c[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(n)
        } else if c[i] == '\'' && i + 1 < n && c[i + 1] == '\\' {
            // An escaped char literal: '\n', '\'', '\u{2192}'.
            let close = c[i + 3.min(n - i)..].iter().position(|&ch| ch == '\'');
            close.map_or(n, |p| i + 3 + p + 1).min(n)
        } else if c[i] == '\'' && i + 2 < n && c[i + 2] == '\'' {
            i + 3
        } else {
            // Code, a lifetime or a label.
            out.push(c[i]);
            i += 1;
            continue;
        };
        blank(&mut out, &c[i..end]);
        i = end;
    }
    out
}

/// The end of a raw (byte) string starting at `i` (`r"…"`, `r#"…"#`, `br#"…"#`).
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if c.get(j) == Some(&'b') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let hashes = c[j..].iter().take_while(|&&ch| ch == '#').count();
    j += hashes;
    if c.get(j) != Some(&'"') {
        return None;
    }
    let mut k = j + 1;
    while k < c.len() {
        if c[k] == '"'
            && c[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&h| h == '#')
                .count()
                == hashes
        {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    Some(c.len())
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// Every top-level module `code` (from [`code_only`]) names through `crate::…`,
/// `$crate::…` or enough `super::` to reach the crate root, with its 1-based line.
/// `depth` is the file's module depth (`src/sim/mod.rs` 1, `src/sim/host.rs` 2); inline
/// `mod name { … }` blocks add one each.
fn crate_refs(code: &str, depth: usize) -> Vec<(usize, String)> {
    path_refs(code, "crate", depth)
}

/// The first segment after every `root::` path in `code` (grouped `use` trees included),
/// with its 1-based line; `*` for a glob (`root::*`, or `*` in a group). For `root`
/// "crate", also `super` chains that reach the root.
fn path_refs(code: &str, root: &str, depth: usize) -> Vec<(usize, String)> {
    let c: Vec<char> = code.chars().collect();
    let line_at = |pos: usize| 1 + c[..pos].iter().filter(|&&ch| ch == '\n').count();
    let skip_ws = |mut j: usize| {
        while j < c.len() && c[j].is_whitespace() {
            j += 1;
        }
        j
    };
    let word_at = |j: usize| -> String { c[j..].iter().take_while(|&&ch| is_ident(ch)).collect() };
    // `::` after position `j` (whitespace allowed), returning the position after it.
    let path_sep = |j: usize| -> Option<usize> {
        let j = skip_ws(j);
        (c.get(j) == Some(&':') && c.get(j + 1) == Some(&':')).then(|| skip_ws(j + 2))
    };
    let mut refs = Vec::new();
    // A segment, or `*` for a glob (which names no item but reaches all of them).
    let segment_at = |j: usize| -> String {
        if c.get(j) == Some(&'*') {
            "*".to_owned()
        } else {
            word_at(j)
        }
    };
    let push_target = |refs: &mut Vec<(usize, String)>, j: usize| {
        if c.get(j) == Some(&'{') {
            // A group: the first segment of every top-level item.
            let (mut level, mut k, mut start) = (0usize, j + 1, j + 1);
            while k < c.len() {
                match c[k] {
                    '{' => level += 1,
                    '}' if level == 0 => break,
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        let s = skip_ws(start);
                        refs.push((line_at(s), segment_at(s)));
                        start = k + 1;
                    }
                    _ => {}
                }
                k += 1;
            }
            let s = skip_ws(start);
            refs.push((line_at(s), segment_at(s)));
        } else {
            refs.push((line_at(j), segment_at(j)));
        }
    };
    // Brace levels at which an inline `mod name {` opened.
    let mut mods: Vec<usize> = Vec::new();
    let mut braces = 0usize;
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '{' => {
                braces += 1;
                i += 1;
                continue;
            }
            '}' => {
                if mods.last() == Some(&braces) {
                    mods.pop();
                }
                braces = braces.saturating_sub(1);
                i += 1;
                continue;
            }
            ch if !is_ident(ch) => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let word = word_at(i);
        let boundary = i == 0 || !is_ident(c[i - 1]);
        let next = i + word.chars().count();
        if boundary && word == "mod" {
            let name_at = skip_ws(next);
            let after = skip_ws(name_at + word_at(name_at).chars().count());
            if c.get(after) == Some(&'{') {
                mods.push(braces + 1);
            }
        } else if boundary && word == root {
            if let Some(j) = path_sep(next) {
                push_target(&mut refs, j);
            }
        } else if boundary && root == "crate" && word == "super" {
            // A chain of `super::`; at the crate root it names a top-level module.
            let (mut supers, mut j) = (1, next);
            while let Some(k) = path_sep(j) {
                if word_at(k) == "super" {
                    supers += 1;
                    j = k + 5;
                } else {
                    if supers == depth + mods.len() {
                        push_target(&mut refs, k);
                    }
                    break;
                }
            }
            i = j;
            continue;
        }
        i = next;
    }
    refs.retain(|(_, m)| !m.is_empty() && m != "self");
    refs
}

/// The top-level module a file under `src/` belongs to and its module depth; `None` for
/// the crate roots (`lib.rs` may name every module; `main.rs` is the binary).
fn module_of(rel: &str) -> Option<(String, usize)> {
    let rel = rel.strip_prefix("src/")?;
    if rel == "lib.rs" || rel == "main.rs" {
        return None;
    }
    let parts: Vec<&str> = rel.split('/').collect();
    let top = parts[0].trim_end_matches(".rs").to_owned();
    let depth = if parts.last() == Some(&"mod.rs") {
        parts.len() - 1
    } else {
        parts.len()
    };
    Some((top, depth))
}

/// What each public façade module of `lib.rs` re-exports from another layer's module:
/// `(façade, name, owner)` for every `pub use crate::owner_impl::…` (or `crate::owner::…`)
/// inside `pub mod façade { … }` whose owner is not the façade's own layer (`engine`
/// lists `sim`'s `WorkflowEngine`, where an engine author looks for it). `__internals`
/// is no façade: nothing in the crate may name it.
fn facade_borrowings(lib: &str) -> Vec<(String, String, String)> {
    let code = code_only(lib);
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("pub mod ") {
        let after = &rest[at + "pub mod ".len()..];
        let facade: String = after.chars().take_while(|&ch| is_ident(ch)).collect();
        let Some(open) = after
            .find('{')
            .filter(|&o| after[facade.len()..o].trim().is_empty())
        else {
            rest = after;
            continue;
        };
        // The block, to its matching brace.
        let mut level = 0usize;
        let mut end = after.len();
        for (k, ch) in after[open..].char_indices() {
            match ch {
                '{' => level += 1,
                '}' => {
                    level -= 1;
                    if level == 0 {
                        end = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let block = &after[open + 1..end];
        rest = &after[end..];
        if facade == "__internals" {
            continue;
        }
        for statement in block.split(';') {
            let words: String = statement.split_whitespace().collect::<Vec<_>>().join(" ");
            let Some(path) = words.strip_prefix("pub use crate::") else {
                continue;
            };
            let first: String = path.chars().take_while(|&ch| is_ident(ch)).collect();
            let owner = first.strip_suffix("_impl").unwrap_or(&first).to_owned();
            if owner == facade {
                continue;
            }
            // The names it brings in: each item's alias, or its last segment.
            let items = match (path.find('{'), path.rfind('}')) {
                (Some(a), Some(b)) if a < b => path[a + 1..b].split(',').collect(),
                _ => vec![path.rsplit("::").next().unwrap_or("")],
            };
            for item in items {
                let name = item.rsplit([' ', ':']).next().unwrap_or("").trim();
                if !name.is_empty() && name != "*" && name != "self" {
                    out.push((facade.clone(), name.to_owned(), owner.clone()));
                }
            }
        }
    }
    out
}

/// Every use of a module the layer order puts above the user (or any use by a leaf), as
/// one message per reference — a name a façade module re-exports from another layer
/// counts as a use of that layer ([`facade_borrowings`], read from `src/lib.rs` among
/// `files`). `files` are `(path relative to the crate, text)`.
fn layering_violations(
    files: &[(String, String)],
    leaves: &[&str],
    layers: &[&str],
) -> Vec<String> {
    let rank = |m: &str| layers.iter().position(|l| *l == m);
    let borrowed = files
        .iter()
        .find(|(rel, _)| rel == "src/lib.rs")
        .map(|(_, text)| facade_borrowings(text))
        .unwrap_or_default();
    let mut facades: Vec<&str> = borrowed.iter().map(|(f, _, _)| f.as_str()).collect();
    facades.dedup();
    let mut out = Vec::new();
    for (rel, text) in files {
        let Some((from, depth)) = module_of(rel) else {
            continue;
        };
        let from_leaf = leaves.contains(&from.as_str());
        let Some(from_rank) = rank(&from).or(from_leaf.then_some(0)) else {
            out.push(format!(
                "{rel}: module `{from}` is not in the layer order; place it in ARCHITECTURE.md#layers and in tests/integration/tidy.rs"
            ));
            continue;
        };
        let code = code_only(text);
        if !from_leaf {
            for facade in &facades {
                for (line, name) in path_refs(&code, facade, 0) {
                    // A glob brings in every name the façade lists.
                    let owners = borrowed
                        .iter()
                        .filter(|(f, n, _)| f == facade && (*n == name || name == "*"));
                    for (_, item, owner) in owners {
                        if *owner != from && rank(owner).is_none_or(|r| r > from_rank) {
                            let what = if name == "*" {
                                format!("which brings in {owner}'s {item}")
                            } else {
                                format!("which is {owner}'s")
                            };
                            out.push(format!(
                                "{rel}:{line} uses crate::{facade}::{name}, {what} (the façade `{facade}` lists it), but {from} sits below {owner} in the layer order (ARCHITECTURE.md#layers)"
                            ));
                        }
                    }
                }
            }
        }
        for (line, to) in crate_refs(&code, depth) {
            if to == from || (!from_leaf && leaves.contains(&to.as_str())) {
                continue;
            }
            if from_leaf {
                out.push(format!(
                    "{rel}:{line} uses crate::{to}, but {from} is a leaf: it imports nothing from the crate (ARCHITECTURE.md#layers)"
                ));
                continue;
            }
            if to == "*" {
                out.push(format!(
                    "{rel}:{line} uses crate::*, a glob of the crate root: name the modules it uses, so the layer order can be checked (ARCHITECTURE.md#layers)"
                ));
                continue;
            }
            match rank(&to) {
                Some(to_rank) if to_rank < from_rank => {}
                Some(_) => out.push(format!(
                    "{rel}:{line} uses crate::{to}, but {from} sits below {to} in the layer order (ARCHITECTURE.md#layers)"
                )),
                None => out.push(format!(
                    "{rel}:{line} uses crate::{to}, which is not in the layer order (ARCHITECTURE.md#layers)"
                )),
            }
        }
    }
    out
}

/// The files under `src/` as `(src/…, text)`.
fn src_files() -> Vec<(String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    sources()
        .into_iter()
        .map(|(p, text)| {
            let rel = p.strip_prefix(&root).unwrap_or(&p);
            let rel = rel.to_string_lossy().replace('\\', "/");
            (rel, text)
        })
        .collect()
}

#[test]
fn every_use_crate_follows_the_layer_order() {
    let violations = layering_violations(&src_files(), LEAVES, LAYERS);
    assert!(
        violations.is_empty(),
        "the one-way layering is broken:\n  {}",
        violations.join("\n  ")
    );
}

#[test]
fn every_top_level_module_has_a_place_in_the_layer_order() {
    let mut modules: Vec<String> = src_files()
        .iter()
        .filter_map(|(rel, _)| module_of(rel).map(|(m, _)| m))
        .collect();
    modules.sort();
    modules.dedup();
    let mut placed: Vec<String> = LEAVES.iter().chain(LAYERS).map(|m| m.to_string()).collect();
    placed.sort();
    assert_eq!(
        modules, placed,
        "src/'s top-level modules vs the layer order"
    );
}

/// The `leaves:` line and the `a → b → …` chain of the first `text` block under
/// `## Layers` in ARCHITECTURE.md.
fn documented_layers(architecture: &str) -> (Vec<String>, Vec<String>) {
    let section = architecture
        .split("\n## Layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a `## Layers` section");
    let block = section
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the Layers section opens with a ```text block");
    let mut leaves = Vec::new();
    let mut chain = String::new();
    for line in block.lines() {
        match line.trim().strip_prefix("leaves:") {
            Some(names) => leaves.extend(names.split_whitespace().map(str::to_owned)),
            None => chain.push_str(line),
        }
    }
    let layers = chain
        .split('→')
        .map(|m| m.trim().to_owned())
        .filter(|m| !m.is_empty())
        .collect();
    (leaves, layers)
}

#[test]
fn the_layer_order_is_the_one_architecture_md_documents() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md");
    let text = std::fs::read_to_string(path).expect("ARCHITECTURE.md");
    let (leaves, layers) = documented_layers(&text);
    assert_eq!(
        leaves, LEAVES,
        "ARCHITECTURE.md#layers leaves vs tests/integration/tidy.rs"
    );
    assert_eq!(
        layers, LAYERS,
        "ARCHITECTURE.md#layers order vs tests/integration/tidy.rs"
    );
}

/// The façades of the real `src/lib.rs` are read: `engine` lists `sim`'s engine seam,
/// and no façade's own names are taken for borrowed ones.
#[test]
fn the_facade_borrowings_are_read_from_lib_rs() {
    let lib = std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs");
    let borrowed = facade_borrowings(&lib);
    for name in ["WorkflowEngine", "EngineFactory", "ReferenceEngine"] {
        assert!(
            borrowed.contains(&("engine".into(), name.into(), "sim".into())),
            "{name}: {borrowed:?}"
        );
    }
    assert!(
        borrowed
            .iter()
            .all(|(facade, _, owner)| facade != owner && facade != "__internals"),
        "{borrowed:?}"
    );
}

#[test]
fn the_layering_check_catches_back_edges_and_ignores_comments_and_strings() {
    let file = |rel: &str, text: &str| (rel.to_owned(), text.to_owned());
    let check = |files: &[(String, String)]| layering_violations(files, LEAVES, LAYERS);
    // A real back-edge, in each spelling a path can take.
    let files = [
        file("src/model/validate.rs", "use crate::plan::analyse;\n"),
        file(
            "src/plan/control/mod.rs",
            "use crate::{\n    model::Step,\n    sim::run,\n};\n",
        ),
        file(
            "src/sim/mod.rs",
            "fn f() {\n    crate :: conformance::json_eq(a, b);\n}\n",
        ),
        file(
            "src/expr/resolve.rs",
            "fn f() { super::super::engine::Engine::new(w); }\n",
        ),
        file(
            "src/host/store.rs",
            "macro_rules! m { () => { $crate::sim::run() } }\n",
        ),
        file("src/limits.rs", "use crate::model::Workflow;\n"),
        file("src/newmod.rs", "//! new\n"),
        // Globs: of a façade that lists another layer's names, alone or in a group, and of
        // the crate root, which names no module at all.
        file(
            "src/engine/glob.rs",
            "use crate::engine::*;\nuse crate::engine::{Engine, *};\n",
        ),
        file("src/plan/glob.rs", "use crate::*;\n"),
        // A name the façade of its own layer lists, but another layer owns.
        file(
            "src/engine/run.rs",
            "use crate::engine::{Engine, WorkflowEngine};\nfn f() { crate::engine::ReferenceEngine; }\n",
        ),
        file(
            "src/lib.rs",
            "pub mod engine {\n    pub use crate::engine_impl::{Engine, RunSeed};\n    pub use crate::sim_impl::{EngineFactory, ReferenceEngine as ReferenceEngine, WorkflowEngine};\n}\n",
        ),
    ];
    assert_eq!(
        check(&files),
        [
            "src/model/validate.rs:1 uses crate::plan, but model sits below plan in the layer order (ARCHITECTURE.md#layers)",
            "src/plan/control/mod.rs:3 uses crate::sim, but plan sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/sim/mod.rs:2 uses crate::conformance, but sim sits below conformance in the layer order (ARCHITECTURE.md#layers)",
            "src/expr/resolve.rs:1 uses crate::engine, but expr sits below engine in the layer order (ARCHITECTURE.md#layers)",
            "src/host/store.rs:1 uses crate::sim, but host sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/limits.rs:1 uses crate::model, but limits is a leaf: it imports nothing from the crate (ARCHITECTURE.md#layers)",
            "src/newmod.rs: module `newmod` is not in the layer order; place it in ARCHITECTURE.md#layers and in tests/integration/tidy.rs",
            "src/engine/glob.rs:1 uses crate::engine::*, which brings in sim's EngineFactory (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/engine/glob.rs:1 uses crate::engine::*, which brings in sim's ReferenceEngine (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/engine/glob.rs:1 uses crate::engine::*, which brings in sim's WorkflowEngine (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/engine/glob.rs:2 uses crate::engine::*, which brings in sim's EngineFactory (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/engine/glob.rs:2 uses crate::engine::*, which brings in sim's ReferenceEngine (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/engine/glob.rs:2 uses crate::engine::*, which brings in sim's WorkflowEngine (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/plan/glob.rs:1 uses crate::*, a glob of the crate root: name the modules it uses, so the layer order can be checked (ARCHITECTURE.md#layers)",
            "src/engine/run.rs:1 uses crate::engine::WorkflowEngine, which is sim's (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
            "src/engine/run.rs:2 uses crate::engine::ReferenceEngine, which is sim's (the façade `engine` lists it), but engine sits below sim in the layer order (ARCHITECTURE.md#layers)",
        ]
    );
    // Not a back-edge: downward uses, leaves, cfg-only mutant hooks, comments, strings,
    // char literals, lifetimes, `pub(crate)`, `super` inside the module, inline test
    // modules.
    let clean = [
        file(
            "src/sim/mod.rs",
            concat!(
                "//! Uses crate::conformance in a comment only.\n",
                "use crate::{engine::Engine, host::{self, WorkflowContext}, json, limits::MAX};\n",
                "/* crate::cli /* nested crate::cli */ crate::cli */\n",
                "pub(crate) fn f<'a>(x: &'a str) -> char {\n",
                "    #[cfg(w6w_mutants)]\n",
                "    let x = crate::mutants::active(crate::mutants::Mutant::RetryAuth);\n",
                "    let _ = (\"crate::cli\", r#\"crate::cli \" still\"#, b\"crate::cli\", '\"', '\\'');\n",
                "    let _ = \"escaped \\\" crate::cli\";\n",
                "    f(x); '{'\n",
                "}\n",
                "#[cfg(test)]\nmod tests {\n    use super::*;\n    use super::super::engine::Engine;\n}\n",
            ),
        ),
        file(
            "src/engine/walk.rs",
            "use super::super::model::Step;\nuse super::Engine;\n",
        ),
        file("src/lib.rs", "pub use crate::cli::run;\n"),
        file("src/main.rs", "use crate::cli;\n"),
    ];
    assert_eq!(check(&clean), Vec::<String>::new());
}

/// The layers that must be pure functions of their inputs: no file, network, process,
/// environment, thread, clock or randomness of their own. Time and effects reach the
/// engine only through the host contract (`host::WorkflowContext`); the simulator (`sim`)
/// and the process seams above it are where the world is.
const PURE: &[&str] = &[
    "json", "limits", "model", "plan", "validate", "expr", "redact", "host", "engine", "dialect",
    "service",
];

/// `(root, segment)` pairs a pure layer may not name (`""`: any segment).
const IMPURE_PATHS: &[(&str, &str)] = &[
    ("std", "fs"),
    ("std", "net"),
    ("std", "process"),
    ("std", "env"),
    ("std", "thread"),
    ("tokio", "fs"),
    ("tokio", "net"),
    ("tokio", "process"),
    ("tokio", "time"),
    ("tokio", "task"),
    ("tokio", "spawn"),
    ("rand", ""),
    ("getrandom", ""),
];

/// The files only a test build compiles: declared `#[cfg(test)] mod name;` by their
/// parent (a test module that reads source files, say).
fn test_only_files(files: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (rel, text) in files {
        let dir = match rel.rsplit_once('/') {
            Some((dir, "mod.rs" | "lib.rs")) => dir.to_owned(),
            _ => rel.trim_end_matches(".rs").to_owned(),
        };
        let code = code_only(text);
        for part in code.split("#[cfg(test)]").skip(1) {
            let decl: Vec<&str> = part.split_whitespace().take(3).collect();
            let name = match decl.as_slice() {
                ["mod", name, ..] => name,
                [vis, "mod", name] if vis.starts_with("pub") => name,
                _ => continue,
            };
            if let Some(name) = name.strip_suffix(';') {
                out.push(format!("{dir}/{name}.rs"));
                out.push(format!("{dir}/{name}/mod.rs"));
            }
        }
    }
    out
}

fn impurities(files: &[(String, String)]) -> Vec<String> {
    let tests = test_only_files(files);
    let mut out = Vec::new();
    for (rel, text) in files {
        let Some((module, _)) = module_of(rel) else {
            continue;
        };
        if !PURE.contains(&module.as_str()) || tests.contains(rel) {
            continue;
        }
        let code = code_only(text);
        let mut found = Vec::new();
        for &(root, segment) in IMPURE_PATHS {
            for (line, seg) in path_refs(&code, root, 0) {
                // A glob reaches every segment: reported once per root and line.
                if segment.is_empty() || seg == segment || seg == "*" {
                    found.push((line, format!(
                        "{rel}:{line} uses {root}::{seg}, but {module} is a pure layer: effects, time and randomness enter through the host contract (ARCHITECTURE.md#layers)"
                    )));
                }
            }
        }
        found.sort();
        found.dedup();
        out.extend(found.into_iter().map(|(_, message)| message));
    }
    out
}

#[test]
fn the_pure_layers_do_no_io_and_read_no_clock() {
    let found = impurities(&src_files());
    assert!(found.is_empty(), "{}", found.join("\n"));
    // The check itself: it sees grouped and plain paths and globs (one message for a
    // glob of `std`, which reaches every forbidden segment), not comments, and lets a
    // test-only file read files.
    let probe = [
        (
            "src/engine/walk.rs".to_owned(),
            "// std::fs in a comment\nuse std::{collections::BTreeMap, fs};\nstd::thread::spawn(f);\nuse std::*;\n"
                .to_owned(),
        ),
        (
            "src/engine/mod.rs".to_owned(),
            "mod walk;\n#[cfg(test)]\nmod tidy;\n".to_owned(),
        ),
        ("src/engine/tidy.rs".to_owned(), "use std::fs;\n".to_owned()),
    ];
    assert_eq!(
        impurities(&probe),
        [
            "src/engine/walk.rs:2 uses std::fs, but engine is a pure layer: effects, time and randomness enter through the host contract (ARCHITECTURE.md#layers)",
            "src/engine/walk.rs:3 uses std::thread, but engine is a pure layer: effects, time and randomness enter through the host contract (ARCHITECTURE.md#layers)",
            "src/engine/walk.rs:4 uses std::*, but engine is a pure layer: effects, time and randomness enter through the host contract (ARCHITECTURE.md#layers)",
        ]
    );
}

/// The files that may read the wall clock (`clippy.toml` forbids `Instant::now` and
/// `SystemTime::now` everywhere else): suite timing, deadlines on real processes, and the
/// wall guard on a hostile script (D-283) with the test that asserts its bound.
const WALL_CLOCK: &[&str] = &[
    "src/cli/conformance.rs",
    "src/conformance/generate.rs",
    "src/conformance/pool.rs",
    "src/conformance/runner.rs",
    "src/process.rs",
    "src/script/mod.rs",
    "src/script/tests.rs",
];

#[test]
fn the_wall_clock_is_read_only_where_architecture_md_says() {
    let mut readers: Vec<String> = src_files()
        .into_iter()
        .filter(|(_, text)| code_only(text).contains("clippy::disallowed_methods"))
        .map(|(rel, _)| rel)
        .collect();
    readers.sort();
    assert_eq!(
        readers, WALL_CLOCK,
        "a new wall-clock reader: time enters a run through the host contract; a real-time \
         deadline or suite timing belongs in one of the listed files (ARCHITECTURE.md)"
    );
}
