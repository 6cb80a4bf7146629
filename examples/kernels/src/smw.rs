//! Smith-Waterman local alignment of two DNA sequences, a tiled wavefront (see [`dp`]).
//!
//! Scores: +3 for a match, −3 for a mismatch, −2 per gap (linear), floored at 0, so the boundary
//! row and column are 0. The default size gives Juggler's SM-W task count: a 4608 × 4608 matrix of
//! 64 × 64 tiles, `72² = 5184` tasks, whose anti-diagonals hold 1 to 72 tasks (Table 1's
//! "1-72").

use taskweave::{Block, task, task_region};

use crate::dp::{self, Recurrence};
use crate::grid;

/// Score of a match.
pub const MATCH: i32 = 3;
/// Score of a mismatch.
pub const MISMATCH: i32 = -3;
/// Cost of one gap.
pub const GAP: i32 = 2;

/// The Smith-Waterman recurrence.
#[derive(Clone, Copy)]
pub struct SmithWaterman;

impl Recurrence for SmithWaterman {
    #[inline(always)]
    fn top(self, _: usize) -> i32 {
        0
    }
    #[inline(always)]
    fn left(self, _: usize) -> i32 {
        0
    }
    #[inline(always)]
    fn cell(self, diag: i32, up: i32, left: i32, x: u8, y: u8) -> i32 {
        let s = if x == y { MATCH } else { MISMATCH };
        (diag + s).max(up - GAP).max(left - GAP).max(0)
    }
}

/// Tile `(ti, tj)` of the score matrix `h`, its last column into `cols`.
#[task(
    reads = [
        x[ti * bs..(ti + 1) * bs],
        y[tj * bs..(tj + 1) * bs],
        h[grid::above(ti, tj, nb, bs, 1)],
        cols[grid::left(ti, tj, nb, bs)],
        cols[grid::corner(ti, tj, nb, bs, 1)]
    ],
    writes = [h[grid::tile(ti, tj, nb, bs * bs)], cols[grid::edge(ti, tj, 0, 1, nb, bs)]]
)]
#[allow(clippy::too_many_arguments)]
pub fn smw_tile(
    b: &Block,
    x: &[u8],
    y: &[u8],
    h: &mut [i32],
    cols: &mut [i32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    dp::tile(SmithWaterman, b, &x, &y, &mut h, &mut cols, ti, tj, nb, bs);
}

task_region! {
    /// Smith-Waterman over `x` (rows) and `y` (columns): `nb × nb` tiles of `bs × bs` cells, `h`
    /// tile-major, `cols` one edge column per tile.
    pub fn smw(
        x: &[u8],
        y: &[u8],
        #[output] h: &mut [i32],
        #[output] cols: &mut [i32],
        nb: usize,
        bs: usize,
    ) {
        for ti in 0..nb {
            for tj in 0..nb {
                spawn!(smw_tile(x, y, h, cols, ti, tj, nb, bs));
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference: the full-matrix recurrence, row by row.

    /// `H(1.., 1..)` of Smith-Waterman over `x` and `y`, row-major (`x.len() × y.len()`).
    pub fn smw(x: &[u8], y: &[u8]) -> Vec<i32> {
        let k = y.len();
        let mut prev = vec![0i32; k + 1];
        let mut out = Vec::with_capacity(x.len() * k);
        for &a in x {
            let mut row = vec![0i32; k + 1];
            for j in 1..=k {
                let s = if a == y[j - 1] {
                    super::MATCH
                } else {
                    super::MISMATCH
                };
                row[j] = (prev[j - 1] + s)
                    .max(prev[j] - super::GAP)
                    .max(row[j - 1] - super::GAP)
                    .max(0);
            }
            out.extend_from_slice(&row[1..]);
            prev = row;
        }
        out
    }
}
