#!/usr/bin/env bash
# Shorter chains of steps in the register factorization and solve, against main before them (fs,
# the device code of 03edf3d, staged for bench/results/potrf-rolled-h200/). Builds:
#   d  (dbaaa2e): the factor's steps leave their columns unscaled and the end scales them; the
#      TRSM stages its triangle divided by the pivots and divides its entries at the end;
#   w  (26389ab): d, the factor by warp panels (a warp factors its 16 columns meeting its own
#      lanes, the block meets once per panel) and the TRSM's steps at a warp barrier;
#   t  (9174801): the factor of d, the TRSM of fs with its steps at a warp barrier;
#   c  (45aaa83): t with the factor's steps two at a time, one barrier and a rank-2 update each.
# All keep TASKWEAVE_REGIONS='cholesky_*,lu_*'. (Part r for fs, d and w ran as
# bench/results/panels-h200/run.sh, this script before the folder was renamed.)
# The parts are scripts/results-run.sh's (this script held them until the next results folder
# needed the same; they have not changed).
#   bash bench/results/chain-steps-h200/run.sh PART "BUILDS" [ROUNDS]
set -uo pipefail
exec bash scripts/results-run.sh "$1" "${2:-fs t c}" "${3:-1 2}"
