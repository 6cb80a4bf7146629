#!/usr/bin/env bash
# Tiles past 64 in blocks of 64 on the register path (new, stage-big) against the 16-wide paths
# (old, stage-wide: the previous commit's tile library): one tile's latency and a batch's rate for
# POTRF, TRSM and GETRF at 128 and 256, then Cholesky and LU f64/f32 at N = 4096 and 8192 with
# 128-tiles (old and new) and 64-tiles (new), in one lease.
set -uo pipefail
for v in wide big; do mkdir -p /tmp/$v && (cd /tmp/$v && xz -dc "$OLDPWD/.gpu/$v.tar.xz" | tar xf -); done
OLD=/tmp/wide/run.sh; NEW=/tmp/big/run.sh
for round in 1 2; do
  for op in potrf trsm getrf; do
    for bs in 64 128 256; do
      for R in $OLD $NEW; do
        echo "## $( [ $R = $OLD ] && echo old || echo new )"
        timeout 60 $R tile_ops --op $op --prec f64 --bs $bs --count 1 --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
      done
    done
    for R in $OLD $NEW; do
      echo "## $( [ $R = $OLD ] && echo old || echo new )"
      timeout 60 $R tile_ops --op $op --prec f64 --bs 128 --count 1056 --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
    done
  done
done > $OUT/ops.txt 2>&1
{ echo "## new, 48 KiB of scratch"; timeout 60 $NEW tile_ops --op gemm --prec f64 --bs 128 --count 2048 --beta 0 --backend persistent --policy static --unchecked --reps 10 --shared-bytes 49152 2>&1 | grep -v "^warm-up"; } > $OUT/sizing-48k.txt
L="linalg --dsl --algorithms cholesky,lu --sizes 4096,8192 --precisions f64,f32 --reps 3 --variants persistent/static+plan,persistent/grr+plan"
{ echo "## old"; timeout 200 $OLD $L --bs 128 2>&1; echo "## new"; timeout 200 $NEW $L --bs 128 2>&1; echo "## new, 64-tiles"; timeout 200 $NEW $L --bs 64 2>&1; } > $OUT/linalg.txt
