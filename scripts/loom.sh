#!/usr/bin/env bash
# Model-checks the scheduler's queue and dependence protocol with loom (device/src/sched/loom_tests.rs).
#   scripts/loom.sh                 every model, preemption bound 3 (~15 s on 2 cores after the build)
#   LOOM_MAX_PREEMPTIONS=4 scripts/loom.sh    deeper (~2 min)
#   scripts/loom.sh -- --nocapture  extra arguments go to cargo test (here: print executions per model)
# Builds into target/loom: `--cfg loom` changes RUSTFLAGS, which would otherwise invalidate the
# normal build in target/.
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR=target/loom
exec cargo test -p taskweave-device --release --lib loom "$@"
