//! Integral histogram of a byte image, a tiled wavefront: `H(r, c, k)` counts the pixels at or
//! above and left of `(r, c)` that fall in bin `k`, one integral image per bin.
//!
//! The histogram is tile-major with the `bins` counts of a pixel together (depth `bins` in
//! [`grid`]), so a tile's last row and its edge column are ranges that hold every bin. Tile
//! `(i, j)` computes per-bin 2D prefix sums of its pixels in shared memory and adds the last row
//! of the tile above, the edge column of the tile to the left and the corner, as the summed-area
//! table does per value. The default size gives Juggler's INT-HIST task count: a 1440 × 1440
//! image of 16 × 16 tiles with 16 bins, `90² = 8100` tasks, whose anti-diagonals hold 1 to 90
//! tasks (Table 1's "1-90").

use taskweave::{Block, task, task_region};

use crate::grid;

/// Shared words for per-bin row sums: `bs² × bins` of them at a time, in as many passes as it takes.
const WORDS: usize = 4096;

/// The largest tile side (one bin per pass fits).
pub const MAX_TILE: usize = 64;

/// The most bins.
pub const MAX_BINS: usize = 256;

/// Shared-memory bytes a region of histogram tiles needs per block: the row sums and the tile's
/// pixels' bins.
pub const SHARED_BYTES: u32 = (WORDS * 4 + MAX_TILE * MAX_TILE) as u32;

/// The bin of pixel value `v` among `bins` equal bins.
#[inline(always)]
pub fn bin(v: u8, bins: usize) -> usize {
    usize::from(v) * bins / 256
}

/// Tile `(ti, tj)` of the histogram `h` of the image `img`; its last column into `cols`.
#[task(
    reads = [
        img[grid::tile(ti, tj, nb, bs * bs)],
        h[grid::above(ti, tj, nb, bs, bins)],
        cols[grid::left(ti, tj, nb, bs * bins)],
        cols[grid::corner(ti, tj, nb, bs * bins, bins)]
    ],
    writes = [
        h[grid::tile(ti, tj, nb, bs * bs * bins)],
        cols[grid::edge(ti, tj, 0, 1, nb, bs * bins)]
    ]
)]
#[allow(clippy::too_many_arguments)]
pub fn hist_tile(
    b: &Block,
    img: &[u8],
    h: &mut [u32],
    cols: &mut [u32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
    bins: usize,
) {
    assert!(
        bs <= MAX_TILE && (1..=MAX_BINS).contains(&bins),
        "histogram tiles are at most 64 pixels wide, with 1 to 256 bins"
    );
    let rs = b.shared::<u32, WORDS>();
    let px = b.shared::<u8, { MAX_TILE * MAX_TILE }>();
    let base = grid::tile(ti, tj, nb, bs * bs).start;
    b.par_for(0..bs * bs, |k| px.set(k, bin(img[base + k], bins) as u8));
    let out = grid::tile(ti, tj, nb, bs * bs * bins).start;
    let up = grid::above(ti, tj, nb, bs, bins).start;
    let before = grid::left(ti, tj, nb, bs * bins).start;
    let corner = grid::corner(ti, tj, nb, bs * bins, bins).start;
    let edge = grid::edge(ti, tj, 0, 1, nb, bs * bins).start;
    // Bins `k0..k0 + chunk` per pass, so that their row sums fit in shared memory.
    let chunk = (WORDS / (bs * bs)).min(bins);
    let mut k0 = 0;
    while k0 < bins {
        let cb = chunk.min(bins - k0);
        // Per-bin prefix sums along each row: thread (r, k) walks row r for bin k0 + k.
        b.par_for(0..bs * cb, |e| {
            let (r, k) = (e / cb, e % cb);
            let mut acc = 0u32;
            for c in 0..bs {
                acc += u32::from(usize::from(px.get(r * bs + c)) == k0 + k);
                rs.set((r * bs + c) * cb + k, acc);
            }
        });
        // Down each column: thread (c, k) adds the row sums of bin k0 + k and the neighbours'
        // counts; consecutive threads write consecutive counts.
        b.par_for(0..bs * cb, |e| {
            let (c, k) = (e / cb, e % cb);
            let kk = k0 + k;
            let (top, diag) = match (ti, tj) {
                (0, _) => (0, 0),
                (_, 0) => (h[up + c * bins + kk], 0),
                _ => (h[up + c * bins + kk], cols[corner + kk]),
            };
            let mut acc = top.wrapping_sub(diag);
            for r in 0..bs {
                acc = acc.wrapping_add(rs.get((r * bs + c) * cb + k));
                let lf = if tj == 0 {
                    0
                } else {
                    cols[before + r * bins + kk]
                };
                let v = acc.wrapping_add(lf);
                h[out + (r * bs + c) * bins + kk] = v;
                if c == bs - 1 {
                    cols[edge + r * bins + kk] = v;
                }
            }
        });
        k0 += cb;
    }
}

task_region! {
    /// The integral histogram `h` (`bins` per pixel) of the tile-major image `img` (`nb × nb`
    /// tiles of `bs × bs`); `cols` holds one edge column (every bin) per tile.
    pub fn int_hist(
        img: &[u8],
        #[output] h: &mut [u32],
        #[output] cols: &mut [u32],
        nb: usize,
        bs: usize,
        bins: usize,
    ) {
        for ti in 0..nb {
            for tj in 0..nb {
                spawn!(hist_tile(img, h, cols, ti, tj, nb, bs, bins));
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference and the input.

    use crate::grid::host::Lcg;

    /// The integral histogram of the row-major `n × n` image, row-major with `bins` counts per
    /// pixel: `H(r, c) = e(r, c) + H(r−1, c) + H(r, c−1) − H(r−1, c−1)`.
    pub fn int_hist(img: &[u8], n: usize, bins: usize) -> Vec<u32> {
        let mut h = vec![0u32; n * n * bins];
        for r in 0..n {
            for c in 0..n {
                let own = super::bin(img[r * n + c], bins);
                for k in 0..bins {
                    let at = |r: usize, c: usize| h[(r * n + c) * bins + k];
                    let up = if r > 0 { at(r - 1, c) } else { 0 };
                    let lf = if c > 0 { at(r, c - 1) } else { 0 };
                    let dg = if r > 0 && c > 0 { at(r - 1, c - 1) } else { 0 };
                    h[(r * n + c) * bins + k] = u32::from(own == k) + up + lf - dg;
                }
            }
        }
        h
    }

    /// A row-major `n × n` image: smooth gradients plus noise, so every bin is used.
    pub fn image(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = Lcg::new(seed);
        (0..n * n)
            .map(|e| {
                let (r, c) = (e / n, e % n);
                ((r * 7 + c * 3) % 200 + (rng.next() % 56) as usize) as u8
            })
            .collect()
    }
}
