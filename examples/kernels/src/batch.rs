//! Independent tile operations, one task each: the tile micro-benchmark's regions.
//!
//! Each region runs `count` independent tasks of one operation ([`op`]) on `count` tiles of
//! `bs × bs` (tile `t` at `t · bs²` of every array), so the whole region is one level of the DAG,
//! as a batched library call is one launch: [`batch_gemm_f64`] against cuBLAS's strided batched
//! DGEMM on the same tiles, [`batch_f64`] the panel operations of the factorizations, and so on.
//! The GEMMs on the default shape, the other shapes and the panel operations are regions apart: a
//! persistent kernel holds the registers of its heaviest task, and the panels' register paths (or
//! the wide shape's accumulators) would set the default products' occupancy. Each region brings
//! its own set of kernels, and a crate's PTX grows with them.

use taskweave::tile::{self, Alpha, Beta, Diag, Op, Rect, Side, Tiled, Uplo, shapes};
use taskweave::{Block, task, task_region};

/// The range of tile `t` of a batch of `bs × bs` tiles.
pub const fn at(t: usize, bs: usize) -> core::ops::Range<usize> {
    t * bs * bs..(t + 1) * bs * bs
}

/// Tile `t` of a batch as an operand.
pub const fn square(t: usize, bs: usize) -> Rect {
    Rect::square(t * bs * bs, bs)
}

macro_rules! gemm_task {
    ($t:ty, $shape:ty, $task:ident) => {
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
                Alpha(1.0),
                Beta(beta),
            );
        }
    };
}

// The capped GEMM-only region's shape: 8-deep chunks, which fit 168 registers without spilling
// (the default's 16-deep chunks spill there, and ran its 64-tile batch at 0.84x:
// bench/results/kc16-h200/).
gemm_task!(f64, shapes::F64M16K8Tile, gemm_one_f64_m16n8k8);
gemm_task!(f64, <f64 as Tiled>::Shape, gemm_one_f64);
gemm_task!(f64, shapes::F64Tile, gemm_one_f64_m8n8k4);
gemm_task!(f64, shapes::F64M16K4Tile, gemm_one_f64_m16n8k4);
gemm_task!(f64, shapes::F64M16K16Tile, gemm_one_f64_m16n8k16);
gemm_task!(f64, shapes::F64M16K8Kc16Tile, gemm_one_f64_kc16);
gemm_task!(f64, shapes::F64M16K8WideTile, gemm_one_f64_wide);
gemm_task!(f32, <f32 as Tiled>::Shape, gemm_one_f32);
gemm_task!(f32, shapes::Tf32Tile, gemm_one_tf32);

macro_rules! gemm_gang_task {
    ($blocks:literal, $task:ident) => {
        /// `C[t] = A[t]·B[t] + β·C[t]`, shared by a gang of blocks.
        #[task(reads = [a[at(t, bs)], b[at(t, bs)], c[at(t, bs)]], writes = c[at(t, bs)], blocks = $blocks)]
        pub fn $task(blk: &Block, c: &mut [f64], a: &[f64], b: &[f64], beta: f64, t: usize, bs: usize) {
            tile::gemm_gang(
                blk,
                c.mat_mut(square(t, bs)),
                a.mat(square(t, bs)),
                Op::N,
                b.mat(square(t, bs)),
                Op::N,
                Alpha(1.0),
                Beta(beta),
            );
        }
    };
}

gemm_gang_task!(1, gemm_gang1_f64);
gemm_gang_task!(2, gemm_gang2_f64);
gemm_gang_task!(4, gemm_gang4_f64);
gemm_gang_task!(8, gemm_gang8_f64);
gemm_gang_task!(16, gemm_gang16_f64);

macro_rules! panel_tasks {
    ($t:ty, $syrk:ident, $trsm:ident, $potrf:ident, $getrf:ident) => {
        /// `C[t] −= A[t]·A[t]ᵀ` on the lower triangle.
        #[task(reads = [a[at(t, bs)], c[at(t, bs)]], writes = c[at(t, bs)])]
        pub fn $syrk(blk: &Block, c: &mut [$t], a: &[$t], t: usize, bs: usize) {
            tile::syrk(
                blk,
                c.mat_mut(square(t, bs)),
                Uplo::Lower,
                a.mat(square(t, bs)),
                Op::N,
                Alpha(-1.0),
                Beta(1.0),
            );
        }

        /// `B[t] = B[t]·L[t]⁻ᵀ`: the panel solve of a tiled Cholesky.
        #[task(reads = [l[at(t, bs)], b[at(t, bs)]], writes = b[at(t, bs)])]
        pub fn $trsm(blk: &Block, b: &mut [$t], l: &[$t], t: usize, bs: usize) {
            tile::trsm(
                blk,
                b.mat_mut(square(t, bs)),
                l.mat(square(t, bs)),
                Side::Right,
                Uplo::Lower,
                Op::T,
                Diag::NonUnit,
                Alpha(1.0),
            );
        }

        /// `A[t] = L[t]·L[t]ᵀ`, in place (lower triangle).
        #[task(reads = a[at(t, bs)], writes = a[at(t, bs)])]
        pub fn $potrf(blk: &Block, a: &mut [$t], t: usize, bs: usize) {
            if let Err(_column) = tile::potrf(blk, a.mat_mut(square(t, bs)), Uplo::Lower) {
                panic!("tile not positive definite");
            }
        }

        /// `A[t] = L[t]·U[t]`, in place, without pivoting.
        #[task(reads = a[at(t, bs)], writes = a[at(t, bs)])]
        pub fn $getrf(blk: &Block, a: &mut [$t], t: usize, bs: usize) {
            if let Err(_column) = tile::getrf(blk, a.mat_mut(square(t, bs))) {
                panic!("zero pivot");
            }
        }
    };
}

panel_tasks!(
    f64,
    syrk_one_f64,
    trsm_one_f64,
    potrf_one_f64,
    getrf_one_f64
);
panel_tasks!(
    f32,
    syrk_one_f32,
    trsm_one_f32,
    potrf_one_f32,
    getrf_one_f32
);

/// The operations of the batch regions, by number.
pub mod op {
    /// `C[t] = A[t]·B[t] + β·C[t]` on the element type's default shape.
    pub const GEMM: u32 = 0;
    /// GEMM on two f64 `m8n8k4` (sm_80's shape; f64 only).
    pub const GEMM_M8N8K4: u32 = 1;
    /// GEMM on sm_90's f64 `m16n8k4` (f64 only).
    pub const GEMM_M16N8K4: u32 = 2;
    /// GEMM on sm_90's f64 `m16n8k16` (f64 only).
    pub const GEMM_M16N8K16: u32 = 3;
    /// GEMM on TF32 tensor cores (f32 only).
    pub const GEMM_TF32: u32 = 4;
    /// GEMM on sm_90's f64 `m16n8k8` with 8-deep chunks, in the capped
    /// [`batch_gemm_f64`](super::batch_gemm_f64) (f64 only).
    pub const GEMM_M16N8K8: u32 = 11;
    /// GEMM on `m16n8k8` with 16-deep chunks (f64 only).
    pub const GEMM_KC16: u32 = 9;
    /// GEMM on `m16n8k8` with `64 × 32` warp tiles (f64 only).
    pub const GEMM_WIDE: u32 = 10;
    /// `C[t] −= A[t]·A[t]ᵀ` on the lower triangle.
    pub const SYRK: u32 = 5;
    /// `C[t] = C[t]·A[t]⁻ᵀ`, `A[t]` lower triangular (the tiled Cholesky's panel solve).
    pub const TRSM: u32 = 6;
    /// `C[t] = L·Lᵀ` in place.
    pub const POTRF: u32 = 7;
    /// `C[t] = L·U` in place, no pivoting.
    pub const GETRF: u32 = 8;

    /// Whether `op` is one of the GEMMs, which run in [`batch_gemm_f64`](super::batch_gemm_f64),
    /// [`batch_shapes_f64`](super::batch_shapes_f64) and [`batch_gemm_f32`](super::batch_gemm_f32).
    pub const fn is_gemm(op: u32) -> bool {
        matches!(
            op,
            GEMM | GEMM_M8N8K4
                | GEMM_M16N8K4
                | GEMM_M16N8K8
                | GEMM_M16N8K16
                | GEMM_TF32
                | GEMM_KC16
                | GEMM_WIDE
        )
    }
}

task_region! {
    /// `count` independent f64 tile GEMMs on `bs`-tiles, `C[t] = A[t]·B[t] + β·C[t]`, on
    /// `m16n8k8` with 8-deep chunks: the fastest 64-tile batch measured.
    ///
    /// It has a region of its own: a persistent kernel takes the registers of its heaviest task,
    /// and beside the panel operations of [`batch_f64`], or the wide shape's 64 accumulators a
    /// lane, the products would run with their registers and so fewer workers. `build.rs` caps it
    /// at 168 registers, three workers per SM. The library's default shape (16-deep chunks)
    /// runs in [`batch_shapes_f64`].
    pub fn batch_gemm_f64(c: &mut [f64], a: &[f64], b: &[f64], beta: f64, count: usize, bs: usize) {
        for t in 0..count {
            spawn!(gemm_one_f64_m16n8k8(c, a, b, beta, t, bs));
        }
    }
}

task_region! {
    /// `count` independent f64 tile GEMMs on the default shape, each shared by a gang of `gang`
    /// blocks (1, 2, 4, 8 or 16; wide tasks, see `taskweave::tile::gemm_gang`), as
    /// [`batch_gemm_f64`]. Panics at inspection on another width. Width 1 runs in the same kernel,
    /// for a comparison that changes only the width.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_gemm_gang_f64(c: &mut [f64], a: &[f64], b: &[f64], beta: f64, count: usize, bs: usize, gang: u32) {
        for t in 0..count {
            match gang {
                1 => spawn!(gemm_gang1_f64(c, a, b, beta, t, bs)),
                2 => spawn!(gemm_gang2_f64(c, a, b, beta, t, bs)),
                4 => spawn!(gemm_gang4_f64(c, a, b, beta, t, bs)),
                8 => spawn!(gemm_gang8_f64(c, a, b, beta, t, bs)),
                16 => spawn!(gemm_gang16_f64(c, a, b, beta, t, bs)),
                _ => panic!("batch_gemm_gang_f64 has no gang of {gang} blocks"),
            }
        }
    }
}

task_region! {
    /// `count` independent f64 tile GEMMs on the default shape (`op::GEMM`) or one of the other
    /// shapes (`op`, a `GEMM_*` of [`op`]), as [`batch_gemm_f64`], fitted at 255 registers. Panics at inspection on an operation it does not have.
    #[allow(clippy::too_many_arguments)]
    pub fn batch_shapes_f64(c: &mut [f64], a: &[f64], b: &[f64], beta: f64, op: u32, count: usize, bs: usize) {
        for t in 0..count {
            match op {
                op::GEMM => spawn!(gemm_one_f64(c, a, b, beta, t, bs)),
                op::GEMM_M8N8K4 => spawn!(gemm_one_f64_m8n8k4(c, a, b, beta, t, bs)),
                op::GEMM_M16N8K4 => spawn!(gemm_one_f64_m16n8k4(c, a, b, beta, t, bs)),
                op::GEMM_M16N8K16 => spawn!(gemm_one_f64_m16n8k16(c, a, b, beta, t, bs)),
                op::GEMM_KC16 => spawn!(gemm_one_f64_kc16(c, a, b, beta, t, bs)),
                op::GEMM_WIDE => spawn!(gemm_one_f64_wide(c, a, b, beta, t, bs)),
                _ => panic!("batch_shapes_f64 has no operation {op}"),
            }
        }
    }
}

task_region! {
    /// `count` independent f32 tile GEMMs `op` (`GEMM` or `GEMM_TF32` of [`op`]) on
    /// `bs`-tiles, as [`batch_gemm_f64`].
    #[allow(clippy::too_many_arguments)]
    pub fn batch_gemm_f32(c: &mut [f32], a: &[f32], b: &[f32], beta: f32, op: u32, count: usize, bs: usize) {
        for t in 0..count {
            match op {
                op::GEMM => spawn!(gemm_one_f32(c, a, b, beta, t, bs)),
                op::GEMM_TF32 => spawn!(gemm_one_tf32(c, a, b, beta, t, bs)),
                _ => panic!("batch_gemm_f32 has no operation {op}"),
            }
        }
    }
}

task_region! {
    /// `count` independent f64 panel operations `op` (`SYRK`, `TRSM`, `POTRF` or `GETRF` of
    /// [`op`]) on `bs`-tiles: `c` is the output (factored in place by POTRF and GETRF), `a` the
    /// input (the triangle of TRSM). Panics at inspection on an operation it does not have.
    pub fn batch_f64(c: &mut [f64], a: &[f64], op: u32, count: usize, bs: usize) {
        for t in 0..count {
            match op {
                op::SYRK => spawn!(syrk_one_f64(c, a, t, bs)),
                op::TRSM => spawn!(trsm_one_f64(c, a, t, bs)),
                op::POTRF => spawn!(potrf_one_f64(c, t, bs)),
                op::GETRF => spawn!(getrf_one_f64(c, t, bs)),
                _ => panic!("batch_f64 has no operation {op}"),
            }
        }
    }
}

task_region! {
    /// `count` independent f32 panel operations `op` on `bs`-tiles, as [`batch_f64`].
    pub fn batch_f32(c: &mut [f32], a: &[f32], op: u32, count: usize, bs: usize) {
        for t in 0..count {
            match op {
                op::SYRK => spawn!(syrk_one_f32(c, a, t, bs)),
                op::TRSM => spawn!(trsm_one_f32(c, a, t, bs)),
                op::POTRF => spawn!(potrf_one_f32(c, t, bs)),
                op::GETRF => spawn!(getrf_one_f32(c, t, bs)),
                _ => panic!("batch_f32 has no operation {op}"),
            }
        }
    }
}
