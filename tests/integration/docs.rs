//! The documents a host author copies from must work as written (issue 9 item 7): every
//! `w6w-sim` command in docs/ci.md runs against the built binary, with `$ENGINE` standing
//! for the reference engine behind the context protocol and `$ADAPTER` for the reference
//! behind the adapter protocol, and every capability name is documented. docs/decisions.md's
//! index agrees with its entries, and every repository path the docs name exists (issue 43
//! item 5).

use std::path::Path;
use std::process::Command;

use w6w_sim::__internals::conformance::split_command;
use w6w_sim::conformance::CAPABILITIES;

const BIN: &str = env!("CARGO_BIN_EXE_w6w-sim");

fn doc(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// `w6w-sim …` command lines of a document (shell lines and YAML `run:` steps), with any
/// trailing `# comment` removed.
fn commands(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let l = l.strip_prefix("run: ").unwrap_or(l);
            (l.starts_with("w6w-sim conformance") || l.starts_with("w6w-sim matrix"))
                .then(|| l.split("  #").next().unwrap_or(l).trim().to_owned())
        })
        .collect()
}

#[test]
fn every_command_in_ci_md_runs_as_written() {
    let text = doc("docs/ci.md");
    let cmds = commands(&text);
    assert!(cmds.len() >= 6, "{cmds:?}");
    // A matrix job's line (`${{ matrix.shard }}`, a 100,000-workflow campaign) runs only
    // inside GitHub Actions; its flags are the ones the other lines check.
    let cmds: Vec<String> = cmds.into_iter().filter(|c| !c.contains("${{")).collect();
    // Each line runs a whole suite against an engine process, one request at a time, so
    // one line keeps a core only partly busy: the lines run side by side, a worker per
    // core (at least two), each in its own directory.
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(cmds.len()))
            .map(|_| {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(cmd) = cmds.get(i) else { break };
                        run_documented(cmd);
                    }
                })
            })
            .collect();
        for handle in handles {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

/// Run one documented `w6w-sim` line in a fresh directory, as a host author would.
fn run_documented(cmd: &str) {
    let adapter = format!("'{BIN}' adapter serve");
    let engine = format!("'{BIN}' engine serve");
    let dir = tempfile::tempdir().expect("tempdir");
    let (line, redirect) = match cmd.split_once(" > ") {
        Some((l, file)) => (l.to_owned(), Some(file.trim().to_owned())),
        None => (cmd.to_owned(), None),
    };
    let line = line
        .replace("$ADAPTER", &adapter)
        .replace("$ENGINE", &engine);
    let words = split_command(&line).unwrap_or_else(|e| panic!("{cmd}: {e}"));
    let out = Command::new(BIN)
        .current_dir(dir.path())
        .args(&words[1..])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{cmd}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(file) = redirect {
        std::fs::write(dir.path().join(file), &out.stdout).expect("writable");
    }
    for written in ["w6w-conformance.xml", "w6w-matrix.md"] {
        if cmd.contains(written) {
            assert!(dir.path().join(written).is_file(), "{cmd}: no {written}");
        }
    }
}

#[test]
fn ci_md_installs_from_a_revision_not_a_made_up_tag() {
    let text = doc("docs/ci.md");
    let installs: Vec<&str> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("cargo install") || l.contains("run: cargo install"))
        .collect();
    assert!(!installs.is_empty());
    for l in installs {
        assert!(l.contains("--git") && l.contains("--rev"), "{l}");
    }
    assert!(!text.contains("tag = \"v"), "a dependency pinned to a tag");
    assert!(!text.contains("REF: v0"), "a tag that does not exist");
}

#[test]
fn every_capability_is_documented() {
    let text = doc("docs/capabilities.md");
    for (name, _) in CAPABILITIES {
        assert!(
            text.contains(&format!("`{name}`")),
            "{name} is not in docs/capabilities.md"
        );
    }
}

/// `### D-n — Title (clauses; issue n)`: the number and the title, for a decision heading.
fn decision_heading(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("### D-")?;
    let (n, title) = rest.split_once(" — ")?;
    Some((n.parse().ok()?, title))
}

/// The title without its closing `(clauses; issue n)` group, as the index shows it.
fn short_title(title: &str) -> &str {
    if !title.ends_with(')') {
        return title;
    }
    let mut depth = 0;
    for (i, c) in title.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = title[..i].trim_end();
                    return if head.is_empty() { title } else { head };
                }
            }
            _ => {}
        }
    }
    title
}

/// The index's status for a `**Status:**` text (scripts/decisions-index.py `status_of`).
fn decision_status(text: &str) -> String {
    let lower = text.to_lowercase();
    for lead in ["superseded in part by", "superseded by"] {
        if lower.starts_with(lead) {
            let rest = &text[lead.len()..];
            let end = [" — ", "(", ";", ". "]
                .iter()
                .filter_map(|s| rest.find(s))
                .min()
                .unwrap_or(rest.len());
            let refs: Vec<&str> = rest[..end]
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| {
                    w.strip_prefix("D-")
                        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                })
                .collect();
            if !refs.is_empty() {
                return format!("{lead} {}", refs.join(" and "));
            }
        }
    }
    if lower.starts_with("measured, not kept") {
        return "measured, not kept".to_owned();
    }
    "current".to_owned()
}

/// docs/decisions.md's index (between its markers) lists every entry, in number order, with
/// the title of its heading and the status its `**Status:**` line gives; every entry's heading
/// is written the one way.
#[test]
fn the_decisions_index_matches_the_entries() {
    let text = doc("docs/decisions.md");
    let lines: Vec<&str> = text.lines().collect();
    let mut problems = Vec::new();
    let mut entries = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let looks_like_entry = line.starts_with('#')
            && line.trim_start_matches('#').trim_start().starts_with("D-")
            && line.trim_start_matches('#').trim_start()[2..]
                .starts_with(|c: char| c.is_ascii_digit());
        let Some((n, title)) = decision_heading(line) else {
            if looks_like_entry {
                problems.push(format!("line {}: not `### D-n — Title`: {line}", i + 1));
            }
            continue;
        };
        let status = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with('#'))
            .find_map(|l| {
                l.strip_prefix("- ")
                    .unwrap_or(l)
                    .strip_prefix("**Status:**")
                    .map(|s| decision_status(&s.trim().replace("**", "")))
            })
            .unwrap_or_else(|| "current".to_owned());
        entries.push((n, short_title(title).replace('|', "\\|"), status));
    }
    entries.sort();
    let start = lines.iter().position(|l| *l == "<!-- index:start -->");
    let end = lines.iter().position(|l| *l == "<!-- index:end -->");
    let (Some(start), Some(end)) = (start, end) else {
        panic!("docs/decisions.md has no index markers; run scripts/decisions-index.py");
    };
    let rows: Vec<(u32, String, String)> = lines[start + 1..end]
        .iter()
        .filter_map(|row| {
            let cells: Vec<&str> = row.trim_matches('|').split(" | ").collect();
            let [entry, title, status] = cells[..] else {
                return None;
            };
            let n = entry
                .trim()
                .strip_prefix("[D-")?
                .split(']')
                .next()?
                .parse()
                .ok()?;
            Some((n, title.trim().to_owned(), status.trim().to_owned()))
        })
        .collect();
    for (want, got) in entries.iter().zip(&rows) {
        if want != got {
            problems.push(format!("index row {got:?}, entry {want:?}"));
        }
    }
    if entries.len() != rows.len() {
        problems.push(format!(
            "{} entries, {} index rows",
            entries.len(),
            rows.len()
        ));
    }
    assert!(
        problems.is_empty(),
        "docs/decisions.md: the index and the headings disagree; run scripts/decisions-index.py\n{}",
        problems.join("\n")
    );
}

/// Where a backticked word of a document names a file or directory of the repository.
const REPO_PREFIXES: &[&str] = &[
    "src/",
    "tests/",
    "examples/",
    "docs/",
    "scripts/",
    "conformance/",
    "benches/",
    "fuzz/",
    "snapshots/",
    ".ci/",
];

/// The repository paths a document names: every word of a backticked span (outside fenced
/// blocks) that starts with a top-level directory, cut at `::`, a `:line`, a `#anchor` or a
/// `<placeholder>`, with `{a,b}` expanded; and every relative Markdown link target, resolved
/// against the document's directory.
fn named_paths(doc_dir: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for (i, span) in line.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            for word in span.split_whitespace() {
                let word = word.trim_matches(|c: char| "'\"(),;.".contains(c));
                if !REPO_PREFIXES.iter().any(|p| word.starts_with(p)) {
                    continue;
                }
                let word = word.split("::").next().unwrap_or(word);
                let word = word.split(['<', '#', '$', '[']).next().unwrap_or(word);
                let word = match word.find(".rs:") {
                    Some(at) => &word[..at + 3],
                    None => word.trim_end_matches(':'),
                };
                match (word.find('{'), word.find('}')) {
                    (Some(a), Some(b)) if a < b => {
                        for alt in word[a + 1..b].split(',') {
                            out.push(format!("{}{alt}{}", &word[..a], &word[b + 1..]));
                        }
                    }
                    _ => out.push(word.to_owned()),
                }
            }
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = rest[..end].split('#').next().unwrap_or("");
            if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
                out.push(format!("{doc_dir}{target}"));
            }
        }
    }
    out
}

/// A path exists; a `*` (or `**`) in its last component matches any run of characters.
fn path_exists(root: &Path, path: &str) -> bool {
    let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
    let Some((head, tail)) = name.split_once('*') else {
        return root.join(path).exists();
    };
    let tail = tail.trim_start_matches('*');
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return false;
    };
    entries.flatten().any(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        n.len() >= head.len() + tail.len() && n.starts_with(head) && n.ends_with(tail)
    })
}

/// Every repository path README.md, ARCHITECTURE.md and docs/*.md name, in backticks or as a relative link,
/// exists (issue 43 item 5).
#[test]
fn every_path_in_the_docs_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let docs = manuals(root);
    let mut dead = Vec::new();
    for (name, dir) in &docs {
        for path in named_paths(dir, &doc(name)) {
            let normal = path.replace("docs/../", "");
            if !path_exists(root, &normal) {
                dead.push(format!("{name}: `{path}`"));
            }
        }
    }
    dead.sort();
    dead.dedup();
    assert!(
        dead.is_empty(),
        "paths that do not exist:\n{}",
        dead.join("\n")
    );
}

/// The manuals the tidy checks read, each with the directory its relative links resolve
/// against: README.md, ARCHITECTURE.md and docs/*.md.
fn manuals(root: &Path) -> Vec<(String, String)> {
    let mut docs = vec![
        ("README.md".to_owned(), String::new()),
        ("ARCHITECTURE.md".to_owned(), String::new()),
    ];
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| {
            e.expect("docs/ entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".md"))
        .collect();
    names.sort();
    docs.extend(
        names
            .into_iter()
            .map(|n| (format!("docs/{n}"), "docs/".to_owned())),
    );
    docs
}

/// Names from outside this repository that the manuals quote in backticks: crates looked at
/// and not chosen, JavaScript globals, the allocator's and the compiler's own names, a Linux
/// setting. A crate in Cargo.lock (or `std`, `core`, `clippy`) vouches for `its::path`.
const FOREIGN_NAMES: &[&str] = &[
    "boa_engine",
    "deno_core",
    "serde_yaml",
    "serde_yaml_ng",
    "FinalizationRegistry",
    "SyntaxError",
    "BigInt",
    "malloc_consolidate",
    "_int_malloc",
    "_mm_prefetch",
    "into_boxed_str",
    "compile_fail",
    "incompatible_msrv",
    "protected_hardlinks",
];

/// `text` without Rust comments (`//…` and `/*…*/`); string literals are kept, since the
/// codes and keys the manuals quote live in them.
fn without_rust_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut start, mut in_str) = (0, 0, false);
    while i < b.len() {
        match (in_str, b[i]) {
            (true, b'\\') => i += 2,
            (false, b'\'') if text[i..].starts_with("'\"'") => i += 3,
            (false, b'\'') if text[i..].starts_with("'\\\"'") => i += 4,
            (_, b'"') => {
                in_str = !in_str;
                i += 1;
            }
            (false, b'/') if b.get(i + 1) == Some(&b'/') || b.get(i + 1) == Some(&b'*') => {
                out.push_str(&text[start..i]);
                let end = if b[i + 1] == b'/' {
                    text[i..].find('\n').map_or(b.len(), |k| i + k)
                } else {
                    text[i..].find("*/").map_or(b.len(), |k| i + k + 2)
                };
                out.push(' ');
                i = end;
                start = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[start.min(b.len())..]);
    out
}

fn add_words(text: &str, words: &mut std::collections::HashSet<String>) {
    for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
        if !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()) {
            words.insert(w.to_owned());
        }
    }
}

/// Every name the repository itself defines or uses, outside its manuals: the words of its
/// Rust code (comments removed), of its scripts, candidates, cases, schemas and manifests,
/// and its file stems.
fn repository_words(root: &Path) -> std::collections::HashSet<String> {
    const SKIP_DIRS: &[&str] = &[
        "target",
        ".git",
        "node_modules",
        "docs",
        "corpus",
        "artifacts",
    ];
    const TEXT: &[&str] = &[
        "js", "mjs", "cjs", "ts", "py", "json", "yaml", "yml", "xml", "sh", "toml", "lock",
    ];
    let mut words = std::collections::HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !SKIP_DIRS.contains(&name.as_str()) {
                    stack.push(path);
                }
                continue;
            }
            let ext = path.extension().map(|e| e.to_string_lossy().into_owned());
            let big = entry.metadata().map_or(true, |m| m.len() > 4_000_000);
            let text = match ext.as_deref() {
                _ if big => None,
                Some("rs") => std::fs::read_to_string(&path)
                    .ok()
                    .map(|t| without_rust_comments(&t)),
                Some(e) if TEXT.contains(&e) => std::fs::read_to_string(&path).ok(),
                None if name == "run" => std::fs::read_to_string(&path).ok(),
                _ => None,
            };
            if let Some(text) = text {
                add_words(&text, &mut words);
            }
            add_words(name.split('.').next().unwrap_or(""), &mut words);
        }
    }
    words
}

/// Whether a backticked span names code: a Rust path (`a::b`), a call (`f()`), a
/// `snake_case` or `SCREAMING_CASE` word, or a `CamelCase` word — not a plain word, a flag,
/// a file or a JSON value.
fn code_name(span: &str) -> Option<Vec<&str>> {
    let bare = span.strip_suffix("()").unwrap_or(span);
    let segments: Vec<&str> = bare.split("::").collect();
    let ident = |s: &&str| {
        !s.is_empty()
            && !s.starts_with(|c: char| c.is_ascii_digit())
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    if !segments.iter().all(ident) {
        return None;
    }
    let camel = bare.starts_with(|c: char| c.is_ascii_uppercase())
        && bare.chars().skip(1).any(|c| c.is_ascii_lowercase())
        && bare.chars().skip(1).any(|c| c.is_ascii_uppercase());
    (segments.len() > 1 || bare.len() < span.len() || bare.contains('_') || camel)
        .then_some(segments)
}

/// Every code name README.md, ARCHITECTURE.md and docs/*.md quote in backticks exists in
/// the repository (issue 43 item 5): a manual that names a removed function or type fails
/// here. A name that no longer exists is written without backticks (history says "the
/// former *name*"); a document may introduce names in its own fenced examples.
#[test]
fn every_code_name_in_the_docs_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let words = repository_words(root);
    let lock = doc("Cargo.lock");
    let crates: std::collections::HashSet<String> = lock
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .map(|n| n.trim_end_matches('"').replace('-', "_"))
        .chain(["std", "core", "alloc", "clippy", "rustdoc"].map(String::from))
        .collect();
    let mut unknown = Vec::new();
    for (name, _) in manuals(root) {
        let text = doc(&name);
        let mut own = std::collections::HashSet::new();
        let mut fenced = false;
        for line in text.lines() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            } else if fenced {
                add_words(line, &mut own);
            }
        }
        fenced = false;
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
            }
            if fenced {
                continue;
            }
            for span in line.split('`').skip(1).step_by(2) {
                let Some(segments) = code_name(span) else {
                    continue;
                };
                let known = |s: &&str| words.contains(*s) || own.contains(*s);
                let vouched = (segments.len() > 1 && crates.contains(segments[0]))
                    || FOREIGN_NAMES.contains(&span.trim_end_matches("()"));
                if !vouched && !segments.iter().all(known) {
                    unknown.push(format!("{name}:{}: `{span}`", n + 1));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "code names the repository does not have (write a removed name without backticks):\n{}",
        unknown.join("\n")
    );
}

#[test]
fn the_code_name_check_knows_names_from_words() {
    assert_eq!(code_name("plan::check"), Some(vec!["plan", "check"]));
    assert_eq!(code_name("run()"), Some(vec!["run"]));
    assert_eq!(code_name("RunStore"), Some(vec!["RunStore"]));
    assert_eq!(code_name("fold_journal"), Some(vec!["fold_journal"]));
    for not_code in [
        "retry",
        "Retry",
        "maxAttempts",
        "--html",
        "a.rs",
        "x = 1",
        "SEC-1",
        "JSON",
    ] {
        assert_eq!(code_name(not_code), None, "{not_code}");
    }
    let stripped =
        without_rust_comments("let a = 1; // gone_fn\n/* other_fn */ let b = \"// kept_code\";");
    assert!(
        !stripped.contains("gone_fn") && !stripped.contains("other_fn"),
        "{stripped}"
    );
    assert!(stripped.contains("kept_code"), "{stripped}");
}
