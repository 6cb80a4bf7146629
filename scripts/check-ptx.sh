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
    # distinct file once: the Miri build and older builds of the same sources hold copies.
    mapfile -t files < <(find target -path '*/build/*/out/taskweave-kernels.ptx' -not -path 'target/taskweave-device/*' 2>/dev/null |
        xargs -r sha256sum | sort -k1,1 -u | awk '{ print $2 }' | sort)
fi
if [ "${#files[@]}" -eq 0 ]; then
    echo "check-ptx: no PTX found; build first (cargo build)" >&2
    exit 1
fi
jobs=${TASKWEAVE_PTXAS_JOBS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for f in "${files[@]}"; do
    echo "== $f"
    # One ptxas assembles one entry after another on one core: 23 minutes for the examples' module
    # on a 2-core machine. So the entries go out in batches to `jobs` processes; each process parses
    # the whole file again (under 2 s here). Entry i goes to batch i mod batches, which spreads
    # neighbouring kernels (one region's, of similar cost) over the batches.
    mapfile -t entries < <(grep -o '^\.visible \.entry [A-Za-z0-9_$]*\|^\.entry [A-Za-z0-9_$]*' "$f" |
        awk '{ print $NF }')
    if [ "${#entries[@]}" -eq 0 ]; then
        echo "check-ptx: no kernel entry in $f" >&2
        status=1
        continue
    fi
    batches=$((jobs * 8))
    rm -f "$work"/batch.*
    for i in "${!entries[@]}"; do
        b=$((i % batches))
        printf '%s\n' "${entries[$i]}" >>"$work/batch.$(printf '%04d' "$b")"
    done
    # Each batch writes its ptxas log to batch.N.log and, when ptxas fails, batch.N.failed.
    printf '%s\n' "$work"/batch.[0-9][0-9][0-9][0-9] | xargs -P "$jobs" -I{} sh -c '
        if ! "$1" -arch="$2" -v -e "$(paste -sd, "$3")" "$4" -o /dev/null >"$3.log" 2>&1; then
            touch "$3.failed"
        fi' sh "$ptxas" "$arch" {} "$f"
    logs=("$work"/batch.[0-9][0-9][0-9][0-9].log)
    if compgen -G "$work/batch.*.failed" >/dev/null; then
        for failed in "$work"/batch.*.failed; do
            cat "${failed%.failed}.log" >&2
        done
        echo "check-ptx: FAILED to assemble $f" >&2
        status=1
        continue
    fi
    assembled=$(cat "${logs[@]}" | grep -c 'Compiling entry function' || true)
    if [ "$assembled" -ne "${#entries[@]}" ]; then
        echo "check-ptx: ptxas assembled $assembled of the ${#entries[@]} entries in $f" >&2
        status=1
        continue
    fi
    # One line per kernel, in the file's order: name, registers, shared memory, stack frame,
    # spills.
    cat "${logs[@]}" | awk '
        /Compiling entry function/ { kernel = $7; gsub(/\047/, "", kernel) }
        /bytes stack frame/ && kernel != "" { frame = $1; spill_st = $5; spill_ld = $9 }
        /Used [0-9]+ registers/ && kernel != "" {
            regs = $5; smem = "0"
            for (i = 1; i <= NF; i++) if ($(i+1) == "bytes" && $(i+2) == "smem") smem = $i
            printf "%s\t   %-55s %4s registers %6s B smem  stack %4s B  spills %s/%s B\n", kernel, kernel, regs, smem, frame, spill_st, spill_ld
            kernel = ""
        }' >"$work/lines"
    printf '%s\n' "${entries[@]}" | awk -F'\t' 'NR == FNR { line[$1] = $2; next } { print line[$1] }' "$work/lines" -
done
exit $status
