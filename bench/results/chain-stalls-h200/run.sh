#!/usr/bin/env bash
# Where the factorization's chain tasks wait: Nsight Compute's warp-state samples (SourceCounters)
# per SASS instruction of the Cholesky f64 kernel, for main (base) and the panel32 v2 patch (v2,
# bench/results/panel32-v2-h200/panel32-v2.patch), at 4096 (64 x 64 tiles of 64: the whole
# factorization) and at 256 (4 x 4 tiles: 20 tasks, each chain task nearly alone).
# scripts/stall-summary.py then sums the samples per device function and stall reason, here, with
# the ELF listing of the cubin each build embeds. PART t: the execute and wall times of both, in
# one process each, interleaved, without the profiler. Both builds keep only the factorizations'
# regions (TASKWEAVE_REGIONS='cholesky_*,lu_*').
#
# Then the fix (cp: main with the tile copies batched, Team::copy_cells; its build keeps the four
# resident regions, TASKWEAVE_REGIONS='cholesky_f64_resident,cholesky_f32_resident,
# lu_f64_resident,lu_f32_resident') against base: PART n with builds "cp" profiles it as above;
# a: `linalg --dsl --vendor` at 2048 and 4096, f64 and f32, both factorizations, planned static
# unchecked and checked, two rounds of base then cp, cuSOLVER in each process; b: the same at 8192
# (128-tiles) in f64, one round; r: traced Cholesky and LU f64 at 4096, per task kind
# (scripts/trace-summary.py); v: the fix's factorizations on every GPU backend, checked against
# the sequential reference (--reference), with tiles of 48 (the blocked paths, whose copies changed
# too), 64 and 128, then under compute-sanitizer (memcheck, racecheck, synccheck). Run from the repository root with .gpu/base.tar.xz, .gpu/v2.tar.xz
# and .gpu/cp.tar.xz carried (scripts/unpack-stage.sh).
set -uo pipefail
part=${1:-n}
builds=${2:-base v2}
hdr() { echo "# date: $(date -u +%FT%TZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; echo "# command: $*"; }
bash scripts/unpack-stage.sh base v2 cp
[ -f .gpu/xp.tar.xz ] && bash scripts/unpack-stage.sh xp
if [ "$part" = n ]; then
ncu --version | tail -1
for nb in 64 4; do for b in $builds; do
  args="cholesky --nb $nb --bs 64 --prec f64 --resident --reps 1 --backend persistent --policy static --unchecked"
  prof="ncu --clock-control none --section SourceCounters --section WarpStateStats -k regex:cholesky_f64 --launch-count 1"
  o=$OUT/$b-nb$nb
  { hdr $prof -o $o /tmp/$b/run.sh $args
    timeout 240 $prof -o $o /tmp/$b/run.sh $args; echo "exit $?"
    ncu --import $o.ncu-rep --page details; } > $o.txt 2>&1
  ncu --import $o.ncu-rep --page source --csv --print-source sass > $o-sass.csv 2> $o-sass.err
  rm -f $o.ncu-rep; xz -T0 $o-sass.csv
  grep -E "exit|execute" $o.txt | tail -n 2
done; done
# The tool brings back eight files a call: one archive of them all.
(cd $OUT && tar cf part-n-${builds// /-}.tar *-nb*.* && rm -f *-nb*.*)
fi
if [ "$part" = t ]; then
{ for round in 1 2 3; do for b in base v2; do
  echo "## round $round $b"
  timeout 120 /tmp/$b/run.sh cholesky --nb 64 --bs 64 --prec f64 --resident --reps 5 --backend persistent --policy static --unchecked 2>&1 | grep -v "^warm-up"
done; done; } > $OUT/times-4096.txt 2>&1
grep -E "^##|execute" $OUT/times-4096.txt
fi
if [ "$part" = a ] || [ "$part" = b ]; then
sizes=2048,4096; precs=f64,f32; rounds="1 2"
[ "$part" = b ] && sizes=8192 && precs=f64 && rounds=1
for round in $rounds; do for b in base cp; do
  o=$OUT/linalg-$part-$round-$b.txt
  args="linalg --dsl --vendor --sizes $sizes --precisions $precs --reps 5 --variants persistent/static+plan,persistent/static+plan:checked"
  { echo "## round $round $b"; timeout 280 /tmp/$b/run.sh $args; echo "exit $?"; } > $o 2>&1
  grep -E "^##|exit" $o | tr '\n' ' '; echo
done; done
fi
if [ "$part" = r ]; then
mkdir -p /tmp/tr
for alg in cholesky lu; do for b in base cp; do
  o=$OUT/trace-$alg-$b.txt
  { timeout 120 /tmp/$b/run.sh $alg --nb 64 --bs 64 --prec f64 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$alg-$b.json
    python3 scripts/trace-summary.py /tmp/tr/$alg-$b.json; } > $o 2>&1
  grep -E "execute|median" $o | head -8
done; done
fi
if [ "$part" = v ]; then
{ for alg in cholesky lu; do for prec in f64 f32; do for bs in 48 64 128; do
  for be in "persistent --policy static" "persistent --policy grr" barrier grid-barrier graph streams; do
    echo "## $alg $prec bs $bs $be"
    timeout 60 /tmp/cp/run.sh $alg --nb 6 --bs $bs --prec $prec --resident --reps 1 --reference --backend $be 2>&1 | grep -E "check|error|Error|panick"
  done; done; done; done; } > $OUT/verify.txt 2>&1
echo "PASS lines: $(grep -c ': PASS' $OUT/verify.txt), FAIL or error lines: $(grep -ciE 'fail|error:|panick' $OUT/verify.txt)"
{ for tool in memcheck racecheck synccheck; do for case in "cholesky --bs 64" "lu --bs 64" "cholesky --bs 48" "lu --bs 128"; do
  echo "## $tool $case"
  timeout 240 compute-sanitizer --tool $tool /tmp/cp/bin/$case --nb 3 --prec f64 --resident --reps 1 --backend persistent --policy static 2>&1 | grep -E "ERROR SUMMARY|RACECHECK SUMMARY|check:"
done; done; } > $OUT/sanitizers.txt 2>&1
cat $OUT/sanitizers.txt
fi
# PART x: cp against xp (cp with the first round of the TRSM's right-hand side loaded before the
# triangle is staged; regions cholesky_f64_resident,lu_f64_resident): linalg f64 at 2048 and 4096
# two rounds, 8192 one, then traces at 4096 and the f64 verification on every backend.
if [ "$part" = x ]; then
for round in 1 2; do for b in cp xp; do
  o=$OUT/linalg-x-$round-$b.txt
  { echo "## round $round $b"; timeout 200 /tmp/$b/run.sh linalg --dsl --vendor --sizes 2048,4096 --precisions f64 --reps 5 --variants persistent/static+plan; echo "exit $?"; } > $o 2>&1
  grep -E "^##|exit" $o | tr '\n' ' '; echo
done; done
for b in cp xp; do
  o=$OUT/linalg-x8-$b.txt
  { echo "## $b"; timeout 200 /tmp/$b/run.sh linalg --dsl --vendor --sizes 8192 --precisions f64 --reps 5 --variants persistent/static+plan; echo "exit $?"; } > $o 2>&1
done
mkdir -p /tmp/tr
for alg in cholesky lu; do for b in cp xp; do
  { timeout 120 /tmp/$b/run.sh $alg --nb 64 --bs 64 --prec f64 --resident --reps 3 --backend persistent --policy static --unchecked --trace /tmp/tr/$alg-$b.json
    python3 scripts/trace-summary.py /tmp/tr/$alg-$b.json; } 2>&1 | grep -E "^#|execute|median" | sed "s/^/$alg $b: /"
done; done > $OUT/trace-x.txt
{ for alg in cholesky lu; do for bs in 48 64 128; do
  for be in "persistent --policy static" "persistent --policy grr" barrier grid-barrier graph streams; do
    echo "## $alg f64 bs $bs $be"
    timeout 60 /tmp/xp/run.sh $alg --nb 6 --bs $bs --prec f64 --resident --reps 1 --reference --backend $be 2>&1 | grep -E "check|error|Error|panick"
  done; done; done
  for tool in memcheck racecheck; do echo "## $tool cholesky 64"; timeout 200 compute-sanitizer --tool $tool /tmp/xp/bin/cholesky --nb 3 --bs 64 --prec f64 --resident --reps 1 --backend persistent --policy static 2>&1 | grep -E "SUMMARY|check:"; done; } > $OUT/verify-x.txt 2>&1
echo "PASS lines: $(grep -c ': PASS' $OUT/verify-x.txt), FAIL or error lines: $(grep -ciE 'fail|error:|panick' $OUT/verify-x.txt)"; grep SUMMARY $OUT/verify-x.txt
fi
