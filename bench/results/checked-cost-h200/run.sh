#!/usr/bin/env bash
# The run of this folder, on the GPU machine, from the repository root, with the staged build fin
# (../linalg-final-h200/) packed in .gpu/. Outputs go to $OUT.
#   bash bench/results/checked-cost-h200/run.sh
# Cholesky and LU at N = 2048 (32 x 32 tiles of 64), f32 and f64, the static policy, checks on
# and off: untraced execute times, then a traced call summarized per task kind.
set -uo pipefail
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
