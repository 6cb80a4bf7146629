#!/usr/bin/env bash
# Builds the release binaries here and stages them, with the device build's log, in ./stage
# (ignored by git), ready to be copied to a GPU machine that has a driver but no Rust.
#
#   scripts/stage-gpu.sh            # build and stage every example binary in ./stage
#   scripts/stage-gpu.sh stage-main # the same into ./stage-main (also ignored), e.g. for an A/B
#   scripts/stage-gpu.sh stage-main tile_bench   # only the named binaries (each embeds the
#                                                # examples' kernel bundle, about 25 MB)
#   TASKWEAVE_REGIONS='cholesky_*,lu_*' scripts/stage-gpu.sh stage-ab cholesky lu
#                                   # only those regions' kernels in the bundle: a smaller stage,
#                                   # and a minute of ptxas, for an A/B of one workload
#                                   # (the binaries' other regions then fail to load)
#   (on the GPU machine) stage/run.sh selfcheck     # prints date, device and command first
#   (on the GPU machine) stage/run.sh lu --nb 15 --bs 32
#
# The binaries load libcuda at run time, so they need nothing else there.
set -euo pipefail
cd "$(dirname "$0")/.."
stage=${1:-stage}
shift $(($# > 0 ? 1 : 0))
case "$stage" in
stage | stage-*) ;;
*)
    echo "stage-gpu: the folder must be stage or stage-NAME (the names git ignores)" >&2
    exit 2
    ;;
esac
# A/B builds from two worktrees must not share a target directory: cargo keys a path dependency
# by its path inside the workspace and judges it fresh by modification times, so a worktree whose
# changed files are older than the other's last build gets that build's code, device code
# included, without a word (bench/results/chain-trace-h200/ staged a "variant" that way). The
# target directory: ./target, or CARGO_TARGET_DIR (or its config) when set.
target=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
here=$(pwd -P)
case "$(python3 -c 'import os,sys; print(os.path.realpath(sys.argv[1]))' "$target")/" in
"$here"/*) ;;
*)
    if [ "${STAGE_SHARED_TARGET:-}" != 1 ]; then
        echo "stage-gpu: the target directory $target is outside this checkout ($here):" >&2
        echo "  another worktree's build there can be staged as this one's. Unset CARGO_TARGET_DIR" >&2
        echo "  (or set STAGE_SHARED_TARGET=1 if no other checkout builds there)." >&2
        exit 2
    fi
    ;;
esac
# The device build assembles every region's kernels with scripts/setup.sh's ptxas (it finds
# ./.venv by itself), for TASKWEAVE_TARGET_CPU, else the GPU of this machine, else sm_90.
if [ "$#" -gt 0 ]; then
    bins=("$@")
    cargo build --release -p taskweave-examples "${bins[@]/#/--bin=}"
else
    mapfile -t bins < <(cargo metadata --no-deps --format-version 1 \
        | python3 -c 'import json,sys; m=json.load(sys.stdin); print("\n".join(t["name"] for p in m["packages"] if p["name"]=="taskweave-examples" for t in p["targets"] if "bin" in t["kind"]))')
    cargo build --release -p taskweave-examples --bins
fi
rm -rf "$stage"
mkdir -p "$stage/bin"
for bin in "${bins[@]}"; do
    cp "$target/release/$bin" "$stage/bin/"
    strip --strip-debug "$stage/bin/$bin"
done
cp "$target"/taskweave-device/build.log "$stage/"
cat > "$stage/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs one staged binary: stage/run.sh NAME [ARGS...]. Prints the header of bench/results/README.md
# first: the date, the device and the command.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
name="$1"; shift
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 || true)
device="no nvidia-smi"
if [ -n "$gpu" ]; then
    device="${gpu/, /, driver }"
fi
echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "# device: $device"
echo "# command: $name $*"
exec "$here/bin/$name" "$@"
RUN
chmod +x "$stage/run.sh"
du -sh "$stage"
