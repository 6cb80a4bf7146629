#!/usr/bin/env bash
# Checks that the device builds assembled every kernel they compiled, and prints registers and
# spills per kernel.
#
# The builder (taskweave_build) assembles each region's kernels with ptxas as part of the build
# and lists each assembled kernel in $OUT_DIR/taskweave-kernels.report, beside the crate's whole
# PTX, taskweave-kernels.ptx. This script reads those: a kernel of the PTX that the report lacks
# was not assembled (ptxas failed on its region, or the build had no ptxas), and fails the check.
# It assembles nothing itself.
#
#   scripts/check-ptx.sh              every device build under target/
#   scripts/check-ptx.sh OUT_DIR...   the given build output folders
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -gt 0 ]; then
    dirs=("$@")
else
    # Each kernels crate's newest build output of each profile and target folder.
    mapfile -t dirs < <(python3 - <<'PY'
import glob, os, re
newest = {}
for ptx in glob.glob("target/**/out/taskweave-kernels.ptx", recursive=True):
    out = os.path.dirname(ptx)
    if "/build/" not in out or out.startswith("target/taskweave-device/"):
        continue
    # target/<profile>/build/<crate>[-/]<hash>/out: one per crate and profile, the newest.
    key = re.sub(r"[-/][0-9a-f]+/out$", "", out)
    if key not in newest or os.path.getmtime(ptx) > os.path.getmtime(newest[key] + "/taskweave-kernels.ptx"):
        newest[key] = out
for out in sorted(newest.values()):
    print(out)
PY
)
fi
if [ "${#dirs[@]}" -eq 0 ]; then
    echo "check-ptx: no device build found under target/; build first (cargo build)" >&2
    exit 1
fi
status=0
for dir in "${dirs[@]}"; do
    ptx="$dir/taskweave-kernels.ptx"
    report="$dir/taskweave-kernels.report"
    echo "== $dir"
    if [ ! -s "$report" ] || [ "$(grep -vc '^#' "$report" || true)" -eq 0 ]; then
        echo "check-ptx: $dir has no assembled kernels: the build had no ptxas (scripts/setup.sh installs one)" >&2
        status=1
        continue
    fi
    mapfile -t entries < <(grep -o '^\.visible \.entry [A-Za-z0-9_$]*\|^\.entry [A-Za-z0-9_$]*' "$ptx" | awk '{ print $NF }')
    missing=$(printf '%s\n' "${entries[@]}" | awk -F'\t' 'NR == FNR { if ($0 !~ /^#/) seen[$2] = 1; next } !($1 in seen)' "$report" -)
    if [ -n "$missing" ]; then
        echo "check-ptx: these kernels of $ptx were not assembled:" >&2
        echo "$missing" >&2
        status=1
        continue
    fi
    awk -F'\t' '!/^#/ { printf "   %-6s %-60s module %s %4s registers  spills %s B\n", $1, $2, $3, $4, $5 }' "$report"
    echo "check-ptx: all ${#entries[@]} kernels assembled"
done
exit $status
