# Mutations of the register factorization with two steps per barrier and deferred scaling
# (regs::factor, regs::eliminate) and of the register solve with a warp barrier per step
# (regs::solve, regs::substitute, regs::stage_triangle), for scripts/mutate.py: each must fail
# the host tests of the registers, the tile factorizations and the tile TRSM. A test binary that
# hangs (threads that disagree on a failed pivot wait at different barriers) is killed by the
# timeout and counts as caught. The TRSM's warp barrier is not here: on the host one thread runs a
# warp's lanes in order, so its absence shows only on the GPU (run.sh part s, racecheck and
# synccheck). For the same reason the host cannot catch "no-barrier-before-the-scaling" (MISSED in
# mutations.txt): the threads that read the last step's second pivot at the end are the lanes of
# the warp whose lane wrote it after the last barrier, so on the host they run after it in order.
# On the GPU that barrier is what orders them.
R = "device/src/tile/regs.rs"
TEST = "timeout 600 cargo test -q -p taskweave-device --lib -- tile::regs tile::factor tile::trsm"
MUTATIONS = {
    # A pair of steps.
    "update-reaches-column-j": (R, "let column_after = |bj: u32, k: usize, s: usize| bj > cq || (bj == cq && k > cc + s);", "let column_after = |bj: u32, k: usize, s: usize| bj > cq || (bj == cq && k >= cc + s);"),
    "update-reaches-row-j": (R, "let row_after = |bi: u32, i: usize, s: usize| bi > q || (bi == q && i > u + s);", "let row_after = |bi: u32, i: usize, s: usize| bi > q || (bi == q && i >= u + s);"),
    "update-skips-the-next-column-block": (R, "let column_after = |bj: u32, k: usize, s: usize| bj > cq || (bj == cq", "let column_after = |bj: u32, k: usize, s: usize| bj > cq + 1 || (bj == cq"),
    "both-columns-published-into-one": (R, "unsafe { at.column(h).put_pair(pos::<T>(r), v) };", "unsafe { at.column(0).put_pair(pos::<T>(r), v) };"),
    "column-published-by-the-next-block": (R, "if grid.bj(lane) == cq {", "if grid.bj(lane) == cq + 1 {"),
    "lu-publishes-row-j-twice": (R, "let v = cells[u + h][2 * p].zip(cells[u + h][2 * p + 1], |x, y| [x, y]);", "let v = cells[u][2 * p].zip(cells[u][2 * p + 1], |x, y| [x, y]);"),
    "cholesky-update-scaled-once": (R, "let s = d.rsqrt();\n            s * s", "let s = d.rsqrt();\n            s"),
    "upper-triangle-stored": (R, "let kept = |r: u32, c: u32| c < n && (kind == Kind::Lu || c <= r);", "let kept = |_r: u32, c: u32| c < n;"),
    "one-exchange-buffer": (R, "columns: exchange.add((v % 2) * per_step),", "columns: exchange,"),
    "second-pivot-without-step-j": (R, "let d1 = (-low).fma(g, d1);", "let d1 = (-low).fma(T::ZERO * g, d1);"),
    "lu-cross-multiples-swapped": (R, "let (g, h) = (up * f0, low * f0);", "let (g, h) = (low * f0, up * f0);"),
    "second-multipliers-without-step-j": (R, "m1[i] = x0.zip(x1, |x0, x1| (-x0).fma(g, x1))", "m1[i] = x0.zip(x1, |_x0, x1| x1)"),
    "second-sources-without-step-j": (R, "x1[k] = y0.zip(y1, |y0, y1| (-y0).fma(h, y1))", "x1[k] = y0.zip(y1, |_y0, y1| y1)"),
    "second-step-dropped": (R, "cells[i][k] = v\n            .zip(m1[i], |v, m| (v, m))\n            .zip(x1[k], |(v, m), x| (-m).fma(x, v));", "cells[i][k] = v;"),
    "first-failure-ignored": (R, "if fails(d0, kind) {\n        return Some(j as usize);", "if false {\n        return Some(j as usize);"),
    "second-failure-ignored": (R, "let second_fails = fails(d1, kind);", "let second_fails = false;"),
    "second-pivot-recorded-wrong": (R, "unsafe { at.diag.set(pos::<T>(j + 1), d1) };", "unsafe { at.diag.set(pos::<T>(j + 1), low) };"),
    "no-barrier-before-the-scaling": (R, "    // The last step's second pivot was written after its barrier.\n    block.sync();\n", ""),
    # The end: the deferred scaling.
    "first-pivot-not-recorded": (R, "if grid.bj(lane) == cq && grid.bi(lane) == q {\n            // SAFETY: inside the pivots (`j < n`).", "if grid.bj(lane) == cq && grid.bi(lane) == q + 1 {\n            // SAFETY: inside the pivots (`j < n`)."),
    "columns-left-unscaled": (R, "let done = failed.map_or(n, |j| j as u32);", "let done = failed.map_or(0, |j| j as u32 * 0);"),
    "failed-column-scaled": (R, "let done = failed.map_or(n, |j| j as u32);", "let done = failed.map_or(n, |j| j as u32 + 1);"),
    "cholesky-pivot-left-unscaled": (R, "(r > c || (kind == Kind::Cholesky && r == c))", "r > c"),
    "lu-diagonal-scaled": (R, "(r > c || (kind == Kind::Cholesky && r == c))", "(r >= c || (kind == Kind::Cholesky && r == c))"),
    "cholesky-scaled-by-the-reciprocal": (R, "Kind::Cholesky => d.rsqrt(),", "Kind::Cholesky => d.recip(),"),
    "scaled-by-the-next-pivot": (R, "let c = (FC as u32 * grid.bj(lane) + k as u32).min(n - 1);", "let c = (FC as u32 * grid.bj(lane) + k as u32 + 1).min(n - 1);"),
    # The solve.
    "diagonal-staged-forward": (R, "if (forward && k > q) || (!forward && k < q) {", "if (forward && k >= q) || (!forward && k < q) {"),
    "diagonal-staged-backward": (R, "if (forward && k > q) || (!forward && k < q) {", "if (forward && k > q) || (!forward && k <= q) {"),
    "pivot-reciprocal-dropped": (R, "if grid.bi(lane) == g { v * scale } else { v }", "v"),
    "backward-solved-forward": (R, "let u = if forward { v } else { FR - 1 - v };", "let u = v;"),
    "solve-publishes-the-next-entry": (R, "let v = cells[u][2 * p].zip(cells[u][2 * p + 1], |x, y| [x, y]);\n        v.for_each(|lane, v| {\n            if grid.bi(lane) == g {", "let v = cells[(u + 1) % FR][2 * p].zip(cells[(u + 1) % FR][2 * p + 1], |x, y| [x, y]);\n        v.for_each(|lane, v| {\n            if grid.bi(lane) == g {"),
    "alpha-dropped": (R, "if alpha == T::ONE { v } else { alpha * v }", "v"),
    "rounds-overlap": (R, "first += per_round;", "first += per_round / 2;"),
}
