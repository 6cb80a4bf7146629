#!/usr/bin/env bash
# The NW tile, 40 registers on its one-task-per-block kernel (nw2) against the 48 ptxas chose (nw):
# kernel durations under Nsight Compute beside the CUDA C tile, then tile_bench's event timings in
# interleaved rounds (scripts/tile-ab.sh).
set -uo pipefail
bash .gpu/prep.sh nw nw2
M=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active
{
for nb in 128 64; do
  echo "## nb $nb: CUDA C"; ncu --clock-control none --metrics $M -k regex:nw_odd --launch-skip 1 --launch-count 5 /tmp/nw_tile $nb 32 6 128 2>&1 | grep -E "nw_odd|gpu__time|launch__|warps_active"
  for s in nw nw2; do
    echo "## nb $nb: $s barrier unchecked"; ncu --clock-control none --metrics $M -k regex:nw_odd --launch-skip 1 --launch-count 5 /tmp/$s/run.sh tile_bench --nb $nb --tile 32 --reps 5 --backend barrier --unchecked 2>&1 | grep -E "nw_odd_tiles_|gpu__time|launch__|warps_active|check"
  done
done
} > $OUT/ncu.txt 2>&1
TILE_AB_OUT=/tmp/ab scripts/tile-ab.sh /tmp/nw /tmp/nw2 5 > $OUT/tile-ab.txt 2>&1
TILE_AB_OUT=/tmp/ab1024 TILE_AB_SIZES="--nb 64 --tile 32 --reps 20" TILE_AB_CASES="barrier-unchecked" scripts/tile-ab.sh /tmp/nw /tmp/nw2 3 > $OUT/tile-ab-1024.txt 2>&1
tail -8 $OUT/tile-ab.txt; tail -5 $OUT/tile-ab-1024.txt; grep -E "^##|gpu__time" $OUT/ncu.txt | awk '/^##/{print; n=0} /gpu__time/{n++; if(n<=5) printf "  %s\n", $NF}' | paste -sd' ' | sed 's/##/\n##/g'
