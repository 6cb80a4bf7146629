#!/usr/bin/env bash
# One-time set-up on a fresh machine, safe to re-run: the pinned toolchain with the components the
# device build needs (rust-toolchain.toml), and `ptxas` from PyPI in ./.venv for checking PTX.
# Fails when the install did not produce a ptxas that runs. TASKWEAVE_SKIP_PTXAS=1 skips ptxas
# (scripts/run.sh does: the demo needs none); scripts/test.sh refuses to run without it.
set -euo pipefail
cd "$(dirname "$0")/.."
# RUSTUP_AUTO_INSTALL=0 machines do not install rust-toolchain.toml's components on first use.
rustup toolchain install
if [ "${TASKWEAVE_SKIP_PTXAS:-0}" = 1 ]; then
    exit 0
fi
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
if ! ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas >/dev/null 2>&1; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check 'nvidia-cuda-nvcc==13.0.88'
fi
ptxas=$(ls .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas 2>/dev/null | head -n 1 || true)
if [ -z "$ptxas" ]; then
    echo "setup: pip installed nvidia-cuda-nvcc, but .venv holds no nvidia/cu13/bin/ptxas" >&2
    exit 1
fi
if ! version=$("$ptxas" --version 2>&1); then
    echo "setup: $ptxas does not run: $version" >&2
    exit 1
fi
echo "setup: $(echo "$version" | tail -n 1)"
