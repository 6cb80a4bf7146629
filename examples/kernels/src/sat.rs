//! Summed-area table of an image of 32-bit values, a tiled wavefront: `S(r, c)` is the sum of
//! every value at or above and left of `(r, c)`, in wrapping `u32` arithmetic (exact modulo 2³²).
//!
//! Tile `(i, j)` adds its own 2D prefix sums to the last row of the tile above, the last column of
//! the tile to the left and the corner: `S = top(c) + left(r) − corner + local(r, c)`. The default
//! size gives Juggler's SA-TABLE task count: a 2880 × 2880 image of 32 × 32 tiles, `90² = 8100`
//! tasks. (Table 1 lists SA-TABLE's parallelism as 90; this wavefront's anti-diagonals hold 1 to
//! 90 tiles.)

use taskweave::{Block, task, task_region};

use crate::grid;

/// The largest tile side the shared-memory buffers hold.
pub const MAX_TILE: usize = 64;

/// Shared words: the tile at a row stride of `MAX_TILE + 1` (conflict-free row and column walks),
/// plus the left column.
const WORDS: usize = MAX_TILE * (MAX_TILE + 1);

/// Shared-memory bytes a region of SAT tiles needs per block.
pub const SHARED_BYTES: u32 = ((WORDS + MAX_TILE) * 4) as u32;

/// Tile `(ti, tj)` of the table `s` from the image `x`; its last column into `cols`.
#[task(
    reads = [
        x[grid::tile(ti, tj, nb, bs * bs)],
        s[grid::above(ti, tj, nb, bs, 1)],
        cols[grid::left(ti, tj, nb, bs)],
        cols[grid::corner(ti, tj, nb, bs, 1)]
    ],
    writes = [s[grid::tile(ti, tj, nb, bs * bs)], cols[grid::edge(ti, tj, 0, 1, nb, bs)]]
)]
#[allow(clippy::too_many_arguments)]
pub fn sat_tile(
    b: &Block,
    x: &[u32],
    s: &mut [u32],
    cols: &mut [u32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    assert!(bs <= MAX_TILE, "SAT tiles are at most 64 cells wide");
    let w = bs + 1;
    let t = b.shared::<u32, WORDS>();
    let lf = b.shared::<u32, MAX_TILE>();
    let base = grid::tile(ti, tj, nb, bs * bs).start;
    let before = grid::left(ti, tj, nb, bs).start;
    // The tile, coalesced, and the left column (zero at the image's left edge).
    b.par_for(0..bs * bs + bs, |k| {
        if k < bs * bs {
            t.set(k / bs * w + k % bs, x[base + k]);
        } else {
            let r = k - bs * bs;
            lf.set(r, if tj == 0 { 0 } else { cols[before + r] });
        }
    });
    // Prefix sums along each row, one row per thread.
    b.par_for(0..bs, |r| {
        let mut acc = 0u32;
        for c in 0..bs {
            acc = acc.wrapping_add(t.get(r * w + c));
            t.set(r * w + c, acc);
        }
    });
    // Down each column, one column per thread: consecutive threads write consecutive cells.
    let up = grid::above(ti, tj, nb, bs, 1).start;
    let corner = if ti == 0 || tj == 0 {
        0
    } else {
        cols[grid::corner(ti, tj, nb, bs, 1).start]
    };
    let edge = grid::edge(ti, tj, 0, 1, nb, bs).start;
    b.par_for(0..bs, |c| {
        let mut acc = if ti == 0 { 0 } else { s[up + c] }.wrapping_sub(corner);
        for r in 0..bs {
            acc = acc.wrapping_add(t.get(r * w + c));
            let v = acc.wrapping_add(lf.get(r));
            s[base + r * bs + c] = v;
            if c == bs - 1 {
                cols[edge + r] = v;
            }
        }
    });
}

task_region! {
    /// The summed-area table `s` of the tile-major image `x` (`nb × nb` tiles of `bs × bs`);
    /// `cols` holds one edge column per tile.
    pub fn sat(
        x: &[u32],
        #[output] s: &mut [u32],
        #[output] cols: &mut [u32],
        nb: usize,
        bs: usize,
    ) {
        for ti in 0..nb {
            for tj in 0..nb {
                spawn!(sat_tile(x, s, cols, ti, tj, nb, bs));
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference and the input.

    use crate::grid::host::Lcg;

    /// The summed-area table of the row-major `n × n` image `x`, row-major, wrapping.
    pub fn sat(x: &[u32], n: usize) -> Vec<u32> {
        let mut s = vec![0u32; n * n];
        for r in 0..n {
            let mut row = 0u32;
            for c in 0..n {
                row = row.wrapping_add(x[r * n + c]);
                let above = if r > 0 { s[(r - 1) * n + c] } else { 0 };
                s[r * n + c] = row.wrapping_add(above);
            }
        }
        s
    }

    /// A row-major `n × n` image of bytes-sized values.
    pub fn image(n: usize, seed: u64) -> Vec<u32> {
        let mut rng = Lcg::new(seed);
        (0..n * n).map(|_| rng.next() % 256).collect()
    }
}
