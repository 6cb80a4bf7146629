//! Needleman-Wunsch global alignment of two DNA sequences, a tiled wavefront: tile `(i, j)` needs
//! the tiles above, to the left and up-left (see [`dp`]).
//!
//! Scores: +1 for a match, −1 for a mismatch, −1 per gap (linear), so `M(0, j) = −j` and
//! `M(i, 0) = −i`. The default size follows the NW runs of the oversubscribed-queues paper
//! (GPGPU'18): a 1536 × 1536 matrix of 32 × 32 tiles, `48² = 2304` tasks on `2·48 − 1 = 95`
//! anti-diagonal levels, one tile per task.

use taskweave::{Block, task, task_region};

use crate::dp::{self, Recurrence};
use crate::grid;

/// Score of a match.
pub const MATCH: i32 = 1;
/// Score of a mismatch.
pub const MISMATCH: i32 = -1;
/// Cost of one gap.
pub const GAP: i32 = 1;

/// The Needleman-Wunsch recurrence.
#[derive(Clone, Copy)]
pub struct Nw;

impl Recurrence for Nw {
    #[inline(always)]
    fn top(self, j: usize) -> i32 {
        -(j as i32) * GAP
    }
    #[inline(always)]
    fn left(self, i: usize) -> i32 {
        -(i as i32) * GAP
    }
    #[inline(always)]
    fn cell(self, diag: i32, up: i32, left: i32, x: u8, y: u8) -> i32 {
        let s = if x == y { MATCH } else { MISMATCH };
        (diag + s).max(up - GAP).max(left - GAP)
    }
}

/// Tile `(ti, tj)` of the score matrix `m`, its last column into `cols`.
#[task(
    reads = [
        x[ti * bs..(ti + 1) * bs],
        y[tj * bs..(tj + 1) * bs],
        m[grid::above(ti, tj, nb, bs, 1)],
        cols[grid::left(ti, tj, nb, bs)],
        cols[grid::corner(ti, tj, nb, bs, 1)]
    ],
    writes = [m[grid::tile(ti, tj, nb, bs * bs)], cols[grid::edge(ti, tj, 0, 1, nb, bs)]]
)]
#[allow(clippy::too_many_arguments)]
pub fn nw_tile(
    b: &Block,
    x: &[u8],
    y: &[u8],
    m: &mut [i32],
    cols: &mut [i32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    dp::tile(Nw, b, &x, &y, &mut m, &mut cols, ti, tj, nb, bs);
}

task_region! {
    /// Needleman-Wunsch over `x` (rows) and `y` (columns): `nb × nb` tiles of `bs × bs` cells,
    /// `m` tile-major, `cols` one edge column per tile.
    pub fn nw(
        x: &[u8],
        y: &[u8],
        #[output] m: &mut [i32],
        #[output] cols: &mut [i32],
        nb: usize,
        bs: usize,
    ) {
        for ti in 0..nb {
            for tj in 0..nb {
                spawn!(nw_tile(x, y, m, cols, ti, tj, nb, bs));
            }
        }
    }
}

task_region! {
    /// The tiles `(i, j)` with `i` and `j` odd, which read only tiles with an even coordinate: a
    /// region of `(nb / 2)²` independent `nw_tile` tasks, for timing one tile's cost. Passed
    /// arrays resident on the GPU (`Runtime::upload`), nothing is copied between runs, as the
    /// CUDA C program of `tile_bench --resident` keeps its arrays on the device.
    pub fn nw_odd_tiles(x: &[u8], y: &[u8], m: &mut [i32], cols: &mut [i32], nb: usize, bs: usize) {
        for ti in (1..nb).step_by(2) {
            for tj in (1..nb).step_by(2) {
                spawn!(nw_tile(x, y, m, cols, ti, tj, nb, bs));
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference: the full-matrix recurrence, row by row.

    /// `M(1.., 1..)` of Needleman-Wunsch over `x` and `y`, row-major (`x.len() × y.len()`).
    pub fn nw(x: &[u8], y: &[u8]) -> Vec<i32> {
        let (n, k) = (x.len(), y.len());
        let mut prev: Vec<i32> = (0..=k as i32).map(|j| -j * super::GAP).collect();
        let mut out = Vec::with_capacity(n * k);
        for i in 1..=n {
            let mut row = vec![-(i as i32) * super::GAP; k + 1];
            for j in 1..=k {
                let s = if x[i - 1] == y[j - 1] {
                    super::MATCH
                } else {
                    super::MISMATCH
                };
                row[j] = (prev[j - 1] + s)
                    .max(prev[j] - super::GAP)
                    .max(row[j - 1] - super::GAP);
            }
            out.extend_from_slice(&row[1..]);
            prev = row;
        }
        out
    }
}
