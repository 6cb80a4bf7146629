#!/usr/bin/env bash
# Prints the ptxas the scripts use: scripts/setup.sh's in ./.venv, else the first on PATH. Exits 1,
# printing nothing, when there is none.
set -euo pipefail
cd "$(dirname "$0")/.."
for candidate in .venv/lib/python3*/site-packages/nvidia/cu13/bin/ptxas; do
    if [ -x "$candidate" ]; then
        echo "$PWD/$candidate"
        exit 0
    fi
done
command -v ptxas || exit 1
