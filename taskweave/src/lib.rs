//! Dependent GPU tasks in Rust.
//!
//! 1. Annotate plain functions with [`task`]: what each one reads and writes, as ranges of arrays.
//! 2. Write a [`task_region!`] of ordinary host control flow that `spawn!`s tasks.
//! 3. Give the crate a one-line `build.rs` (`taskweave_build::Builder::new(".").build()`), so that
//!    `cargo build` also compiles it for the GPU.
//! 4. Call the region: it runs its control flow on the host to record the tasks and their
//!    dependences (inspection), then runs the DAG on the GPU's persistent in-device scheduler, or on
//!    the CPU backend where there is no GPU, and returns a report.
//!
//! This crate re-exports the pieces a kernels crate needs; it builds for the host and for
//! `nvptx64-nvidia-cuda`.
#![no_std]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub use taskweave_device::math;
pub use taskweave_device::shared::SharedArray;
pub use taskweave_device::{Block, Gang, LoopIndex, Scalar, View, ViewMut};
pub use taskweave_macros::{include_kernels, task, task_region};
/// Tile math for task bodies: tensor-core fragments, shared-memory tiles, GEMM, SYRK, TRSM,
/// POTRF and GETRF on tiles (see the module's docs).
pub use taskweave_tile as tile;

#[cfg(not(target_arch = "nvptx64"))]
pub use taskweave_host::*;

/// `spawn!(task(args…))` records one task; it exists only inside [`task_region!`].
#[macro_export]
macro_rules! spawn {
    ($($tt:tt)*) => {
        ::core::compile_error!("`spawn!` is only valid inside `task_region!`")
    };
}

/// What generated code refers to. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use core;
    pub use taskweave_device as device;
    #[cfg(not(target_arch = "nvptx64"))]
    pub use taskweave_host as host;
}
