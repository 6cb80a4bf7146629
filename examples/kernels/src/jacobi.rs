//! Jacobi iteration of the five-point stencil over a square grid, with separate copy and compute
//! tasks per tile and time step, as in Juggler's JACOBI.
//!
//! Each step, `jacobi_copy` saves tile `(i, j)` of `u` into `old` and its first and last columns
//! into the edge array `cols` (two sides per tile); `jacobi_compute` then sets every cell of the
//! tile to the mean of its four neighbours in `old`, reading the tile itself, the last row of the
//! tile above, the first row of the tile below and the facing edge columns of the tiles left and
//! right. Outside the grid the values are fixed: 1 above the top row, 0 on the other sides.
//!
//! Tasks: `2 · nb² · steps`. The default size gives Juggler's JACOBI count: 30 × 30 tiles of
//! 64 × 64 over 2 steps, `2 · 900 · 2 = 3600` tasks; at least 900 of them are ready at any time
//! (Table 1's "900").

use taskweave::{Block, task, task_region};

use crate::grid;

/// The largest tile side the shared-memory buffer holds.
pub const MAX_TILE: usize = 64;

/// The fixed value above the grid's top row.
pub const TOP: f32 = 1.0;

/// Shared words: the tile with a one-cell halo.
const WORDS: usize = (MAX_TILE + 2) * (MAX_TILE + 2);

/// Shared-memory bytes a region of Jacobi tiles needs per block.
pub const SHARED_BYTES: u32 = (WORDS * 4) as u32;

/// The first row of the tile below `(i, j)`, empty on the last tile row.
#[inline(always)]
pub const fn below(i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    if i + 1 == nb {
        0..0
    } else {
        grid::row(i + 1, j, 0, nb, bs, 1)
    }
}

/// The last column of the tile left of `(i, j)` in the two-sided edge array, empty on the first
/// tile column.
#[inline(always)]
pub const fn west(i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    if j == 0 {
        0..0
    } else {
        grid::edge(i, j - 1, 1, 2, nb, bs)
    }
}

/// The first column of the tile right of `(i, j)`, empty on the last tile column.
#[inline(always)]
pub const fn east(i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    if j + 1 == nb {
        0..0
    } else {
        grid::edge(i, j + 1, 0, 2, nb, bs)
    }
}

/// Saves tile `(ti, tj)` of `u` into `old`, and its first and last columns into `cols`.
#[task(
    reads = u[grid::tile(ti, tj, nb, bs * bs)],
    writes = [old[grid::tile(ti, tj, nb, bs * bs)], cols[grid::tile(ti, tj, nb, 2 * bs)]]
)]
pub fn jacobi_copy(
    b: &Block,
    u: &[f32],
    old: &mut [f32],
    cols: &mut [f32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    let base = grid::tile(ti, tj, nb, bs * bs).start;
    let edges = grid::tile(ti, tj, nb, 2 * bs).start;
    b.par_for(0..bs * bs + 2 * bs, |k| {
        if k < bs * bs {
            old[base + k] = u[base + k];
        } else {
            let (side, r) = ((k - bs * bs) / bs, (k - bs * bs) % bs);
            cols[edges + side * bs + r] = u[base + r * bs + side * (bs - 1)];
        }
    });
}

/// One Jacobi sweep of tile `(ti, tj)`: `u = (north + south + west + east) / 4` over `old`.
#[task(
    reads = [
        old[grid::tile(ti, tj, nb, bs * bs)],
        old[grid::above(ti, tj, nb, bs, 1)],
        old[below(ti, tj, nb, bs)],
        cols[west(ti, tj, nb, bs)],
        cols[east(ti, tj, nb, bs)]
    ],
    writes = u[grid::tile(ti, tj, nb, bs * bs)]
)]
#[allow(clippy::too_many_arguments)]
pub fn jacobi_compute(
    b: &Block,
    u: &mut [f32],
    old: &[f32],
    cols: &[f32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    assert!(bs <= MAX_TILE, "Jacobi tiles are at most 64 cells wide");
    let w = bs + 2;
    let g = b.shared::<f32, WORDS>();
    let base = grid::tile(ti, tj, nb, bs * bs).start;
    let (up, down) = (
        grid::above(ti, tj, nb, bs, 1).start,
        below(ti, tj, nb, bs).start,
    );
    let (lf, rt) = (west(ti, tj, nb, bs).start, east(ti, tj, nb, bs).start);
    // The tile into the halo'd buffer (coalesced), then the four halo sides.
    b.par_for(0..bs * bs + 4 * bs, |k| {
        if k < bs * bs {
            g.set((k / bs + 1) * w + k % bs + 1, old[base + k]);
        } else {
            let (side, e) = ((k - bs * bs) / bs, (k - bs * bs) % bs);
            match side {
                0 => g.set(e + 1, if ti == 0 { TOP } else { old[up + e] }),
                1 => g.set(
                    (bs + 1) * w + e + 1,
                    if ti + 1 == nb { 0.0 } else { old[down + e] },
                ),
                2 => g.set((e + 1) * w, if tj == 0 { 0.0 } else { cols[lf + e] }),
                _ => g.set(
                    (e + 1) * w + bs + 1,
                    if tj + 1 == nb { 0.0 } else { cols[rt + e] },
                ),
            }
        }
    });
    b.par_for(0..bs * bs, |k| {
        let at = (k / bs + 1) * w + k % bs + 1;
        u[base + k] = 0.25 * ((g.get(at - w) + g.get(at + w)) + (g.get(at - 1) + g.get(at + 1)));
    });
}

task_region! {
    /// `steps` Jacobi sweeps over the tile-major grid `u` (`nb × nb` tiles of `bs × bs`), with
    /// `old` and `cols` as scratch.
    pub fn jacobi(u: &mut [f32], old: &mut [f32], cols: &mut [f32], nb: usize, bs: usize, steps: usize) {
        for _ in 0..steps {
            for ti in 0..nb {
                for tj in 0..nb {
                    spawn!(jacobi_copy(u, old, cols, ti, tj, nb, bs));
                }
            }
            for ti in 0..nb {
                for tj in 0..nb {
                    spawn!(jacobi_compute(u, old, cols, ti, tj, nb, bs));
                }
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference, in `f64`, and the input.

    use crate::grid::host::Lcg;

    /// `steps` Jacobi sweeps over the row-major `n × n` grid `u`.
    pub fn jacobi(u: &[f32], n: usize, steps: usize) -> Vec<f64> {
        let mut cur: Vec<f64> = u.iter().map(|&v| f64::from(v)).collect();
        for _ in 0..steps {
            let old = cur.clone();
            let at = |r: isize, c: isize| {
                if r < 0 {
                    f64::from(super::TOP)
                } else if r >= n as isize || c < 0 || c >= n as isize {
                    0.0
                } else {
                    old[r as usize * n + c as usize]
                }
            };
            for r in 0..n as isize {
                for c in 0..n as isize {
                    cur[r as usize * n + c as usize] =
                        0.25 * (at(r - 1, c) + at(r + 1, c) + at(r, c - 1) + at(r, c + 1));
                }
            }
        }
        cur
    }

    /// A row-major `n × n` grid of values in `0..1`.
    pub fn grid(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = Lcg::new(seed);
        (0..n * n).map(|_| rng.unit()).collect()
    }
}
