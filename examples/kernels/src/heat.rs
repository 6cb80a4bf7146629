//! Heat diffusion over a square plate by Gauss-Seidel time steps: each step updates the cells in
//! row-major order, so a cell sees its upper and left neighbours from the *current* step and its
//! lower and right neighbours from the *previous* one, as Juggler's HEAT-SIM does ("relies on
//! elements calculated in previous and current steps"). This makes each step a wavefront.
//!
//! The plate has two tile-major buffers, previous and current, that alternate between steps, each
//! with an edge array holding every tile's first and last columns. Task `(t, i, j)` reads tile
//! `(i, j)`, the first row of the tile below and the first column of the tile to the right from
//! the previous buffer, the last row of the tile above and the last column of the tile to the left
//! from the current one, and sweeps its cells' anti-diagonals in shared memory. Outside the plate
//! the temperature is fixed: 1 above the top row, 0 on the other sides.
//!
//! Tasks: `nb² · steps`. The default size gives Juggler's HEAT-SIM count: one step over 90 × 90
//! tiles of 32 × 32 (a 2880 × 2880 plate), `8100` tasks, whose anti-diagonals hold 1 to 90 tasks
//! (Table 1's "1-90"). More steps overlap as a pipelined wavefront.

use taskweave::{Block, task, task_region};

use crate::dp::anti_diagonals;
use crate::grid;

/// The largest tile side the shared-memory buffer holds.
pub const MAX_TILE: usize = 64;

/// The fixed temperature above the top row.
pub const TOP: f32 = 1.0;

/// The row stride of the halo'd tile in shared memory (see [`grid::diagonal_stride`]).
const STRIDE: usize = grid::diagonal_stride(MAX_TILE + 2);

/// Shared words: the tile with a one-cell halo.
const WORDS: usize = (MAX_TILE + 2) * STRIDE;

/// Shared-memory bytes a region of heat tiles needs per block.
pub const SHARED_BYTES: u32 = (WORDS * 4) as u32;

/// Tile `(i, j)` of buffer `p`.
#[inline(always)]
pub const fn tile(p: usize, i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    let r = grid::tile(i, j, nb, bs * bs);
    let off = p * nb * nb * bs * bs;
    r.start + off..r.end + off
}

/// Row `r` of tile `(i, j)` of buffer `p`, empty when `i` is outside the grid.
#[inline(always)]
const fn row_in(
    p: usize,
    i: usize,
    j: usize,
    r: usize,
    nb: usize,
    bs: usize,
) -> core::ops::Range<usize> {
    if i >= nb {
        0..0
    } else {
        let x = grid::row(i, j, r, nb, bs, 1);
        let off = p * nb * nb * bs * bs;
        x.start + off..x.end + off
    }
}

/// Column `side` (0 first, 1 last) of tile `(i, j)` of buffer `p` in the edge array, empty when
/// `j` is outside the grid.
#[inline(always)]
pub const fn side(
    p: usize,
    i: usize,
    j: usize,
    side: usize,
    nb: usize,
    bs: usize,
) -> core::ops::Range<usize> {
    if j >= nb {
        0..0
    } else {
        let x = grid::edge(i, j, side, 2, nb, bs);
        let off = p * nb * nb * 2 * bs;
        x.start + off..x.end + off
    }
}

/// Both edge columns of tile `(i, j)` of buffer `p`.
#[inline(always)]
pub const fn sides(p: usize, i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    side(p, i, j, 0, nb, bs).start..side(p, i, j, 1, nb, bs).end
}

/// Time step `t` of tile `(ti, tj)`: from buffer `t % 2` into buffer `(t + 1) % 2`.
#[task(
    reads = [
        u[tile(t % 2, ti, tj, nb, bs)],
        u[row_in(t % 2, ti + 1, tj, 0, nb, bs)],
        u[row_in((t + 1) % 2, ti.wrapping_sub(1), tj, bs - 1, nb, bs)],
        cols[side(t % 2, ti, tj + 1, 0, nb, bs)],
        cols[side((t + 1) % 2, ti, tj.wrapping_sub(1), 1, nb, bs)]
    ],
    writes = [u[tile((t + 1) % 2, ti, tj, nb, bs)], cols[sides((t + 1) % 2, ti, tj, nb, bs)]]
)]
#[allow(clippy::too_many_arguments)]
pub fn heat_tile(
    b: &Block,
    u: &mut [f32],
    cols: &mut [f32],
    t: usize,
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
    alpha: f32,
) {
    assert!(bs <= MAX_TILE, "heat tiles are at most 64 cells wide");
    let (prev, cur) = (t % 2, (t + 1) % 2);
    let w = grid::diagonal_stride(bs + 2);
    let g = b.shared::<f32, WORDS>();
    let src = tile(prev, ti, tj, nb, bs).start;
    let up = row_in(cur, ti.wrapping_sub(1), tj, bs - 1, nb, bs).start;
    let down = row_in(prev, ti + 1, tj, 0, nb, bs).start;
    let lf = side(cur, ti, tj.wrapping_sub(1), 1, nb, bs).start;
    let rt = side(prev, ti, tj + 1, 0, nb, bs).start;
    b.par_for(0..bs * bs + 4 * bs, |k| {
        if k < bs * bs {
            g.set((k / bs + 1) * w + k % bs + 1, u[src + k]);
        } else {
            let (s, e) = ((k - bs * bs) / bs, (k - bs * bs) % bs);
            match s {
                0 => g.set(e + 1, if ti == 0 { TOP } else { u[up + e] }),
                1 => g.set(
                    (bs + 1) * w + e + 1,
                    if ti + 1 == nb { 0.0 } else { u[down + e] },
                ),
                2 => g.set((e + 1) * w, if tj == 0 { 0.0 } else { cols[lf + e] }),
                _ => g.set(
                    (e + 1) * w + bs + 1,
                    if tj + 1 == nb { 0.0 } else { cols[rt + e] },
                ),
            }
        }
    });
    // In place: on anti-diagonal d, the cells above and left are already this step's (d − 1),
    // those below and right still the previous step's (d + 1).
    anti_diagonals(b, bs as u32, |r, c| {
        let at = (r as usize + 1) * w + c as usize + 1;
        let v = g.get(at);
        let sum = (g.get(at - w) + g.get(at - 1)) + (g.get(at + w) + g.get(at + 1));
        g.set(at, v + alpha * (sum - 4.0 * v));
    });
    let dst = tile(cur, ti, tj, nb, bs).start;
    let edges = sides(cur, ti, tj, nb, bs).start;
    b.par_for(0..bs * bs + 2 * bs, |k| {
        if k < bs * bs {
            u[dst + k] = g.get((k / bs + 1) * w + k % bs + 1);
        } else {
            let (s, r) = ((k - bs * bs) / bs, (k - bs * bs) % bs);
            cols[edges + s * bs + r] = g.get((r + 1) * w + 1 + s * (bs - 1));
        }
    });
}

task_region! {
    /// `steps` Gauss-Seidel steps of heat diffusion over the plate in buffer 0 of `u` (two
    /// tile-major buffers of `nb × nb` tiles of `bs × bs`); `cols` holds both buffers' edge
    /// columns, buffer 0's filled in by the caller ([`reference::edges`]). The result is in buffer
    /// `steps % 2`.
    pub fn heat(u: &mut [f32], cols: &mut [f32], nb: usize, bs: usize, steps: usize, alpha: f32) {
        for t in 0..steps {
            for ti in 0..nb {
                for tj in 0..nb {
                    spawn!(heat_tile(u, cols, t, ti, tj, nb, bs, alpha));
                }
            }
        }
    }
}

task_region! {
    /// One Gauss-Seidel step of [`heat`] on resident buffers: from buffer `parity` of `u` (and
    /// its edge columns in `cols`) into buffer `1 - parity`. A time-stepping loop calls it with
    /// parities 0, 1, 0, … and keeps one plan per parity (`heat_steps`).
    pub fn heat_step(
        u: &mut DeviceArray<f32>,
        cols: &mut DeviceArray<f32>,
        nb: usize,
        bs: usize,
        parity: usize,
        alpha: f32,
    ) {
        for ti in 0..nb {
            for tj in 0..nb {
                spawn!(heat_tile(u, cols, parity, ti, tj, nb, bs, alpha));
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference, in `f64`, the input and the edge columns of a buffer.

    use crate::grid::host::Lcg;

    /// `steps` in-place row-major Gauss-Seidel sweeps over the row-major `n × n` plate `u`.
    pub fn heat(u: &[f32], n: usize, steps: usize, alpha: f32) -> Vec<f64> {
        let alpha = f64::from(alpha);
        let mut g: Vec<f64> = u.iter().map(|&v| f64::from(v)).collect();
        for _ in 0..steps {
            for r in 0..n {
                for c in 0..n {
                    let up = if r == 0 {
                        f64::from(super::TOP)
                    } else {
                        g[(r - 1) * n + c]
                    };
                    let lf = if c == 0 { 0.0 } else { g[r * n + c - 1] };
                    let dn = if r + 1 == n { 0.0 } else { g[(r + 1) * n + c] };
                    let rt = if c + 1 == n { 0.0 } else { g[r * n + c + 1] };
                    let v = g[r * n + c];
                    g[r * n + c] = v + alpha * (up + lf + dn + rt - 4.0 * v);
                }
            }
        }
        g
    }

    /// The edge columns of buffer 0 of the tile-major `u`, into buffer 0 of `cols`.
    pub fn edges(u: &[f32], cols: &mut [f32], nb: usize, bs: usize) {
        for i in 0..nb {
            for j in 0..nb {
                let t = super::tile(0, i, j, nb, bs).start;
                for s in 0..2 {
                    let e = super::side(0, i, j, s, nb, bs).start;
                    for r in 0..bs {
                        cols[e + r] = u[t + r * bs + s * (bs - 1)];
                    }
                }
            }
        }
    }

    /// A row-major `n × n` plate of temperatures in `0..1`.
    pub fn plate(n: usize, seed: u64) -> Vec<f32> {
        let mut rng = Lcg::new(seed);
        (0..n * n).map(|_| rng.unit()).collect()
    }
}
