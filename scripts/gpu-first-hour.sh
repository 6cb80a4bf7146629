#!/usr/bin/env bash
# A GPU user's first hour, on a GPU machine, from binaries built here as the README builds them:
#   1. the main job: the demo of `scripts/run.sh`, every line stamped with the seconds since it
#      started (the first row must come within 30 s, the whole run within 2 minutes);
#   2. the fault checks on each GPU backend, among them a task that never returns, each such
#      check in a process of its own that must exit (`faults --backend B`);
#   3. a build without ptxas (`TASKWEAVE_PTXAS=0`): what the runtime says before the driver
#      compiles a kernel, and how long that takes, on one workload.
# Every output starts with the header of bench/results/README.md (date, device, command).
#
#   (here)         cargo build --release -p taskweave-examples --bin demo            (as run.sh does)
#                  CARGO_TARGET_DIR=target/faults TASKWEAVE_REGIONS='faulty*,touch_all' \
#                      cargo build --release -p taskweave-examples --bin faults
#                  CARGO_TARGET_DIR=target/no-ptxas TASKWEAVE_PTXAS=0 TASKWEAVE_REGIONS=lu,chain \
#                      cargo build --release -p taskweave-examples --bin workload
#                  then copy the three binaries (stripped: strip --strip-debug) into STAGE/bin as
#                  demo, faults and workload-no-ptxas
#   (GPU machine)  scripts/gpu-first-hour.sh STAGE OUT [PART...]
#       PART: demo, faults, no-ptxas (default: all three, in that order); a stage may hold only
#       the binaries of the parts it runs.
set -uo pipefail
. "$(dirname "$0")/stage-args.sh"
stage_args "demo faults no-ptxas" -- "$@"
wants() {
    local p
    for p in "${parts[@]}"; do [ "$p" = "$1" ] && return 0; done
    return 1
}
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)
device="${gpu/, /, driver }"
status=0

# Runs `CMD...` under `timeout SECONDS` into FILE after the results header, each line stamped
# with the seconds since the command started.
record() {
    local file=$1 seconds=$2
    shift 2
    local shown="$*"
    shown=${shown//"$stage/bin/"/}
    {
        echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "# device: $device"
        echo "# command: $shown"
        timeout "$seconds" "$@" 2>&1 | python3 -uc '
import sys, time
start = time.monotonic()
for line in sys.stdin:
    sys.stdout.write("%7.2f  %s" % (time.monotonic() - start, line))'
        rc=${PIPESTATUS[0]}
        echo "# exit status: $rc$([ "$rc" = 124 ] && echo " (timed out after $seconds s)")"
        return "$rc"
    } > "$out/$file"
}

# 1. The main job, with the driver's cache off: nothing may wait for a compilation.
if wants demo; then
    CUDA_CACHE_DISABLE=1 record demo.txt 300 "$stage/bin/demo" || status=1
    tail -n 4 "$out/demo.txt"
fi
# 2. The fault checks on each GPU backend.
if wants faults; then
    for backend in persistent barrier grid-barrier graph streams; do
        record "faults-$backend.txt" 240 "$stage/bin/faults" --backend "$backend" || status=1
        grep -E 'checks passed|^ *[0-9.]+  FAIL' "$out/faults-$backend.txt"
    done
fi
# 3. No ptxas at build time: the driver compiles each kernel a call needs, and says so first.
if wants no-ptxas; then
    for backend in persistent barrier; do
        CUDA_CACHE_DISABLE=1 record "no-ptxas-$backend.txt" 300 \
            "$stage/bin/workload-no-ptxas" lu-d --backend "$backend" || status=1
        tail -n 3 "$out/no-ptxas-$backend.txt"
    done
fi
exit $status
