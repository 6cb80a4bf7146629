//! LU-D, Juggler's workload: tiled LU decomposition without pivoting as in its listing 3, with
//! scalar-loop bodies on any tile side. `lu0` factors a diagonal tile, `fwd` and `bdiv` solve the
//! tiles right of and below it, `bmod` updates the trailing tiles. (The same factorization on the
//! tile library, f64 and f32, is [`lu`](crate::lu).)
//!
//! The matrix is stored tile-major: `nb × nb` tiles of `bs × bs` elements, tile `(i, j)` contiguous
//! at offset `(i * nb + j) * bs * bs`, row-major inside. Each tile is then one range, so the
//! declared accesses are exact.

use taskweave::{Block, task, task_region};

/// The element range of tile `(i, j)`.
pub const fn tile(i: usize, j: usize, nb: usize, bs: usize) -> core::ops::Range<usize> {
    let start = (i * nb + j) * bs * bs;
    start..start + bs * bs
}

/// Factors diagonal tile `k` in place: unit-lower `L` below the diagonal, `U` on and above it.
#[task(reads = a[tile(k, k, nb, bs)], writes = a[tile(k, k, nb, bs)])]
pub fn lu0(b: &Block, a: &mut [f32], k: usize, nb: usize, bs: usize) {
    let d = tile(k, k, nb, bs).start;
    for p in 0..bs {
        let pivot = a[d + p * bs + p];
        b.par_for(p + 1..bs, |r| a[d + r * bs + p] /= pivot);
        let width = bs - p - 1;
        b.par_for(0..width * width, |e| {
            let (r, c) = (p + 1 + e / width, p + 1 + e % width);
            a[d + r * bs + c] -= a[d + r * bs + p] * a[d + p * bs + c];
        });
    }
}

/// `A[k][j] = L[k][k]⁻¹ · A[k][j]`: forward substitution, one column per thread.
#[task(reads = [a[tile(k, k, nb, bs)], a[tile(k, j, nb, bs)]], writes = a[tile(k, j, nb, bs)])]
pub fn fwd(b: &Block, a: &mut [f32], k: usize, j: usize, nb: usize, bs: usize) {
    let d = tile(k, k, nb, bs).start;
    let t = tile(k, j, nb, bs).start;
    b.par_for(0..bs, |c| {
        for r in 1..bs {
            let mut sum = a[t + r * bs + c];
            for q in 0..r {
                sum -= a[d + r * bs + q] * a[t + q * bs + c];
            }
            a[t + r * bs + c] = sum;
        }
    });
}

/// `A[i][k] = A[i][k] · U[k][k]⁻¹`: one row per thread.
#[task(reads = [a[tile(k, k, nb, bs)], a[tile(i, k, nb, bs)]], writes = a[tile(i, k, nb, bs)])]
pub fn bdiv(b: &Block, a: &mut [f32], k: usize, i: usize, nb: usize, bs: usize) {
    let d = tile(k, k, nb, bs).start;
    let t = tile(i, k, nb, bs).start;
    b.par_for(0..bs, |r| {
        for c in 0..bs {
            let mut sum = a[t + r * bs + c];
            for q in 0..c {
                sum -= a[t + r * bs + q] * a[d + q * bs + c];
            }
            a[t + r * bs + c] = sum / a[d + c * bs + c];
        }
    });
}

/// `A[i][j] -= A[i][k] · A[k][j]`: one element per thread.
#[task(
    reads = [a[tile(i, k, nb, bs)], a[tile(k, j, nb, bs)], a[tile(i, j, nb, bs)]],
    writes = a[tile(i, j, nb, bs)]
)]
pub fn bmod(b: &Block, a: &mut [f32], k: usize, i: usize, j: usize, nb: usize, bs: usize) {
    let l = tile(i, k, nb, bs).start;
    let u = tile(k, j, nb, bs).start;
    let t = tile(i, j, nb, bs).start;
    b.par_for(0..bs * bs, |e| {
        let (r, c) = (e / bs, e % bs);
        let mut sum = 0.0f32;
        for q in 0..bs {
            sum += a[l + r * bs + q] * a[u + q * bs + c];
        }
        a[t + e] -= sum;
    });
}

task_region! {
    /// Tiled LU of the tile-major `nb × nb`-tile matrix `a` (tiles of `bs × bs`), in place.
    pub fn lu(a: &mut [f32], nb: usize, bs: usize) {
        for k in 0..nb {
            spawn!(lu0(a, k, nb, bs));
            for j in k + 1..nb {
                spawn!(fwd(a, k, j, nb, bs));
            }
            for i in k + 1..nb {
                spawn!(bdiv(a, k, i, nb, bs));
            }
            for i in k + 1..nb {
                for j in k + 1..nb {
                    spawn!(bmod(a, k, i, j, nb, bs));
                }
            }
        }
    }
}

/// The number of tasks `lu` spawns for `nb` tiles per side: `Σ (m + 1)²` for `m < nb`.
pub const fn task_count(nb: usize) -> usize {
    nb * (nb + 1) * (2 * nb + 1) / 6
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod reference {
    //! The sequential reference: a plain right-looking LU on the same tile-major layout, in `f64`.

    /// Element `(r, c)` of the tile-major matrix.
    pub fn at(r: usize, c: usize, nb: usize, bs: usize) -> usize {
        let (i, j) = (r / bs, c / bs);
        super::tile(i, j, nb, bs).start + (r % bs) * bs + c % bs
    }

    /// LU without pivoting of `a` (tile-major), in `f64`.
    pub fn lu(a: &[f32], nb: usize, bs: usize) -> Vec<f64> {
        let n = nb * bs;
        let mut m: Vec<f64> = (0..n * n)
            .map(|e| f64::from(a[at(e / n, e % n, nb, bs)]))
            .collect();
        for p in 0..n {
            for r in p + 1..n {
                m[r * n + p] /= m[p * n + p];
                let l = m[r * n + p];
                for c in p + 1..n {
                    m[r * n + c] -= l * m[p * n + c];
                }
            }
        }
        (0..n * n).map(|e| m[at_inverse(e, nb, bs)]).collect()
    }

    /// The row-major index of tile-major element `e`.
    fn at_inverse(e: usize, nb: usize, bs: usize) -> usize {
        let n = nb * bs;
        let t = e / (bs * bs);
        let (i, j) = (t / nb, t % nb);
        let w = e % (bs * bs);
        (i * bs + w / bs) * n + j * bs + w % bs
    }

    /// A diagonally dominant matrix (so LU needs no pivoting), from a simple deterministic generator.
    pub fn matrix(nb: usize, bs: usize, seed: u64) -> Vec<f32> {
        let n = nb * bs;
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut a = vec![0.0f32; n * n];
        for r in 0..n {
            for c in 0..n {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let v = ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5;
                a[at(r, c, nb, bs)] = if r == c { v + n as f32 } else { v };
            }
        }
        a
    }

    /// `‖lu − reference‖ / ‖reference‖` in the Frobenius norm.
    pub fn relative_error(lu: &[f32], reference: &[f64]) -> f64 {
        let (mut diff, mut norm) = (0.0f64, 0.0f64);
        for (x, y) in lu.iter().zip(reference) {
            diff += (f64::from(*x) - y).powi(2);
            norm += y * y;
        }
        (diff / norm).sqrt()
    }
}
