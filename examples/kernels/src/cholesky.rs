//! Tiled Cholesky factorization on the tile library: `A = L·Lᵀ` for a symmetric positive
//! definite, tile-major `n × n` matrix (see [`matrix`](crate::matrix)), in place in its lower
//! triangle.
//!
//! Right-looking, one task per tile operation, as LAPACK's `potrf` blocks it:
//!
//! ```text
//! for k in 0..nb:
//!     potrf(k):        A[k][k] = L[k][k]·L[k][k]ᵀ
//!     trsm(k, i > k):  A[i][k] = A[i][k]·L[k][k]⁻ᵀ
//!     syrk(k, i > k):  A[i][i] −= A[i][k]·A[i][k]ᵀ       (lower triangle)
//!     gemm(k, i > j > k): A[i][j] −= A[i][k]·A[j][k]ᵀ
//! ```
//!
//! except that `syrk(k, k + 1)` and `potrf(k + 1)`, the diagonal tile's last update and its
//! factorization, are one task: both lie on the critical path, one after the other, and a task
//! between them costs a hop between workers.
//!
//! The tiles above the diagonal, and the upper triangles of the diagonal tiles, are neither read
//! nor written. [`cholesky_f64`] and [`cholesky_f32`] take host arrays, or arrays already on the
//! GPU (`Runtime::upload`), which a benchmark times without copies.
//! Every task wants [`SHARED_BYTES`] of shared scratch (`.shared_bytes(…)`). A tile that is not
//! positive definite stops its task with a panic, which the region reports.
//!
//! [`matrix::host::check_cholesky`](crate::matrix::host::check_cholesky) verifies the result.

use taskweave::tile::{self, Alpha, Beta, Diag, Op, Side, Uplo};
use taskweave::{Block, task, task_region};

use crate::matrix::{rect, tile};

/// Shared scratch the tasks use: room for TRSM to stage both its operands on 64-tiles of f64 (two
/// padded tiles, 66,560 bytes), which also holds three stages of the default f64 engine shape at
/// 128 threads and POTRF's staged tile and flag word. With only the right-hand side staged (42 KiB) a TRSM took 61 µs
/// inside a factorization on the H100, with both 46 µs, and Cholesky f64 at N = 2048 / 4096 /
/// 8192 ran in 3.63 / 9.42 / 50.8 ms instead of 3.95 / 10.5 / 57.9
/// (bench/results/panel-h100/staged-trsm/), although fewer blocks fit on an SM.
pub const SHARED_BYTES: u32 = 72 * 1024;

macro_rules! tiled_cholesky {
    (
        $t:ty,
        $potrf:ident,
        $trsm:ident,
        $syrk:ident,
        $syrk_potrf:ident,
        $gemm:ident,
        $region:ident,
    ) => {
        /// `A[k][k] = L[k][k]·L[k][k]ᵀ`.
        #[task(reads = a[tile(k, k, nb, bs)], writes = a[tile(k, k, nb, bs)])]
        pub fn $potrf(blk: &Block, a: &mut [$t], k: usize, nb: usize, bs: usize) {
            if let Err(_column) = tile::potrf(blk, a.mat_mut(rect(k, k, nb, bs)), Uplo::Lower) {
                panic!("the matrix is not positive definite");
            }
        }

        /// `A[i][k] = A[i][k]·L[k][k]⁻ᵀ`.
        #[task(reads = [a[tile(k, k, nb, bs)], a[tile(i, k, nb, bs)]], writes = a[tile(i, k, nb, bs)])]
        pub fn $trsm(blk: &Block, a: &mut [$t], k: usize, i: usize, nb: usize, bs: usize) {
            let a = a.operands();
            tile::trsm(
                blk,
                a.mat_mut(rect(i, k, nb, bs)),
                a.mat(rect(k, k, nb, bs)),
                Side::Right,
                Uplo::Lower,
                Op::T,
                Diag::NonUnit,
                Alpha(1.0),
            );
        }

        /// `A[i][i] −= A[i][k]·A[i][k]ᵀ` on the lower triangle.
        #[task(reads = [a[tile(i, k, nb, bs)], a[tile(i, i, nb, bs)]], writes = a[tile(i, i, nb, bs)])]
        pub fn $syrk(blk: &Block, a: &mut [$t], k: usize, i: usize, nb: usize, bs: usize) {
            let a = a.operands();
            tile::syrk(
                blk,
                a.mat_mut(rect(i, i, nb, bs)),
                Uplo::Lower,
                a.mat(rect(i, k, nb, bs)),
                Op::N,
                Alpha(-1.0),
                Beta(1.0),
            );
        }

        /// `A[i][i] −= A[i][k]·A[i][k]ᵀ`, then `A[i][i] = L[i][i]·L[i][i]ᵀ`: the last update of
        /// the diagonal tile `i = k + 1` and its factorization, one task on the critical path
        /// where two tasks (and a hop between workers) were.
        #[task(reads = [a[tile(i, k, nb, bs)], a[tile(i, i, nb, bs)]], writes = a[tile(i, i, nb, bs)])]
        pub fn $syrk_potrf(blk: &Block, a: &mut [$t], k: usize, i: usize, nb: usize, bs: usize) {
            {
                let a = a.operands();
                tile::syrk(
                    blk,
                    a.mat_mut(rect(i, i, nb, bs)),
                    Uplo::Lower,
                    a.mat(rect(i, k, nb, bs)),
                    Op::N,
                    Alpha(-1.0),
                    Beta(1.0),
                );
            }
            // The product ends with a block barrier: its stores are visible to the factor.
            if let Err(_column) = tile::potrf(blk, a.mat_mut(rect(i, i, nb, bs)), Uplo::Lower) {
                panic!("the matrix is not positive definite");
            }
        }

        /// `A[i][j] −= A[i][k]·A[j][k]ᵀ`.
        #[task(
            reads = [a[tile(i, k, nb, bs)], a[tile(j, k, nb, bs)], a[tile(i, j, nb, bs)]],
            writes = a[tile(i, j, nb, bs)]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $gemm(blk: &Block, a: &mut [$t], k: usize, i: usize, j: usize, nb: usize, bs: usize) {
            let a = a.operands();
            tile::gemm(
                blk,
                a.mat_mut(rect(i, j, nb, bs)),
                a.mat(rect(i, k, nb, bs)),
                Op::N,
                a.mat(rect(j, k, nb, bs)),
                Op::T,
                Alpha(-1.0),
                Beta(1.0),
            );
        }

        task_region! {
            /// The Cholesky factor of the tile-major matrix `a` (`nb × nb` tiles of side `bs`, a
            /// multiple of 16 from 16 to 256), in place in its lower triangle.
            pub fn $region(a: &mut [$t], nb: usize, bs: usize) {
                for k in 0..nb {
                    if k == 0 {
                        spawn!($potrf(a, k, nb, bs));
                    }
                    for i in k + 1..nb {
                        spawn!($trsm(a, k, i, nb, bs));
                    }
                    for i in k + 1..nb {
                        if i == k + 1 {
                            spawn!($syrk_potrf(a, k, i, nb, bs));
                        } else {
                            spawn!($syrk(a, k, i, nb, bs));
                        }
                        for j in k + 1..i {
                            spawn!($gemm(a, k, i, j, nb, bs));
                        }
                    }
                }
            }
        }
    };
}

tiled_cholesky!(
    f64,
    potrf_f64,
    trsm_f64,
    syrk_f64,
    syrk_potrf_f64,
    gemm_f64,
    cholesky_f64,
);
tiled_cholesky!(
    f32,
    potrf_f32,
    trsm_f32,
    syrk_f32,
    syrk_potrf_f32,
    gemm_f32,
    cholesky_f32,
);

/// The tasks the regions spawn for `nb` tiles per side: `Σ_k (1 + m + m(m + 1)/2)` with
/// `m = nb − k − 1`, less the `nb − 1` factorizations that share a task with their tile's last
/// update.
pub const fn task_count(nb: usize) -> usize {
    let mut total = 0;
    let mut k = 0;
    while k < nb {
        let m = nb - k - 1;
        total += 1 + m + m * (m + 1) / 2;
        k += 1;
    }
    total - nb.saturating_sub(1)
}

/// The floating-point operations of a Cholesky factorization of order `n = nb · bs`: `n³/3`.
pub fn flops(nb: usize, bs: usize) -> f64 {
    let n = (nb * bs) as f64;
    n * n * n / 3.0
}
