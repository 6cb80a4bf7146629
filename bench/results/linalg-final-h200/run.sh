#!/usr/bin/env bash
# The runs of this folder, on the GPU machine, from the repository root, with the staged build
# `fin` (main at the commit named in README.md, regions cholesky_* and lu_*) packed in .gpu/.
# Outputs go to $OUT.
#   bash bench/results/linalg-final-h200/run.sh f64 [ALGORITHMS]  # part 1: linalg, f64, every
#                                                        # variant (ALGORITHMS: cholesky lu)
#   bash bench/results/linalg-final-h200/run.sh f32 [ALGORITHMS]  # part 2: the same in f32
#   bash bench/results/linalg-final-h200/run.sh verify   # part 3: the examples against the
#                                                        # sequential reference, every backend
#   bash bench/results/linalg-final-h200/run.sh large    # part 4: Cholesky f64 at 16384
set -uo pipefail
bash scripts/unpack-stage.sh fin
header() { echo "# date: $(date -u +%FT%TZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; echo "# command: $*"; }
# Every backend, every policy of the persistent one, the costed plan with the critical path alone
# on one SM, and checks on for the static plan and for one launch per level.
variants="persistent/static+plan,persistent/static%2!1+costs,persistent/grr+plan,persistent/lrr+plan,persistent/lf+plan,persistent/local+plan,persistent/steal+plan,persistent/priority+plan,persistent/affinity+plan,barrier+plan,grid-barrier+plan,graph+plan,streams+plan,persistent/static+plan:checked,barrier+plan:checked"
# linalg PREC ALGORITHM SIZES BS: one process per call, cuSOLVER beside the DSL.
linalg() {
  local o=$OUT/linalg-$1-$2-${3//,/-}.txt
  { timeout 280 /tmp/fin/run.sh linalg --dsl --vendor --precisions $1 --algorithms $2 --sizes $3 --bs $4 --reps 5 --variants "$variants"; echo "exit $?"; } > $o 2>&1
  echo "$o: $(grep -c "^| $2" $o) rows, $(tail -1 $o), $(date -u +%T)"
}
case "$1" in
f64 | f32)
  for alg in ${2:-cholesky lu}; do
    linalg $1 $alg 1024,2048,4096 64
    linalg $1 $alg 8192 128
  done
  ;;
verify)
  # Each example on every GPU backend (persistent under every policy), tiles of 64 and 128,
  # checks on and off, against the sequential reference factorization.
  o=$OUT/verify.txt
  { header "/tmp/fin/run.sh EXAMPLE --prec PREC --nb 6 --bs BS --resident --reps 1 --reference --backend BACKEND [--policy POLICY] [--unchecked]"
    for ex in cholesky lu; do for prec in f64 f32; do for bs in 64 128; do
      for be in persistent/static persistent/grr persistent/lrr persistent/lf persistent/local persistent/steal persistent/priority persistent/affinity barrier grid-barrier graph streams; do
        for chk in "" --unchecked; do
          args="--backend ${be%%/*}"
          [ "$be" != "${be#*/}" ] && args="$args --policy ${be#*/}"
          echo "## $ex $prec bs $bs $be ${chk:-checked}"
          timeout 60 /tmp/fin/run.sh $ex --prec $prec --nb 6 --bs $bs --resident --reps 1 --reference $args $chk 2>&1 | grep -E "check|error|panick"
        done
      done
    done; done; done; } > $o 2>&1
  echo "verify: PASS lines $(grep -c 'PASS' $o), FAIL or error lines $(grep -ciE 'fail|error:|panick' $o), cases $(grep -c '^## ' $o)"
  ;;
large)
  o=$OUT/linalg-f64-cholesky-16384.txt
  { timeout 400 /tmp/fin/run.sh linalg --dsl --vendor --precisions f64 --algorithms cholesky --sizes 16384 --bs 128 --reps 3 --variants "persistent/static+plan,persistent/static%2!1+costs,barrier+plan,persistent/static+plan:checked"; echo "exit $?"; } > $o 2>&1
  echo "$o: $(grep -c '^| cholesky' $o) rows, $(tail -1 $o)"
  ;;
esac
