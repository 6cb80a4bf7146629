//! Tiled LU decomposition without pivoting on the tile library: `A = L·U` for a tile-major
//! `n × n` matrix (see [`matrix`](crate::matrix)), in place: unit-lower `L` below the diagonal,
//! `U` on and above.
//!
//! Right-looking, one task per tile operation (the tasks of Juggler's listing 3, whose scalar
//! version on any tile side is LU-D, [`lud`](crate::lud)):
//!
//! ```text
//! for k in 0..nb:
//!     getrf(k):           A[k][k] = L[k][k]·U[k][k]
//!     row(k, j > k):      A[k][j] = L[k][k]⁻¹·A[k][j]
//!     column(k, i > k):   A[i][k] = A[i][k]·U[k][k]⁻¹
//!     update(k, i, j > k): A[i][j] −= A[i][k]·A[k][j]
//! ```
//!
//! except that `update(k, k + 1, k + 1)` and `getrf(k + 1)`, the diagonal tile's last update and
//! its factorization, are one task: both lie on the critical path, one after the other, and a task
//! between them costs a hop between workers.
//!
//! [`lu_f64`] and [`lu_f32`] take host arrays or GPU-resident ones (`Runtime::upload`). Every
//! task wants [`SHARED_BYTES`] of shared scratch. A zero pivot stops its task with a panic.
//! [`matrix::host::check_lu`](crate::matrix::host::check_lu) verifies the result.

use taskweave::tile::{self, Alpha, Beta, Diag, Op, Side, Uplo};
use taskweave::{Block, task, task_region};

use crate::matrix::{rect, tile};

/// Shared scratch the tasks use: two engine stages of the default f64 shape at 128 threads, and
/// GETRF's flag word.
pub const SHARED_BYTES: u32 = crate::gemm::SHARED_BYTES;

macro_rules! tiled_lu {
    (
        $t:ty,
        $getrf:ident,
        $row:ident,
        $col:ident,
        $update:ident,
        $update_getrf:ident,
        $region:ident,
    ) => {
        /// `A[k][k] = L[k][k]·U[k][k]`.
        #[task(reads = a[tile(k, k, nb, bs)], writes = a[tile(k, k, nb, bs)])]
        pub fn $getrf(blk: &Block, a: &mut [$t], k: usize, nb: usize, bs: usize) {
            if let Err(_column) = tile::getrf(blk, a.mat_mut(rect(k, k, nb, bs))) {
                panic!("zero pivot: the matrix needs pivoting");
            }
        }

        /// `A[k][j] = L[k][k]⁻¹·A[k][j]`.
        #[task(reads = [a[tile(k, k, nb, bs)], a[tile(k, j, nb, bs)]], writes = a[tile(k, j, nb, bs)])]
        pub fn $row(blk: &Block, a: &mut [$t], k: usize, j: usize, nb: usize, bs: usize) {
            let a = a.operands();
            tile::trsm(
                blk,
                a.mat_mut(rect(k, j, nb, bs)),
                a.mat(rect(k, k, nb, bs)),
                Side::Left,
                Uplo::Lower,
                Op::N,
                Diag::Unit,
                Alpha(1.0),
            );
        }

        /// `A[i][k] = A[i][k]·U[k][k]⁻¹`.
        #[task(reads = [a[tile(k, k, nb, bs)], a[tile(i, k, nb, bs)]], writes = a[tile(i, k, nb, bs)])]
        pub fn $col(blk: &Block, a: &mut [$t], k: usize, i: usize, nb: usize, bs: usize) {
            let a = a.operands();
            tile::trsm(
                blk,
                a.mat_mut(rect(i, k, nb, bs)),
                a.mat(rect(k, k, nb, bs)),
                Side::Right,
                Uplo::Upper,
                Op::N,
                Diag::NonUnit,
                Alpha(1.0),
            );
        }

        /// `A[i][j] −= A[i][k]·A[k][j]`.
        #[task(
            reads = [a[tile(i, k, nb, bs)], a[tile(k, j, nb, bs)], a[tile(i, j, nb, bs)]],
            writes = a[tile(i, j, nb, bs)]
        )]
        #[allow(clippy::too_many_arguments)]
        pub fn $update(blk: &Block, a: &mut [$t], k: usize, i: usize, j: usize, nb: usize, bs: usize) {
            let a = a.operands();
            tile::gemm(
                blk,
                a.mat_mut(rect(i, j, nb, bs)),
                a.mat(rect(i, k, nb, bs)),
                Op::N,
                a.mat(rect(k, j, nb, bs)),
                Op::N,
                Alpha(-1.0),
                Beta(1.0),
            );
        }

        /// `A[i][i] −= A[i][k]·A[k][i]`, then `A[i][i] = L[i][i]·U[i][i]`: the last update of the
        /// diagonal tile `i = k + 1` and its factorization, one task on the critical path where
        /// two tasks (and a hop between workers) were.
        #[task(
            reads = [a[tile(i, k, nb, bs)], a[tile(k, i, nb, bs)], a[tile(i, i, nb, bs)]],
            writes = a[tile(i, i, nb, bs)]
        )]
        pub fn $update_getrf(blk: &Block, a: &mut [$t], k: usize, i: usize, nb: usize, bs: usize) {
            {
                let a = a.operands();
                tile::gemm(
                    blk,
                    a.mat_mut(rect(i, i, nb, bs)),
                    a.mat(rect(i, k, nb, bs)),
                    Op::N,
                    a.mat(rect(k, i, nb, bs)),
                    Op::N,
                    Alpha(-1.0),
                    Beta(1.0),
                );
            }
            // The product ends with a block barrier: its stores are visible to the factor.
            if let Err(_column) = tile::getrf(blk, a.mat_mut(rect(i, i, nb, bs))) {
                panic!("zero pivot: the matrix needs pivoting");
            }
        }

        task_region! {
            /// LU without pivoting of the tile-major matrix `a` (`nb × nb` tiles of side `bs`, a
            /// multiple of 16 from 16 to 256), in place.
            pub fn $region(a: &mut [$t], nb: usize, bs: usize) {
                for k in 0..nb {
                    if k == 0 {
                        spawn!($getrf(a, k, nb, bs));
                    }
                    for j in k + 1..nb {
                        spawn!($row(a, k, j, nb, bs));
                    }
                    for i in k + 1..nb {
                        spawn!($col(a, k, i, nb, bs));
                    }
                    for i in k + 1..nb {
                        for j in k + 1..nb {
                            if (i, j) == (k + 1, k + 1) {
                                spawn!($update_getrf(a, k, i, nb, bs));
                            } else {
                                spawn!($update(a, k, i, j, nb, bs));
                            }
                        }
                    }
                }
            }
        }
    };
}

tiled_lu!(
    f64,
    getrf_f64,
    row_f64,
    column_f64,
    update_f64,
    update_getrf_f64,
    lu_f64,
);
tiled_lu!(
    f32,
    getrf_f32,
    row_f32,
    column_f32,
    update_f32,
    update_getrf_f32,
    lu_f32,
);

/// The tasks the regions spawn for `nb` tiles per side: `Σ (m + 1)²` for `m < nb`, less the
/// `nb − 1` factorizations that share a task with their tile's last update.
pub const fn task_count(nb: usize) -> usize {
    nb * (nb + 1) * (2 * nb + 1) / 6 - nb.saturating_sub(1)
}

/// The floating-point operations of an LU factorization of order `n = nb · bs`: `2n³/3`.
pub fn flops(nb: usize, bs: usize) -> f64 {
    let n = (nb * bs) as f64;
    2.0 * n * n * n / 3.0
}
