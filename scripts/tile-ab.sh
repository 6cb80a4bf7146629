#!/usr/bin/env bash
# A/B of the NW tile on a GPU machine: `tile_bench` from two staged builds (scripts/stage-gpu.sh),
# interleaved round by round so that clock and thermal drift fall on both alike, and the same tile
# in CUDA C (bench/cuda/nw_tile.cu) when nvcc is there. Prints ns per tile for every run, then the
# median of each variant and the ratio new / old.
#
#   scripts/tile-ab.sh OLD_STAGE NEW_STAGE [ROUNDS]
#   e.g. scripts/tile-ab.sh stage-main stage-tile 5
#
# Each round runs every case (TILE_AB_CASES, default: one launch unchecked, persistent scheduler
# unchecked, one launch checked) for both stages, in ABBA order across rounds. Every run must pass
# tile_bench's exact check. Logs go to TILE_AB_OUT (default ab/tile-<UTC time>).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -lt 2 ]; then
    sed -n '2,12p' "$0" >&2
    exit 2
fi
old=$1 new=$2 rounds=${3:-5}
for dir in "$old" "$new"; do
    [ -x "$dir/bin/tile_bench" ] || { echo "tile-ab: $dir/bin/tile_bench not found (stage it with scripts/stage-gpu.sh)" >&2; exit 2; }
done
sizes=${TILE_AB_SIZES:---nb 128 --tile 32 --reps 20}
cases=${TILE_AB_CASES:-"barrier-unchecked persistent-unchecked barrier-checked"}
out=${TILE_AB_OUT:-ab/tile-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"

args_of() { # case name -> tile_bench options
    local backend=${1%-*} mode=${1##*-}
    echo "--backend $backend $([ "$mode" = unchecked ] && echo --unchecked)"
}

# ns per tile of one run, from its "time per tile: X ns" line; the log keeps the whole output.
run_one() { # label command... -> prints X
    local label=$1; shift
    local log="$out/$label.log"
    if ! "$@" >>"$log" 2>&1; then
        echo "tile-ab: run failed: $* (see $log)" >&2
        exit 1
    fi
    if ! tail -n 3 "$log" | grep -q 'check: PASS'; then
        echo "tile-ab: the check did not pass: $* (see $log)" >&2
        exit 1
    fi
    grep 'time per tile:' "$log" | tail -n 1 | sed -E 's/.*time per tile: ([0-9.]+) ns.*/\1/'
}

# The CUDA C program runs the same matrix as tile_bench: its --nb and --tile.
c_nb=$(echo "$sizes" | sed -nE 's/.*--nb ([0-9]+).*/\1/p'); c_nb=${c_nb:-128}
c_tile=$(echo "$sizes" | sed -nE 's/.*--tile ([0-9]+).*/\1/p'); c_tile=${c_tile:-32}
cuda=""
if command -v nvcc >/dev/null; then
    cuda="$out/nw_tile"
    nvcc -O3 -arch=sm_90 -o "$cuda" bench/cuda/nw_tile.cu
fi

{
    echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi')"
    echo "# old: $old   new: $new   rounds: $rounds   tile_bench $sizes"
    [ -n "$cuda" ] && echo "# CUDA C: $(nvcc --version | tail -n 1); nw_tile $c_nb $c_tile 200 128" || echo "# CUDA C: no nvcc, skipped"
} | tee "$out/summary.txt"

declare -A times
for r in $(seq 1 "$rounds"); do
    order=("old" "new")
    [ $((r % 2)) -eq 0 ] && order=("new" "old")
    for c in $cases; do
        for v in "${order[@]}"; do
            dir=$old
            [ "$v" = new ] && dir=$new
            # shellcheck disable=SC2046,SC2086
            t=$(run_one "$v-$c" "$dir/bin/tile_bench" $sizes $(args_of "$c"))
            times["$v-$c"]+="$t "
            printf 'round %d  %-22s %-4s %8s ns/tile\n' "$r" "$c" "$v" "$t" | tee -a "$out/summary.txt"
        done
    done
    if [ -n "$cuda" ]; then
        t=$(run_one cuda "$cuda" "$c_nb" "$c_tile" 200 128)
        times[cuda]+="$t "
        printf 'round %d  %-22s %-4s %8s ns/tile\n' "$r" "cuda-c" "" "$t" | tee -a "$out/summary.txt"
    fi
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
{
    echo
    printf '%-22s %12s %12s %10s %12s\n' case "old ns/tile" "new ns/tile" "new/old" "new/CUDA C"
    c_med=""
    [ -n "$cuda" ] && c_med=$(echo "${times[cuda]}" | median)
    for c in $cases; do
        o=$(echo "${times[old-$c]}" | median)
        n=$(echo "${times[new-$c]}" | median)
        vs_c="-"
        [ -n "$c_med" ] && vs_c=$(awk -v n="$n" -v c="$c_med" 'BEGIN {printf "%.2fx", n / c}')
        printf '%-22s %12s %12s %10s %12s\n' "$c" "$o" "$n" "$(awk -v n="$n" -v o="$o" 'BEGIN {printf "%.2fx", n / o}')" "$vs_c"
    done
    [ -n "$c_med" ] && printf '%-22s %12s\n' "cuda-c" "$c_med"
    echo "(medians over $rounds rounds; logs in $out)"
} | tee -a "$out/summary.txt"
