//! The tile-major layout the wavefront and stencil workloads share, and the ranges their tasks
//! declare.
//!
//! A square grid of `nb × nb` tiles, each `bs × bs` cells of `depth` values (`depth` is 1 except
//! for the integral histogram, which keeps one count per bin), is stored tile by tile: tile
//! `(i, j)` is contiguous, row-major inside with the `depth` values of a cell together. A tile is
//! then one range, and so is each of its rows, in particular the last row the tile below reads.
//!
//! A tile's columns are strided, so the tile that needs its left neighbour's last column reads it
//! from a separate *edge* array, where every tile stores the columns its neighbours read (`sides`
//! of them, `bs × depth` values each) once it is done. Every range a task declares is then exact.

use core::ops::Range;

/// The range of tile `(i, j)` in a grid of `nb × nb` tiles of `len` values each.
#[inline(always)]
pub const fn tile(i: usize, j: usize, nb: usize, len: usize) -> Range<usize> {
    let start = (i * nb + j) * len;
    start..start + len
}

/// Row `r` of tile `(i, j)`: `bs × depth` values.
#[inline(always)]
pub const fn row(i: usize, j: usize, r: usize, nb: usize, bs: usize, depth: usize) -> Range<usize> {
    let start = tile(i, j, nb, bs * bs * depth).start + r * bs * depth;
    start..start + bs * depth
}

/// The last row of the tile above `(i, j)`, empty on the first tile row.
#[inline(always)]
pub const fn above(i: usize, j: usize, nb: usize, bs: usize, depth: usize) -> Range<usize> {
    if i == 0 {
        0..0
    } else {
        row(i - 1, j, bs - 1, nb, bs, depth)
    }
}

/// Side `side` of tile `(i, j)` in an edge array holding `sides` columns of `len` values per tile.
#[inline(always)]
pub const fn edge(
    i: usize,
    j: usize,
    side: usize,
    sides: usize,
    nb: usize,
    len: usize,
) -> Range<usize> {
    let start = tile(i, j, nb, sides * len).start + side * len;
    start..start + len
}

/// The edge column of the tile left of `(i, j)` (its only side), empty on the first tile column.
#[inline(always)]
pub const fn left(i: usize, j: usize, nb: usize, len: usize) -> Range<usize> {
    if j == 0 {
        0..0
    } else {
        edge(i, j - 1, 0, 1, nb, len)
    }
}

/// The cell above and left of tile `(i, j)`'s first cell: the last `depth` values of the up-left
/// tile's edge column. Empty on the first tile row and column.
#[inline(always)]
pub const fn corner(i: usize, j: usize, nb: usize, len: usize, depth: usize) -> Range<usize> {
    if i == 0 || j == 0 {
        0..0
    } else {
        let end = edge(i - 1, j - 1, 0, 1, nb, len).end;
        end - depth..end
    }
}

/// A row stride for a tile kept in shared memory whose threads walk anti-diagonals: consecutive
/// cells of an anti-diagonal lie `stride - 1` words apart, so an odd `stride - 1` spreads a warp
/// over all 32 banks. At least `min`.
#[inline(always)]
pub const fn diagonal_stride(min: usize) -> usize {
    min + min % 2
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    //! Conversions between the tile-major layout and row-major matrices, for inputs and references.

    /// The tile-major index of row-major cell `(r, c)` (value `k` of it) of an `nb·bs`-wide grid.
    pub fn index(r: usize, c: usize, k: usize, nb: usize, bs: usize, depth: usize) -> usize {
        super::tile(r / bs, c / bs, nb, bs * bs * depth).start
            + ((r % bs) * bs + c % bs) * depth
            + k
    }

    /// The row-major copy of a tile-major grid.
    pub fn to_row_major<T: Copy>(tiled: &[T], nb: usize, bs: usize, depth: usize) -> Vec<T> {
        let n = nb * bs;
        let mut out = Vec::with_capacity(tiled.len());
        for r in 0..n {
            for c in 0..n {
                for k in 0..depth {
                    out.push(tiled[index(r, c, k, nb, bs, depth)]);
                }
            }
        }
        out
    }

    /// The tile-major copy of a row-major grid.
    pub fn to_tile_major<T: Copy>(rows: &[T], nb: usize, bs: usize, depth: usize) -> Vec<T> {
        let n = nb * bs;
        let mut out = rows.to_vec();
        for r in 0..n {
            for c in 0..n {
                for k in 0..depth {
                    out[index(r, c, k, nb, bs, depth)] = rows[(r * n + c) * depth + k];
                }
            }
        }
        out
    }

    /// A deterministic stream of pseudo-random 32-bit words (a 64-bit LCG's high half).
    pub struct Lcg(u64);

    impl Lcg {
        /// The stream for `seed`.
        pub fn new(seed: u64) -> Self {
            Self(seed.wrapping_mul(6364136223846793005) ^ 0x9e37_79b9_7f4a_7c15)
        }

        /// The next word.
        #[allow(clippy::should_implement_trait)]
        pub fn next(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 32) as u32
        }

        /// The next value in `0.0..1.0`.
        pub fn unit(&mut self) -> f32 {
            (self.next() >> 8) as f32 / (1u32 << 24) as f32
        }
    }

    /// `‖x − reference‖ / ‖reference‖` in the Frobenius norm.
    pub fn relative_error(x: &[f32], reference: &[f64]) -> f64 {
        let (mut diff, mut norm) = (0.0f64, 0.0f64);
        for (a, b) in x.iter().zip(reference) {
            diff += (f64::from(*a) - b).powi(2);
            norm += b * b;
        }
        (diff / norm).sqrt()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn layouts_round_trip() {
            let (nb, bs, depth) = (3, 2, 2);
            let rows: Vec<u32> = (0..(nb * bs * nb * bs * depth) as u32).collect();
            let tiled = to_tile_major(&rows, nb, bs, depth);
            assert_ne!(tiled, rows);
            // Tile (0, 1) starts with row-major cell (0, 2).
            assert_eq!(tiled[bs * bs * depth], rows[2 * depth]);
            assert_eq!(to_row_major(&tiled, nb, bs, depth), rows);
        }

        #[test]
        fn ranges_name_the_neighbours() {
            let (nb, bs) = (4, 8);
            assert_eq!(super::super::above(0, 2, nb, bs, 1), 0..0);
            assert_eq!(
                super::super::above(1, 2, nb, bs, 1),
                (2 * 64 + 56)..(3 * 64)
            );
            assert_eq!(super::super::left(1, 0, nb, bs), 0..0);
            assert_eq!(super::super::left(1, 2, nb, bs), (5 * 8)..(6 * 8));
            assert_eq!(super::super::corner(1, 2, nb, bs, 1), (2 * 8 - 1)..(2 * 8));
            assert_eq!(
                super::super::edge(1, 2, 1, 2, nb, bs),
                (6 * 16 + 8)..(7 * 16)
            );
            assert_eq!(super::super::diagonal_stride(65), 66);
            assert_eq!(super::super::diagonal_stride(66), 66);
        }
    }
}
