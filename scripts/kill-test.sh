#!/usr/bin/env bash
# The real-kill campaign: kill -9 `w6w-sim run --store DIR` (and its resumers) at random
# moments, resume, and compare with the crash-free RunState, invocations and trace `seq`
# (tests/integration/kill_resume.rs; CI runs its short default of 2 rounds × 3 kills).
#   scripts/kill-test.sh              # 50 rounds × 5 kills, a fresh random seed
#   scripts/kill-test.sh 200 8 0x1234 # rounds, kills per round, seed (reproduce a failure)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-50}
kills=${2:-5}
seed=${3:-$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')}
echo "kill campaign: $rounds rounds x $kills kills, W6W_KILL_SEED=$seed"
W6W_KILL_ROUNDS=$rounds W6W_KILL_KILLS=$kills W6W_KILL_SEED=$seed \
  cargo test --release --test integration -- kill_resume:: --nocapture
