#!/usr/bin/env bash
# The test command: set-up, then every test, the loom models, Miri over the unsafe code, the PTX
# check and the check that every cited result carries its header. Fails when a tool it needs is
# missing: its own set-up must produce ptxas.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${TASKWEAVE_SKIP_PTXAS:-0}" = 1 ]; then
    echo "test: the tests need ptxas; unset TASKWEAVE_SKIP_PTXAS (it is for scripts/run.sh)" >&2
    exit 1
fi
scripts/setup.sh
if ! scripts/find-ptxas.sh >/dev/null; then
    echo "test: scripts/setup.sh did not produce a ptxas" >&2
    exit 1
fi
cargo test --workspace
scripts/loom.sh
scripts/miri.sh
scripts/check-ptx.sh
