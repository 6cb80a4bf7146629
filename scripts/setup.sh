#!/usr/bin/env bash
# One-time set-up on a fresh machine, safe to re-run, for the README's two commands:
#   scripts/setup.sh          what scripts/test.sh needs: the pinned nightly with its components
#                             (rust-toolchain.toml), the stable Rust the quickstart crate builds
#                             with (QUICKSTART_TOOLCHAIN, default 1.95.0), and `ptxas` from PyPI in
#                             ./.venv; fails when any of them cannot be had
#   scripts/setup.sh --run    what scripts/run.sh needs: the pinned nightly, and `ptxas` when it can
#                             be had; without it the build still works (it says so, and the CUDA
#                             driver compiles each kernel on first use instead of loading a cubin)
# TASKWEAVE_SKIP_PTXAS=1 skips ptxas. The device build finds the ptxas in ./.venv by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=test
if [ "${1:-}" = --run ]; then
    mode=run
fi
# RUSTUP_AUTO_INSTALL=0 machines do not install rust-toolchain.toml's components on first use.
rustup toolchain install
if [ "$mode" = test ]; then
    quickstart=${QUICKSTART_TOOLCHAIN:-1.95.0}
    if ! rustup which --toolchain "$quickstart" cargo >/dev/null 2>&1; then
        rustup toolchain install "$quickstart" --profile minimal
    fi
fi
if [ "${TASKWEAVE_SKIP_PTXAS:-0}" = 1 ]; then
    exit 0
fi
# What to say when ptxas cannot be had: an error for the tests, a warning for the main job.
missing() {
    if [ "$mode" = run ]; then
        echo "setup: WARNING: $1; building without ptxas: the CUDA driver will compile each kernel the first time a call needs it (seconds to a minute each, cached afterwards)" >&2
        exit 0
    fi
    echo "setup: $1" >&2
    exit 1
}
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv || missing "python3 -m venv failed (install Python 3 with venv)"
fi
if ! ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvcc==13.0.88' ||
        missing "pip could not install nvidia-cuda-nvcc (ptxas)"
fi
ptxas=$(ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas 2>/dev/null | head -n 1 || true)
if [ -z "$ptxas" ]; then
    missing "pip installed nvidia-cuda-nvcc, but .venv holds no nvidia/cu13/bin/ptxas"
fi
if ! version=$("$ptxas" --version 2>&1); then
    missing "$ptxas does not run: $version"
fi
echo "setup: $(echo "$version" | tail -n 1)"
