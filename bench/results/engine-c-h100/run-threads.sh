#!/usr/bin/env bash
# Exploration: 256-thread workers (8 warps, 128x64 block tiles) on the 128-tile GEMM and the factorizations.
set -uo pipefail
bash .gpu/prep.sh big
R=/tmp/big/run.sh
hdr() { echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"; echo "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/, /, driver /')"; echo "# command: $*"; }
{ for round in 1 2; do for beta in 0 1; do for t in 128 256; do
  C="tile_ops --op gemm --prec f64 --bs 128 --count 2048 --beta $beta --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 --threads $t"
  hdr $C; timeout 60 $R $C 2>&1 | grep -v "^warm-up"
done; done; done; } > $OUT/gemm-threads.txt 2>&1
{ for t in 128 256; do
  C="tile_ops --op gemm --prec f64 --bs 128 --count 2048 --beta 1 --backend persistent --policy static --unchecked --reps 2 --shared-bytes 73728 --threads $t"
  hdr $C; ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,launch__registers_per_thread,launch__occupancy_limit_registers -k regex:taskweave_region --launch-skip 1 --launch-count 1 $R $C 2>&1 | grep -E "gpu__time|dram__|lts__|launch__"
done; } > $OUT/gemm-threads-ncu.txt 2>&1
C="linalg --dsl --vendor --sizes 4096,8192 --precisions f64 --algorithms cholesky,lu --reps 3 --variants persistent/static+plan,persistent/static@256+plan"
{ hdr $C; timeout 400 $R $C 2>&1; } > $OUT/linalg-threads.txt 2>&1
tail -5 $OUT/*.txt
