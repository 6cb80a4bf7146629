#!/usr/bin/env bash
# The test command: set-up, then every test, the README's quickstart crate, the loom models, Miri
# over the unsafe code, the PTX check and the check that every cited result carries its header.
# Fails when a tool it needs is missing: its own set-up must produce ptxas.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${TASKWEAVE_SKIP_PTXAS:-0}" = 1 ]; then
    echo "test: the tests need ptxas; unset TASKWEAVE_SKIP_PTXAS (it is for scripts/run.sh)" >&2
    exit 1
fi
# Each step's time goes to standard error when it ends, and all of them again at the end, so that
# a CI log says where its minutes went.
times=()
step() {
    local start=$SECONDS
    "$@"
    times+=("$(printf '%5ds  %s' $((SECONDS - start)) "$*")")
    echo "test: ${times[-1]}" >&2
}
step scripts/setup.sh
if ! scripts/find-ptxas.sh >/dev/null; then
    echo "test: scripts/setup.sh did not produce a ptxas" >&2
    exit 1
fi
step cargo test --workspace
step scripts/quickstart.sh
step scripts/loom.sh
step scripts/miri.sh
step scripts/check-ptx.sh
step python3 scripts/check-results.py
printf 'test: where the time went\n' >&2
printf 'test: %s\n' "${times[@]}" >&2
