#!/usr/bin/env bash
# Run every criterion bench with short warm-up/measurement windows and print the summary
# lines, so the ratios quoted in README.md can be re-measured in one command:
#   scripts/bench.sh            # all benches
#   scripts/bench.sh resolver   # one bench target
# Numbers from a shared or busy machine are noisy: compare ratios measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
benches=("$@")
if [ ${#benches[@]} -eq 0 ]; then
  benches=($(ls benches/*.rs | xargs -n1 basename | sed 's/\.rs$//'))
fi
for b in "${benches[@]}"; do
  echo "== $b"
  cargo bench --bench "$b" -- --warm-up-time 1 --measurement-time 3 2>/dev/null \
    | grep -E '^[^ ].*|time:|thrpt:' | grep -vE '^(Gnuplot|Benchmarking|Found|  [0-9]+ \()' || true
done
