#!/usr/bin/env bash
# A/B of the persistent kernels' register cap: the default build (each persistent kernel capped at
# the fewest registers at which it spills no more than uncapped: 255 for the factorizations) and
# a build with TASKWEAVE_FIT_REGISTERS=0 TASKWEAVE_MAX_REGISTERS=128; outputs land in $OUT.
set -uo pipefail
for s in base255 cap128; do
  mkdir -p /tmp/$s && (cd /tmp/$s && xz -dc "$OLDPWD/.gpu/$s.tar.xz" | tar xf -)
done
V=persistent/static+plan,persistent/grr+plan,barrier
for s in base255 cap128; do
  timeout 280 /tmp/$s/run.sh linalg --vendor --dsl --algorithms cholesky,lu --sizes 1024,2048,4096,8192 --precisions f64,f32 --reps 3 --variants $V > $OUT/linalg-$s.txt 2>&1; echo "exit $?" >> $OUT/linalg-$s.txt
done
timeout 150 /tmp/base255/run.sh linalg --dsl --algorithms cholesky,lu --sizes 2048,8192 --precisions f64,f32 --reps 3 --variants persistent/static+plan,barrier > $OUT/linalg-base255-again.txt 2>&1; echo "exit $?" >> $OUT/linalg-base255-again.txt
grep -h "persistent/static planned\|barrier\|exit\|rror" $OUT/*.txt | cut -c1-110
