#!/usr/bin/env bash
# Unpacks the staged binaries and runs the transfer and host-time batch; outputs land in $OUT.
set -uo pipefail
mkdir -p /tmp/tw && cd /tmp/tw && xz -dc "$OLDPWD/.gpu/pb.tar.xz" | tar xf -
./run.sh transfer_bench --mib 16,64,256,1024 --reps 5 > $OUT/transfer-bench.txt 2>&1
./run.sh transfer_bench --mib 16,64,256,1024 --reps 5 --no-host-probe > $OUT/transfer-bench-2.txt 2>&1
{ which perf gdb ltrace strace; } > $OUT/tools.txt 2>&1
if command -v perf >/dev/null; then
  perf record -g -o /tmp/perf.data ./bin/plan_bench --tasks 10000 --reps 2000 > $OUT/perf-run.txt 2>&1
  perf report -i /tmp/perf.data --no-children --percent-limit 0.5 --stdio -g none > $OUT/perf-report.txt 2>&1
  perf report -i /tmp/perf.data --children --percent-limit 1 --stdio -g none --sort dso,sym > $OUT/perf-children.txt 2>&1
fi
cat $OUT/transfer-bench.txt $OUT/transfer-bench-2.txt $OUT/tools.txt; head -60 $OUT/perf-report.txt 2>/dev/null
