//! Tiled GEMM on the tile library: `C += A·B` for tile-major `n × n` matrices (see
//! [`matrix`](crate::matrix)), one task per tile update.
//!
//! Task `(i, j, k)` computes `C[i][j] += A[i][k]·B[k][j]` with [`tile::gemm`]; the `nb` tasks of
//! one `C` tile form a chain (each writes the tile the next reads), the `nb²` chains run side by
//! side. [`gemm_f64`] and [`gemm_f32`] are the regions; [`SHARED_BYTES`] is the scratch their
//! tasks want (set it with `.shared_bytes(…)`).

use taskweave::tile::{self, Alpha, Beta, Op};
use taskweave::{Block, task, task_region};

use crate::matrix::{rect, tile};

/// Shared scratch the tile tasks use: two pipeline stages of the f64 GEMM at 128 threads (18.5
/// KiB each with a row-major A and B and the default 16-deep chunks; four of the 8-deep shape's),
/// three of the f32 one (12 KiB).
pub const SHARED_BYTES: u32 = 42 * 1024;

macro_rules! tiled_gemm {
    ($t:ty, $task:ident, $region:ident, $doc:literal) => {
        /// `C[i][j] += A[i][k]·B[k][j]`.
        #[task(
                    reads = [a[tile(i, k, nb, bs)], b[tile(k, j, nb, bs)], c[tile(i, j, nb, bs)]],
                    writes = c[tile(i, j, nb, bs)]
                )]
        #[allow(clippy::too_many_arguments)]
        pub fn $task(
            blk: &Block,
            c: &mut [$t],
            a: &[$t],
            b: &[$t],
            i: usize,
            j: usize,
            k: usize,
            nb: usize,
            bs: usize,
        ) {
            tile::gemm(
                blk,
                c.mat_mut(rect(i, j, nb, bs)),
                a.mat(rect(i, k, nb, bs)),
                Op::N,
                b.mat(rect(k, j, nb, bs)),
                Op::N,
                Alpha(1.0),
                Beta(1.0),
            );
        }

        task_region! {
            #[doc = $doc]
            pub fn $region(c: &mut [$t], a: &[$t], b: &[$t], nb: usize, bs: usize) {
                for i in 0..nb {
                    for j in 0..nb {
                        for k in 0..nb {
                            spawn!($task(c, a, b, i, j, k, nb, bs));
                        }
                    }
                }
            }
        }
    };
}

tiled_gemm!(
    f64,
    gemm_tile_f64,
    gemm_f64,
    "`C += A·B` on tile-major f64 matrices of `nb × nb` tiles of side `bs` (16 to 256, a multiple of 16)."
);
tiled_gemm!(
    f32,
    gemm_tile_f32,
    gemm_f32,
    "`C += A·B` on tile-major f32 matrices of `nb × nb` tiles of side `bs` (16 to 256, a multiple of 16), exact f32."
);

/// The tasks `gemm_f64` and `gemm_f32` spawn: `nb³`.
pub const fn task_count(nb: usize) -> usize {
    nb * nb * nb
}

/// The floating-point operations of `C += A·B` at `n = nb · bs`: `2n³`.
pub fn flops(nb: usize, bs: usize) -> f64 {
    let n = (nb * bs) as f64;
    2.0 * n * n * n
}

#[cfg(test)]
mod tests {
    use taskweave::{Runtime, task_region};

    use super::*;
    use crate::matrix::host::{check_gemm, random};

    task_region! {
        /// `gemm_f64` without the task `(1, 1, nb - 1)`: what a scheduler that dropped it would give.
        fn gemm_missing_one(c: &mut [f64], a: &[f64], b: &[f64], nb: usize, bs: usize) {
            for i in 0..nb {
                for j in 0..nb {
                    for k in 0..nb {
                        if (i, j, k) != (1, 1, nb - 1) {
                            spawn!(gemm_tile_f64(c, a, b, i, j, k, nb, bs));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn tiled_gemm_matches_the_product_on_the_cpu_backend() {
        let runtime = Runtime::cpu();
        for (nb, bs, lanes) in [(3, 32, 1), (2, 48, 2)] {
            let (a, b, c0) = (
                random::<f64>(nb, bs, 1),
                random::<f64>(nb, bs, 2),
                random::<f64>(nb, bs, 3),
            );
            let mut c = c0.clone();
            let report = gemm_f64(&mut c, &a, &b, nb, bs)
                .shared_bytes(SHARED_BYTES)
                .cpu_lanes(lanes)
                .run(&runtime)
                .unwrap();
            assert_eq!(report.tasks, task_count(nb));
            let check = check_gemm(&c0, &c, &a, &b, nb, bs);
            assert!(check.passed(), "f64, nb {nb}, bs {bs}: {check}");

            let (a, b, c0) = (
                random::<f32>(nb, bs, 4),
                random::<f32>(nb, bs, 5),
                random::<f32>(nb, bs, 6),
            );
            let mut c = c0.clone();
            gemm_f32(&mut c, &a, &b, nb, bs)
                .shared_bytes(SHARED_BYTES)
                .cpu_lanes(lanes)
                .run(&runtime)
                .unwrap();
            let check = check_gemm(&c0, &c, &a, &b, nb, bs);
            assert!(check.passed(), "f32, nb {nb}, bs {bs}: {check}");
        }
    }

    #[test]
    fn a_missing_task_fails_the_check() {
        let (nb, bs) = (3, 32);
        let (a, b, c0) = (
            random::<f64>(nb, bs, 1),
            random::<f64>(nb, bs, 2),
            random::<f64>(nb, bs, 3),
        );
        let mut c = c0.clone();
        gemm_missing_one(&mut c, &a, &b, nb, bs)
            .shared_bytes(SHARED_BYTES)
            .run(&Runtime::cpu())
            .unwrap();
        let check = check_gemm(&c0, &c, &a, &b, nb, bs);
        assert!(!check.passed(), "{check}");
        assert!(check.error > 1e6 * check.bound, "{check}");
    }
}
