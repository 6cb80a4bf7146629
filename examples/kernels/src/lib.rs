//! The example workloads of taskweave, and the kernels of the GPU self-check.
//!
//! This crate compiles twice: for the host (inspection and the CPU backend) and, through its
//! `build.rs`, for `nvptx64-nvidia-cuda` (task bodies, region kernels, self-check kernels).

pub mod batch;
pub mod cholesky;
pub mod dags;
pub mod dp;
pub mod dtw;
pub mod faults;
pub mod gemm;
pub mod grid;
pub mod heat;
pub mod inthist;
pub mod jacobi;
pub mod lu;
pub mod lud;
pub mod matrix;
pub mod nowait;
pub mod nw;
pub mod same_name;
pub mod sat;
pub mod selfcheck;
pub mod smw;

/// The PTX of this crate (host only).
#[cfg(not(target_arch = "nvptx64"))]
pub const PTX: &str = taskweave::include_ptx!();

/// This crate's device code: the PTX and the cubin assembled from it (empty without a `ptxas` at
/// build time), as the host loads it (host only).
#[cfg(not(target_arch = "nvptx64"))]
pub const CODE: taskweave::gpu::Code = taskweave::gpu::Code {
    ptx: PTX,
    cubin: taskweave::include_cubin!(),
};
