#!/usr/bin/env bash
# Real mutation testing of the core (issue 11 item 3) with cargo-mutants: every mutant
# cargo-mutants can make in src/{engine,expr,plan,model,sim} (replace a function body,
# flip an operator, delete a match arm, …) is built and run against the fast part of our
# tests; a mutant no test catches ("missed") is a hole in the tests.
#
#   scripts/mutants.sh [--shard K/N] [--budget SECONDS] [--list] [-- FILE_GLOB…]
#
#   --shard K/N     run shard K of N (1-based, like `w6w-sim conformance --shard`), so a CI
#                   matrix of N jobs splits the work; every shard must use the same N.
#   --budget S      stop starting new mutants after S seconds (default 1800); the summary
#                   counts only mutants that finished. 0 = no budget.
#   --list          only list the mutants this shard would test, with their count.
#   FILE_GLOB…      restrict to these files (default: the core modules above).
#
# Environment: MUTANTS_PROFILE (default `mutants`, Cargo.toml: incremental, opt-level 1, so
# a mutant rebuilds only this crate in about a minute); MUTANTS_IN_PLACE=1 mutates this tree instead of a copy
# (faster: no second dependency build — only in a checkout nobody is editing).
#
# Output: target/mutants/shard-K-of-N/mutants.out (cargo-mutants' own files: caught.txt,
# missed.txt, timeout.txt, unviable.txt, outcomes.json) and a summary line
#   shard K/N: kill rate: C caught + T timeout / J judged = P% (M missed, U unviable, …)
# where J = C + T + M: a mutant that makes the tests hang is caught (by the timeout); one
# that does not build ("unviable") says nothing about the tests and is not counted.
# Exit status: 0 when the kill rate is at least MUTANTS_MIN_KILL_PERCENT (default 0: report
# only), 1 below it, 2 on usage errors or when cargo-mutants cannot run.
#
# Tests run per mutant: the library's unit tests, the conformance cases, the properties and
# the official JSONLogic suite (`cargo test --lib --test conformance --test properties`,
# tests/properties/), with PROPTEST_CASES=16: the fast, behaviour-level part of the tests.
# The mutant build's deliberate mutants (W6W_MUTANTS) are not involved: this is the default
# build, mutated by cargo-mutants.
set -euo pipefail
cd "$(dirname "$0")/.."

shard="1/1"
budget=1800
list=0
files=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shard) shard="${2:?--shard needs K/N}"; shift 2 ;;
    --budget) budget="${2:?--budget needs SECONDS}"; shift 2 ;;
    --list) list=1; shift ;;
    --) shift; files=("$@"); break ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "scripts/mutants.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ "$shard" =~ ^([0-9]+)/([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 1 ] \
  || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
  echo "scripts/mutants.sh: --shard must be K/N with 1 <= K <= N, got $shard" >&2
  exit 2
fi
k="${BASH_REMATCH[1]}"
n="${BASH_REMATCH[2]}"
if ! [[ "$budget" =~ ^[0-9]+$ ]]; then
  echo "scripts/mutants.sh: --budget must be a number of seconds, got $budget" >&2
  exit 2
fi
if [ ${#files[@]} -eq 0 ]; then
  files=("src/engine/**/*.rs" "src/expr/**/*.rs" "src/plan/**/*.rs" "src/model/**/*.rs" "src/sim/**/*.rs")
fi
if ! cargo mutants --version >/dev/null 2>&1; then
  cargo install cargo-mutants --locked
fi

file_args=()
for f in "${files[@]}"; do
  file_args+=(--file "$f")
done
out="target/mutants/shard-$k-of-$n"
mkdir -p "$out"
# cargo-mutants numbers shards from 0.
# Round-robin sharding: each shard is a sample spread over every file, so one shard's kill
# rate already estimates the whole.
# Code inside `#[cfg(w6w_mutants)]` (the mutant build's hooks, which name crate::mutants::)
# is not compiled by the default build: mutating it changes nothing (equivalent mutants).
common=(--shard "$((k - 1))/$n" --sharding round-robin "${file_args[@]}" --exclude "**/*tests.rs" --exclude "src/sim/journal/tests.rs" --exclude-re "crate::mutants::")
if [ "$list" = 1 ]; then
  cargo mutants --list "${common[@]}"
  echo "$(cargo mutants --list "${common[@]}" | wc -l) mutants in shard $k/$n"
  exit 0
fi

export PROPTEST_CASES="${PROPTEST_CASES:-16}"
timeout_cmd=()
if [ "$budget" -gt 0 ]; then
  # SIGINT lets cargo-mutants stop cleanly and keep the outcomes of finished mutants.
  timeout_cmd=(timeout --signal=INT --kill-after=60 "$budget")
fi
set +e
extra=(--profile "${MUTANTS_PROFILE:-mutants}")
if [ "${MUTANTS_IN_PLACE:-0}" = 1 ]; then
  extra+=(--in-place)
fi
"${timeout_cmd[@]}" cargo mutants "${common[@]}" "${extra[@]}" --output "$out" --no-shuffle \
  --timeout-multiplier 8 --build-timeout 1800 -- \
  --lib --test conformance --test properties
status=$?
set -e
if [ "$status" -ne 0 ] && [ "$status" -ne 2 ] && [ "$status" -ne 3 ] && [ "$status" -ne 124 ] \
  && [ "$status" -ne 130 ]; then
  echo "scripts/mutants.sh: cargo-mutants failed (exit $status); see $out/mutants.out/debug.log" >&2
  exit 2
fi

# grep -c prints 0 *and* fails on an empty file: count without letting it print twice.
lines() {
  local n=0
  if [ -f "$out/mutants.out/$1" ]; then
    n=$(grep -c . "$out/mutants.out/$1" || true)
  fi
  echo "${n:-0}"
}
caught=$(lines caught.txt)
missed=$(lines missed.txt)
timeouts=$(lines timeout.txt)
unviable=$(lines unviable.txt)
judged=$((caught + missed + timeouts))
if [ "$judged" -eq 0 ]; then
  echo "scripts/mutants.sh: no mutant finished within the budget (${budget}s)" >&2
  exit 2
fi
percent=$((100 * (caught + timeouts) / judged))
echo "shard $k/$n: kill rate: $caught caught + $timeouts timeout / $judged judged = $percent% ($missed missed, $unviable unviable, not counted)"
if [ "$missed" -gt 0 ]; then
  echo "missed (a test should fail on each):"
  sed 's/^/  /' "$out/mutants.out/missed.txt"
fi
if [ "$percent" -lt "${MUTANTS_MIN_KILL_PERCENT:-0}" ]; then
  exit 1
fi
