#!/usr/bin/env bash
# The main job: set-up, then the demo, on the GPU when there is one and on the CPU backend otherwise.
#   scripts/run.sh [demo options]     (see: scripts/run.sh --help)
#
# The build compiles the examples for the GPU as well and assembles their kernels with ptxas,
# for the GPU of this machine (or sm_90 without one): about 9 minutes the first time on two
# cores, and a minute or two after a change. It says what it is doing on the terminal and in
# <target>/taskweave-device/build.log.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --run
# Where cargo puts its output: ./target, or CARGO_TARGET_DIR (or its config) when set.
target=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
echo "run: building the examples and their GPU kernels (progress: $target/taskweave-device/build.log)"
start=$(date +%s)
cargo build --release -p taskweave-examples --bin demo
echo "run: built in $(($(date +%s) - start)) s"
if [ ! -t 1 ] && [ -f "$target/taskweave-device/build.log" ]; then
    # No terminal saw the device build's progress: show its log.
    sed 's/^/run: device build: /' "$target/taskweave-device/build.log"
fi
# A build without ptxas leaves kernels for the driver to compile; let its cache keep them all.
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
exec "$target/release/demo" "$@"
