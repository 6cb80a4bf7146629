#!/usr/bin/env bash
# Chunks of a sixteenth of each copy against the fixed 16 MiB chunks (TASKWEAVE_COPY_CHUNK=16777216),
# interleaved, three rounds: transfer_bench, then the workloads on host arrays.
set -u
cd "$(dirname "$0")"
rm -rf c; mkdir -p c; tar xJf chunks.tar.xz -C c
{
echo "# A/B in one lease: 'sixteenth' = the commit's default, 'fixed 16 MiB' = TASKWEAVE_COPY_CHUNK=16777216 (the previous behaviour); binary: $(cat commit-chunks)"
for round in 1 2 3; do
  echo "## round $round, sixteenth"; timeout 100 c/run.sh transfer_bench --mib 16,64,256 --reps 5 --no-host-probe
  echo "## round $round, fixed 16 MiB"; TASKWEAVE_COPY_CHUNK=16777216 timeout 100 c/run.sh transfer_bench --mib 16,64,256 --reps 5 --no-host-probe
done
} > $OUT/transfer.txt 2>&1
{
echo "# A/B in one lease: 'sixteenth' = the commit's default, 'fixed 16 MiB' = TASKWEAVE_COPY_CHUNK=16777216; binary: $(cat commit-chunks)"
for round in 1 2 3; do
  for w in dt-warp int-hist sa-table heat-sim; do
    echo "## round $round, $w, sixteenth"; timeout 60 c/run.sh workload $w --reps 5 --backend persistent --policy static --unchecked 2>&1 | tail -4
    echo "## round $round, $w, fixed 16 MiB"; TASKWEAVE_COPY_CHUNK=16777216 timeout 60 c/run.sh workload $w --reps 5 --backend persistent --policy static --unchecked 2>&1 | tail -4
  done
done
} > $OUT/workloads.txt 2>&1
