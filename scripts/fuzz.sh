#!/usr/bin/env bash
# Fuzz one target for a number of seconds (issue 12 item 8):
#   scripts/fuzz.sh TARGET SECONDS      TARGET: template | jsonlogic | validate | scenario | eval_line | journal
#   scripts/fuzz.sh all SECONDS          every target, SECONDS each, one per core at a time
#   FUZZ_SANITIZER=none FUZZ_SMOKE=1 scripts/fuzz.sh all 15   CI's smoke run: no
# AddressSanitizer (cargo-fuzz's default, kept for long runs; D-200), and FUZZ_SMOKE=1
# builds with the fuzz crate's `dev` profile (D-205): mostly opt-level 1, unoptimised cold
# dependencies, overflow checks on; about half the build time, 55-70% as many inputs.
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
# FUZZ_SMOKE=1: the fuzz crate's `dev` profile (fuzz/Cargo.toml) instead of release.
profile=()
if [ "${FUZZ_SMOKE:-0}" = 1 ]; then
  profile=(--dev)
fi
targets=("$target")
if [ "$target" = all ]; then
  targets=(template jsonlogic validate scenario eval_line journal)
fi
# Build every target first, then fuzz them side by side, one per core (FUZZ_JOBS to change
# that): each still gets SECONDS of a core to itself. A target's libFuzzer output is printed
# whole when it ends; any target that fails makes the script fail, after the others ended.
if [ "$target" = all ]; then
  cargo +nightly fuzz build "${profile[@]}" --sanitizer "$sanitizer"
else
  cargo +nightly fuzz build "${profile[@]}" --sanitizer "$sanitizer" "$target"
fi
parallel="${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
[ "$parallel" -ge 1 ] 2>/dev/null || parallel=1
logs="target/fuzz-logs"
mkdir -p "$logs"
fuzz_one() {
  local work="target/fuzz-corpus/$1"
  mkdir -p "$work"
  cargo +nightly fuzz run "${profile[@]}" --sanitizer "$sanitizer" "$1" "$work" "fuzz/seeds/$1" -- \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    >"$logs/$1.log" 2>&1
}
failed=()
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  batch=("${targets[@]:i:parallel}")
  pids=()
  for t in "${batch[@]}"; do
    echo "fuzzing $t for ${seconds}s"
    fuzz_one "$t" &
    pids+=("$!")
  done
  # Printed in the batch's order once each has ended, so two logs never interleave.
  for k in "${!pids[@]}"; do
    t="${batch[$k]}"
    rc=0
    wait "${pids[$k]}" || rc=$?
    echo "== $t: exit $rc"
    cat "$logs/$t.log"
    [ "$rc" -eq 0 ] || failed+=("$t")
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing failed: ${failed[*]} (crash inputs under fuzz/artifacts/)" >&2
  exit 1
fi
