#!/usr/bin/env bash
# The build whose f32 factorization regions are capped at 128 registers (Builder::region_registers):
# linalg against cuSOLVER, then every workload on every GPU backend (sweep), the demo and the
# self-check; outputs land in $OUT.
set -uo pipefail
mkdir -p /tmp/new && (cd /tmp/new && xz -dc "$OLDPWD/.gpu/new.tar.xz" | tar xf -)
S=/tmp/new
timeout 300 $S/run.sh linalg --vendor --dsl --algorithms cholesky,lu --sizes 1024,2048,4096,8192 --precisions f64,f32 --reps 3 --variants persistent/static+plan,persistent/grr+plan,barrier,persistent/static+plan:checked > $OUT/linalg.txt 2>&1; echo "exit $?" >> $OUT/linalg.txt
for b in persistent barrier grid-barrier graph streams; do
  timeout 120 $S/run.sh sweep --backends $b --policies grr,local,static,affinity > $OUT/sweep-$b.txt 2>&1; echo "exit $?" >> $OUT/sweep-$b.txt
done
timeout 150 $S/run.sh demo > $OUT/demo.txt 2>&1; echo "exit $?" >> $OUT/demo.txt
timeout 120 $S/run.sh selfcheck > $OUT/selfcheck.txt 2>&1; echo "exit $?" >> $OUT/selfcheck.txt
cd $OUT && tar cf sweep.tar sweep-*.txt && rm sweep-*.txt
grep -h "exit\|PASS.*FAIL\|FAIL\|passed\|checks" $OUT/*.txt | head -30
grep -h "persistent/static planned\|barrier\|checked" $OUT/linalg.txt | cut -c1-100
