//! The device layer of taskweave.
//!
//! This crate is `#![no_std]` and builds for two targets:
//!
//! 1. **`nvptx64-nvidia-cuda`.** Every call lowers to the PTX instruction it names: special registers,
//!    `bar.sync`, `shfl.sync`, scoped `ld.acquire` / `st.release` / `atom` / `fence`, `nanosleep`.
//! 2. **The host.** The same calls are emulated with `std` so that the CPU backend, the tests and
//!    `loom` run the very code that runs on the GPU (see [`arch`]).
//!
//! On top of the intrinsics sit the pieces that both sides of taskweave share:
//! [`abi`] (the `#[repr(C)]` records the host writes and the device reads), [`error`] (the error
//! record a failing kernel leaves for the host, and the GPU panic handler), [`scalar`] (how task
//! arguments are packed), [`view`] and [`block`] (what a task body sees), [`math`] (floating-point
//! functions for task bodies, which have no `std`) and [`sched`] (the scheduler core).
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(
        asm_experimental_arch,
        link_llvm_intrinsics,
        stdarch_nvptx,
        core_float_math
    )
)]
// `link_llvm_intrinsics` is internal: it declares `llvm.nvvm.bar.warp.sync`, whose convergence
// LLVM respects where it would not an opaque `asm!` (arch::gpu::sync_warp).
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod abi;
pub mod arch;
pub mod atomic;
pub mod block;
pub mod declared;
pub mod error;
pub mod gang;
pub mod math;
pub mod operand;
pub mod scalar;
pub mod sched;
pub mod shared;
pub mod view;
pub mod words;

pub use block::{Block, Gang, LoopIndex};
pub use scalar::Scalar;
pub use view::{View, ViewMut};
