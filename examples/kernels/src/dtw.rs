//! Dynamic time warping of two integer time series, a tiled wavefront (see [`dp`]).
//!
//! `D(i, j) = |x[i] − y[j]| + min(D(i−1, j−1), D(i−1, j), D(i, j−1))` with `D(0, 0) = 0` and the
//! rest of the boundary infinite; samples are bytes, so every cost and sum is an exact `i32`. The
//! default size gives Juggler's DT-WARP task count: two series of 4608 samples in 64 × 64 tiles,
//! `72² = 5184` tasks, whose anti-diagonals hold 1 to 72 tasks (Table 1's "1-72").

use taskweave::{Block, task, task_region};

use crate::dp::{self, Recurrence};
use crate::grid;

/// The boundary's "infinity": far above any warping cost (at most `255 · 2n`), and far enough
/// below `i32::MAX` that adding one cost cannot overflow.
pub const INF: i32 = i32::MAX / 2;

/// The dynamic-time-warping recurrence.
#[derive(Clone, Copy)]
pub struct Dtw;

impl Recurrence for Dtw {
    #[inline(always)]
    fn top(self, j: usize) -> i32 {
        if j == 0 { 0 } else { INF }
    }
    #[inline(always)]
    fn left(self, i: usize) -> i32 {
        if i == 0 { 0 } else { INF }
    }
    #[inline(always)]
    fn cell(self, diag: i32, up: i32, left: i32, x: u8, y: u8) -> i32 {
        let cost = (i32::from(x) - i32::from(y)).abs();
        cost + diag.min(up).min(left)
    }
}

/// Tile `(ti, tj)` of the cost matrix `d`, its last column into `cols`.
#[task(
    reads = [
        x[ti * bs..(ti + 1) * bs],
        y[tj * bs..(tj + 1) * bs],
        d[grid::above(ti, tj, nb, bs, 1)],
        cols[grid::left(ti, tj, nb, bs)],
        cols[grid::corner(ti, tj, nb, bs, 1)]
    ],
    writes = [d[grid::tile(ti, tj, nb, bs * bs)], cols[grid::edge(ti, tj, 0, 1, nb, bs)]]
)]
#[allow(clippy::too_many_arguments)]
pub fn dtw_tile(
    b: &Block,
    x: &[u8],
    y: &[u8],
    d: &mut [i32],
    cols: &mut [i32],
    ti: usize,
    tj: usize,
    nb: usize,
    bs: usize,
) {
    dp::tile(Dtw, b, &x, &y, &mut d, &mut cols, ti, tj, nb, bs);
}

task_region! {
    /// Dynamic time warping of `x` (rows) against `y` (columns): `nb × nb` tiles of `bs × bs`
    /// cells, `d` tile-major, `cols` one edge column per tile.
    pub fn dtw(
        x: &[u8],
        y: &[u8],
        #[output] d: &mut [i32],
        #[output] cols: &mut [i32],
        nb: usize,
        bs: usize,
    ) {
        for ti in 0..nb {
            for tj in 0..nb {
                spawn!(dtw_tile(x, y, d, cols, ti, tj, nb, bs));
            }
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference and the inputs.

    use crate::grid::host::Lcg;

    /// `D(1.., 1..)` of dynamic time warping of `x` against `y`, row-major.
    pub fn dtw(x: &[u8], y: &[u8]) -> Vec<i32> {
        let k = y.len();
        let mut prev = vec![super::INF; k + 1];
        prev[0] = 0;
        let mut out = Vec::with_capacity(x.len() * k);
        for &a in x {
            let mut row = vec![super::INF; k + 1];
            for j in 1..=k {
                let cost = (i32::from(a) - i32::from(y[j - 1])).abs();
                row[j] = cost + prev[j - 1].min(prev[j]).min(row[j - 1]);
            }
            out.extend_from_slice(&row[1..]);
            prev = row;
        }
        out
    }

    /// A random walk of `n` byte samples.
    pub fn series(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = Lcg::new(seed);
        let mut v = 128i32;
        (0..n)
            .map(|_| {
                v = (v + (rng.next() % 9) as i32 - 4).clamp(0, 255);
                v as u8
            })
            .collect()
    }

    /// `x` resampled at a slowly varying rate, with a little noise: a warped copy to match it
    /// against.
    pub fn warped(x: &[u8], seed: u64) -> Vec<u8> {
        let mut rng = Lcg::new(seed);
        let n = x.len();
        (0..n)
            .map(|j| {
                let phase = (j as f64 / n as f64 * core::f64::consts::TAU * 3.0).sin();
                let at = (j as f64 + phase * n as f64 / 50.0).clamp(0.0, (n - 1) as f64);
                let noise = (rng.next() % 5) as i32 - 2;
                (i32::from(x[at as usize]) + noise).clamp(0, 255) as u8
            })
            .collect()
    }
}
