#!/usr/bin/env bash
# The wide shape on the previous device code (big) and on this build (iso), interleaved.
set -uo pipefail
bash .gpu/prep.sh big iso
OLD=/tmp/big/run.sh NEW=/tmp/iso/run.sh
who() { [ $1 = $OLD ] && echo old || echo new; }
{ for round in 1 2; do for bc in 128:2048 256:512; do bs=${bc%:*}; n=${bc#*:}; for s in wide default; do for R in $OLD $NEW; do
  echo "## round $round $(who $R) $s"
  timeout 60 $R tile_ops --op gemm --prec f64 --shape $s --bs $bs --count $n --beta 0 --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; done; } > $OUT/wide-ab.txt 2>&1
awk '/^## /{h=$3" "$4" "$5; next} /TFLOP/{match($0,/bs=[0-9]+/); print h, substr($0,RSTART,RLENGTH), $NF, $(NF-1)}' $OUT/wide-ab.txt
