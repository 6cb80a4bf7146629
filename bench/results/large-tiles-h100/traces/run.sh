#!/usr/bin/env bash
# Traces of Cholesky and LU f64 at N = 8192 with 128-tiles and 64-tiles (this commit's code),
# persistent/static, unchecked: what each task kind costs inside the factorization.
set -uo pipefail
mkdir -p /tmp/tr && (cd /tmp/tr && xz -dc "$OLDPWD/.gpu/tr.tar.xz" | tar xf -)
R=/tmp/tr/run.sh
mkdir -p /tmp/traces
for a in cholesky lu; do
  for g in 64:128 128:64; do
    bs=${g%:*}; nb=${g#*:}
    timeout 150 $R $a --nb $nb --bs $bs --prec f64 --resident --reps 2 --backend persistent --policy static --unchecked --trace /tmp/traces/$a-$nb-$bs.json 2>&1
  done
done > $OUT/runs.txt
(cd /tmp/traces && tar czf $OUT/traces.tgz *.json)
ls -la /tmp/traces; tail -n 30 $OUT/runs.txt | cut -c1-250
python3 scripts/trace-summary.py /tmp/traces/{cholesky-128-64,cholesky-64-128,lu-128-64,lu-64-128}.json > $OUT/trace-summary.txt   # then, on the same machine
