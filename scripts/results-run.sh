#!/usr/bin/env bash
# The measurements of a register-path change on the GPU machine, one PART at a time, for staged
# builds carried in .gpu/ (scripts/unpack-stage.sh). A results folder's README names the builds
# and the calls; its run.sh, where it has one, calls this with its own defaults.
# PART a: `linalg --dsl --vendor` at 2048 and 4096, f64 and f32, planned static unchecked and
# checked (or the variants in $VARIANTS), each build in its own process with cuSOLVER beside it,
# ROUNDS rounds; b: the same at 8192 (128-tiles) in f64; r: traced Cholesky and LU f64 at 4096,
# per task kind (scripts/trace-summary.py); v: the LAST build's factorizations on every GPU backend against the
# sequential reference, tiles of 48, 64 and 128; s: its compute-sanitizer memcheck, racecheck and
# synccheck; n: Nsight Compute's warp-state samples of Cholesky f64 at 4096 and 128 (2 x 2 tiles:
# each chain task alone) for the LAST build; t: traced Cholesky and LU f64 at 128 and 256 (each
# chain task nearly alone), per task kind; c: the LAST build's static plan without and with
# measured task costs (`+plan`, `+costs`) side by side in one process, ROUNDS rounds at 2048 and
# 4096 (f64, f32) and one at 8192 (f64), then Cholesky and LU f64 at 4096 traced with `--costs`,
# and the factorizations with `--costs` against the sequential reference; g: batches of
# independent f64 tile GEMMs (`tile_ops`, 2^28 bytes of operands, 64- and 128-tiles, β = 1 and 0,
# planned static unchecked) for each build that stages tile_ops, the LAST build's 16-deep-chunk
# shape with the default scratch and with 84 KiB, and cuBLAS's strided batched DGEMM on the same
# tiles (`linalg --vendor`). Run from the repository root; outputs go to $OUT.
#   bash scripts/results-run.sh PART "BUILDS" [ROUNDS]
set -uo pipefail
part=$1
builds=$2
rounds=${3:-1 2}
last=${builds##* }
bash scripts/unpack-stage.sh $builds
if [ "$part" = a ] || [ "$part" = b ]; then
sizes=2048,4096; precs=f64,f32
[ "$part" = b ] && sizes=8192 && precs=f64 && rounds=1
for round in $rounds; do for b in $builds; do
  o=$OUT/linalg-$part-$round-$b.txt
  args="linalg --dsl --vendor --sizes $sizes --precisions $precs --reps 5 --variants ${VARIANTS:-persistent/static+plan,persistent/static+plan:checked}"
  { echo "## round $round $b"; timeout 280 /tmp/$b/run.sh $args; echo "exit $?"; } > $o 2>&1
  grep -E "^##|exit" $o | tr '\n' ' '; echo
done; done
fi
if [ "$part" = r ]; then
mkdir -p /tmp/tr
for alg in cholesky lu; do for b in $builds; do
  o=$OUT/trace-$alg-$b.txt
  { timeout 120 /tmp/$b/run.sh $alg --nb 64 --bs 64 --prec f64 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$alg-$b.json
    python3 scripts/trace-summary.py /tmp/tr/$alg-$b.json; } > $o 2>&1
  grep -E "execute|median" $o | head -8
done; done
# The tool brings back eight files a call: one archive of the traces.
(cd $OUT && tar cf part-r.tar trace-*.txt && rm -f trace-*.txt)
fi
if [ "$part" = v ]; then
{ for alg in cholesky lu; do for prec in f64 f32; do for bs in 48 64 128; do
  for be in "persistent --policy static" "persistent --policy grr" barrier grid-barrier graph streams; do
    echo "## $alg $prec bs $bs $be"
    timeout 60 /tmp/$last/run.sh $alg --nb 6 --bs $bs --prec $prec --resident --reps 1 --reference --backend $be 2>&1 | grep -E "check|error|Error|panick"
  done; done; done; done; } > $OUT/verify-$last.txt 2>&1
echo "PASS lines: $(grep -c ': PASS' $OUT/verify-$last.txt), FAIL or error lines: $(grep -ciE 'fail|error:|panick' $OUT/verify-$last.txt)"
fi
if [ "$part" = s ]; then
{ for tool in memcheck racecheck synccheck; do for case in "cholesky --bs 64 --prec f64" "lu --bs 64 --prec f64" "cholesky --bs 128 --prec f64" "lu --bs 128 --prec f64" "lu --bs 32 --prec f32"; do
  echo "## $tool $case"
  timeout 240 compute-sanitizer --tool $tool /tmp/$last/bin/$case --nb 3 --resident --reps 1 --backend persistent --policy static 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check:"
done; done; } > $OUT/sanitizers-$last.txt 2>&1
cat $OUT/sanitizers-$last.txt
fi
if [ "$part" = n ]; then
for nb in 64 2; do
  args="cholesky --nb $nb --bs 64 --prec f64 --resident --reps 1 --backend persistent --policy static --unchecked"
  prof="ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:cholesky_f64 --launch-count 1"
  o=$OUT/$last-nb$nb
  { echo "# date: $(date -u +%FT%TZ)"; echo "# command: $prof -o $o /tmp/$last/run.sh $args"
    timeout 240 $prof -o $o /tmp/$last/run.sh $args; echo "exit $?"
    ncu --import $o.ncu-rep --page details; } > $o.txt 2>&1
  ncu --import $o.ncu-rep --page source --csv --print-source sass > $o-sass.csv 2> $o-sass.err
  rm -f $o.ncu-rep; xz -T0 $o-sass.csv
done
(cd $OUT && tar cf part-n-$last.tar *-nb*.* && rm -f *-nb*.*)
fi
if [ "$part" = t ]; then
mkdir -p /tmp/tr
for alg in cholesky lu; do for nb in 2 4; do for b in $builds; do
  o=$OUT/trace-$alg-nb$nb-$b.txt
  { timeout 120 /tmp/$b/run.sh $alg --nb $nb --bs 64 --prec f64 --resident --reps 5 --backend persistent --policy static --unchecked --trace /tmp/tr/$alg-$nb-$b.json
    python3 scripts/trace-summary.py /tmp/tr/$alg-$nb-$b.json; } > $o 2>&1
done; done; done
(cd $OUT && tar cf part-t.tar trace-*-nb*.txt && grep -H -E "potrf|getrf|trsm|row_|column_" trace-*-nb*.txt | grep median; rm -f trace-*-nb*.txt)
fi
if [ "$part" = c ]; then
mkdir -p /tmp/tr
v=persistent/static+plan,persistent/static+costs,persistent/static+plan:checked,persistent/static+costs:checked
for round in $rounds; do
  o=$OUT/linalg-c-$round-$last.txt
  { echo "## round $round $last"; timeout 280 /tmp/$last/run.sh linalg --dsl --vendor --sizes 2048,4096 --precisions f64,f32 --reps 5 --variants $v; echo "exit $?"; } > $o 2>&1
  grep -E "^##|exit" $o | tr '\n' ' '; echo
done
o=$OUT/linalg-c8192-$last.txt
{ timeout 280 /tmp/$last/run.sh linalg --dsl --vendor --sizes 8192 --precisions f64 --reps 5 --variants persistent/static+plan,persistent/static+costs; echo "exit $?"; } > $o 2>&1
grep -E "exit" $o
for alg in cholesky lu; do
  o=$OUT/trace-costs-$alg-$last.txt
  { timeout 120 /tmp/$last/run.sh $alg --nb 64 --bs 64 --prec f64 --resident --reps 3 --backend persistent --policy static --unchecked --costs --trace /tmp/tr/costs-$alg-$last.json
    python3 scripts/trace-summary.py /tmp/tr/costs-$alg-$last.json; } > $o 2>&1
  grep -E "^path|execute" $o | cut -c1-200
done
{ for alg in cholesky lu; do for prec in f64 f32; do for bs in 48 64 128; do
  echo "## $alg $prec bs $bs persistent --policy static --costs"
  timeout 60 /tmp/$last/run.sh $alg --nb 6 --bs $bs --prec $prec --resident --reps 1 --reference --backend persistent --policy static --costs 2>&1 | grep -E "check|error|Error|panick"
done; done; done; } > $OUT/verify-costs-$last.txt 2>&1
echo "PASS lines: $(grep -c ': PASS' $OUT/verify-costs-$last.txt), FAIL or error lines: $(grep -ciE 'fail|error:|panick' $OUT/verify-costs-$last.txt)"
fi
if [ "$part" = g ]; then
# One batch of BS-tiles filling 2^28 bytes: batch BUILD BS ARGS...
batch() {
  local b=$1 bs=$2; shift 2
  timeout 60 /tmp/$b/run.sh tile_ops --op gemm --bs $bs --count $(( (1 << 28) / (8 * bs * bs) )) "$@" --backend persistent --policy static --unchecked --reps 10
  echo "# exit $?"
}
for b in $builds; do
  [ -x /tmp/$b/bin/tile_ops ] || continue
  o=$OUT/tile-gemm-$b.txt
  { for bs in 64 128; do for beta in 1 0; do batch $b $bs --beta $beta; done; done; } > $o 2>&1
  grep -E "TFLOP|check:" $o
done
o=$OUT/tile-gemm-kc16-$last.txt
{ for bs in 64 128; do for shared in 43008 86016; do
    batch $last $bs --beta 1 --shape kc16 --shared-bytes $shared
done; done; } > $o 2>&1
grep -E "TFLOP|check:" $o
o=$OUT/cublas-gemm.txt
{ timeout 120 /tmp/$last/run.sh linalg --vendor --sizes 1024 --precisions f64 --tiles 64,128 --reps 5; echo "exit $?"; } > $o 2>&1
grep -E "gemm batched" $o
fi
