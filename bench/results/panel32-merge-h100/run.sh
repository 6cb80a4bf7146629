#!/usr/bin/env bash
# The 32-block POTRF, GETRF and (f64) TRSM (new: main with panel32-shared.patch, its trace marks
# dropped, its TRSM for f64 alone) against main's register path (old, base), interleaved. PART a:
# the tile probe of base, new and ungated (the 32-block TRSM in f32 too), and a deliberately broken
# build, which must fail its check; one tile's ops; the factorizations at 2048 and 4096 beside
# cuSOLVER. b: the same at 8192. c: the demo and the sanitizers on the new code. Run from the
# repository root with the staged builds in .gpu/base.tar.xz and .gpu/new.tar.xz and the probe's
# cubins in .gpu/probe/.
set -uo pipefail
part=${1:-a}
bash .gpu/prep.sh base new
OLD=/tmp/base/run.sh NEW=/tmp/new/run.sh
who() { [ $1 = $OLD ] && echo old || echo new; }
if [ "$part" = a ]; then
{ echo "# date: $(date -u +%FT%TZ)"; echo "# command: python3 bench/proto/tile-probe/time.py base ungated new"; python3 bench/proto/tile-probe/time.py base ungated new; } > $OUT/probe.txt 2>&1; echo "exit $?" >> $OUT/probe.txt
{ echo "# date: $(date -u +%FT%TZ)"; echo "# command: python3 bench/proto/tile-probe/time.py broken"; python3 bench/proto/tile-probe/time.py broken; } > $OUT/probe-broken.txt 2>&1; echo "exit $?" >> $OUT/probe-broken.txt
grep -E "threads (128|256) round 2|exit|FAILED|within" $OUT/probe.txt | cut -c1-110; tail -n 8 $OUT/probe-broken.txt
{ for round in 1 2; do for op in potrf trsm getrf; do for pb in f64:64 f64:128 f32:64; do prec=${pb%:*}; bs=${pb#*:}; for R in $OLD $NEW; do
  echo "## round $round $(who $R) $op $bs $prec"
  timeout 60 $R tile_ops --op $op --prec $prec --bs $bs --count 1 --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; done; } > $OUT/ops-ab.txt 2>&1
L="linalg --dsl --vendor --algorithms cholesky,lu --precisions f64,f32 --reps 5 --variants persistent/static+plan,persistent/static+plan:checked,barrier"
{ for R in $OLD $NEW $OLD $NEW; do echo "## $(who $R)"; timeout 150 $R $L --sizes 2048,4096 --bs 64 2>&1; done; } > $OUT/linalg-ab-4096.txt 2>&1
awk '/^## /{h=$3" "$4" "$5" "$6" "$7; next} /ns per tile/{print h, $(NF-5)}' $OUT/ops-ab.txt | sort -k3,3 -k4,4 -k5,5 -k2,2 -k1,1 | paste - - - -
grep -E "^## |persistent/static planned|cuSOLVER \|" $OUT/linalg-ab-4096.txt | cut -c1-120
fi
if [ "$part" = b ]; then
L="linalg --dsl --vendor --algorithms cholesky,lu --precisions f64,f32 --reps 5 --variants persistent/static+plan,persistent/static+plan:checked,barrier"
{ for R in $OLD $NEW $OLD $NEW; do echo "## $(who $R)"; timeout 150 $R $L --sizes 8192 --bs 128 2>&1; done; } > $OUT/linalg-ab-8192.txt 2>&1
grep -E "^## |persistent/static planned|cuSOLVER \|" $OUT/linalg-ab-8192.txt | cut -c1-120
fi
if [ "$part" = c ]; then
timeout 200 $NEW demo > $OUT/demo.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for a in cholesky lu; do for bt in 64:memcheck:f64 64:racecheck:f64 128:memcheck:f64 64:racecheck:f32; do
  IFS=: read bs tool prec <<< "$bt"
  C="$a --nb 4 --bs $bs --prec $prec --reps 1 --backend persistent --policy static"
  echo "# command: compute-sanitizer --tool $tool $C"
  timeout 70 $CS --tool $tool --error-exitcode 3 /tmp/new/bin/$C 2>&1 | tail -n 4
  echo "exit ${PIPESTATUS[0]}"
done; done > $OUT/sanitizers.txt 2>&1
grep -c PASS $OUT/demo.txt; grep -E "FAIL" $OUT/demo.txt | cut -c1-140
grep -E "command|SUMMARY|exit" $OUT/sanitizers.txt
fi
