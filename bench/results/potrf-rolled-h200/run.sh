#!/usr/bin/env bash
# The rolled register factorization (f: regs::factor with an 8 x 4 block per thread and the steps
# looped over 8-step groups) and then the rolled register solve (fs: regs::solve likewise) against
# main before them (m0, built at 1ded573, the same device code as 9437621). m0 keeps the four
# resident regions; f and fs keep TASKWEAVE_REGIONS='cholesky_*,lu_*'.
# The parts are scripts/results-run.sh's (this script held them until the next results folder
# needed the same; they have not changed).
#   bash bench/results/potrf-rolled-h200/run.sh PART "BUILDS" [ROUNDS]
set -uo pipefail
exec bash scripts/results-run.sh "$1" "${2:-m0 f}" "${3:-1 2}"
