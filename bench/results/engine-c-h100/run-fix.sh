#!/usr/bin/env bash
# C's read chosen once per warp tile (fix) against reading it whole with the choice per fragment
# (iso), interleaved: the wide and default shapes, the factorizations; then checks of fix.
set -uo pipefail
bash .gpu/prep.sh iso fix
OLD=/tmp/iso/run.sh NEW=/tmp/fix/run.sh
who() { [ $1 = $OLD ] && echo old || echo new; }
{ for round in 1 2; do for bc in 64:8192 128:2048 256:512; do bs=${bc%:*}; n=${bc#*:}; for beta in 0 1; do for s in wide default; do for R in $OLD $NEW; do
  echo "## round $round $(who $R) $s beta $beta"
  timeout 60 $R tile_ops --op gemm --prec f64 --shape $s --bs $bs --count $n --beta $beta --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; done; done; } > $OUT/fix-gemm-ab.txt 2>&1
L="linalg --dsl --algorithms cholesky,lu --precisions f64,f32 --reps 3 --variants persistent/static+plan,persistent/static+plan:checked"
{ for R in $OLD $NEW $OLD $NEW; do echo "## $(who $R)"; timeout 60 $R $L --sizes 8192 --bs 128 2>&1; done; } > $OUT/fix-linalg-ab.txt 2>&1
$NEW demo > $OUT/fix-demo.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
T="tile_ops --op gemm --prec f64 --bs 128 --count 8 --beta 1 --backend persistent --policy static --reps 1 --shared-bytes 73728"
{ for s in default wide; do echo "# command: compute-sanitizer --tool memcheck $T --shape $s"; timeout 60 $CS --tool memcheck --kernel-name kns=taskweave --error-exitcode 3 /tmp/fix/bin/$T --shape $s 2>&1 | tail -n 4; echo "exit $?"; done; } > $OUT/fix-memcheck.txt 2>&1
awk '/^## /{h=$3" "$4" "$5" "$6" "$7; next} /TFLOP/{match($0,/bs=[0-9]+/); print h, substr($0,RSTART,RLENGTH), $NF}' $OUT/fix-gemm-ab.txt | sort -k3,3 -k4,4 -k5,5 -k6,6 -k2,2 -k1,1
grep -E "^## |persistent" $OUT/fix-linalg-ab.txt | cut -c1-110; grep -c PASS $OUT/fix-demo.txt; grep -E "ERROR SUMMARY|exit" $OUT/fix-memcheck.txt
