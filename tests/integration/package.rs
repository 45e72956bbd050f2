//! Package tidy checks (issue 11 item 6): what the repository tracks and what the crate
//! depends on stay what a clean package needs — no generated or stray files committed,
//! library dependencies only for what the library uses, a `rust-version` no dependency
//! contradicts, a release binary without debug info. Each check's rule is a plain function
//! with a unit test on a synthetic input, so the check is shown to fail when it should.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------
// Stray files

/// Extensions a tracked file may have (sources, docs, data the tests read, scripts).
const ALLOWED_EXTENSIONS: &[&str] = &[
    "rs",
    "md",
    "json",
    "toml",
    "lock",
    "yaml",
    "yml",
    "xml",
    "snap",
    "sh",
    "js",
    // The --html pages' one stylesheet, inlined into each page (src/sim/html/page.css).
    "css",
    "py",
    "proptest-regressions",
];

/// Tracked files without one of those extensions, by exact path.
const ALLOWED_PATHS: &[&str] = &[".ci/run", ".gitignore", "tests/data/jsonlogic-LICENSE"];

/// Directories whose files are data named by content (cargo-fuzz seeds: hex names).
const DATA_DIRS: &[&str] = &["fuzz/seeds/"];

/// What a run, a build or a profiler leaves behind: never committed, wherever it sits.
const GENERATED_SUFFIXES: &[&str] = &[
    ".out",
    ".trace",
    ".profraw",
    ".profdata",
    ".journal",
    ".jsonl",
    ".snap.new",
    ".pending-snap",
    ".orig",
    ".rej",
    ".rs.bk",
    ".log",
];

/// Directories a build or fuzz run fills.
const GENERATED_DIRS: &[&str] = &[
    "target/",
    "fuzz/target/",
    "fuzz/artifacts/",
    "fuzz/corpus/",
    "fuzz/coverage/",
];

/// Largest file the repository keeps (docs/decisions.md is the biggest by far).
const MAX_FILE_BYTES: u64 = 512 * 1024;

/// Every rule a tracked `(path, size)` breaks, one message each; empty when all is clean.
fn stray_problems(files: &[(String, u64)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, size) in files {
        let name = path.rsplit('/').next().unwrap_or(path);
        if let Some(suffix) = GENERATED_SUFFIXES.iter().find(|s| name.ends_with(*s)) {
            problems.push(format!("{path}: a generated file ({suffix}) is tracked"));
            continue;
        }
        if let Some(dir) = GENERATED_DIRS.iter().find(|d| path.starts_with(*d)) {
            problems.push(format!(
                "{path}: a file under the generated {dir} is tracked"
            ));
            continue;
        }
        if *size > MAX_FILE_BYTES {
            problems.push(format!(
                "{path}: {size} bytes, over the {MAX_FILE_BYTES}-byte cap for a tracked file"
            ));
        }
        let in_data_dir = DATA_DIRS.iter().any(|d| path.starts_with(*d));
        let extension_ok = name
            .split_once('.')
            .is_some_and(|(stem, _)| !stem.is_empty())
            && ALLOWED_EXTENSIONS
                .iter()
                .any(|e| name.ends_with(&format!(".{e}")));
        if !in_data_dir && !extension_ok && !ALLOWED_PATHS.contains(&path.as_str()) {
            problems.push(format!(
                "{path}: not a kind of file this repository keeps (add its extension or path \
                 to tests/integration/package.rs if it belongs)"
            ));
        }
    }
    problems
}

/// The files git tracks, with their sizes on disk; `None` outside a git checkout.
fn tracked_files() -> Option<Vec<(String, u64)>> {
    let out = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).expect("git ls-files prints UTF-8 paths");
    let files = text
        .split('\0')
        .filter(|p| !p.is_empty())
        // A file deleted in the work tree but not yet staged is on its way out.
        .filter_map(|p| {
            let meta = std::fs::metadata(root().join(p)).ok()?;
            Some((p.to_string(), meta.len()))
        })
        .collect();
    Some(files)
}

#[test]
fn no_stray_or_generated_file_is_tracked() {
    let Some(files) = tracked_files() else {
        // A packaged crate (no .git) has no tracked files to check; CI runs in a clone.
        assert!(
            !root().join(".git").exists(),
            "git ls-files failed in a git checkout"
        );
        return;
    };
    assert!(
        files.len() > 100,
        "git ls-files listed only {}",
        files.len()
    );
    let problems = stray_problems(&files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_stray_check_fails_on_each_kind_of_stray() {
    let f = |p: &str, n: u64| (p.to_string(), n);
    let clean = [
        f("src/lib.rs", 100),
        f(".ci/run", 10),
        f("tests/data/jsonlogic-LICENSE", 10),
        f("fuzz/seeds/eval_line/014909f73d1f5569", 40),
        f("tests/properties/engine_props.proptest-regressions", 10),
        f("snapshots/reference-fan.snap", 90_000),
        f("examples/order.woml.xml", 10),
    ];
    assert_eq!(stray_problems(&clean), Vec::<String>::new());
    let stray = [
        f("examples/race.out", 10),
        f("examples/wait.trace", 10),
        f("default.profraw", 10),
        f("runs/run_1.journal", 10),
        f("trace.jsonl", 10),
        f("snapshots/reference-fan.snap.new", 10),
        f("target/release/w6w-sim", 10),
        f("fuzz/artifacts/eval_line/crash-1", 10),
        f("docs/huge.md", MAX_FILE_BYTES + 1),
        f("core", 10),
        f("notes.txt", 10),
        f(".DS_Store", 10),
    ];
    let problems = stray_problems(&stray);
    assert_eq!(problems.len(), stray.len(), "{problems:#?}");
    for ((path, _), problem) in stray.iter().zip(&problems) {
        assert!(problem.starts_with(&format!("{path}:")), "{problem}");
    }
}

// ---------------------------------------------------------------------------------------
// Dependencies and rust-version

fn cargo_metadata(extra: &[&str]) -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let metadata = |offline: bool| {
        Command::new(&cargo)
            .args(["metadata", "--format-version", "1", "--locked"])
            .args(offline.then_some("--offline"))
            .args(extra)
            .current_dir(root())
            .output()
            .expect("cargo metadata runs")
    };
    let mut out = metadata(true);
    if !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("failed to download")
    {
        // A fresh machine has only the host platform's crates (the build fetched those);
        // the other platforms' manifests are fetched once, like the build's own.
        out = metadata(false);
    }
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn this_package(meta: &Value) -> &Value {
    meta["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "w6w-sim"))
        .expect("w6w-sim in cargo metadata")
}

/// What is wrong with the package's dependency declarations (its `cargo metadata` entry).
fn dependency_problems(package: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let deps = package["dependencies"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let normal = |name: &str| {
        deps.iter()
            .find(|d| d["name"] == name && d["kind"].is_null())
            .cloned()
    };
    match normal("clap") {
        Some(clap) if clap["optional"] == true => {}
        Some(_) => problems.push("clap is a non-optional library dependency".to_string()),
        None => problems.push("clap is not an (optional) dependency: the CLI needs it".into()),
    }
    if normal("tempfile").is_some() {
        problems.push("tempfile is a library dependency; only tests use it".to_string());
    }
    if let Some(tokio) = normal("tokio") {
        let features: Vec<&str> = tokio["features"]
            .as_array()
            .map(|f| f.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if tokio["uses_default_features"] != false || features != ["sync"] {
            problems.push(format!(
                "tokio must be `default-features = false, features = [\"sync\"]` (only \
                 sync::Mutex is used), not default {} + {features:?}",
                tokio["uses_default_features"]
            ));
        }
    }
    let feature = |name: &str| package["features"][name].clone();
    if feature("default") != serde_json::json!(["cli"]) {
        problems.push(format!(
            "default features are {}, not [\"cli\"]",
            feature("default")
        ));
    }
    if feature("cli") != serde_json::json!(["dep:clap", "dep:mimalloc"]) {
        problems.push(format!(
            "feature cli is {}, not [\"dep:clap\", \"dep:mimalloc\"]",
            feature("cli")
        ));
    }
    // D-181: the binary's allocator; a library user chooses their own.
    match normal("mimalloc") {
        Some(m) if m["optional"] == true => {}
        Some(_) => problems.push("mimalloc is a non-optional library dependency".to_string()),
        None => {
            problems.push("mimalloc is not an (optional) dependency: the binary needs it".into())
        }
    }
    let bins: Vec<&Value> = package["targets"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.contains(&"bin".into()))
                })
                .collect()
        })
        .unwrap_or_default();
    if bins.is_empty() {
        problems.push("no binary target".to_string());
    }
    for bin in bins {
        if bin["required-features"] != serde_json::json!(["cli"]) {
            problems.push(format!(
                "binary {} does not require the cli feature (required-features = {})",
                bin["name"], bin["required-features"]
            ));
        }
    }
    problems
}

#[test]
fn library_dependencies_are_what_the_library_uses() {
    let meta = cargo_metadata(&["--no-deps"]);
    let problems = dependency_problems(this_package(&meta));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_dependency_check_fails_on_a_library_that_pulls_the_cli() {
    let meta = cargo_metadata(&["--no-deps"]);
    let good = this_package(&meta).clone();
    let edit = |f: &dyn Fn(&mut Value)| {
        let mut p = good.clone();
        f(&mut p);
        dependency_problems(&p)
    };
    let dep_index = |p: &Value, name: &str| {
        p["dependencies"]
            .as_array()
            .and_then(|ds| ds.iter().position(|d| d["name"] == name))
            .expect("dependency listed")
    };
    let clap_required = edit(&|p| {
        let i = dep_index(p, "clap");
        p["dependencies"][i]["optional"] = false.into();
    });
    assert_eq!(clap_required.len(), 1, "{clap_required:?}");
    let tempfile_normal = edit(&|p| {
        let i = dep_index(p, "tempfile");
        p["dependencies"][i]["kind"] = Value::Null;
    });
    assert_eq!(tempfile_normal.len(), 1, "{tempfile_normal:?}");
    let tokio_runtime = edit(&|p| {
        let i = dep_index(p, "tokio");
        p["dependencies"][i]["features"] = serde_json::json!(["rt", "sync"]);
    });
    assert_eq!(tokio_runtime.len(), 1, "{tokio_runtime:?}");
    let allocator_required = edit(&|p| {
        let i = dep_index(p, "mimalloc");
        p["dependencies"][i]["optional"] = false.into();
    });
    assert_eq!(allocator_required.len(), 1, "{allocator_required:?}");
    let bin_ungated = edit(&|p| {
        for t in p["targets"].as_array_mut().expect("targets") {
            if let Some(o) = t.as_object_mut() {
                o.remove("required-features");
            }
        }
    });
    assert_eq!(bin_ungated.len(), 1, "{bin_ungated:?}");
}

/// `"1.89"` / `"1.89.0"` → `(1, 89, 0)`.
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().ok());
    let major = parts.next()??;
    let minor = parts.next().flatten().unwrap_or(0);
    let patch = parts.next().flatten().unwrap_or(0);
    Some((major, minor, patch))
}

/// Packages (name, their rust-version) that the library's build pulls in and that declare
/// a newer Rust than `ours`.
fn newer_than(meta: &Value, ours: (u64, u64, u64)) -> Vec<String> {
    let by_id = |id: &str| {
        meta["packages"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["id"] == id))
    };
    let nodes = meta["resolve"]["nodes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let node = |id: &str| nodes.iter().find(|n| n["id"] == id).cloned();
    let root_id = meta["resolve"]["root"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Walk normal and build dependencies from the root; dev-dependencies do not ship.
    let mut seen = std::collections::BTreeSet::new();
    let mut stack = vec![root_id.clone()];
    let mut newer = Vec::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        if id != root_id
            && let Some(p) = by_id(&id)
            && let Some(rv) = p["rust_version"].as_str()
            && version(rv).is_some_and(|v| v > ours)
        {
            newer.push(format!("{} {} needs Rust {rv}", p["name"], p["version"]));
        }
        let Some(n) = node(&id) else { continue };
        for dep in n["deps"].as_array().cloned().unwrap_or_default() {
            let shipped = dep["dep_kinds"]
                .as_array()
                .is_some_and(|ks| ks.iter().any(|k| k["kind"] != "dev"));
            if shipped && let Some(pkg) = dep["pkg"].as_str() {
                stack.push(pkg.to_string());
            }
        }
    }
    newer.sort();
    newer
}

#[test]
fn no_shipped_dependency_needs_a_newer_rust_than_rust_version() {
    let meta = cargo_metadata(&[]);
    let ours = this_package(&meta)["rust_version"]
        .as_str()
        .and_then(version)
        .expect("Cargo.toml declares rust-version");
    let newer = newer_than(&meta, ours);
    assert!(
        newer.is_empty(),
        "rust-version is too old:\n{}",
        newer.join("\n")
    );
    // The same walk finds them when `rust-version` is set too low.
    assert!(
        !newer_than(&meta, (1, 56, 0)).is_empty(),
        "no shipped dependency declares a rust-version above 1.56: the walk found nothing"
    );
}

/// Library files that name clap or the CLI module: only the CLI itself and the binary may
/// (`cargo build --no-default-features --lib` builds without them).
fn cli_leaks(files: &[(String, String)]) -> Vec<String> {
    files
        .iter()
        .filter(|(path, _)| !path.starts_with("src/cli/") && path != "src/main.rs")
        .flat_map(|(path, text)| {
            let lines: Vec<&str> = text.lines().collect();
            // The one allowed mention outside src/cli/: a line gated on the `cli` feature
            // right above it (the crate root's hidden entry point for the binary).
            let gated = |n: usize| n > 0 && lines[n - 1].trim() == "#[cfg(feature = \"cli\")]";
            (0..lines.len())
                .filter(|&n| {
                    let code = lines[n].split("//").next().unwrap_or("");
                    let names = code.contains("clap::")
                        || code.contains("crate::cli")
                        || code.contains("super::cli");
                    names && !gated(n)
                })
                .map(move |n| format!("{path}:{}: names clap or crate::cli", n + 1))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn library_sources(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            library_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root())
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).expect("read source");
            out.push((rel, text));
        }
    }
}

#[test]
fn only_the_cli_names_clap() {
    let mut files = Vec::new();
    library_sources(&root().join("src"), &mut files);
    assert!(files.len() > 50, "found only {} sources", files.len());
    let leaks = cli_leaks(&files);
    assert!(leaks.is_empty(), "{}", leaks.join("\n"));
    let synthetic = [
        (
            "src/cli/mod.rs".to_string(),
            "use clap::Parser;".to_string(),
        ),
        (
            "src/engine/x.rs".to_string(),
            "use clap::Parser;".to_string(),
        ),
        (
            "src/sim/y.rs".to_string(),
            "// crate::cli is\ncrate::cli::main()".to_string(),
        ),
        (
            "src/lib.rs".to_string(),
            "#[cfg(feature = \"cli\")]\npub use crate::cli::main;\npub use super::cli::run;"
                .to_string(),
        ),
    ];
    assert_eq!(
        cli_leaks(&synthetic),
        [
            "src/engine/x.rs:1: names clap or crate::cli",
            "src/sim/y.rs:2: names clap or crate::cli",
            "src/lib.rs:3: names clap or crate::cli"
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Release profile

/// The `debug` setting of `[profile.<name>]` in a Cargo.toml text (`None`: not set).
fn profile_debug<'a>(manifest: &'a str, name: &str) -> Option<&'a str> {
    let header = format!("[profile.{name}]");
    let mut in_section = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_section = line == header;
        } else if in_section
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "debug"
        {
            return Some(value.split('#').next().unwrap_or("").trim());
        }
    }
    None
}

#[test]
fn the_release_binary_carries_no_debug_info() {
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).expect("Cargo.toml");
    let debug = profile_debug(&manifest, "release");
    assert!(
        matches!(debug, None | Some("false" | "0" | "\"none\"")),
        "[profile.release] debug = {debug:?}: the shipped binary would carry debug info"
    );
    assert_eq!(
        profile_debug("[profile.release]\ndebug = 1\n", "release"),
        Some("1")
    );
    assert_eq!(
        profile_debug("[profile.release]\n[profile.x]\ndebug = 1\n", "release"),
        None
    );
}

// ---------------------------------------------------------------------------------------
// One place for limits

/// Limit-named constants allowed outside `src/limits.rs`: spec constants stay with the rule
/// they implement, and the engine's two wait for its refactor to land (issue 11 item 5).
const LIMITS_ELSEWHERE: &[(&str, &str, &str)] = &[
    (
        "src/engine/",
        "CALL_DEPTH_MAX",
        "engine refactor in flight (D-99)",
    ),
    (
        "src/engine/",
        "FOREACH_ITEMS_MAX",
        "engine refactor in flight (D-99)",
    ),
    (
        "src/engine/",
        "WAIT_MS_MAX",
        "RETRY-5's 300000 ms backoff cap: spec",
    ),
    (
        "src/engine/",
        "META_STRING_UTF16_MAX",
        "META-2's 256 characters: spec",
    ),
    (
        "src/model/key.rs",
        "KEY_LEN_MAX",
        "the key grammar's 39: spec",
    ),
    ("src/dialect/", "DURATION_MS_MAX", "WOML-7/8's 24 h: spec"),
    (
        "tests/integration/fn_length.rs",
        "FN_LINES_MAX",
        "a code-style rule of a tidy test, not a tool limit",
    ),
];

/// Numeric `const` definitions whose name says limit (`MAX`, `LIMIT`, `BUDGET`, `CAP`) outside
/// `src/limits.rs` and the allow-list: `path:line: NAME`.
fn limits_elsewhere(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files {
        if path == "src/limits.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("").trim_start();
            let code = code
                .strip_prefix("pub(crate) ")
                .or_else(|| code.strip_prefix("pub "))
                .unwrap_or(code);
            let Some(rest) = code.strip_prefix("const ") else {
                continue;
            };
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let ty = rest[name.len()..]
                .trim_start()
                .trim_start_matches(':')
                .trim_start();
            let numeric = [
                "usize",
                "u64",
                "u32",
                "u16",
                "i64",
                "i32",
                "Duration",
                "std::time::",
            ]
            .iter()
            .any(|t| ty.starts_with(t));
            let limit_like = numeric
                && name
                    .split('_')
                    .any(|w| matches!(w, "MAX" | "LIMIT" | "BUDGET" | "CAP"));
            let allowed = LIMITS_ELSEWHERE
                .iter()
                .any(|(prefix, allowed, _)| path.starts_with(prefix) && name == *allowed);
            if limit_like && !allowed {
                found.push(format!("{path}:{}: {name}", n + 1));
            }
        }
    }
    found
}

#[test]
fn every_tool_limit_is_defined_in_src_limits_rs() {
    let mut files = Vec::new();
    library_sources(&root().join("src"), &mut files);
    let found = limits_elsewhere(&files);
    assert!(
        found.is_empty(),
        "define these in src/limits.rs (with a doc line) and `use` them:\n{}",
        found.join("\n")
    );
    let f = |p: &str, t: &str| (p.to_string(), t.to_string());
    let synthetic = [
        f("src/limits.rs", "pub const MAX_NESTING_DEPTH: usize = 96;"),
        f(
            "src/plan/x.rs",
            "pub const MAX_CONTROL_NESTING: usize = 16;",
        ),
        f("src/sim/y.rs", "fn f() {\n    const MAX: usize = 300;\n}"),
        f("src/sim/z.rs", "pub(crate) const SHRINK_BUDGET: usize = 2;"),
        f(
            "src/engine/retry.rs",
            "pub const WAIT_MS_MAX: u64 = 300_000;",
        ),
        f(
            "src/sim/w.rs",
            "pub const WAIT_MS_MAX: u64 = 1; // spec? not here",
        ),
        f(
            "src/sim/v.rs",
            "pub use crate::limits::RESTARTS_MAX;\nconst EXT_MAX: &str = \"x-max\";",
        ),
        f(
            "src/sim/u.rs",
            "const NOT_ON_MAIN_GRAPH: usize = usize::MAX;",
        ),
    ];
    assert_eq!(
        limits_elsewhere(&synthetic),
        [
            "src/plan/x.rs:1: MAX_CONTROL_NESTING",
            "src/sim/y.rs:2: MAX",
            "src/sim/z.rs:1: SHRINK_BUDGET",
            "src/sim/w.rs:1: WAIT_MS_MAX",
        ]
    );
}
