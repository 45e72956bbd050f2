#!/usr/bin/env bash
# Re-measure the numbers quoted in README.md in one command: the machine, every criterion
# bench with short warm-up/measurement windows, each bench's own same-run ratio lines, and
# a closing table of every ratio against its peer or floor (criterion medians, same run).
#   scripts/bench.sh            # all benches
#   scripts/bench.sh journal    # one bench target
#   scripts/bench.sh suites     # only the whole-suite rows: the example Node engine and the
#                               # example file host, 200 generated workflows, --jobs 2
# Numbers from a shared or busy machine are noisy: compare ratios measured in the same run
# (the machine's load average is printed with them). Peers are pinned with exact versions in
# Cargo.toml's dev-dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
benches=("$@")
suites=yes
if [ "${benches[*]:-}" = suites ]; then
  benches=()
elif [ ${#benches[@]} -gt 0 ]; then
  suites=no
else
  benches=($(ls benches/*.rs | xargs -n1 basename | sed 's/\.rs$//'))
fi

# Criterion keeps every bench's last estimates under target/criterion; the ratios below read
# only those this invocation wrote (newer than this stamp), so a bench not run now prints no
# line instead of an old run's numbers.
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT

echo "== machine"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//') ($(nproc) cores)"
echo "os: $(uname -srm); $(rustc --version)"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
echo "peers (pinned): $(grep -E '^(datalogic-rs|petgraph|minijinja) *=' Cargo.toml | sed 's/ *#.*//' | tr '\n' ' ')"

for b in "${benches[@]}"; do
  echo "== $b"
  # stdout: criterion's results; stderr: each bench's own same-run lines (ratios, bytes).
  cargo bench --bench "$b" -- --warm-up-time 1 --measurement-time 3 2>&1 \
    | grep -E '^[^ ].*|time:|thrpt:' \
    | grep -vE '^(Gnuplot|Benchmarking|Found|Running|Compiling|Finished|warning|  [0-9]+ \()' || true
done

# Median point estimate (ns) of one criterion benchmark measured by this invocation, or empty.
median() {
  local f="target/criterion/$1/new/estimates.json"
  [ -f "$f" ] && [ "$f" -nt "$stamp" ] || return 0
  grep -o '"median":{"confidence_interval":{[^}]*},"point_estimate":[0-9.e+-]*' "$f" \
    | sed 's/.*"point_estimate"://'
}

# One ratio line: the numerator's median against the sum of the denominators' medians
# (one or more); nothing when any bench did not run.
ratio_of() { # label peer numerator denominator...
  local label=$1 peer=$2 a b=0 m
  a=$(median "$3") || return 0
  [ -n "$a" ] || return 0
  shift 3
  for d in "$@"; do
    m=$(median "$d")
    [ -n "$m" ] || return 0
    b=$(awk -v x="$b" -v y="$m" 'BEGIN { print x + y }')
  done
  awk -v l="$label" -v a="$a" -v b="$b" -v p="$peer" \
    'BEGIN { printf "%-46s %10.3f µs  vs %10.3f µs  = %6.2f×  (%s)\n", l, a/1000, b/1000, a/b, p }'
}

ratio() { # label numerator denominator peer
  ratio_of "$1" "$4" "$2" "$3"
}

# As `ratio`, against the sum of two medians.
ratio_sum() { # label numerator denominator1 denominator2 peer
  ratio_of "$1" "$5" "$2" "$3" "$4"
}

echo "== ratios (criterion medians of this run; lower is better for us)"
ratio "journal checkpoint at 10,000 steps" journal/checkpoint_at_10000 journal/floor_append_fdatasync "floor: append + fdatasync"
ratio "journal checkpoint at 1,000 steps" journal/checkpoint_at_1000 journal/floor_append_fdatasync "floor: append + fdatasync"
ratio "journal: 10,000 vs 1,000 steps" journal/checkpoint_at_10000 journal/checkpoint_at_1000 "flat in run length = 1×"
# criterion names a function `ours/if` of group `jsonlogic` on disk `jsonlogic/ours_if`.
for d in target/criterion/jsonlogic/ours_*/; do
  [ -d "$d" ] || continue
  n=$(basename "$d")
  n=${n#ours_}
  ratio "jsonlogic $n" "jsonlogic/ours_$n" "jsonlogic/datalogic_$n" "peer: datalogic-rs, its arena path"
done
ratio "campaign: 50 generated workflows" campaign/reference campaign/point_by_point "peer: the same ops asked point by point"
rate=$(median campaign/reference)
if [ -n "$rate" ]; then
  awk -v t="$rate" 'BEGIN { printf "%-46s %10.0f workflows/s (target: >= 1,000/s on one core)\n", "campaign: generated workflows, in process", 50 / (t / 1e9) }'
fi
for g in chain chain_mimalloc; do
  t=$(median "$g/10000")
  if [ -n "$t" ]; then
    a=$([ "$g" = chain ] && echo "system allocator" || echo "mimalloc, the binary's")
    awk -v l="engine step, 10,000-step chain, $a" -v t="$t" \
      'BEGIN { printf "%-46s %10.2f µs/step (target: <= 10 µs)\n", l, t / 1e3 / 10000 }'
  fi
done
ratio "engine: mimalloc vs system allocator" chain_mimalloc/10000 chain/10000 "peer: the same chain, system allocator"
small=$(median tainted/1000)
large=$(median tainted/4000)
if [ -n "$small" ] && [ -n "$large" ]; then
  awk -v a="$large" -v b="$small" 'BEGIN { printf "%-46s %10.2f×  (time per leaf, 4,000 vs 1,000: 1× is linear, 4× quadratic; D-373)\n", "SEC-1 bookkeeping, a large tainted output", (a / 4) / b }'
fi
ratio "planner, 100k steps / 300k edges" planner/ours planner/petgraph "peer: petgraph builds + toposorts the string-id graph"
ratio "planner, 100k steps / 300k edges" planner/ours planner/ids_floor "yardstick: ids via fast hash + Kahn, target ≤ 1.5×"
ratio "planner, 100k steps / 300k edges" planner/ours planner/kahn_floor "floor: integer Kahn + min-heap (information)"
for g in planner planner_chain planner_fan; do
  if [ "$g" != planner ]; then
    ratio "$g, 100k steps" "$g/ours" "$g/ids_floor" "yardstick: ids via fast hash + Kahn, target ≤ 1.5×"
    ratio "$g, 100k steps" "$g/ours" "$g/kahn_floor" "floor: integer Kahn + min-heap (information)"
  fi
  ratio "$g: validation vs planning" "$g/validate" "$g/ours" "target ≤ 2×"
  ratio "$g: reading the document once vs planning" "$g/read_floor" "$g/ours" "information: validation's floor"
  ratio_sum "$g: validation vs planning + reading once" "$g/validate" "$g/ours" "$g/read_floor" "information"
  ratio "$g: from text, parse + validate vs parse + plan" "$g/validate_text" "$g/plan_text" "information: what a file costs"
done
ratio "template, 10 markers" template/ten-markers template/minijinja "peer: minijinja render, compiled once; target ≤ 1.0×"
ratio "template, 10 markers: secret vs none" template/ten-markers-secret template/ten-markers "taint costs only where a secret is read"
ratio "with block compiled vs uncompiled" with/compiled with/uncompiled "peer: re-compiling per call"
for s in fanout-1000 foreach-10000-p1 foreach-10000-p100; do
  ratio "strands $s vs chain-10000" "strands/$s" strands/chain-10000 "peer: the sequential chain"
done

# The whole suite against the two example candidates (issue 38 item 7): wall seconds of
# `conformance --jobs 2` with 200 generated workflows, against the target. Every case and
# workflow is judged as on any other run; the time is printed, never asserted.
suite_row() { # label target command...
  local label=$1 target=$2 start end status=0
  shift 2
  start=$(date +%s.%N)
  "$@" >/dev/null 2>&1 || status=$?
  end=$(date +%s.%N)
  awk -v l="$label" -v s="$start" -v e="$end" -v t="$target" -v x="$status" \
    'BEGIN { printf "%-46s %10.1f s  (target: <= %s s; exit %s)\n", l, e - s, t, x }'
}
if [ "$suites" = yes ] && command -v node >/dev/null; then
  echo "== whole suite, 200 generated workflows, --jobs 2 (wall seconds)"
  cargo build --release --quiet
  bin=target/release/w6w-sim
  suite_row "suite: example Node engine (mini-engine)" 90 \
    "$bin" conformance --jobs 2 --engine "node examples/engines/mini-engine/shim.js"
  store=$(mktemp -d)
  suite_row "suite: example file host" 120 \
    "$bin" conformance --jobs 2 --host "node examples/hosts/file-host.js --dir $store/{job}"
  rm -rf "$store"
fi
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
