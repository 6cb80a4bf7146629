#!/usr/bin/env bash
# What a region called once costs, on a GPU machine: where the host time of a one-off call and of
# a planned one goes, phase by phase, beside cuSOLVER; the tile path of inspection on and off; the
# default policy against grr and static; and inspection alone on the GPU machine's host.
#
#   (here)         scripts/stage-gpu.sh stage-fc linalg bench demo
#                  TASKWEAVE_PTXAS=0 cargo bench -p taskweave-examples --bench inspection --no-run
#                  then copy the inspection bench (the executable cargo names, under
#                  target/release) into stage-fc/bin/inspection, stripped
#   (GPU machine)  bash scripts/first-call.sh STAGE OUT [PART...]
#       PART (default: all, in this order):
#       linalg      Cholesky and LU f64 at 2048, 4096 and 8192, each size in a process of its own
#                   with cuSOLVER beside it: one-off calls (`+fresh`) and planned ones under grr,
#                   static and the default (`auto`), with their phases;
#       tilepath    the one-off calls at 4096 with the tile path of inspection off, then on
#                   (TASKWEAVE_TILE_PATH=0 and 1), in processes of their own;
#       workloads   the Juggler workloads and NW on the persistent backend under grr, static and
#                   the default policy, in that order (a workload's first case also loads its
#                   region's kernel): first (one-off) and steady (planned) calls, phases;
#       inspection  the inspection bench (every workload region and the factorizations);
#       demo        the main job, as a check that the default policy runs everything.
# Every output starts with the header of bench/results/README.md (date, device, command).
set -uo pipefail
. "$(dirname "$0")/stage-args.sh"
stage_args "linalg tilepath workloads inspection demo" -- "$@"
variants=persistent/grr+fresh,persistent/static+fresh,persistent/auto+fresh
variants=$variants,persistent/grr+plan,persistent/static+plan,persistent/auto+plan
for part in "${parts[@]}"; do
    case "$part" in
    linalg)
        for n in 2048 4096 8192; do
            timeout 300 "$stage/run.sh" linalg --dsl --vendor --sizes "$n" --precisions f64 \
                --reps 7 --variants "$variants" > "$out/linalg-$n.txt" 2>&1
            echo "linalg $n: exit $?"
        done
        ;;
    tilepath)
        for on in 0 1; do
            TASKWEAVE_TILE_PATH=$on timeout 300 "$stage/run.sh" linalg --dsl --sizes 4096 \
                --precisions f64 --reps 7 --variants persistent/grr+fresh,persistent/auto+fresh \
                > "$out/tilepath-$on.txt" 2>&1
            echo "tile path $on: exit $?"
        done
        ;;
    workloads)
        timeout 300 "$stage/run.sh" bench --backends persistent --policies grr,static,auto \
            --reps 7 --out "$out/workloads" > "$out/workloads.txt" 2>&1
        echo "workloads: exit $?"
        ;;
    inspection)
        {
            echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
            echo "# device: host of $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
            echo "# command: inspection --reps 7"
            timeout 300 "$stage/bin/inspection" --reps 7
        } > "$out/inspection.txt" 2>&1
        echo "inspection: exit $?"
        ;;
    demo)
        timeout 300 "$stage/run.sh" demo > "$out/demo.txt" 2>&1
        echo "demo: exit $?"
        ;;
    *)
        echo "first-call: unknown part $part" >&2
        exit 2
        ;;
    esac
done
