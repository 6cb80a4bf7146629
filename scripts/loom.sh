#!/usr/bin/env bash
# Model-checks the scheduler's queue and dependence protocol with loom (device/src/sched/loom_tests.rs).
#   scripts/loom.sh                 every model, preemption bound 3 (~15 s on 2 cores after the build)
#   LOOM_MAX_PREEMPTIONS=4 scripts/loom.sh    deeper (~2 min)
#   LOOM_ONLY=steal scripts/loom.sh the models whose name contains `steal`
#   scripts/loom.sh --nocapture     extra arguments go to the test binary (here: print executions
#                                   per model)
# Fails unless every model it selects ran and passed: it lists the `#[test]` functions of
# loom_tests.rs (those whose name contains LOOM_ONLY), runs exactly those, and compares their
# number with the count the test binary reports, so a filter that matches nothing, or a model
# that is not compiled, fails the script.
# Builds into target/loom: `--cfg loom` changes RUSTFLAGS, which would otherwise invalidate the
# normal build in target/.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t models < <(grep -A1 '^#\[test\]' device/src/sched/loom_tests.rs |
    sed -n 's/^fn \(loom_[a-z0-9_]*\)(.*/\1/p' | grep -F -- "${LOOM_ONLY:-}" || true)
if [ "${#models[@]}" -eq 0 ]; then
    echo "loom: no model in device/src/sched/loom_tests.rs matches LOOM_ONLY=\`${LOOM_ONLY:-}\`" >&2
    exit 1
fi
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
export RUSTFLAGS="--cfg loom"
export CARGO_TARGET_DIR=target/loom
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test -p taskweave-device --release --lib -- --exact "$@" \
    "${models[@]/#/sched::loom_tests::}" 2>&1 | tee "$log"
ran=$(sed -n 's/^test result: ok\. \([0-9]*\) passed.*/\1/p' "$log" | awk '{ s += $1 } END { print s + 0 }')
if [ "$ran" -ne "${#models[@]}" ]; then
    echo "loom: $ran models passed, but loom_tests.rs has ${#models[@]} matching models" >&2
    exit 1
fi
echo "loom: all ${#models[@]} models passed"
