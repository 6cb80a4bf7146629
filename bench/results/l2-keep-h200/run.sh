#!/usr/bin/env bash
# The run of this folder, on the GPU machine, from the repository root, with the staged builds
# gb (main before: tile_ops, region batch_gemm_f64) and gn (the change, change.patch: tile_ops
# and linalg, regions batch_gemm_f64, cholesky_f64_resident, lu_f64_resident) packed in .gpu/.
# Outputs go to $OUT.
#   bash bench/results/l2-keep-h200/run.sh gemm    # tile GEMM batches, both builds, two rounds,
#                                                  # cuBLAS beside them; DRAM bytes under ncu
#   bash bench/results/l2-keep-h200/run.sh persist # gp (gn with an L2 set-aside for kept lines,
#                                                  # TASKWEAVE_L2_PERSIST_BYTES, gp.patch) and gb
set -uo pipefail
header() { echo "# date: $(date -u +%FT%TZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"; echo "# command: $*"; }
batch() {
  local b=$1 bs=$2; shift 2
  timeout 60 /tmp/$b/run.sh tile_ops --op gemm --bs $bs --count $(( (1 << 28) / (8 * bs * bs) )) "$@" --backend persistent --policy static --unchecked --reps 10
  echo "# exit $?"
}
case "$1" in
gemm)
  bash scripts/unpack-stage.sh gb gn
  for round in 1 2; do
    for b in gb gn; do
      o=$OUT/tile-gemm-$round-$b.txt
      { for bs in 64 128 256; do for beta in 1 0; do batch $b $bs --beta $beta; done; done; } > $o 2>&1
      echo "== $o"; grep -E "TFLOP|check:" $o | sed 's/^/  /'
    done
  done
  o=$OUT/cublas-gemm.txt
  { timeout 120 /tmp/gn/run.sh linalg --vendor --sizes 1024 --precisions f64 --tiles 64,128,256 --reps 5; echo "exit $?"; } > $o 2>&1
  grep -E "gemm batched" $o
  # DRAM bytes and L2 hit rate of the 128-tile batch (beta 0), each build.
  o=$OUT/ncu-128.txt
  { header "ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum -k regex:taskweave_region --launch-count 2 /tmp/BUILD/bin/tile_ops --op gemm --bs 128 --count 2048 --beta B --backend persistent --policy static --unchecked --reps 1"
    for b in gb gn; do for beta in 0 1; do
      echo "## $b beta $beta"
      timeout 120 ncu --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum -k regex:taskweave_region --launch-count 2 /tmp/$b/bin/tile_ops --op gemm --bs 128 --count 2048 --beta $beta --backend persistent --policy static --unchecked --reps 1 2>&1 | grep -E "dram__|lts__|gpu__time|check:|rror"
    done; done; } > $o 2>&1
  cat $o
  ;;
persist)
  bash scripts/unpack-stage.sh gb gp
  o=$OUT/tile-gemm-persist.txt
  # gb does not read the variable (main's runtime sets no set-aside).
  { for round in 1 2; do for run in "gb 0" "gp 0" "gp 16777216" "gp 33554432"; do
      set -- $run
      echo "## round $round $1 set-aside $2"
      for bs in 64 128; do for beta in 1 0; do
        TASKWEAVE_L2_PERSIST_BYTES=$2 batch $1 $bs --beta $beta
      done; done
    done; done; } > $o 2>&1
  grep -E "^## |TFLOP|L2 persisting|rror" $o | sed 's/ median of 10.*,//'
  o=$OUT/ncu-persist.txt
  { header "TASKWEAVE_L2_PERSIST_BYTES=33554432 ncu --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum -k regex:taskweave_region --launch-count 1 /tmp/BUILD/bin/tile_ops --op gemm --bs 128 --count 2048 --beta 0 --backend persistent --policy static --unchecked --reps 1"
    for b in gb gp; do
      echo "## $b"
      TASKWEAVE_L2_PERSIST_BYTES=33554432 timeout 120 ncu --metrics dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum -k regex:taskweave_region --launch-count 1 /tmp/$b/bin/tile_ops --op gemm --bs 128 --count 2048 --beta 0 --backend persistent --policy static --unchecked --reps 1 2>&1 | grep -E "dram__|lts__|gpu__time|check:|L2 persisting|rror"
    done; } > $o 2>&1
  cat $o
  ;;
esac
