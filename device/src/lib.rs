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
//! arguments are packed), [`view`] and [`block`] (what a task body sees) and [`sched`] (the
//! scheduler core).
#![no_std]
// `#[inline(always)]` on the closures of the tile library's unrolled loops: left to the inliner,
// a large closure called twice stays a call, and the accumulators it reads go to local memory.
#![feature(stmt_expr_attributes)]
#![cfg_attr(target_arch = "nvptx64", feature(asm_experimental_arch, stdarch_nvptx))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod abi;
pub mod arch;
pub mod atomic;
pub mod block;
pub mod error;
pub mod scalar;
pub mod sched;
pub mod shared;
pub mod tile;
pub mod view;

pub use block::{Block, LoopIndex};
pub use scalar::Scalar;
pub use view::{View, ViewMut};
