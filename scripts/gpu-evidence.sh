#!/usr/bin/env bash
# Fresh GPU evidence for RELIABILITY.md, run on a GPU machine from a stage (scripts/stage-gpu.sh):
#   - compute-sanitizer memcheck, racecheck and synccheck over every workload, the wavefront and
#     the chain at small sizes, with index checks on, on each GPU backend in turn (`sweep`; the
#     persistent backend under the grr, local, static and affinity policies), one process per tool
#     and backend;
#   - the fault checks on each GPU backend (`faults --backend B --expect N`: every check that can
#     run on that backend must run and pass);
#   - the self-check and a soak of 10,000 regions.
# Every output starts with the header of bench/results/README.md (date, device, command) and goes
# into OUT, with a README.md that says what each one found. Each process runs under a timeout, and
# a failure or a timeout is recorded and the script goes on; it exits 1 if anything failed.
#
#   (here)          scripts/stage-gpu.sh stage sweep faults selfcheck soak
#   (GPU machine)   scripts/gpu-evidence.sh stage OUT [PART...]
#       PART: memcheck, racecheck, synccheck, faults, other (default: all five, in that order).
#       Not yet timed on a GPU (each step prints its seconds). To stay within ten-minute calls, run
#       `memcheck synccheck` in one and `racecheck faults other` in another, into the same OUT:
#       every part writes its own files, and README.md lists all that OUT holds.
#   Then commit OUT under bench/results/ (as gpu-evidence-outputs-h100/) and cite it from RELIABILITY.md.
#
# compute-sanitizer comes from COMPUTE_SANITIZER, else PATH, else /usr/local/cuda/bin.
# Timeouts per process (seconds): SANITIZER_TIMEOUT (default 90), RACECHECK_TIMEOUT (150),
# FAULTS_TIMEOUT (120), OTHER_TIMEOUT (120). BACKENDS="persistent barrier" narrows the backends of
# the sanitizer and fault parts (default: all five GPU backends).
set -uo pipefail
if [ "$#" -lt 2 ]; then
    sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
stage=$(cd "$1" && pwd)
out=$2
shift 2
parts=("$@")
[ "${#parts[@]}" -gt 0 ] || parts=(memcheck racecheck synccheck faults other)
mkdir -p "$out"
out=$(cd "$out" && pwd)
for bin in sweep faults selfcheck soak; do
    if [ ! -x "$stage/bin/$bin" ]; then
        echo "gpu-evidence: $stage/bin/$bin is missing: scripts/stage-gpu.sh stage sweep faults selfcheck soak" >&2
        exit 2
    fi
done
sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)
device="no nvidia-smi"
if [ -n "$gpu" ]; then
    device="${gpu/, /, driver }"
fi
# BACKENDS (space-separated) narrows the backends, e.g. to split the sanitizers over calls.
read -ra backends <<< "${BACKENDS:-persistent barrier grid-barrier graph streams}"
status=0
summary="$out/summary.txt"

# Runs `CMD...` under `timeout SECONDS`, into FILE, after the results header; appends one line to
# the summary: the file, the exit status, and the lines that say what the run found.
record() {
    local file=$1 seconds=$2
    shift 2
    local start rc shown="$*"
    shown=${shown//"$stage/bin/"/}
    shown=${shown//"$sanitizer"/compute-sanitizer}
    start=$(date +%s)
    (
        echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "# device: $device"
        echo "# command: $shown"
        timeout "$seconds" "$@" 2>&1
        rc=$?
        echo "# exit status: $rc$([ "$rc" = 124 ] && echo " (timed out after $seconds s)")"
        exit "$rc"
    ) > "$out/$file"
    rc=$?
    local found
    found=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|runs passed|checks passed|^soak:|^(PASS|FAIL) ' "$out/$file" |
        grep -vE '^PASS ' | sort | uniq -c | sed 's/^ *//' | tr '\n' ';')
    if [ "$file" = selfcheck.txt ]; then
        found="$(grep -c '^PASS ' "$out/$file") PASS, $(grep -c '^FAIL ' "$out/$file") FAIL"
    fi
    printf '%s | exit %s | %s s | %s\n' "$file" "$rc" "$(($(date +%s) - start))" "$found" >> "$summary"
    echo "gpu-evidence: $file: exit $rc, $(($(date +%s) - start)) s"
    [ "$rc" = 0 ] || status=1
}

for part in "${parts[@]}"; do
    case "$part" in
    memcheck | racecheck | synccheck)
        seconds=${SANITIZER_TIMEOUT:-90}
        [ "$part" = racecheck ] && seconds=${RACECHECK_TIMEOUT:-150}
        for b in "${backends[@]}"; do
            record "sanitizer-$part-$b.txt" "$seconds" \
                "$sanitizer" --tool "$part" --error-exitcode 3 \
                "$stage/bin/sweep" --backends "$b" --policies grr,local,static,affinity
        done
        ;;
    faults)
        total=$("$stage/bin/faults" --list | wc -l)
        for b in "${backends[@]}"; do
            # Only the persistent backend has a watchdog and keeps device memory in plans:
            # elsewhere those two checks are skipped.
            expect=$total
            [ "$b" = persistent ] || expect=$((total - 2))
            record "faults-$b.txt" "${FAULTS_TIMEOUT:-120}" \
                "$stage/bin/faults" --backend "$b" --expect "$expect"
        done
        ;;
    other)
        record selfcheck.txt "${OTHER_TIMEOUT:-120}" "$stage/bin/selfcheck"
        record soak.txt "${OTHER_TIMEOUT:-120}" "$stage/bin/soak" --regions 10000
        ;;
    *)
        echo "gpu-evidence: unknown part \`$part\` (memcheck, racecheck, synccheck, faults, other)" >&2
        exit 2
        ;;
    esac
done

{
    echo "# Fresh sanitizer, fault, self-check and soak runs"
    echo
    echo "- command: \`scripts/gpu-evidence.sh stage OUT\` (each file's own header gives its command)"
    echo "- date: $(date -u +%Y-%m-%d)"
    echo "- device: $device"
    echo
    echo "One line per output: file, exit status, seconds, and what it found (sanitizer summaries,"
    echo "runs and checks passed, failures)."
    echo
    echo '```'
    sort -u "$summary"
    echo '```'
} > "$out/README.md"
cat "$out/README.md"
exit $status
