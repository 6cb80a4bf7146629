#!/usr/bin/env bash
# One-time set-up on a fresh machine, safe to re-run: the pinned toolchain with the components the
# device build needs (rust-toolchain.toml), and `ptxas` from PyPI in ./.venv for checking PTX.
set -euo pipefail
cd "$(dirname "$0")/.."
# RUSTUP_AUTO_INSTALL=0 machines do not install rust-toolchain.toml's components on first use.
rustup toolchain install
if [ "${TASKWEAVE_SKIP_PTXAS:-0}" != 1 ]; then
    if [ ! -x .venv/bin/python ]; then
        python3 -m venv .venv
    fi
    if ! ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas >/dev/null 2>&1; then
        .venv/bin/python -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvcc==13.0.88'
    fi
fi
