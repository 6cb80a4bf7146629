# Mutations of the register factorization and solve (regs::factor, regs::eliminate, regs::solve,
# regs::substitute, regs::stage_triangle), for scripts/mutate.py: each must fail the host tests of
# the registers, the tile factorizations and the tile TRSM. A test binary that hangs (threads that
# disagree on a failed pivot wait at different barriers) is killed by the timeout and counts as
# caught.
R = "device/src/tile/regs.rs"
TEST = "timeout 600 cargo test -q -p taskweave-device --lib -- tile::regs tile::factor tile::trsm"
MUTATIONS = {
    # The factorization.
    "update-reaches-column-j": (R, "bj > cq || (bj == cq && k > cc)", "bj > cq || (bj == cq && k >= cc)"),
    "update-reaches-row-j": (R, "bi > q || (bi == q && i > u)", "bi > q || (bi == q && i >= u)"),
    "update-skips-the-next-column-block": (R, "bj > cq || (bj == cq", "bj > cq + 1 || (bj == cq"),
    "cholesky-pivot-left-unscaled": (R, "let on_pivot = kind == Kind::Cholesky && bi == q && i == u;", "let on_pivot = false;"),
    "cholesky-update-scaled-once": (R, "(s, s * s)", "(s, s)"),
    "lu-publishes-the-next-row": (R, "let v = cells[u][2 * p].zip(cells[u][2 * p + 1], |x, y| [x, y]);\n            v.for_each(|lane, v| {\n                let c", "let v = cells[(u + 1) % FR][2 * p].zip(cells[(u + 1) % FR][2 * p + 1], |x, y| [x, y]);\n            v.for_each(|lane, v| {\n                let c"),
    "column-published-by-the-next-block": (R, "if grid.bj(lane) == cq {", "if grid.bj(lane) == cq + 1 {"),
    "upper-triangle-stored": (R, "let kept = |r: u32, c: u32| c < n && (kind == Kind::Lu || c <= r);", "let kept = |_r: u32, c: u32| c < n;"),
    "one-exchange-buffer": (R, "let column = exchange.add((u % 2) * stride);", "let column = exchange;"),
    # The solve.
    "diagonal-staged-forward": (R, "if (forward && k > q) || (!forward && k < q) {", "if (forward && k >= q) || (!forward && k < q) {"),
    "diagonal-staged-backward": (R, "if (forward && k > q) || (!forward && k < q) {", "if (forward && k > q) || (!forward && k <= q) {"),
    "pivot-reciprocal-dropped": (R, "if grid.bi(lane) == g { v * scale } else { v }", "v"),
    "backward-solved-forward": (R, "let u = if forward { v } else { FR - 1 - v };", "let u = v;"),
    "solve-publishes-the-next-entry": (R, "let v = cells[u][2 * p].zip(cells[u][2 * p + 1], |x, y| [x, y]);\n        v.for_each(|lane, v| {\n            if grid.bi(lane) == g {", "let v = cells[(u + 1) % FR][2 * p].zip(cells[(u + 1) % FR][2 * p + 1], |x, y| [x, y]);\n        v.for_each(|lane, v| {\n            if grid.bi(lane) == g {"),
    "alpha-dropped": (R, "if alpha == T::ONE { v } else { alpha * v }", "v"),
    "rounds-overlap": (R, "first += per_round;", "first += per_round / 2;"),
}
