#!/usr/bin/env bash
# The NW tile's one-task kernel: nwA (550c453, before), nwB (6d2c1a9: the task's record in its
# list entry), nwC (8a1feb8: unchecked kernels copy arguments and array table to shared memory),
# nwD (6c2325b: no copies; checked kernels look the record up; the table pointer loaded with the
# entry), nwE (nwD with the arguments and array table prefetched into L1), and the same tile in
# CUDA C, in one lease. .gpu/NAME.tar.xz is stage-NAME from
# scripts/stage-gpu.sh (TASKWEAVE_REGIONS='nw_odd_tiles*', tile_bench), compressed.
#   STAGES="nwA nwB" PROF=nwB bash run.sh a   # run 1 (run1/)
#   STAGES="nwA nwB nwC" PROF=nwC bash run.sh a   # run 2 (run2/)
#   STAGES="nwA nwD nwE" PROF=nwE bash run.sh a   # run 3 (run3/)
#   STAGES="nwA nwD nwF" PROF=nwF bash run.sh a; bash run.sh w   # run 4 (run4/): nwF is 8b9bf78
#     (one cell per thread and diagonal in dp::anti_diagonals), staged with tile_bench and
#     workload, TASKWEAVE_REGIONS='nw_odd_tiles*,nw,smw,dtw'; part w runs the three DP workloads
#     Nsight Compute kernel times, resident event timing, per-instruction profile
#   bash run.sh v   # checks of a wider build of nwD (vD: the regions below), demo, faults on the
#                   # one-task backends, every workload unchecked on them, memcheck (v/). vD is
#                   # scripts/stage-gpu.sh stage-vD demo faults tile_bench workload with
#                   # TASKWEAVE_REGIONS='bump_chunks,bump_resident,chain,check_math,dtw,faulty,
#                   # faulty_fan,heat,heat_step,independent,int_hist,jacobi,lu,nw,nw_odd_tiles,
#                   # nw_odd_tiles_resident,output_chunks,sat,smw,step,touch_all,tri,tri_self,
#                   # wavefront,cholesky_f64,lu_f64,gemm_f64' (no line breaks)
set -uo pipefail
STAGES=${STAGES:-nwA nwB nwC}; PROF=${PROF:-nwC}
for s in nwA nwB nwC nwD nwE nwF vD; do
  [ -f .gpu/$s.tar.xz ] && { [ -x /tmp/$s/run.sh ] || { mkdir -p /tmp/$s && (cd /tmp/$s && xz -dc "$OLDPWD/.gpu/$s.tar.xz" | tar xf -); }; }
done
[ -x /tmp/nw_tile ] || nvcc -O3 -arch=sm_90 -o /tmp/nw_tile bench/cuda/nw_tile.cu
hdr() { echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/, /, driver /')"; echo "# command: $*"; }
part=${1:-a}
if [ $part = a ]; then
M=gpu__time_duration.sum,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active
{ hdr "ncu --metrics $M (CUDA C, $STAGES; nb 128 and 64; two rounds)"
for round in 1 2; do for nb in 128 64; do
  echo "## round $round nb $nb: CUDA C"; ncu --clock-control none --metrics $M -k regex:nw_odd --launch-skip 1 --launch-count 5 /tmp/nw_tile $nb 32 6 128 2>&1 | grep -E "gpu__time|registers_per"
  for s in $STAGES; do for mode in --unchecked ""; do
    echo "## round $round nb $nb: $s barrier $mode"; ncu --clock-control none --metrics $M -k regex:nw_odd --launch-skip 1 --launch-count 5 /tmp/$s/run.sh tile_bench --nb $nb --tile 32 --reps 5 --backend barrier $mode 2>&1 | grep -E "gpu__time|registers_per|check"
  done; done
done; done; } > $OUT/ncu-times.txt 2>&1
{ hdr "tile_bench --resident ($STAGES) and nw_tile, interleaved, three rounds"
for r in 1 2 3; do for nb in 128 64; do
    /tmp/nw_tile $nb 32 200 128 | sed "s/^/round $r nb $nb cuda-c: /" | grep "time per"
    for s in $STAGES; do
      /tmp/$s/run.sh tile_bench --nb $nb --tile 32 --reps 20 --backend barrier --unchecked --resident 2>&1 | grep -E "time per|check" | sed "s/^/round $r nb $nb $s resident: /"
    done
done; done; } > $OUT/resident.txt 2>&1
# Per-instruction stall samples of the new one-task kernel and of CUDA C's.
for who in cuda $PROF; do
  if [ $who = cuda ]; then C="/tmp/nw_tile 128 32 3 128"; else C="/tmp/$PROF/run.sh tile_bench --nb 128 --tile 32 --reps 3 --backend barrier --unchecked"; fi
  ncu --clock-control none --section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy -k regex:nw_odd --launch-skip 1 --launch-count 1 -f -o /tmp/prof-$who $C > /dev/null 2>&1
  { hdr "ncu -i prof-$who --page source --csv --print-source sass ($C)"; ncu -i /tmp/prof-$who.ncu-rep --page source --csv --print-source sass 2>&1; } > $OUT/source-$who.csv
  { hdr "ncu -i prof-$who --page details ($C)"; ncu -i /tmp/prof-$who.ncu-rep --page details 2>&1; } > $OUT/details-$who.txt
done
fi
if [ $part = v ]; then
{ hdr demo; timeout 300 /tmp/vD/run.sh demo 2>&1 | tail -n 80; echo "exit ${PIPESTATUS[0]}"; } > $OUT/demo.txt 2>&1
{ for b in barrier graph streams; do hdr faults --backend $b; timeout 150 /tmp/vD/run.sh faults --backend $b 2>&1; echo "exit $?"; done; } > $OUT/faults.txt 2>&1
{ for b in barrier graph streams; do for w in dt-warp heat-sim int-hist jacobi lu-d sa-table sm-w nw; do
    hdr workload $w --backend $b --unchecked; timeout 120 /tmp/vD/run.sh workload $w --backend $b --unchecked 2>&1 | tail -n 4; echo "exit ${PIPESTATUS[0]}"
  done; done; } > $OUT/workloads-unchecked.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
{ for mode in "" --unchecked; do B="tile_bench --nb 8 --tile 32 --reps 1 --backend barrier $mode"; hdr compute-sanitizer --tool memcheck $B; timeout 100 $CS --tool memcheck --kernel-name kns=taskweave --error-exitcode 3 /tmp/vD/bin/$B 2>&1 | tail -n 6; echo "exit ${PIPESTATUS[0]}"; done; } > $OUT/sanitizer-memcheck.txt 2>&1
fi
if [ $part = w ]; then
{ for w in nw sm-w dt-warp; do for b in persistent barrier graph; do for mode in "" --unchecked; do
    hdr workload $w --backend $b $mode; timeout 120 /tmp/nwF/run.sh workload $w --backend $b $mode 2>&1 | tail -n 4; echo "exit ${PIPESTATUS[0]}"
  done; done; done; } > $OUT/dp-workloads.txt 2>&1
fi
[ $part = w ] && { grep -c "PASS" $OUT/dp-workloads.txt; grep -cE "^exit 0" $OUT/dp-workloads.txt; grep -E "FAIL|^exit [^0]" $OUT/dp-workloads.txt | head; }
[ $part = a ] && { grep -E "^##|gpu__time" $OUT/ncu-times.txt | awk '/^##/{printf "\n%s", $0; n=0} /gpu__time/{n++; printf " %s", $NF}'; echo; grep "round 3" $OUT/resident.txt; wc -c $OUT/*; }
[ $part = v ] && { grep -E "PASS|FAIL" $OUT/demo.txt | grep -c PASS; grep -E "FAIL|exit|passed" $OUT/demo.txt $OUT/faults.txt; grep -cE "^exit 0" $OUT/workloads-unchecked.txt; grep -E "^exit [^0]|FAIL|rror" $OUT/workloads-unchecked.txt | head; grep -E "ERROR SUMMARY|exit" $OUT/sanitizer-memcheck.txt; }
