#!/usr/bin/env bash
# The run of this folder, on the GPU machine, from the repository root, with the staged builds
# fin (main before, ../linalg-final-h200/) and ck (the change: the operand check inline, its
# common case first; regions cholesky_f64_resident, cholesky_f32_resident, lu_f64_resident,
# lu_f32_resident) packed in .gpu/. Outputs go to $OUT.
#   bash bench/results/check-inline-h200/run.sh
set -uo pipefail
bash scripts/unpack-stage.sh fin ck
header() { echo "# date: $(date -u +%FT%TZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; echo "# command: $*"; }
# 1. ck's factorizations against the sequential reference, checks on and off.
o=$OUT/verify-ck.txt
{ header "/tmp/ck/run.sh EXAMPLE --prec PREC --nb 6 --bs BS --resident --reps 1 --reference --backend BACKEND --policy static [--unchecked]"
  for ex in cholesky lu; do for prec in f64 f32; do for bs in 64 128; do for be in persistent barrier; do for chk in "" --unchecked; do
    echo "## $ex $prec bs $bs $be ${chk:-checked}"
    timeout 60 /tmp/ck/run.sh $ex --prec $prec --nb 6 --bs $bs --resident --reps 1 --reference --backend $be --policy static $chk 2>&1 | grep -E "check|error|panick"
  done; done; done; done; done; } > $o 2>&1
echo "verify-ck: PASS lines $(grep -c 'PASS' $o), FAIL or error lines $(grep -ciE 'fail|error:|panick' $o), cases $(grep -c '^## ' $o)"
# 2. linalg at 2048 and 4096, checks on and off, each build in its own process with cuSOLVER
# beside it, in the order fin ck ck fin.
args="linalg --dsl --vendor --sizes 2048,4096 --precisions f64,f32 --reps 5 --variants persistent/static+plan,persistent/static+plan:checked"
i=0
for b in fin ck ck fin; do
  i=$((i + 1))
  o=$OUT/linalg-$i-$b.txt
  { timeout 120 /tmp/$b/run.sh $args; echo "exit $?"; } > $o 2>&1
  echo "$o: $(grep -c '^| cholesky\|^| lu' $o) rows, $(tail -1 $o)"
  grep -E "^\| (cholesky|lu)" $o | grep -v cuSOLVER | cut -d'|' -f2-4,7 | sed 's/^/  /'
done
