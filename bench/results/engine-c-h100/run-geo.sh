#!/usr/bin/env bash
# Block tiles as square as the warp count allows (geo) against the build before it (iso): the
# wide shape on eight warps makes one 128 x 128 block tile (iso: 256 x 64).
set -uo pipefail
bash .gpu/prep.sh iso geo
OLD=/tmp/iso/run.sh NEW=/tmp/geo/run.sh
who() { [ $1 = $OLD ] && echo old || echo new; }
{ for round in 1 2; do for bc in 128:2048 256:512; do bs=${bc%:*}; n=${bc#*:}; for beta in 0 1; do for st in default:128 wide:128 default:256 wide:256; do for R in $OLD $NEW; do
  s=${st%:*}; t=${st#*:}
  echo "## round $round $(who $R) $s $t"
  timeout 60 $R tile_ops --op gemm --prec f64 --shape $s --threads $t --bs $bs --count $n --beta $beta --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; done; done; } > $OUT/geo-ab.txt 2>&1
G="tile_ops --op gemm --prec f64 --bs 128 --count 2048 --beta 1 --backend persistent --policy static --unchecked --reps 2 --shared-bytes 73728 --shape wide --threads 256"
{ for R in $OLD $NEW; do echo "## $(who $R)"; echo "# command: ncu $G"; ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__registers_per_thread,launch__occupancy_limit_registers -k regex:taskweave_region --launch-skip 1 --launch-count 1 $R $G 2>&1 | grep -E "gpu__time|dram__|launch__"; done; } > $OUT/geo-ncu.txt 2>&1
$NEW linalg --dsl --sizes 2048 --bs 64 --precisions f64,f32 --reps 1 --variants persistent/static,persistent/static@256 > $OUT/geo-linalg-check.txt 2>&1
grep -E "^## |TFLOP|check" $OUT/geo-ab.txt | grep -v "^check: PASS" | paste - - | awk '{print $2,$3,$4,$5,$6,$9,$(NF-1)}'; cat $OUT/geo-ncu.txt; grep -E "PASS|FAIL" $OUT/geo-linalg-check.txt | cut -c1-120; grep -c "check: PASS" $OUT/geo-ab.txt; grep -c "FAIL" $OUT/geo-ab.txt
