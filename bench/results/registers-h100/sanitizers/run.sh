#!/usr/bin/env bash
# compute-sanitizer after the transfers ask with cuPointerGetAttributes: the f32 factorizations
# capped at 128 registers (taskweave's kernels only: cuSOLVER's getrf_wo_pivot, the reference the
# same run times, draws racecheck warnings of its own), and memcheck over every workload on the
# persistent backend on host arrays; outputs in $OUT.
set -uo pipefail
mkdir -p /tmp/tw && (cd /tmp/tw && xz -dc "$OLDPWD/.gpu/pb.tar.xz" | tar xf -)
S=/tmp/tw
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
hdr() { echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/, /, driver /')"; echo "# command: $*"; }
L="linalg --dsl --algorithms cholesky,lu --sizes 512 --precisions f32 --reps 1 --variants persistent/static+plan,barrier,persistent/static+plan:checked"
for tool in memcheck racecheck synccheck; do
  { hdr compute-sanitizer --tool $tool --kernel-name kns=taskweave --error-exitcode 3 $L; timeout 170 $CS --tool $tool --kernel-name kns=taskweave --error-exitcode 3 $S/bin/$L 2>&1; echo "exit $?"; } > $OUT/sanitizer-$tool-linalg.txt
done
{ hdr compute-sanitizer --tool memcheck --error-exitcode 3 sweep --backends persistent --policies grr,local,static,affinity; timeout 170 $CS --tool memcheck --error-exitcode 3 $S/bin/sweep --backends persistent --policies grr,local,static,affinity 2>&1; echo "exit $?"; } > $OUT/sanitizer-memcheck-sweep.txt
tail -n 3 $OUT/*.txt
