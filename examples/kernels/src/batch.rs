//! Independent tile operations, one task each: the tile micro-benchmark's regions.
//!
//! Each region runs `count` independent tasks on `count` tiles of `bs × bs` (tile `t` at
//! `t · bs²` of every array), so the whole region is one level of the DAG, as a batched library
//! call is one launch: [`gemm_batch_f64`] against cuBLAS's strided batched DGEMM on the same tiles,
//! and so on.

use taskweave::tile::{self, Diag, Op, Rect, Side, Tiled, Uplo, shapes};
use taskweave::{Block, task, task_region};

/// The range of tile `t` of a batch of `bs × bs` tiles.
pub const fn at(t: usize, bs: usize) -> core::ops::Range<usize> {
    t * bs * bs..(t + 1) * bs * bs
}

/// Tile `t` of a batch as an operand.
pub const fn square(t: usize, bs: usize) -> Rect {
    Rect::square(t * bs * bs, bs)
}

macro_rules! gemm_batch {
    ($t:ty, $shape:ty, $task:ident, $region:ident, $doc:literal) => {
        /// `C[t] = A[t]·B[t] + β·C[t]`.
        #[task(reads = [a[at(t, bs)], b[at(t, bs)], c[at(t, bs)]], writes = c[at(t, bs)])]
        pub fn $task(blk: &Block, c: &mut [$t], a: &[$t], b: &[$t], beta: $t, t: usize, bs: usize) {
            tile::gemm_with::<$shape, _>(
                blk,
                c.mat_mut(square(t, bs)),
                a.mat(square(t, bs)),
                Op::N,
                b.mat(square(t, bs)),
                Op::N,
                1.0,
                beta,
            );
        }

        task_region! {
            #[doc = $doc]
            pub fn $region(c: &mut [$t], a: &[$t], b: &[$t], beta: $t, count: usize, bs: usize) {
                for t in 0..count {
                    spawn!($task(c, a, b, beta, t, bs));
                }
            }
        }
    };
}

gemm_batch!(
    f64,
    <f64 as Tiled>::Shape,
    gemm_one_f64,
    gemm_batch_f64,
    "`count` independent f64 GEMMs `C[t] = A[t]·B[t] + β·C[t]` on `bs`-tiles, with f64's default shape."
);
gemm_batch!(
    f64,
    shapes::F64Tile,
    gemm_one_f64_m8n8k4,
    gemm_batch_f64_m8n8k4,
    "[`gemm_batch_f64`] on two `m8n8k4` (sm_80's shape)."
);
gemm_batch!(
    f64,
    shapes::F64M16K4Tile,
    gemm_one_f64_m16n8k4,
    gemm_batch_f64_m16n8k4,
    "[`gemm_batch_f64`] on sm_90's `m16n8k4`."
);
gemm_batch!(
    f64,
    shapes::F64M16K8Tile,
    gemm_one_f64_m16n8k8,
    gemm_batch_f64_m16n8k8,
    "[`gemm_batch_f64`] on sm_90's `m16n8k8`."
);
gemm_batch!(
    f64,
    shapes::F64M16K16Tile,
    gemm_one_f64_m16n8k16,
    gemm_batch_f64_m16n8k16,
    "[`gemm_batch_f64`] on sm_90's `m16n8k16`."
);
gemm_batch!(
    f32,
    <f32 as Tiled>::Shape,
    gemm_one_f32,
    gemm_batch_f32,
    "`count` independent f32 GEMMs `C[t] = A[t]·B[t] + β·C[t]` on `bs`-tiles, exact f32."
);
gemm_batch!(
    f32,
    shapes::Tf32Tile,
    gemm_one_tf32,
    gemm_batch_tf32,
    "[`gemm_batch_f32`] on TF32 tensor cores (about 10-bit products)."
);

macro_rules! panel_batches {
    ($t:ty, $syrk:ident, $syrk_r:ident, $trsm:ident, $trsm_r:ident, $potrf:ident, $potrf_r:ident, $getrf:ident, $getrf_r:ident) => {
        /// `C[t] −= A[t]·A[t]ᵀ` on the lower triangle.
        #[task(reads = [a[at(t, bs)], c[at(t, bs)]], writes = c[at(t, bs)])]
        pub fn $syrk(blk: &Block, c: &mut [$t], a: &[$t], t: usize, bs: usize) {
            tile::syrk(
                blk,
                Uplo::Lower,
                Op::N,
                c.mat_mut(square(t, bs)),
                a.mat(square(t, bs)),
                -1.0,
                1.0,
            );
        }

        task_region! {
            /// `count` independent SYRKs `C[t] −= A[t]·A[t]ᵀ` (lower triangle) on `bs`-tiles.
            pub fn $syrk_r(c: &mut [$t], a: &[$t], count: usize, bs: usize) {
                for t in 0..count {
                    spawn!($syrk(c, a, t, bs));
                }
            }
        }

        /// `B[t] = B[t]·L[t]⁻ᵀ`: the panel solve of a tiled Cholesky.
        #[task(reads = [l[at(t, bs)], b[at(t, bs)]], writes = b[at(t, bs)])]
        pub fn $trsm(blk: &Block, b: &mut [$t], l: &[$t], t: usize, bs: usize) {
            tile::trsm(
                blk,
                Side::Right,
                Uplo::Lower,
                Op::T,
                Diag::NonUnit,
                1.0,
                l.mat(square(t, bs)),
                b.mat_mut(square(t, bs)),
            );
        }

        task_region! {
            /// `count` independent TRSMs `B[t] = B[t]·L[t]⁻ᵀ` on `bs`-tiles.
            pub fn $trsm_r(b: &mut [$t], l: &[$t], count: usize, bs: usize) {
                for t in 0..count {
                    spawn!($trsm(b, l, t, bs));
                }
            }
        }

        /// `A[t] = L[t]·L[t]ᵀ`, in place (lower triangle).
        #[task(reads = a[at(t, bs)], writes = a[at(t, bs)])]
        pub fn $potrf(blk: &Block, a: &mut [$t], t: usize, bs: usize) {
            if let Err(_column) = tile::potrf(blk, Uplo::Lower, a.mat_mut(square(t, bs))) {
                panic!("tile not positive definite");
            }
        }

        task_region! {
            /// `count` independent Cholesky factorizations of `bs`-tiles.
            pub fn $potrf_r(a: &mut [$t], count: usize, bs: usize) {
                for t in 0..count {
                    spawn!($potrf(a, t, bs));
                }
            }
        }

        /// `A[t] = L[t]·U[t]`, in place, without pivoting.
        #[task(reads = a[at(t, bs)], writes = a[at(t, bs)])]
        pub fn $getrf(blk: &Block, a: &mut [$t], t: usize, bs: usize) {
            if let Err(_column) = tile::getrf(blk, a.mat_mut(square(t, bs))) {
                panic!("zero pivot");
            }
        }

        task_region! {
            /// `count` independent LU factorizations (no pivoting) of `bs`-tiles.
            pub fn $getrf_r(a: &mut [$t], count: usize, bs: usize) {
                for t in 0..count {
                    spawn!($getrf(a, t, bs));
                }
            }
        }
    };
}

panel_batches!(
    f64,
    syrk_one_f64,
    syrk_batch_f64,
    trsm_one_f64,
    trsm_batch_f64,
    potrf_one_f64,
    potrf_batch_f64,
    getrf_one_f64,
    getrf_batch_f64
);
panel_batches!(
    f32,
    syrk_one_f32,
    syrk_batch_f32,
    trsm_one_f32,
    trsm_batch_f32,
    potrf_one_f32,
    potrf_batch_f32,
    getrf_one_f32,
    getrf_batch_f32
);
