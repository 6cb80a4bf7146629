//! Tile math for task bodies: tensor-core fragments, shared-memory tiles and register-blocked
//! tile operations, on the GPU and, emulated, on the host.
//!
//! The layers, bottom up, each in its own module:
//!
//! 1. [`mma`]: the instructions. One `mma.sync` shape per function, in `asm!` on the GPU and
//!    emulated for the whole warp on the host.
//! 2. [`frag`]: fragments whose layout (lane, register) → (row, col) is their type, and the atoms
//!    the operations multiply with.
//! 3. [`smem`]: shared-memory tiles, padded so that fragment loads are conflict-free, filled by
//!    `cp.async` copies in commit/wait groups.
//!
//! [`lanes`] says what one thread holds ([`Lanes`]: its own lane on the GPU, the whole warp on the
//! host) and which warp it is ([`Team`]), so that every layer above is written once for both
//! targets and the CPU backend runs the very code the GPU runs.

pub mod args;
pub mod engine;
pub mod factor;
pub mod flags;
pub mod frag;
pub mod gemm;
pub mod lanes;
pub mod mma;
pub mod numeric;
pub mod operand;
#[cfg(not(target_arch = "nvptx64"))]
pub mod reference;
mod regs;
pub mod shapes;
pub mod smem;
mod staged;
#[cfg(all(test, not(target_arch = "nvptx64")))]
mod testing;
pub mod trsm;
pub mod unroll;

pub use factor::{getrf, potrf};
pub use flags::{Diag, Op, Side, Uplo};
pub use gemm::{gemm, gemm_with, syrk, syrk_with};
pub use lanes::{Lanes, Team};
pub use numeric::{Bf16, Element, F16, round_tf32};
pub use operand::{MatMut, MatRef, Operands, Rect};
pub use shapes::Tiled;
pub use trsm::trsm;
