#!/usr/bin/env bash
# The calls of this folder, on the GPU machine from the repository root, with the staged builds
# base, new and cap in .gpu/ and $OUT set, one part per call:
#   run.sh 1     scripts/results-run.sh's part g (the default shape's batches, the LAST build's
#                16-deep chunks, cuBLAS) for base new cap, into $OUT/1
#   run.sh 2     the same for cap new base, into $OUT/2
#   run.sh wide  the wide shape on 128 and 256 threads for base and new
#   run.sh c128  part g for cap and c128 (batch_gemm_f64 at 128 registers), into $OUT/3
#   run.sh threads  the default shape on 128-tiles with more threads per worker: cap on 256
#                (128 x 64 block tiles, one worker per SM) and c128 on 256 and 512 (128 x 128 on
#                sixteen warps, each operand read once)
#   run.sh stages  s6 (cap with the engine's MAX_STAGES raised from 4 to 6, batch_gemm_f64 only)
#                with 4, 5 and 6 stages of scratch (43008, 53248, 64512 bytes), cap with 4
#   run.sh check every operation and shape of cap's batch regions, small batches, verified
#                against the host reference, and the wide shape on 256 threads under memcheck
set -uo pipefail
case "$1" in
1) mkdir -p "$OUT/1" && OUT=$OUT/1 bash scripts/results-run.sh g "base new cap" ;;
2) mkdir -p "$OUT/2" && OUT=$OUT/2 bash scripts/results-run.sh g "cap new base" ;;
c128) mkdir -p "$OUT/3" && OUT=$OUT/3 bash scripts/results-run.sh g "cap c128" ;;
threads)
  bash scripts/unpack-stage.sh cap c128
  o=$OUT/tile-gemm-threads.txt
  { for beta in 1 0; do
      for run in "cap 128" "cap 256" "c128 256" "c128 512"; do
        set -- $run
        timeout 60 /tmp/$1/run.sh tile_ops --op gemm --bs 128 --count 2048 --beta $beta --threads $2 --backend persistent --policy static --unchecked --reps 10
        echo "# exit $?"
      done
    done; } > $o 2>&1
  grep -E "TFLOP|workers x|rror" $o | sed 's/wall.*//' ;;
stages)
  bash scripts/unpack-stage.sh cap s6
  o=$OUT/tile-gemm-stages.txt
  { for round in 1 2; do for bs in 64 128; do for beta in 1 0; do
      for run in "cap 43008" "s6 43008" "s6 53248" "s6 64512"; do
        set -- $run
        timeout 60 /tmp/$1/run.sh tile_ops --op gemm --bs $bs --count $(( (1 << 28) / (8 * bs * bs) )) --beta $beta --shared-bytes $2 --backend persistent --policy static --unchecked --reps 10
        echo "# exit $?"
      done
    done; done; done; } > $o 2>&1
  grep -E "TFLOP|rror" $o ;;
check)
  bash scripts/unpack-stage.sh cap
  o=$OUT/check-cap.txt
  {
    for prec in f64 f32; do for op in syrk trsm potrf getrf; do for bs in 64 128; do
      timeout 60 /tmp/cap/run.sh tile_ops --op $op --prec $prec --bs $bs --count 264 --reps 2 --backend persistent --policy static
      echo "# exit $?"
    done; done; done
    for shape in m8n8k4 m16n8k4 m16n8k8 m16n8k16 kc16 wide; do for bs in 48 64 128; do
      timeout 60 /tmp/cap/run.sh tile_ops --op gemm --shape $shape --bs $bs --count 264 --reps 2 --backend persistent --policy static
      echo "# exit $?"
    done; done
    for shape in default tf32; do for bs in 64 128; do
      timeout 60 /tmp/cap/run.sh tile_ops --op gemm --prec f32 --shape $shape --bs $bs --count 264 --reps 2 --backend persistent --policy static
      echo "# exit $?"
    done; done
    for bs in 48 128; do
      timeout 60 /tmp/cap/run.sh tile_ops --op gemm --shape wide --threads 256 --bs $bs --count 264 --reps 2 --backend persistent --policy static
      echo "# exit $?"
    done
  } > $o 2>&1
  echo "PASS lines: $(grep -c 'check: PASS' $o), other check lines: $(grep 'check:' $o | grep -vc PASS), nonzero exits: $(grep '# exit' $o | grep -vc 'exit 0')"
  o=$OUT/memcheck-wide-cap.txt
  { echo "# compute-sanitizer --tool memcheck, $(date -u +%FT%TZ)"
    compute-sanitizer --tool memcheck /tmp/cap/bin/tile_ops --op gemm --shape wide --threads 256 --bs 128 --count 132 --reps 1 --backend persistent --policy static --unchecked
    echo "# exit $?"; } > $o 2>&1
  tail -4 $o ;;
wide)
  bash scripts/unpack-stage.sh base new
  for b in base new; do
    o=$OUT/tile-gemm-wide-$b.txt
    { for bs in 64 128; do for beta in 1 0; do for threads in 128 256; do
        timeout 60 /tmp/$b/run.sh tile_ops --op gemm --bs $bs --count $(( (1 << 28) / (8 * bs * bs) )) --beta $beta --shape wide --threads $threads --backend persistent --policy static --unchecked --reps 10
        echo "# exit $?"
    done; done; done; } > $o 2>&1
    grep -E "TFLOP|workers x" $o | sed 's/wall.*//'
  done ;;
esac
