//! One tile of a dynamic program over two sequences (Needleman-Wunsch, Smith-Waterman, dynamic
//! time warping): the recurrence `M(i, j) = f(M(i-1, j-1), M(i-1, j), M(i, j-1), x[i], y[j])`.
//!
//! The score matrix `M` (without its boundary row and column, which the recurrence defines) is
//! tile-major ([`grid`]); every tile also stores its last column in an edge array for the tile to
//! its right. A tile task:
//!
//! 1. loads its boundary (the last row of the tile above, the edge column of the tile to the left,
//!    the corner from the up-left tile's edge, or the recurrence's own boundary at the matrix edge)
//!    and its two sequence pieces into shared memory, coalesced;
//! 2. sweeps the tile's anti-diagonals, one cell per thread, a block barrier between diagonals;
//!    rows are [`grid::diagonal_stride`] words apart, so a diagonal touches 32 distinct banks;
//! 3. writes the tile back row by row (coalesced) and its last column to the edge array.

use taskweave::{Block, View, ViewMut};

use crate::grid;

/// The largest tile side the shared-memory buffer holds.
pub const MAX_TILE: usize = 64;

/// The row stride of the shared tile (one boundary column plus `MAX_TILE` cells, made even).
const STRIDE: usize = grid::diagonal_stride(MAX_TILE + 1);

/// Shared words per tile: the boundary row plus `MAX_TILE` rows.
const WORDS: usize = (MAX_TILE + 1) * STRIDE;

/// Shared-memory bytes a region of DP tiles needs per block (the score tile and both sequences).
pub const SHARED_BYTES: u32 = (WORDS * 4 + 2 * MAX_TILE) as u32;

/// A two-sequence recurrence over `i32` scores and byte symbols.
pub trait Recurrence: Copy {
    /// `M(0, j)`, the boundary row (`j = 0` is the corner).
    fn top(self, j: usize) -> i32;
    /// `M(i, 0)`, the boundary column (`i = 0` is the corner).
    fn left(self, i: usize) -> i32;
    /// `M(i, j)` from its three predecessors and the symbols `x[i - 1]`, `y[j - 1]`.
    fn cell(self, diag: i32, up: i32, left: i32, x: u8, y: u8) -> i32;
}

/// Calls `f(r, c)` for every cell of an `n × n` tile, one anti-diagonal at a time, spread over the
/// block's threads with a barrier after each diagonal: when `f(r, c)` runs, every cell above or
/// left of it is done.
#[inline(always)]
pub fn anti_diagonals(b: &Block, n: usize, mut f: impl FnMut(usize, usize)) {
    for d in 0..2 * n - 1 {
        let lo = d.saturating_sub(n - 1);
        let hi = d.min(n - 1);
        b.par_for(lo..hi + 1, |r| f(r, d - r));
    }
}

/// Computes tile `(ti, tj)` of `rec` over `x` (rows) and `y` (columns) into `m` and its last
/// column into `cols` (see the module docs). `bs <= MAX_TILE`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn tile<R: Recurrence, const C: bool>(
    rec: R,
    b: &Block,
    x: &View<'_, u8, C>,
    y: &View<'_, u8, C>,
    m: &mut ViewMut<'_, i32, C>,
    cols: &mut ViewMut<'_, i32, C>,
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    assert!(bs <= MAX_TILE, "DP tiles are at most 64 cells wide");
    let w = grid::diagonal_stride(bs + 1);
    let h = b.shared::<i32, WORDS>();
    let xs = b.shared::<u8, MAX_TILE>();
    let ys = b.shared::<u8, MAX_TILE>();
    let (r0, c0) = (ti * bs, tj * bs);
    let up = grid::above(ti, tj, nb, bs, 1).start;
    let before = grid::left(ti, tj, nb, bs).start;
    let corner = grid::corner(ti, tj, nb, bs, 1).start;
    // 1. The boundary row (k < bs), the boundary column (bs <= k < 2bs) and the corner.
    b.par_for(0..2 * bs + 1, |k| {
        if k < bs {
            h.set(
                k + 1,
                if ti == 0 {
                    rec.top(c0 + k + 1)
                } else {
                    m[up + k]
                },
            );
            xs.set(k, x[r0 + k]);
            ys.set(k, y[c0 + k]);
        } else if k < 2 * bs {
            let r = k - bs;
            let v = if tj == 0 {
                rec.left(r0 + r + 1)
            } else {
                cols[before + r]
            };
            h.set((r + 1) * w, v);
        } else {
            let v = if ti == 0 {
                rec.top(c0)
            } else if tj == 0 {
                rec.left(r0)
            } else {
                cols[corner]
            };
            h.set(0, v);
        }
    });
    // 2. The cells, one anti-diagonal at a time.
    anti_diagonals(b, bs, |r, c| {
        let at = (r + 1) * w + c + 1;
        let v = rec.cell(
            h.get(at - w - 1),
            h.get(at - w),
            h.get(at - 1),
            xs.get(r),
            ys.get(c),
        );
        h.set(at, v);
    });
    // 3. The tile, row by row, and its last column.
    let out = grid::tile(ti, tj, nb, bs * bs).start;
    let edge = grid::edge(ti, tj, 0, 1, nb, bs).start;
    b.par_for(0..bs * bs + bs, |k| {
        if k < bs * bs {
            m[out + k] = h.get((k / bs + 1) * w + k % bs + 1);
        } else {
            let r = k - bs * bs;
            cols[edge + r] = h.get((r + 1) * w + bs);
        }
    });
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    //! What the DP workloads share on the host: inputs, and the edge array of a finished matrix.

    use super::super::grid::host::Lcg;

    /// A random DNA sequence of `n` symbols (`ACGT`).
    pub fn dna(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = Lcg::new(seed);
        (0..n).map(|_| b"ACGT"[(rng.next() % 4) as usize]).collect()
    }

    /// `x` with about one symbol in `rate` substituted, so that aligning it with `x` scores well
    /// but not perfectly.
    pub fn mutate(x: &[u8], rate: u32, seed: u64) -> Vec<u8> {
        let mut rng = Lcg::new(seed);
        x.iter()
            .map(|&s| {
                if rng.next().is_multiple_of(rate) {
                    b"ACGT"[(rng.next() % 4) as usize]
                } else {
                    s
                }
            })
            .collect()
    }

    /// The edge array of a finished tile-major matrix `m`: every tile's last column.
    pub fn edges(m: &[i32], nb: usize, bs: usize) -> Vec<i32> {
        let mut cols = vec![0; nb * nb * bs];
        for t in 0..nb * nb {
            for r in 0..bs {
                cols[t * bs + r] = m[t * bs * bs + r * bs + bs - 1];
            }
        }
        cols
    }
}
