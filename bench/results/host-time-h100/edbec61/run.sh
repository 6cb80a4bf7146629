#!/usr/bin/env bash
# After the transfers' restructuring: transfer_bench (Vec and Pinned arrays), every workload on the
# persistent and barrier backends, and the fault checks on the persistent backend; outputs in $OUT.
set -uo pipefail
mkdir -p /tmp/tw && (cd /tmp/tw && xz -dc "$OLDPWD/.gpu/pb.tar.xz" | tar xf -)
S=/tmp/tw
timeout 120 $S/run.sh transfer_bench --mib 16,64,256,1024 --reps 5 --no-host-probe > $OUT/transfer-bench.txt 2>&1; echo "exit $?" >> $OUT/transfer-bench.txt
for b in persistent barrier; do
  timeout 120 $S/run.sh sweep --backends $b --policies grr,local,static,affinity > $OUT/sweep-$b.txt 2>&1; echo "exit $?" >> $OUT/sweep-$b.txt
done
timeout 200 $S/run.sh faults --backend persistent > $OUT/faults-persistent.txt 2>&1; echo "exit $?" >> $OUT/faults-persistent.txt
cat $OUT/transfer-bench.txt; tail -3 $OUT/sweep-*.txt $OUT/faults-persistent.txt
