# Mutations of the register factorization and solve (regs::factor, regs::eliminate, regs::solve,
# regs::substitute, regs::stage_triangle), for scripts/mutate.py: each must fail the host tests of
# the registers, the tile factorizations and the tile TRSM. A test binary that hangs (threads that
# disagree on a failed pivot wait at different barriers) is killed by the timeout and counts as
# caught.
R = "device/src/tile/regs.rs"
TEST = "timeout 300 cargo test -q -p taskweave-device --lib -- tile::regs tile::factor tile::trsm"
MUTATIONS = {
    # The factorization.
    "update-reaches-column-j": (R, "bj > cq || (bj == cq && k > cc)", "bj > cq || (bj == cq && k >= cc)"),
    "update-reaches-row-j": (R, "FR as u32 * bi + i as u32 > j;", "FR as u32 * bi + i as u32 >= j;"),
    "update-skips-the-next-column-block": (R, "bj > cq || (bj == cq", "bj > cq + 1 || (bj == cq"),
    "cholesky-pivot-left-unscaled": (R, "let on_pivot = kind == Kind::Cholesky && FR as u32 * bi + i as u32 == j;", "let on_pivot = false;"),
    "cholesky-update-scaled-once": (R, "(s, s * s)", "(s, s)"),
    "lu-publishes-the-other-half-row": (R, "|k: usize| cells[v][k].zip(cells[v + GROUP][k], |a, b| if second { b } else { a });\n        unroll", "|k: usize| cells[v][k].zip(cells[v + GROUP][k], |a, b| if second { a } else { b });\n        unroll"),
    "column-published-by-the-next-block": (R, "if grid.bj(lane) == cq {", "if grid.bj(lane) == cq + 1 {"),
    "upper-triangle-stored": (R, "let kept = |r: u32, c: u32| c < n && (kind == Kind::Lu || c <= r);", "let kept = |_r: u32, c: u32| c < n;"),
    "one-exchange-buffer": (R, "let column = exchange.add((v % 2) * stride);", "let column = exchange;"),
    # The solve.
    "diagonal-staged-forward": (R, "if (forward && k > q) || (!forward && k < q) {", "if (forward && k >= q) || (!forward && k < q) {"),
    "diagonal-staged-backward": (R, "if (forward && k > q) || (!forward && k < q) {", "if (forward && k > q) || (!forward && k <= q) {"),
    "pivot-reciprocal-dropped": (R, "if (half == 1) == second && grid.bi(lane) == g {", "if false {"),
    "pivot-reciprocal-on-the-other-half": (R, "if (half == 1) == second && grid.bi(lane) == g {", "if (half == 1) != second && grid.bi(lane) == g {"),
    "backward-solved-forward": (R, "let v = if forward { w } else { GROUP - 1 - w };", "let v = w;"),
    "solve-publishes-the-other-half-entry": (R, "let entry = |k: usize| cells[v][k].zip(cells[v + GROUP][k], |a, b| if second { b } else { a });", "let entry = |k: usize| cells[v][k].zip(cells[v + GROUP][k], |a, b| if second { a } else { b });"),
    "alpha-dropped": (R, "if alpha == T::ONE { v } else { alpha * v }", "v"),
    "rounds-overlap": (R, "first += per_round;", "first += per_round / 2;"),
}
