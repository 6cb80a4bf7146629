#!/usr/bin/env bash
# This commit's code (stage-big: tiles past 64 in blocks of 64): the linalg table with 128-tiles
# at N = 8192, Cholesky f64 at 16384, the demo on every backend.
set -uo pipefail
for v in big demo; do mkdir -p /tmp/$v && (cd /tmp/$v && xz -dc "$OLDPWD/.gpu/$v.tar.xz" | tar xf -); done
R=/tmp/big/run.sh
{ timeout 280 $R linalg --vendor --dsl --algorithms cholesky,lu --sizes 1024,2048,4096,8192 --bs 64,64,64,128 --precisions f64,f32 --reps 3 --variants persistent/static+plan,persistent/grr+plan,barrier,persistent/static+plan:checked 2>&1; echo "exit $?"; } > $OUT/linalg.txt
{ timeout 100 $R linalg --vendor --dsl --algorithms cholesky --sizes 8192,16384 --bs 256,128 --precisions f64 --reps 3 --variants persistent/static+plan 2>&1; echo "exit $?"; } > $OUT/linalg-large.txt
{ timeout 150 /tmp/demo/run.sh demo 2>&1; echo "exit $?"; } > $OUT/demo.txt
