#!/usr/bin/env bash
# Unpacks the staged binaries and runs the host-time batch; outputs land in $OUT.
set -uo pipefail
mkdir -p /tmp/tw && cd /tmp/tw && xz -dc "$OLDPWD/.gpu/pb.tar.xz" | tar xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/smi.txt
./run.sh plan_bench --tasks 1000,10000,100000 --reps 100 > $OUT/plan-bench.txt 2>&1
./run.sh plan_bench --tasks 1000,10000,100000 --reps 100 > $OUT/plan-bench-2.txt 2>&1
./run.sh heat_steps --n 2880 --steps 100 > $OUT/heat-steps.txt 2>&1
timeout 300 ./run.sh inspection --reps 50 > $OUT/inspection.txt 2>&1; echo "exit $?" >> $OUT/inspection.txt
tail -n 12 $OUT/plan-bench.txt $OUT/plan-bench-2.txt; tail -5 $OUT/heat-steps.txt; cat $OUT/inspection.txt
