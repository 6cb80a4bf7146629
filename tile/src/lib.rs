//! Tile math for task bodies: BLAS-like operations on tiles of a task's arrays, on tensor cores
//! on the GPU and, emulated, on the host (the CPU backend runs the very same code).
//!
//! # The operations
//!
//! Every operation is called by every thread of the block, takes its operands in one order
//! (the outputs, then the inputs, each followed by its flags, then the scalars, [`Alpha`] and
//! [`Beta`] as types of their own so that they cannot trade places), and ends with a block barrier:
//! on return the result is visible to every thread.
//!
//! | operation | computes |
//! | --- | --- |
//! | [`gemm`]`(blk, c, a, op_a, b, op_b, Alpha(α), Beta(β))` | `C = α·op(A)·op(B) + β·C` |
//! | [`syrk`]`(blk, c, uplo, a, op, Alpha(α), Beta(β))` | `C = α·op(A)·op(A)ᵀ + β·C` on the `uplo` triangle of `C` |
//! | [`trsm`]`(blk, b, a, side, uplo, op, diag, Alpha(α))` | `B = α·op(A)⁻¹·B` (`Side::Left`) or `α·B·op(A)⁻¹` (`Right`), `A` triangular |
//! | [`potrf`]`(blk, a, uplo)` | `A = L·Lᵀ` (`Lower`) or `Uᵀ·U` (`Upper`), in place |
//! | [`getrf`]`(blk, a)` | `A = L·U` without pivoting, unit `L` below the diagonal, in place |
//!
//! [`gemm_with`] and [`syrk_with`] take an engine shape of [`shapes`] (TF32 tensor cores for f32,
//! say) instead of the element type's default.
//!
//! **Operands** are rectangles ([`Rect`]: offset, rows, columns, leading dimension) of the task's
//! arrays: `let a = a.operands();` then `a.mat(rect)` to read and `a.mat_mut(rect)` to write. In
//! checked mode each rectangle is checked once, when the operation starts, against the ranges the
//! task declared (a miss is the task's error, naming the array); an output that overlaps an input
//! is refused. Unchecked, nothing is checked.
//!
//! **Element types and sides**: `f64` and `f32`; every side a multiple of 16 from 16 to 256
//! ([`args::SIDES`]); anything else panics, as does a shape mismatch.
//!
//! **Errors of the factorizations**: [`potrf`] returns `Err(j)` when the pivot of column `j` is not
//! positive (the tile is not positive definite), [`getrf`] when it is zero; the tile is then
//! partly factored, and every thread gets the same result. A body usually turns it into a panic
//! (`if let Err(j) = tile::potrf(..) { panic!("not positive definite at column {j}") }`): the task
//! then fails, the region returns an error naming it, and the
//! caller's arrays are left as they were.
//!
//! **Shared memory**: the operations stage operands through the block's scratch, what
//! [`Block::shared`](taskweave_device::Block::shared) has not handed out. They need [`scratch_need`] bytes at the region's block
//! size (20 KiB at 128 threads), and run faster with more (up to four pipeline stages, and whole
//! panels staged). A region that does not set `shared_bytes` gets at least that much on every
//! backend, and on the GPU as much as its kernel's occupancy leaves each block. The CPU backend
//! checks the scratch against the GPU's block size, so a region given too little fails there too,
//! with the same message.
//!
//! # The layers
//!
//! Bottom up, each in its own module:
//!
//! 1. [`mma`]: the instructions. One `mma.sync` shape per function, in `asm!` on the GPU and
//!    emulated for the whole warp on the host.
//! 2. [`frag`]: fragments whose layout (lane, register) → (row, col) is their type, and the atoms
//!    the operations multiply with.
//! 3. [`smem`]: shared-memory tiles, padded so that fragment loads are conflict-free, filled by
//!    `cp.async` copies in commit/wait groups.
//! 4. [`engine`]: the block's product over staged chunks; [`gemm`](mod@gemm), [`trsm`](mod@trsm)
//!    and [`factor`] build the operations on it.
//!
//! [`lanes`] says what one thread holds ([`Lanes`]: its own lane on the GPU, the whole warp on the
//! host) and which warp it is ([`Team`]), so that every layer above is written once for both
//! targets and the CPU backend runs the very code the GPU runs.
#![no_std]
// `stmt_expr_attributes`: `#[inline(always)]` on the closures of the unrolled loops
// (`unroll::hot`), on the GPU only, so that the host build stays on stable Rust; `core_float_math`:
// `mul_add` and friends without `std`.
#![cfg_attr(
    target_arch = "nvptx64",
    feature(asm_experimental_arch, core_float_math, stmt_expr_attributes)
)]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod args;
pub mod engine;
pub mod factor;
pub mod flags;
pub mod frag;
pub mod gemm;
pub mod lanes;
mod lines;
pub mod mma;
pub mod numeric;
/// Operands of tile operations: rectangles of a task's arrays (they live beside the views, which
/// make them).
pub use taskweave_device::operand;
#[cfg(not(target_arch = "nvptx64"))]
pub mod reference;
mod regs;
pub mod shapes;
pub mod smem;
mod staged;
#[cfg(all(test, not(target_arch = "nvptx64")))]
pub(crate) mod testing;
pub mod trsm;
pub mod unroll;

pub use factor::{getrf, potrf};
pub use flags::{Alpha, Beta, Diag, Op, Side, Uplo};
pub use gemm::{gang_part, gemm, gemm_gang, gemm_with, syrk, syrk_with};
pub use lanes::{Lanes, Team};
pub use numeric::{Bf16, Element, F16, round_tf32};
pub use shapes::Tiled;
pub use taskweave_device::operand::{MatMut, MatRef, Operands, Rect};
pub use trsm::trsm;

use engine::Shape;

/// The block scratch (shared memory, in bytes) that every tile operation needs in a block of
/// `threads` threads, for every side and element type the library takes: the factorizations'
/// 16 flag bytes and one engine stage of the largest of the [`shapes`] (more stages, up to
/// [`engine::MAX_STAGES`], overlap loads with math). A region that leaves `shared_bytes` unset
/// gets at least this much when its kernels use the tile library.
pub fn scratch_need(threads: u32) -> u32 {
    use shapes::*;
    let warps = (threads / 32).max(1);
    let stages = [
        F64Tile::stage_bytes(warps),
        F64M16K4Tile::stage_bytes(warps),
        F64M16K8Tile::stage_bytes(warps),
        F64M16K8Kc16Tile::stage_bytes(warps),
        F64M16K16Tile::stage_bytes(warps),
        F64M16K8WideTile::stage_bytes(warps),
        F32Tile::stage_bytes(warps),
        Tf32Tile::stage_bytes(warps),
    ];
    16 + stages.into_iter().max().unwrap_or(0)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;

    /// What a region of 128 threads needs: more than the old 8 KiB default, which the TRSM of a
    /// tiled Cholesky did not fit in; and every default shape's stage fits in it.
    #[test]
    fn the_scratch_need_covers_every_shape() {
        let need = scratch_need(128);
        assert!(need > 8 * 1024, "{need}");
        for stage in [
            <f64 as Tiled>::Shape::stage_bytes(4),
            <f32 as Tiled>::Shape::stage_bytes(4),
            shapes::F64M16K8WideTile::stage_bytes(4),
        ] {
            assert!(16 + stage <= need, "{stage} > {need}");
        }
        assert!(scratch_need(256) >= need, "more warps, larger block tiles");
        assert_eq!(scratch_need(0), scratch_need(32));
    }
}
