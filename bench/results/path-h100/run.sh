#!/usr/bin/env bash
# Traced factorizations, persistent/static, unchecked, on arrays resident on the GPU: the path of
# tasks that set each span and what held each of its tasks (`Report::trace_path`, summed by
# `scripts/trace-summary.py`). Cholesky and LU f64 at N = 8192 (128-tiles) and 4096 (64-tiles),
# and at 8192 with the critical path alone on its SMs.
set -uo pipefail
.gpu/prep.sh path >/dev/null
R=/tmp/path/run.sh
mkdir -p /tmp/tr
run() {
    name=$1
    shift
    timeout 140 $R "$@" --resident --reps 3 --backend persistent --policy static --unchecked \
        --trace /tmp/tr/$name.json 2>&1
    python3 scripts/trace-summary.py /tmp/tr/$name.json
    echo
}
{
    run chol-8192 cholesky --nb 64 --bs 128 --prec f64
    run chol-8192-alone cholesky --nb 64 --bs 128 --prec f64 --per-sm 2 --critical-sms 1
    run lu-8192 lu --nb 64 --bs 128 --prec f64
    run lu-8192-alone lu --nb 64 --bs 128 --prec f64 --per-sm 2 --critical-sms 2
    run chol-4096 cholesky --nb 64 --bs 64 --prec f64
    run lu-4096 lu --nb 64 --bs 64 --prec f64
} > "$OUT/path.txt"
tail -n 80 "$OUT/path.txt" | cut -c1-220
