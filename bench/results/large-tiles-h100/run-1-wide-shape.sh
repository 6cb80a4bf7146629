#!/usr/bin/env bash
# The 64 x 32 warp tile (F64M16K8WideTile) against the default 32 x 32 on independent f64 tiles,
# persistent/static and one launch, at two scratch sizes; cuBLAS's batched DGEMM on the same tiles.
set -uo pipefail
mkdir -p /tmp/tw && (cd /tmp/tw && xz -dc "$OLDPWD/.gpu/wide.tar.xz" | tar xf -)
R=/tmp/tw/run.sh
{ timeout 120 $R linalg --vendor --sizes 1024 --precisions f64 --reps 5 2>&1; echo "exit $?"; } > $OUT/vendor.txt
for round in 1 2; do
for bc in 64:8192 128:2048 256:512; do
  bs=${bc%:*}; n=${bc#*:}
  for backend in "persistent --policy static" barrier; do
    for ss in default:34816 default:73728 wide:73728 wide:49152; do
      shape=${ss%:*}; sb=${ss#*:}
      timeout 60 $R tile_ops --op gemm --prec f64 --bs $bs --count $n --beta 0 --shape $shape --backend $backend --reps 10 --unchecked --shared-bytes $sb 2>&1 | grep -v "^warm-up"
    done
  done
done
done > $OUT/gemm.txt
