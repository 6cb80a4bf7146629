#!/usr/bin/env bash
# The runs of this folder, on the GPU machine, from the repository root, with the staged builds
# f, d, z and w packed in .gpu/ (README.md says what each is). Outputs go to $OUT.
#   bash bench/results/potrf-zeros-h200/run.sh check    # parts 1-3 and 5
#   bash bench/results/potrf-zeros-h200/run.sh sanitize # part 4
#   bash bench/results/potrf-zeros-h200/run.sh moved    # part 6 (build e, staged after the rest)
#   bash bench/results/potrf-zeros-h200/run.sh ptxas    # part 7 (build d5, staged after e)
#   bash bench/results/potrf-zeros-h200/run.sh big      # part 8 (builds f, w, w5, staged last)
#   bash bench/results/potrf-zeros-h200/run.sh w5       # part 9
set -uo pipefail
if [ "$1" = moved ]; then
  bash scripts/unpack-stage.sh e
elif [ "$1" = ptxas ]; then
  bash scripts/unpack-stage.sh d d5
elif [ "$1" = big ] || [ "$1" = w5 ]; then
  bash scripts/unpack-stage.sh f w w5
else
  bash scripts/unpack-stage.sh f d z w
fi
header() { echo "# date: $(date -u +%FT%TZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; echo "# command: $*"; }
C="cholesky --prec f64 --resident --reps 1 --reference"
backends=("persistent --policy static" "persistent --policy grr" barrier grid-barrier graph streams)
# Part 9 sets jit=CUDA_DISABLE_PTX_JIT=1, so that each build runs the cubin it assembled.
jit=
# verify BUILD BACKEND...: Cholesky f64 against the sequential reference, tiles of 48, 64 and 128,
# into verify-BUILD.txt.
verify() {
  local b=$1 bs be
  shift
  { header "/tmp/$b/run.sh $C --nb 6 --bs BS --backend BACKEND"
    for bs in 48 64 128; do for be in "$@"; do
      echo "## cholesky f64 bs $bs $be"
      env $jit timeout 60 /tmp/$b/run.sh $C --nb 6 --bs $bs --backend $be 2>&1 | grep -E "check|error|panick"
    done; done; } > $OUT/verify-$b.txt 2>&1
  echo "verify-$b: PASS lines $(grep -c ': PASS' $OUT/verify-$b.txt), FAIL or error lines $(grep -ciE 'fail|error:|panick' $OUT/verify-$b.txt)"
}
# rounds NAME BUILD...: linalg at 2048 and 4096, one process per build in the order given, into
# NAME-I-BUILD.txt.
rounds() {
  local name=$1 i=0 b o
  shift
  local args="linalg --dsl --vendor --sizes 2048,4096 --precisions f64 --algorithms cholesky --reps 5 --variants persistent/static+plan,persistent/static%2!1+costs,persistent/static+plan:checked"
  for b in "$@"; do
    i=$((i + 1))
    o=$OUT/$name-$i-$b.txt
    { env $jit timeout 280 /tmp/$b/run.sh $args; echo "exit $?"; } > $o 2>&1
    echo "$o: $(grep -c '^| cholesky' $o) rows, $(tail -1 $o)"
  done
}
if [ "$1" = check ]; then
  # 1. The 128-tiles' POTRF in each build.
  { header "/tmp/BUILD/run.sh $C --bs 128 --nb NB --backend persistent --policy static"
    for b in f d z w; do for nb in 1 6; do
      echo "## $b bs 128 nb $nb"
      timeout 60 /tmp/$b/run.sh $C --bs 128 --nb $nb --backend persistent --policy static 2>&1 | grep -E "check|error"
    done; done; } > $OUT/bisect.txt 2>&1
  cat $OUT/bisect.txt
  # 2. The change (w) on every GPU backend, tiles of 48, 64 and 128, and the CPU backend.
  verify w "${backends[@]}" cpu
  # 3. linalg, main (f) and the change (w), each in its own process with cuSOLVER beside it,
  # in the order f w w f.
  rounds linalg f w w f
fi
if [ "$1" = sanitize ]; then
  # 4. compute-sanitizer on d (the failing pivot read) and on w.
  { header "compute-sanitizer --tool TOOL /tmp/BUILD/bin/cholesky --bs BS --nb 2 --prec f64 --resident --reps 1 --backend persistent --policy static"
    for b in d w; do for bs in 64 128; do for tool in memcheck racecheck synccheck; do
      [ $b = d ] && [ $bs = 64 ] && continue
      echo "## $tool $b bs $bs"
      timeout 200 compute-sanitizer --tool $tool /tmp/$b/bin/cholesky --bs $bs --nb 2 --prec f64 --resident --reps 1 --backend persistent --policy static 2>&1 | grep -E "SUMMARY|check:|error"
    done; done; done; } > $OUT/sanitizers.txt 2>&1
  cat $OUT/sanitizers.txt
fi
if [ "$1" = moved ]; then
  # 6. d with the pivots' buffer moved before the exchange buffers (e), the 128-tiles and 64-tiles.
  { header "/tmp/e/run.sh $C --bs BS --nb NB --backend persistent --policy static"
    for bs in 128 64; do for nb in 1 6; do
      echo "## e bs $bs nb $nb"
      timeout 60 /tmp/e/run.sh $C --bs $bs --nb $nb --backend persistent --policy static 2>&1 | grep -E "check|error"
    done; done; } > $OUT/moved.txt 2>&1
  cat $OUT/moved.txt
fi
if [ "$1" = ptxas ]; then
  # 7. d's sources with its cubin from ptxas 13.5 (d5) beside d (ptxas 13.0), the driver's JIT
  # turned off so that each runs the cubin its build assembled.
  { header "CUDA_DISABLE_PTX_JIT=1 /tmp/BUILD/run.sh $C --bs 128 --nb NB --backend persistent --policy static"
    for b in d d5; do for nb in 1 6; do
      echo "## $b bs 128 nb $nb"
      CUDA_DISABLE_PTX_JIT=1 timeout 60 /tmp/$b/run.sh $C --bs 128 --nb $nb --backend persistent --policy static 2>&1 | grep -E "check|error"
    done; done; } > $OUT/ptxas.txt 2>&1
  cat $OUT/ptxas.txt
fi
if [ "$1" = big ]; then
  # 8. Cholesky f64 at 8192 (128-tiles, the change's by_64 path): f, w and w5, one process each.
  args="linalg --dsl --vendor --sizes 8192 --precisions f64 --algorithms cholesky --reps 5 --variants persistent/static+plan,persistent/static%2!1+costs"
  for b in f w w5; do
    o=$OUT/linalg8192-$b.txt
    { CUDA_DISABLE_PTX_JIT=1 timeout 180 /tmp/$b/run.sh $args; echo "exit $?"; } > $o 2>&1
    echo "$o: $(grep -c '^| cholesky' $o) rows, $(tail -1 $o)"
  done
fi
if [ "$1" = w5 ]; then
  # 9. The change assembled by ptxas 13.5 (w5) against 13.0 (w): verified, then linalg at 2048
  # and 4096 in the order w w5 w5 w.
  jit=CUDA_DISABLE_PTX_JIT=1
  verify w5 "persistent --policy static" barrier graph
  rounds linalg-ptxas w w5 w5 w
fi
