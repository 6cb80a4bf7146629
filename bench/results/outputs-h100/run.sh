#!/usr/bin/env bash
# #[output] arrays and the 16-thread ring: self-check, A/B against the base binary on the
# workloads with outputs, the workloads table, every example on every backend, the fault checks.
set -u
cd "$(dirname "$0")"
part=${1:-a}
if [ ! -d n/bin ]; then rm -rf n b; mkdir -p n b; tar xJf new.tar.xz -C n; tar xJf base.tar.xz -C b; fi
echo "# new: $(cat commit-new); base: $(cat commit)"
if [ "$part" = a ]; then
timeout 150 n/run.sh selfcheck > $OUT/selfcheck.txt 2>&1; echo "exit $?" >> $OUT/selfcheck.txt
{
echo "# A/B: base = $(cat commit) (ring of 8 threads, outputs copied up), new = $(cat commit-new); new-8 = new with TASKWEAVE_COPY_THREADS=8"
for round in 1 2; do
  for w in dt-warp nw sm-w int-hist sa-table; do
    echo "## round $round, $w, base"; timeout 60 b/run.sh workload $w --reps 5 --backend persistent --policy static --unchecked 2>&1 | tail -3
    echo "## round $round, $w, new-8"; TASKWEAVE_COPY_THREADS=8 timeout 60 n/run.sh workload $w --reps 5 --backend persistent --policy static --unchecked 2>&1 | tail -3
    echo "## round $round, $w, new"; timeout 60 n/run.sh workload $w --reps 5 --backend persistent --policy static --unchecked 2>&1 | tail -3
  done
done
} > $OUT/ab.txt 2>&1
timeout 100 n/run.sh transfer_bench --mib 16,64,256 --reps 5 --no-host-probe > $OUT/transfer.txt 2>&1; echo "exit $?" >> $OUT/transfer.txt
fi
if [ "$part" = b ]; then
timeout 240 n/run.sh bench --reps 5 --policies grr,static --out /tmp/bench > $OUT/bench.txt 2>&1; echo "exit $?" >> $OUT/bench.txt
cp /tmp/bench/table.md $OUT/bench-table.md 2>/dev/null
timeout 240 n/run.sh demo > $OUT/demo.txt 2>&1; echo "exit $?" >> $OUT/demo.txt
timeout 200 n/run.sh faults --backend persistent --expect 19 > $OUT/faults.txt 2>&1; echo "exit $?" >> $OUT/faults.txt
fi
