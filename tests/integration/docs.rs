//! The documents a host author copies from must work as written (issue 9 item 7): every
//! `w6w-sim` command in docs/ci.md runs against the built binary, with `$ENGINE` standing
//! for the reference engine behind the context protocol and `$ADAPTER` for the reference
//! behind the adapter protocol, and every capability name is documented.

use std::path::Path;
use std::process::Command;

use w6w_sim::conformance::{CAPABILITIES, split_command};

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
