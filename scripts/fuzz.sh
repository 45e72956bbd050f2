#!/usr/bin/env bash
# Fuzz one target for a number of seconds (issue 12 item 8):
#   scripts/fuzz.sh TARGET SECONDS      TARGET: template | jsonlogic | validate | scenario | eval_line | journal
#   scripts/fuzz.sh all SECONDS          every target, SECONDS each
#   FUZZ_SANITIZER=none scripts/fuzz.sh all 15   CI's smoke run (D-200): no AddressSanitizer
# (cargo-fuzz's default, kept for long runs), so the build takes about two minutes less.
# Needs the nightly toolchain and cargo-fuzz (installed here if missing). The committed
# seeds (fuzz/seeds/TARGET, from the case files: scripts/fuzz-seeds.py) are read only; new
# corpus entries go to target/fuzz-corpus/TARGET; a crash is written to
# fuzz/artifacts/TARGET/ and fails this script.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:?usage: scripts/fuzz.sh TARGET SECONDS}"
seconds="${2:?usage: scripts/fuzz.sh TARGET SECONDS}"
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  cargo install cargo-fuzz --locked
fi
sanitizer="${FUZZ_SANITIZER:-address}"
targets=("$target")
if [ "$target" = all ]; then
  targets=(template jsonlogic validate scenario eval_line journal)
fi
for t in "${targets[@]}"; do
  work="target/fuzz-corpus/$t"
  mkdir -p "$work"
  echo "fuzzing $t for ${seconds}s"
  cargo +nightly fuzz run --sanitizer "$sanitizer" "$t" "$work" "fuzz/seeds/$t" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
done
