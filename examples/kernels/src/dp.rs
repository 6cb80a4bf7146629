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

use core::num::NonZeroU32;

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
/// left of it is done. Tile coordinates are `u32`: a tile is small, and on the GPU 32-bit index
/// arithmetic takes half the registers and instructions of `usize`.
#[inline(always)]
pub fn anti_diagonals(b: &Block, n: u32, mut f: impl FnMut(u32, u32)) {
    let (first, step) = (b.thread() as u32, b.threads() as u32);
    if step >= n {
        // A diagonal has at most `n` cells: each thread runs one or none, with no loop around it
        // (whose set-up for further trips would cost more than the cell).
        for d in 0..(2 * n).saturating_sub(1) {
            let r = d.saturating_sub(n - 1) + first;
            if r <= d.min(n - 1) {
                f(r, d - r);
            }
            b.sync();
        }
        return;
    }
    for d in 0..(2 * n).saturating_sub(1) {
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
    assert!(
        (1..=MAX_TILE).contains(&bs),
        "DP tiles are 1 to 64 cells wide"
    );
    // Inside the tile everything is a `u32` (at most `WORDS`); array indices stay `usize`.
    let n = bs as u32;
    let w = grid::diagonal_stride(bs + 1) as u32;
    let h = b.shared::<i32, WORDS>();
    let xs = b.shared::<u8, MAX_TILE>();
    let ys = b.shared::<u8, MAX_TILE>();
    let (r0, c0) = (ti * bs, tj * bs);
    let up = grid::above(ti, tj, nb, bs, 1).start;
    let before = grid::left(ti, tj, nb, bs).start;
    let corner = grid::corner(ti, tj, nb, bs, 1).start;
    // The shared accesses below skip their bounds checks, which would cost six compares and
    // branches in a cell loop of about twenty instructions, and keep registers live across a
    // panic call at every access. They are in bounds: every index into `h` is `cell(r, c)` or its
    // neighbour up, left or up-left, with `r, c < n`, or a boundary cell `k + 1` or
    // `(k + 1)·w` with `k < n`, or 0; with `n <= MAX_TILE` and `w <= STRIDE` all of them lie in
    // `0..=n·w + n`, below `WORDS = (MAX_TILE + 1)·STRIDE`. Every index into `xs` and `ys` is
    // below `n <= MAX_TILE`.
    let cell = |r: u32, c: u32| ((r + 1) * w + c + 1) as usize;
    // 1. The boundary row (k < n), the boundary column (n <= k < 2n) and the corner.
    b.par_for(0..2 * n + 1, |k| {
        let ku = k as usize;
        if k < n {
            let v = if ti == 0 {
                rec.top(c0 + ku + 1)
            } else {
                m[up + ku]
            };
            let (xv, yv) = (x[r0 + ku], y[c0 + ku]);
            // SAFETY: tile indices (see above).
            unsafe {
                h.set_unchecked(ku + 1, v);
                xs.set_unchecked(ku, xv);
                ys.set_unchecked(ku, yv);
            }
        } else if k < 2 * n {
            let r = k - n;
            let v = if tj == 0 {
                rec.left(r0 + r as usize + 1)
            } else {
                cols[before + r as usize]
            };
            // SAFETY: tile indices (see above).
            unsafe { h.set_unchecked(cell(r, 0) - 1, v) };
        } else {
            let v = if ti == 0 {
                rec.top(c0)
            } else if tj == 0 {
                rec.left(r0)
            } else {
                cols[corner]
            };
            // SAFETY: tile indices (see above).
            unsafe { h.set_unchecked(0, v) };
        }
    });
    // 2. The cells, one anti-diagonal at a time.
    anti_diagonals(b, n, |r, c| {
        let (at, w) = (cell(r, c), w as usize);
        // SAFETY: tile indices (see above).
        unsafe {
            let v = rec.cell(
                h.get_unchecked(at - w - 1),
                h.get_unchecked(at - w),
                h.get_unchecked(at - 1),
                xs.get_unchecked(r as usize),
                ys.get_unchecked(c as usize),
            );
            h.set_unchecked(at, v);
        }
    });
    // 3. The tile row by row (coalesced), then its last column.
    let out = grid::tile(ti, tj, nb, bs * bs).start;
    let edge = grid::edge(ti, tj, 0, 1, nb, bs).start;
    let (first, step) = (b.thread() as u32, b.threads() as u32);
    // `n >= 1` (asserted above); the fallback only spares the division its zero check.
    let n1 = NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN);
    rows_then_column(n1, first, step, |k, r, c| {
        if r < n {
            // SAFETY: tile indices (see above).
            m[out + k as usize] = unsafe { h.get_unchecked(cell(r, c)) };
        } else {
            // SAFETY: tile indices (see above).
            cols[edge + c as usize] = unsafe { h.get_unchecked(cell(c, n - 1)) };
        }
    });
    b.sync();
}

/// Calls `f(k, r, c)` for `k = first, first + step, …` below `n² + n`, where `k = r·n + c`: the
/// cells `(r, c)` of an `n × n` tile row by row, then (`r == n`) the `n` rows `c` of its last
/// column. `(r, c)` steps along with `k`: no division by `n` per element, which in 64 bits is a
/// long instruction sequence on the GPU.
#[inline(always)]
pub fn rows_then_column(n: NonZeroU32, first: u32, step: u32, mut f: impl FnMut(u32, u32, u32)) {
    let (mut r, mut c) = (first / n, first % n);
    let (dr, dc) = (step / n, step % n);
    let n = n.get();
    let mut k = first;
    while r <= n {
        f(k, r, c);
        k += step;
        r += dr;
        c += dc;
        if c >= n {
            c -= n;
            r += 1;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::rows_then_column;
    use core::num::NonZeroU32;

    #[test]
    fn rows_then_column_visits_what_division_gives() {
        for n in 1..=64 {
            for step in [1, 3, 31, 32, 33, 64, 96, 128, 130] {
                let mut seen = Vec::new();
                for first in 0..step {
                    let nz = NonZeroU32::new(n).unwrap();
                    rows_then_column(nz, first, step, |k, r, c| seen.push((k, r, c)));
                }
                seen.sort_unstable();
                let want: Vec<_> = (0..n * n + n).map(|k| (k, k / n, k % n)).collect();
                assert_eq!(seen, want, "n {n}, step {step}");
            }
        }
    }
}
