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

/// This crate's device code: its kernel bundle, as the host loads it (host only).
#[cfg(not(target_arch = "nvptx64"))]
pub static CODE: taskweave::gpu::Code = taskweave::include_kernels!();

#[cfg(test)]
mod tests {
    /// Every region embeds the crate's kernel bundle through one static, not a constant of its
    /// own: this test binary calls regions of three modules (three codegen units in a debug
    /// build), yet holds the bundle at most twice, once for them and once for the static
    /// [`crate::CODE`] (the linker may merge the two into one; a `const` would be copied into
    /// each codegen unit that reads it, as the regions' constants were: the `bench` binary held 8
    /// copies, 98.9 MB against 31.1 MB).
    #[test]
    fn the_bundle_is_embedded_once_for_all_regions() {
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
        let taskweave::gpu::Code::Bundle(bundle) = crate::CODE else {
            panic!("the crate's code is a bundle");
        };
        let needle = &bundle[..bundle.len().min(4096)];
        let copies = binary
            .windows(needle.len())
            .filter(|w| w[0] == needle[0] && *w == needle)
            .count();
        assert!(
            (1..=2).contains(&copies),
            "{copies} copies of the bundle in this binary, expected one or two"
        );
    }
}
