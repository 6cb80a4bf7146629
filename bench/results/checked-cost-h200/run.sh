#!/usr/bin/env bash
# The run of this folder, on the GPU machine, from the repository root, with the staged build fin
# (../linalg-final-h200/) packed in .gpu/. Outputs go to $OUT.
#   bash bench/results/checked-cost-h200/run.sh            # part 1
#   PART=ncu bash bench/results/checked-cost-h200/run.sh   # part 2
# Cholesky and LU at N = 2048 (32 x 32 tiles of 64), f32 and f64, the static policy, checks on
# and off: untraced execute times, then a traced call summarized per task kind.
set -uo pipefail
# Part 2 (PART=ncu): Nsight Compute's warp-state samples of Cholesky f64 at 2048, checks
# on and off, on build gn (../l2-keep-h200/: main's kernels but for the engine's L2 hint, whose
# cubin was kept on the build machine for scripts/stall-summary.py), the second launch (the first
# is the warm-up).
if [ "${PART:-}" = ncu ]; then
  bash scripts/unpack-stage.sh gn
  for chk in checked unchecked; do
    flag=; [ $chk = unchecked ] && flag=--unchecked
    timeout 200 ncu --section SourceCounters --section WarpStateStats -k regex:taskweave_region --launch-skip 1 --launch-count 1 -o /tmp/ncu-$chk /tmp/gn/bin/cholesky --nb 32 --bs 64 --prec f64 --resident --reps 1 --backend persistent --policy static $flag > $OUT/ncu-$chk.log 2>&1
    ncu --import /tmp/ncu-$chk.ncu-rep --page source --csv --print-source sass > $OUT/source-$chk.csv 2>&1
    ncu --import /tmp/ncu-$chk.ncu-rep --page details > $OUT/details-$chk.txt 2>&1
    xz -T0 $OUT/source-$chk.csv
    tail -3 $OUT/ncu-$chk.log
  done
  exit 0
fi
bash scripts/unpack-stage.sh fin
mkdir -p /tmp/tr
for alg in cholesky lu; do for prec in f32 f64; do for chk in checked unchecked; do
  o=$OUT/$alg-$prec-$chk.txt
  flag=; [ $chk = unchecked ] && flag=--unchecked
  { timeout 60 /tmp/fin/run.sh $alg --nb 32 --bs 64 --prec $prec --resident --reps 5 --backend persistent --policy static $flag
    timeout 60 /tmp/fin/run.sh $alg --nb 32 --bs 64 --prec $prec --resident --reps 1 --backend persistent --policy static $flag --trace /tmp/tr/$alg-$prec-$chk.json
    python3 scripts/trace-summary.py /tmp/tr/$alg-$prec-$chk.json; } > $o 2>&1
  echo "== $o"; grep -E "execute|median|span|us$" $o | head -12
done; done; done
