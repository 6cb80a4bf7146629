#!/usr/bin/env bash
# Unpacks the staged linalg and times the tiled factorizations at several shared-scratch sizes
# per block (fewer bytes: more worker blocks per SM); outputs land in $OUT.
set -uo pipefail
mkdir -p /tmp/tw && cd /tmp/tw && xz -dc "$OLDPWD/.gpu/pb.tar.xz" | tar xf -
V=persistent/static+plan,persistent/grr+plan,barrier
for sb in 73728 43008 30720; do
  timeout 280 ./run.sh linalg --vendor --dsl --algorithms cholesky --sizes 1024,2048,4096,8192 --precisions f64,f32 --reps 3 --variants $V --shared-bytes $sb > $OUT/chol-$sb.txt 2>&1; echo "exit $?" >> $OUT/chol-$sb.txt
done
for sb in 43008 30720; do
  timeout 200 ./run.sh linalg --dsl --algorithms lu --sizes 1024,8192 --precisions f64,f32 --reps 3 --variants $V --shared-bytes $sb > $OUT/lu-$sb.txt 2>&1; echo "exit $?" >> $OUT/lu-$sb.txt
done
grep -h "cholesky\|lu f\|exit\|rror" $OUT/*.txt | grep -v "^# command" | cut -c1-140
