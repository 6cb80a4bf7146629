#!/usr/bin/env bash
# The per-call overhead and the link on this stop's code: plan_bench (cached region.run and
# plan.run against inspecting every call) and transfer_bench with the host probes.
set -u
cd "$(dirname "$0")"
rm -rf p; mkdir -p p; tar xJf pb.tar.xz -C p
echo "# commit: $(cat commit-pb)" > $OUT/plan-bench.txt
timeout 200 p/run.sh plan_bench --tasks 1000,10000,100000 --reps 100 >> $OUT/plan-bench.txt 2>&1; echo "exit $?" >> $OUT/plan-bench.txt
echo "# commit: $(cat commit-pb)" > $OUT/transfer.txt
timeout 200 p/run.sh transfer_bench --mib 16,64,256,1024 --reps 5 >> $OUT/transfer.txt 2>&1; echo "exit $?" >> $OUT/transfer.txt
