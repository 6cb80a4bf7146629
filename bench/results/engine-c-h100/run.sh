#!/usr/bin/env bash
# The engine reading C whole before scaling it, and the critical path alone on its SM (iso), against the previous device code (big), in
# one lease: tile GEMM batches, Nsight Compute on the beta = 1 128-tile batch, the factorizations
# beside cuSOLVER; then checks of the new build.
set -uo pipefail
bash .gpu/prep.sh big iso
OLD=/tmp/big/run.sh NEW=/tmp/iso/run.sh
hdr() { echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/, /, driver /')"; echo "# command: $*"; }
who() { [ $1 = $OLD ] && echo old || echo new; }
part=${1:-a}
if [ $part = a ]; then
{ for round in 1 2; do for bc in 64:8192 128:2048 256:512; do bs=${bc%:*}; n=${bc#*:}; for beta in 0 1; do for R in $OLD $NEW; do
  echo "## round $round $(who $R)"
  timeout 60 $R tile_ops --op gemm --prec f64 --bs $bs --count $n --beta $beta --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; done
for R in $OLD $NEW; do for ck in --unchecked ""; do
  echo "## $(who $R) f32 $ck"; timeout 60 $R tile_ops --op gemm --prec f32 --bs 128 --count 4096 --beta 1 --backend persistent --policy static $ck --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
  echo "## $(who $R) f64 syrk $ck"; timeout 60 $R tile_ops --op syrk --prec f64 --bs 128 --count 2048 --backend persistent --policy static $ck --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done
for round in 1 2; do for op in potrf trsm syrk getrf; do for R in $OLD $NEW; do
  echo "## round $round $(who $R) one 128-tile $op"; timeout 60 $R tile_ops --op $op --prec f64 --bs 128 --count 1 --backend persistent --policy static --unchecked --reps 20 --shared-bytes 98304 2>&1 | grep -v "^warm-up"
done; done; done; } > $OUT/gemm-ab.txt 2>&1
G="tile_ops --op gemm --prec f64 --bs 128 --count 2048 --beta 1 --backend persistent --policy static --unchecked --reps 2 --shared-bytes 73728"
{ for R in $OLD $NEW; do echo "## $(who $R)"; hdr ncu $G; ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__registers_per_thread,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__inst_executed.sum -k regex:taskweave_region --launch-skip 1 --launch-count 1 $R $G 2>&1 | grep -E "gpu__time|dram__|lts__|launch__|smsp__"; done; } > $OUT/gemm-ncu.txt 2>&1
fi
if [ $part = b ]; then
L="linalg --dsl --vendor --algorithms cholesky,lu --precisions f64,f32 --reps 3 --variants persistent/static+plan,persistent/static+plan:checked,barrier"
{ for R in $OLD $NEW $OLD $NEW; do echo "## $(who $R)"; timeout 150 $R $L --sizes 8192 --bs 128 2>&1; timeout 100 $R $L --sizes 2048,4096 --bs 64 2>&1; done; } > $OUT/linalg-ab.txt 2>&1
fi
if [ $part = r ]; then
for round in 1 2; do
  timeout 200 $NEW linalg --dsl --algorithms cholesky,lu --precisions f64 --reps 3 --sizes 8192 --bs 128 --variants persistent/static+plan,persistent/static%2+plan,persistent/static%2!1+plan,persistent/static%2!2+plan 2>&1
  timeout 100 $NEW linalg --dsl --algorithms cholesky,lu --precisions f64 --reps 3 --sizes 2048,4096 --bs 64 --variants persistent/static+plan,persistent/static%2+plan,persistent/static%2!1+plan 2>&1
done > $OUT/linalg-chain-alone.txt 2>&1
fi
if [ $part = c ]; then
{ hdr demo; $NEW demo 2>&1 | tail -n 80; } > $OUT/demo.txt 2>&1
for b in graph streams persistent barrier; do { hdr faults --backend $b; timeout 75 $NEW faults --backend $b 2>&1; echo "exit $?"; } > $OUT/faults-$b.txt 2>&1; done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do
  T="tile_ops --op gemm --prec f64 --bs 128 --count 8 --beta 1 --backend persistent --policy static --reps 1 --shared-bytes 73728"
  C="linalg --dsl --sizes 512 --bs 128 --precisions f64 --algorithms cholesky,lu --reps 1 --variants persistent/static"
  { hdr compute-sanitizer --tool $tool $T; timeout 100 $CS --tool $tool --kernel-name kns=taskweave --error-exitcode 3 /tmp/iso/bin/$T 2>&1 | tail -n 6; echo "exit $?";
    hdr compute-sanitizer --tool $tool $C; timeout 150 $CS --tool $tool --kernel-name kns=taskweave --error-exitcode 3 /tmp/iso/bin/$C 2>&1 | tail -n 8; echo "exit $?"; } > $OUT/sanitizer-$tool.txt 2>&1
done
fi
[ $part = a ] && { cat $OUT/gemm-ncu.txt | grep -v "^# [dc]"; grep -E "^## |Gemm|Syrk|check" $OUT/gemm-ab.txt | grep -v check | paste - - | awk '{print $2,$3,$4,$5,$6, $(NF-1), $NF}' | head -40; }
[ $part = b ] && { grep -E "^## |\| (cholesky|lu)" $OUT/linalg-ab.txt | cut -c1-170 | head -90; }
[ $part = r ] && { grep -E "\| (cholesky|lu)" $OUT/linalg-chain-alone.txt | cut -c1-170; }
[ $part = c ] && { grep -c PASS $OUT/demo.txt; grep -hE "FAIL|exit|passed" $OUT/faults-*.txt; grep -hE "ERROR SUMMARY|RACECHECK SUMMARY|exit|PASS|FAIL" $OUT/sanitizer-*.txt; }
