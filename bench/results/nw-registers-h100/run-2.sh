#!/usr/bin/env bash
# This commit's device code (nw3) against the previous commit's (nw: tile_bench, big: tile_ops and
# linalg), in one lease: the NW tile (40 registers on its unchecked one-task kernel, the task found
# before the fault binding), the GEMM engine's serpentine block-tile order, then the checks.
set -uo pipefail
bash .gpu/prep.sh nw big nw3
OLD=/tmp/big/run.sh NEW=/tmp/nw3/run.sh
hdr() { echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/, /, driver /')"; echo "# command: $*"; }
part=${1:-a}
if [ $part = a ]; then
# 1. NW kernel durations under Nsight Compute.
M=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active
{
for nb in 128 64; do
  echo "## nb $nb: CUDA C"; ncu --clock-control none --metrics $M -k regex:nw_odd --launch-skip 1 --launch-count 5 /tmp/nw_tile $nb 32 6 128 2>&1 | grep -E "nw_odd|gpu__time|launch__|warps_active"
  for s in nw nw3; do for mode in --unchecked ""; do
    echo "## nb $nb: $s barrier $mode"; ncu --clock-control none --metrics $M -k regex:nw_odd --launch-skip 1 --launch-count 5 /tmp/$s/run.sh tile_bench --nb $nb --tile 32 --reps 5 --backend barrier $mode 2>&1 | grep -E "nw_odd_tiles_|gpu__time|launch__|warps_active|check"
  done; done
done
} > $OUT/nw-ncu.txt 2>&1
# 2. tile_bench event timings, old and new interleaved, and the CUDA C tile.
TILE_AB_OUT=/tmp/ab scripts/tile-ab.sh /tmp/nw /tmp/nw3 5 > $OUT/nw-ab.txt 2>&1
# 3. Resident arrays (new only: the region is new), beside the CUDA C tile, interleaved.
{ for r in 1 2 3; do for nb in 128 64; do
    /tmp/nw_tile $nb 32 200 128 | sed "s/^/round $r nb $nb cuda-c: /" | grep "time per"
    for b in barrier persistent; do
      $NEW tile_bench --nb $nb --tile 32 --reps 20 --backend $b --unchecked --resident 2>&1 | grep -E "time per|check" | sed "s/^/round $r nb $nb $b resident: /"
    done
done; done; } > $OUT/nw-resident.txt 2>&1
# 4. GEMM on independent tiles, old and new order.
{ for round in 1 2; do for bc in 64:8192 128:2048 256:512; do bs=${bc%:*}; n=${bc#*:}; for beta in 0 1; do
    for R in $OLD $NEW; do echo "## $( [ $R = $OLD ] && echo old || echo new )"
      timeout 60 $R tile_ops --op gemm --prec f64 --bs $bs --count $n --beta $beta --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
    done; done; done; done; } > $OUT/gemm-ab.txt 2>&1
G="tile_ops --op gemm --prec f64 --bs 128 --count 2048 --beta 1 --backend persistent --policy static --unchecked --reps 2 --shared-bytes 73728"
{ for R in $OLD $NEW; do echo "## $( [ $R = $OLD ] && echo old || echo new )"; ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct -k regex:taskweave_region --launch-skip 1 --launch-count 1 $R $G 2>&1 | grep -E "command|gpu__time|dram__|lts__"; done; } > $OUT/gemm-ncu.txt 2>&1
fi
if [ $part = b ]; then
# 5. The factorizations, old and new.
L="linalg --dsl --algorithms cholesky,lu --precisions f64,f32 --reps 3 --variants persistent/static+plan,persistent/grr+plan,barrier"
{ for R in $OLD $NEW $OLD $NEW; do echo "## $( [ $R = $OLD ] && echo old || echo new )"; timeout 200 $R $L --sizes 8192 --bs 128 2>&1; timeout 100 $R $L --sizes 2048,4096 --bs 64 2>&1; done; } > $OUT/linalg-ab.txt 2>&1
# 6. Checks of the new device code.
{ hdr demo; $NEW demo 2>&1 | tail -n 80; } > $OUT/demo.txt 2>&1
{ for b in barrier graph streams persistent; do hdr faults --backend $b; timeout 120 $NEW faults --backend $b 2>&1; echo "exit $?"; done; } > $OUT/faults.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck synccheck; do
  T="tile_ops --op gemm --prec f64 --bs 128 --count 8 --beta 1 --backend persistent --policy static --unchecked --reps 1 --shared-bytes 73728"
  B="tile_bench --nb 8 --tile 32 --reps 1 --backend barrier"
  { hdr compute-sanitizer --tool $tool $T; timeout 100 $CS --tool $tool --kernel-name kns=taskweave --error-exitcode 3 /tmp/nw3/bin/$T 2>&1 | tail -n 6; echo "exit $?";
    hdr compute-sanitizer --tool $tool $B; timeout 100 $CS --tool $tool --kernel-name kns=taskweave --error-exitcode 3 /tmp/nw3/bin/$B 2>&1 | tail -n 6; echo "exit $?"; } > $OUT/sanitizer-$tool.txt 2>&1
done
fi
[ $part = a ] && { tail -n 8 $OUT/nw-ab.txt; grep -E "round 3" $OUT/nw-resident.txt; grep -E "^##|gpu__time" $OUT/nw-ncu.txt | awk '/^##/{printf "\n%s", $0; n=0} /gpu__time/{n++; printf " %s", $NF}'; echo; cat $OUT/gemm-ncu.txt | grep -v command; grep -E "^## |Gemm" $OUT/gemm-ab.txt | paste - - | awk '{print $2, $5, $6, $9, $10, $NF, $(NF-1)}' | head -24; }
[ $part = b ] && { grep -E "^## |\| (cholesky|lu)" $OUT/linalg-ab.txt | cut -c1-150 | head -60; grep -c PASS $OUT/demo.txt; grep -E "FAIL|exit" $OUT/faults.txt; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|exit" $OUT/sanitizer-*.txt; }
