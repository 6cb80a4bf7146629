//! Independent tile operations, one task each: the tile micro-benchmark's regions.
//!
//! Each region runs `count` independent tasks on `count` tiles of `bs × bs` (tile `t` at
//! `t · bs²` of every array), so the whole region is one level of the DAG, as a batched library
//! call is one launch: [`gemm_batch_f64`] against cuBLAS's strided batched DGEMM on the same tiles,
//! and so on.

use taskweave::tile::{self, Op, Rect, Tiled, shapes};
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
