#!/usr/bin/env bash
# The main job: set-up, then the demo, on the GPU when there is one and on the CPU backend otherwise.
#   scripts/run.sh [demo options]     (see: scripts/run.sh --help)
set -euo pipefail
cd "$(dirname "$0")/.."
TASKWEAVE_SKIP_PTXAS=1 scripts/setup.sh
cargo run --release -p taskweave-examples --bin demo -- "$@"
