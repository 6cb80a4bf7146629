#!/usr/bin/env bash
# compute-sanitizer on the factorizations at 128-tiles (the blocked register path: register solves
# and factorizations and engine updates sharing one block's scratch), taskweave's kernels only.
set -uo pipefail
mkdir -p /tmp/big && (cd /tmp/big && xz -dc "$OLDPWD/.gpu/big.tar.xz" | tar xf -)
S=/tmp/big
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
hdr() { echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/, /, driver /')"; echo "# command: $*"; }
L="linalg --dsl --algorithms cholesky,lu --sizes 512 --bs 128 --precisions f64,f32 --reps 1 --variants persistent/static+plan,barrier"
for tool in memcheck racecheck synccheck; do
  { hdr compute-sanitizer --tool $tool --kernel-name kns=taskweave --error-exitcode 3 $L; timeout 170 $CS --tool $tool --kernel-name kns=taskweave --error-exitcode 3 $S/bin/$L 2>&1; echo "exit $?"; } > $OUT/sanitizer-$tool.txt
done
T="tile_ops --op trsm --prec f64 --bs 256 --count 4 --backend persistent --policy static --unchecked --reps 1 --shared-bytes 73728"
{ hdr compute-sanitizer --tool racecheck --kernel-name kns=taskweave --error-exitcode 3 $T; timeout 100 $CS --tool racecheck --kernel-name kns=taskweave --error-exitcode 3 $S/bin/$T 2>&1; echo "exit $?"; } > $OUT/sanitizer-racecheck-trsm256.txt
tail -n 4 $OUT/*.txt
