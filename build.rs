//! Embeds the conformance cases and the examples they include into the binary, so an
//! installed `w6w-sim` runs the suite from any directory (issue 9 item 7).
//!
//! Writes `$OUT_DIR/embedded_cases.rs`: one `(relative path, include_str!)` entry per
//! `conformance/cases/*.json` and `examples/*.{json,xml,yaml,yml}`. Cargo re-runs this script when
//! anything in either folder changes, so an added case file is embedded on the next build.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    // Issue 11 item 2: the mutant build. `W6W_MUTANTS=1` at build time compiles the
    // deliberately broken engine/expression/model behaviours (`src/mutants.rs`) and the
    // `--mutant` / `--mutants` flags; the default build has none of them. Not a cargo
    // feature, so no dependent crate can switch it on (docs/decisions.md D-100).
    println!("cargo::rustc-check-cfg=cfg(w6w_mutants)");
    println!("cargo:rerun-if-env-changed=W6W_MUTANTS");
    if std::env::var_os("W6W_MUTANTS").is_some_and(|v| v == "1") {
        println!("cargo:rustc-cfg=w6w_mutants");
    }
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into());
    let root = Path::new(&root);
    let mut out = String::from(
        "/// Every embedded file: (path relative to the crate root, contents).\n\
         pub(crate) static EMBEDDED: &[(&str, &str)] = &[\n",
    );
    for dir in ["conformance/cases", "examples"] {
        println!("cargo:rerun-if-changed={dir}");
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_file())
            .filter_map(|e| e.file_name().into_string().ok())
            // JSON, and the dialect sources a case includes as text (`$text`).
            .filter(|n| {
                [".json", ".xml", ".yaml", ".yml"]
                    .iter()
                    .any(|ext| n.ends_with(ext))
            })
            .collect();
        names.sort();
        for name in names {
            let abs = root.join(dir).join(&name);
            let _ = writeln!(
                out,
                "    ({:?}, include_str!({:?})),",
                format!("{dir}/{name}"),
                abs.display().to_string()
            );
        }
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap_or_else(|_| ".".into()))
        .join("embedded_cases.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        panic!("cannot write {}: {e}", dest.display());
    }
}
