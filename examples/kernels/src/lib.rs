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
pub mod math_check;
pub mod matrix;
pub mod nowait;
pub mod nw;
pub mod same_name;
pub mod sat;
pub mod selfcheck;
pub mod smw;

/// The PTX of this crate (host only).
#[cfg(not(target_arch = "nvptx64"))]
pub static PTX: &str = taskweave::include_ptx!();

/// This crate's device code: the PTX and the cubin assembled from it (empty without a `ptxas` at
/// build time), as the host loads it (host only).
#[cfg(not(target_arch = "nvptx64"))]
pub static CODE: taskweave::gpu::Code = taskweave::gpu::Code {
    ptx: PTX,
    cubin: taskweave::include_cubin!(),
};

#[cfg(test)]
mod tests {
    /// Every region embeds the crate's PTX through one static, not a constant of its own: this
    /// test binary calls regions of three modules (three codegen units in a debug build), yet
    /// holds the PTX twice only, once for them and once for the static [`crate::PTX`] (a `const`
    /// would be copied into each codegen unit that reads it, as the regions' constants were: the
    /// `bench` binary held 8 copies, 98.9 MB against 31.1 MB).
    #[test]
    fn the_ptx_is_embedded_once_for_all_regions() {
        let rt = taskweave::Runtime::cpu();
        let mut x = vec![1u32; 8];
        crate::same_name::add::step(&mut x).run(&rt).unwrap();
        crate::same_name::double::step(&mut x).run(&rt).unwrap();
        let (x64, mut y64) = ([1.0f64], vec![0.0; crate::math_check::FUNCTIONS.len()]);
        let (x32, mut y32) = ([1.0f32], vec![0.0; crate::math_check::FUNCTIONS.len()]);
        crate::math_check::check_math(&x64, &mut y64, &x32, &mut y32)
            .run(&rt)
            .unwrap();
        let binary = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let needle = &crate::PTX.as_bytes()[..crate::PTX.len().min(4096)];
        let copies = binary
            .windows(needle.len())
            .filter(|w| w[0] == needle[0] && *w == needle)
            .count();
        assert_eq!(copies, 2, "copies of the PTX in this binary");
    }
}
