#!/usr/bin/env bash
# Assembles PTX with ptxas (-arch=sm_90 -v) and prints registers, stack and spills per kernel.
#   scripts/check-ptx.sh              every PTX the device build produced
#   scripts/check-ptx.sh FILE.ptx...  the given files
# Fails if any file fails to assemble, if there is no PTX to check, or if there is no ptxas
# (scripts/setup.sh installs it into .venv).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! ptxas=$(scripts/find-ptxas.sh); then
    echo "check-ptx: no ptxas in .venv or on PATH: run scripts/setup.sh" >&2
    exit 1
fi
arch=${TASKWEAVE_PTXAS_ARCH:-sm_90}
if [ "$#" -gt 0 ]; then
    files=("$@")
else
    # The PTX the host binaries embed: the device build's output after the builder's tuning. Each
    # distinct file once: the Miri build and older builds of the same sources hold copies, and one
    # assembly of the examples' module (16 MB of PTX, 355 kernels) takes ptxas about 9 minutes on
    # a 2-core machine, with or without `-split-compile 0` (9 min 11 s wall for 11 min 45 s of CPU).
    mapfile -t files < <(find target -path '*/build/*/out/taskweave-kernels.ptx' -not -path 'target/taskweave-device/*' 2>/dev/null |
        xargs -r sha256sum | sort -k1,1 -u | awk '{ print $2 }' | sort)
fi
if [ "${#files[@]}" -eq 0 ]; then
    echo "check-ptx: no PTX found; build first (cargo build)" >&2
    exit 1
fi
status=0
for f in "${files[@]}"; do
    echo "== $f"
    if ! out=$("$ptxas" -arch="$arch" -v "$f" -o /dev/null 2>&1); then
        echo "$out" >&2
        echo "check-ptx: FAILED to assemble $f" >&2
        status=1
        continue
    fi
    # One line per kernel: name, registers, shared memory, stack frame, spills.
    echo "$out" | awk '
        /Compiling entry function/ { kernel = $7; gsub(/\047/, "", kernel) }
        /Function properties for/ { props = "" }
        /bytes stack frame/ && kernel != "" { frame = $1; spill_st = $5; spill_ld = $9 }
        /Used [0-9]+ registers/ && kernel != "" {
            regs = $5; smem = "0"
            for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "smem") smem = $i
            printf "   %-55s %4s registers %6s B smem  stack %4s B  spills %s/%s B\n", kernel, regs, smem, frame, spill_st, spill_ld
            kernel = ""
        }'
done
exit $status
