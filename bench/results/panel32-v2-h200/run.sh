#!/usr/bin/env bash
# The 32-block POTRF, GETRF and TRSM, second version (new: a rolled block product and one forward
# line solve, its right-hand side staged 64 lines at a time, f32 and f64) against main's register
# path (old, base), interleaved, cuSOLVER in the same processes. PART p: the tile probe of base,
# the first version (p32) and this one (v3), with L2 flushed before each launch and without, and a
# deliberately broken build (v3 with its block product one column short), which must fail its
# check; l: the probe with a copy of 512 MiB running beside each launch (--load). a: one tile's ops; the factorizations at 2048 and 4096. t: traced factorizations at 4096
# (64-tiles), each task kind's times (scripts/trace-summary.py); s: the same with one worker per
# SM; o: one op on 1, 264 and 2,640 independent tiles. b1, b2: one round each of old and new
# at 8192 (128-tiles). c: the demo and the sanitizers on the new code (never run: nothing merged).
# Run from the repository root with the staged builds in .gpu/base.tar.xz and .gpu/new.tar.xz
# (scripts/unpack-stage.sh unpacks them into /tmp; the run itself called .gpu/prep.sh, the same
# script) and the probe's cubins in .gpu/probe/.
set -uo pipefail
part=${1:-a}
hdr() { echo "# date: $(date -u +%FT%TZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; echo "# command: $*"; }
if [ "$part" = p ]; then
for f in --flush ""; do
  { hdr python3 bench/proto/tile-probe/time.py $f base p32 v3; python3 bench/proto/tile-probe/time.py $f base p32 v3; } > $OUT/probe$f.txt 2>&1; echo "exit $?" >> $OUT/probe$f.txt
done
{ hdr python3 bench/proto/tile-probe/time.py broken; python3 bench/proto/tile-probe/time.py broken; } > $OUT/probe-broken.txt 2>&1; echo "exit $?" >> $OUT/probe-broken.txt
tail -n 3 $OUT/probe--flush.txt $OUT/probe.txt; grep -E "FAIL|exit|bound" $OUT/probe-broken.txt | head -5
exit
fi
if [ "$part" = l ]; then
# The probe with a 512 MiB copy running beside each launch (time.py --load), L2 flushed and not.
for f in "--flush --load" "--load"; do
  o=$OUT/probe${f// /}.txt
  { hdr python3 bench/proto/tile-probe/time.py $f base v3; python3 bench/proto/tile-probe/time.py $f base v3; } > $o 2>&1; echo "exit $?" >> $o
  tail -n 2 $o
done
exit
fi
bash scripts/unpack-stage.sh base new
OLD=/tmp/base/run.sh NEW=/tmp/new/run.sh
who() { [ $1 = $OLD ] && echo old || echo new; }
if [ "$part" = a ]; then
{ for round in 1 2; do for op in potrf trsm getrf; do for pb in f64:64 f64:128 f32:64; do prec=${pb%:*}; bs=${pb#*:}; for R in $OLD $NEW; do
  echo "## round $round $(who $R) $op $bs $prec"
  timeout 60 $R tile_ops --op $op --prec $prec --bs $bs --count 1 --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; done; } > $OUT/ops-ab.txt 2>&1
L="linalg --dsl --vendor --algorithms cholesky,lu --precisions f64,f32 --reps 5 --variants persistent/static+plan,persistent/static+plan:checked,barrier"
{ for R in $OLD $NEW $OLD $NEW; do echo "## $(who $R)"; timeout 150 $R $L --sizes 2048,4096 --bs 64 2>&1; done; } > $OUT/linalg-ab-4096.txt 2>&1
awk '/^## /{h=$3" "$4" "$5" "$6" "$7; next} /ns per tile/{print h, $(NF-5)}' $OUT/ops-ab.txt | sort -k3,3 -k4,4 -k5,5 -k2,2 -k1,1 | paste - - - -
grep -E "^## |persistent/static planned|cuSOLVER \|" $OUT/linalg-ab-4096.txt | cut -c1-120
fi
if [ "$part" = t ]; then
# Where Cholesky's time goes, old against new: the traced path and each kind's task times.
mkdir -p /tmp/tr
for spec in "cholesky f64" "cholesky f32" "lu f64"; do set -- $spec; for R in $OLD $NEW; do
  name=$1-$2-$(who $R)
  echo "## $(who $R) $1 $2"
  hdr $1 --nb 64 --bs 64 --prec $2 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$name.json
  timeout 100 $R $1 --nb 64 --bs 64 --prec $2 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$name.json 2>&1
  python3 scripts/trace-summary.py /tmp/tr/$name.json
done; done > $OUT/trace-4096.txt 2>&1
grep -E "^## |^  [a-z]+_f" $OUT/trace-4096.txt
fi
if [ "$part" = s ]; then
# The same traces with one worker per SM, so that no other block shares the SM with a chain task:
# whether the new tiles lose to the blocks beside them.
mkdir -p /tmp/tr
for spec in "cholesky f64" "lu f64"; do set -- $spec; for R in $OLD $NEW; do
  name=$1-$2-$(who $R)-1
  echo "## $(who $R) $1 $2 one per SM"
  hdr $1 --nb 64 --bs 64 --prec $2 --per-sm 1 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$name.json
  timeout 100 $R $1 --nb 64 --bs 64 --prec $2 --per-sm 1 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$name.json 2>&1
  python3 scripts/trace-summary.py /tmp/tr/$name.json
done; done > $OUT/trace-4096-one-per-sm.txt 2>&1
grep -E "^## |^path:|^  [a-z]+_f" $OUT/trace-4096-one-per-sm.txt | cut -c1-200
fi
if [ "$part" = o ]; then
# One op on 1, 264 (one per worker) and 2,640 independent tiles: alone, with every worker running
# the same op at once, and in waves.
{ for op in trsm potrf; do for count in 1 264 2640; do for R in $OLD $NEW $OLD $NEW; do
  echo "## $(who $R) $op 64 f64 count $count"
  timeout 60 $R tile_ops --op $op --prec f64 --bs 64 --count $count --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1 | grep -v "^warm-up"
done; done; done; } > $OUT/ops-count.txt 2>&1
awk '/^## /{h=$2" "$3" "$7; next} /ns per tile/{print h, $(NF-5)}' $OUT/ops-count.txt | paste - - - -
fi
if [ "$part" = b1 ] || [ "$part" = b2 ]; then
L="linalg --dsl --vendor --algorithms cholesky,lu --precisions f64,f32 --reps 5 --variants persistent/static+plan,persistent/static+plan:checked,barrier"
{ for R in $OLD $NEW; do echo "## $(who $R)"; timeout 200 $R $L --sizes 8192 --bs 128 2>&1; done; } > $OUT/linalg-ab-8192-$part.txt 2>&1
grep -E "^## |persistent/static planned|cuSOLVER \|" $OUT/linalg-ab-8192-$part.txt | cut -c1-120
fi
if [ "$part" = c ]; then
timeout 200 $NEW demo > $OUT/demo.txt 2>&1
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
for a in cholesky lu; do for bt in 64:memcheck:f64 64:racecheck:f64 128:memcheck:f64 64:racecheck:f32 128:racecheck:f64; do
  IFS=: read bs tool prec <<< "$bt"
  C="$a --nb 4 --bs $bs --prec $prec --reps 1 --backend persistent --policy static"
  echo "# command: compute-sanitizer --tool $tool $C"
  timeout 70 $CS --tool $tool --error-exitcode 3 /tmp/new/bin/$C 2>&1 | tail -n 4
  echo "exit ${PIPESTATUS[0]}"
done; done > $OUT/sanitizers.txt 2>&1
grep -c PASS $OUT/demo.txt; grep -E "FAIL" $OUT/demo.txt | cut -c1-140
grep -E "command|SUMMARY|exit" $OUT/sanitizers.txt
fi
