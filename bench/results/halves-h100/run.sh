#!/usr/bin/env bash
# The critical path in halves (`cholesky_halves_*`, `lu_halves_*`) against whole tiles, beside
# cuSOLVER in one process: `run.sh a` (one round of the linalg table), `run.sh b` (traces of the
# halves, the demo, the sanitizers); `run.sh c`: the f64 tile-GEMM batches with their wall time
# per call, and cuBLAS's batched DGEMM on the same tiles.
set -uo pipefail
bash .gpu/prep.sh halves >/dev/null
R=/tmp/halves/run.sh
part=${1:-a}
V="persistent/static+plan,persistent/static+halves+plan,persistent/static+plan:checked,persistent/static+halves+plan:checked"
L="linalg --dsl --algorithms cholesky,lu --precisions f64,f32 --reps 5 --variants $V"
if [ "$part" = a ]; then
    n=$(ls "$OUT" | wc -l)
    {
        timeout 260 $R $L --sizes 8192 --bs 128 2>&1
        timeout 200 $R $L --sizes 1024,2048,4096 --bs 64 2>&1
    } > "$OUT/linalg-halves-$n.txt"
    grep -E "\| (cholesky|lu)" "$OUT"/linalg-halves-*.txt | cut -c1-170
fi
if [ "$part" = b ]; then
    mkdir -p /tmp/tr
    for a in cholesky lu; do
        for g in 64:128 64:64; do
            nb=${g%:*} bs=${g#*:}
            timeout 120 $R $a --halves --nb $nb --bs $bs --prec f64 --resident --reps 3 \
                --backend persistent --policy static --unchecked --trace /tmp/tr/$a-$bs.json 2>&1
            python3 scripts/trace-summary.py /tmp/tr/$a-$bs.json
            echo
        done
    done > "$OUT/path-halves.txt"
    timeout 200 $R demo > "$OUT/demo.txt" 2>&1
    CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
    for a in cholesky lu; do
        for tool in memcheck racecheck; do
            C="$a --halves --nb 4 --bs 128 --prec f64 --reps 1 --backend persistent --policy static"
            echo "# command: compute-sanitizer --tool $tool $C"
            timeout 100 $CS --tool $tool --error-exitcode 3 /tmp/halves/bin/$C 2>&1 | tail -n 4
            echo "exit ${PIPESTATUS[0]}"
        done
    done > "$OUT/sanitizers.txt" 2>&1
    grep -E "path:|execute" "$OUT/path-halves.txt" | cut -c1-300
    grep -c PASS "$OUT/demo.txt"; grep -E "FAIL|halves" "$OUT/demo.txt" | cut -c1-140
    grep -E "command|SUMMARY|exit" "$OUT/sanitizers.txt"
fi
if [ "$part" = c ]; then
    for bc in 64:8192 128:2048 256:512; do
        bs=${bc%:*} n=${bc#*:}
        for beta in 0 1; do
            timeout 60 $R tile_ops --op gemm --prec f64 --bs $bs --count $n --beta $beta \
                --backend persistent --policy static --unchecked --reps 10 --shared-bytes 73728 2>&1
        done
    done > "$OUT/tile-wall.txt"
    timeout 120 $R linalg --vendor --precisions f64 --sizes 1024 --reps 5 > "$OUT/vendor.txt" 2>&1
    grep -E "TFLOP|wall per call" "$OUT/tile-wall.txt"
    grep -E "batched" "$OUT/vendor.txt"
fi
