//! Which engine shape each element type's tile operations use: the one place to switch the
//! warp tile (see [`WarpTile`]'s parameters: atom, atoms down and across, chunk depth, paddings).
//!
//! | alias | atom | warp tile | chunk | notes |
//! | --- | --- | --- | --- | --- |
//! | [`F64Tile`] | 2 × `m8n8k4` (sm_80+) | 32 × 32 | 8 | f64 default before sm_90 |
//! | [`F64M16K4Tile`] | 2 × `m16n8k4` (sm_90) | 32 × 32 | 8 | |
//! | [`F64M16K8Tile`] | `m16n8k8` (sm_90) | 32 × 32 | 8 | fits a kernel capped at 168 registers |
//! | [`F64M16K8Kc16Tile`] | `m16n8k8` (sm_90) | 32 × 32 | 16 | f64 default on sm_90 (and on the host): half the barriers, twice the stage |
//! | [`F64M16K16Tile`] | `m16n8k16` (sm_90) | 32 × 32 | 16 | |
//! | [`F64M16K8WideTile`] | `m16n8k8` (sm_90) | 64 × 32 | 8 | twice the accumulators per warp |
//! | [`F32Tile`] (f32 default) | SIMT FFMA | 32 × 32 | 16 | exact f32 |
//! | [`Tf32Tile`] (opt-in) | tf32 `m16n8k8` | 32 × 32 | 8 | operands rounded to TF32 |
//!
//! The paddings make every fragment load conflict-free in the bank model of
//! [`smem`](super::smem)'s tests (checked below for each shape and both staging layouts): an
//! f64 fragment load reads `(g, t)` (a group of four lanes per row), so rows of a `KMajor` chunk
//! sit 4 words of 8 bytes apart modulo 16 (`KC + 4`), and so do the `k` rows of an `MnMajor`
//! chunk (`rows + 4`); f32 ones need 4 and 8 words modulo 32.

use super::engine::{Shape, WarpTile};
use super::frag::{F64M16K4, F64M16K8, F64M16K16, F64x8, SimtF32, Tf32M16K8};
use super::numeric::Element;

/// f64 on `m8n8k4`, which every GPU since sm_80 has.
pub type F64Tile = WarpTile<F64x8, 4, 4, 8, 4, 4>;
/// f64 on sm_90's `m16n8k4`.
pub type F64M16K4Tile = WarpTile<F64M16K4, 2, 4, 8, 4, 4>;
/// f64 on sm_90's `m16n8k8`.
pub type F64M16K8Tile = WarpTile<F64M16K8, 2, 4, 8, 4, 4>;
/// f64 on sm_90's `m16n8k8` with 16-deep chunks: half the barriers per `k`, twice the shared
/// memory per stage.
pub type F64M16K8Kc16Tile = WarpTile<F64M16K8, 2, 4, 16, 4, 4>;
/// f64 on sm_90's `m16n8k16`.
pub type F64M16K16Tile = WarpTile<F64M16K16, 2, 4, 16, 4, 4>;
/// f64 on sm_90's `m16n8k8` with warp tiles of `64 × 32`: sixteen independent products per `k`
/// step and a quarter fewer fragment loads per product than [`F64M16K8Tile`], for 64 accumulators
/// a lane (a block of four warps covers `128 × 64` of C at a time).
pub type F64M16K8WideTile = WarpTile<F64M16K8, 4, 4, 8, 4, 4>;
/// Exact f32 on the FMA pipes.
pub type F32Tile = WarpTile<SimtF32, 1, 1, 16, 4, 0>;
/// f32 through TF32 tensor cores (about 10 bits of mantissa per product): an explicit opt-in.
pub type Tf32Tile = WarpTile<Tf32M16K8, 2, 4, 8, 4, 8>;

/// An element type of the tile operations, with the engine shape they run on.
pub trait Tiled: Element {
    /// The shape [`gemm`](super::gemm()) and the other operations use.
    type Shape: Shape<Elem = Self>;
}

impl Tiled for f64 {
    // Full rate on the H100, where m8n8k4 runs at half (bench/results/dmma-shapes-h100.md).
    // 16-deep chunks: every f64 factorization ran 0–4.3% faster than with 8-deep ones on the
    // H200, at 255 registers; a GEMM-only kernel capped at 168 spills with them and is better
    // off on `F64M16K8Tile` (bench/results/kc16-h200/).
    #[cfg(any(not(target_arch = "nvptx64"), target_feature = "sm_90"))]
    type Shape = F64M16K8Kc16Tile;
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
    type Shape = F64Tile;
}

impl Tiled for f32 {
    type Shape = F32Tile;
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::engine::Geometry;
    use crate::frag::{Atom, Fragment, Layout};
    use crate::smem::tests::wavefronts;
    use crate::smem::{KMajor, Major, MnMajor};

    /// The wavefronts of every fragment load of one `k` step of a warp tile of `S`, for A and B
    /// staged with major `M`, against the minimum (one per 128 bytes a load moves).
    fn loads<S: Shape, M: Major>() -> (u32, u32) {
        let g = Geometry::new(4, S::WM, S::WN);
        let bytes = size_of::<<S::Atom as Atom>::Elem>() as u32;
        let (mut got, mut least) = (0, 0);
        for (rows, is_a) in [(g.bm, true), (g.bn, false)] {
            let stride = if M::K_CONTIGUOUS {
                S::KC + S::PAD_K
            } else {
                rows + S::PAD_MN
            };
            let count = if is_a {
                <<S::Atom as Atom>::A as Fragment>::REGS
            } else {
                <<S::Atom as Atom>::B as Fragment>::REGS
            };
            let coord = |lane, reg| {
                if is_a {
                    <<<S::Atom as Atom>::A as Fragment>::Layout as Layout>::coord(lane, reg)
                } else {
                    <<<S::Atom as Atom>::B as Fragment>::Layout as Layout>::coord(lane, reg)
                }
            };
            let pairs = M::K_CONTIGUOUS
                && if is_a {
                    <<<S::Atom as Atom>::A as Fragment>::Layout as Layout>::COL_PAIRS
                } else {
                    <<<S::Atom as Atom>::B as Fragment>::Layout as Layout>::COL_PAIRS
                };
            let (width, step) = if pairs { (2, 2) } else { (1, 1) };
            // Every warp tile origin the block tile has, and the first two `k` steps.
            let atom_rows = if is_a { S::Atom::M } else { S::Atom::N };
            for origin in (0..rows).step_by(atom_rows as usize) {
                for k0 in (0..S::KC).step_by(S::Atom::K as usize) {
                    for reg in (0..count).step_by(step) {
                        let addresses: [u32; 32] = core::array::from_fn(|lane| {
                            let (mn, k) = coord(lane as u32, reg);
                            M::index(origin + mn, k0 + k, stride) * bytes
                        });
                        got += wavefronts(&addresses, bytes * width);
                        least += (bytes * width * 32).div_ceil(128);
                    }
                }
            }
        }
        (got, least)
    }

    fn conflict_free<S: Shape>() {
        for (name, (got, least)) in [
            ("k-major", loads::<S, KMajor>()),
            ("mn-major", loads::<S, MnMajor>()),
        ] {
            assert_eq!(
                got, least,
                "{name}: {got} wavefronts where {least} would do"
            );
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "safe arithmetic on the layouts, nearly four minutes under Miri"
    )]
    fn staged_fragment_loads_are_free_of_bank_conflicts() {
        conflict_free::<F64Tile>();
        conflict_free::<F64M16K4Tile>();
        conflict_free::<F64M16K8Tile>();
        conflict_free::<F64M16K8Kc16Tile>();
        conflict_free::<F64M16K16Tile>();
        conflict_free::<F64M16K8WideTile>();
        conflict_free::<Tf32Tile>();
        conflict_free::<F32Tile>();
    }

    #[test]
    fn block_tiles_are_as_square_as_the_warp_count_allows() {
        let tile = |warps, wr, wc| {
            let g = Geometry::new(warps, wr, wc);
            assert_eq!(g.wm * g.wn, warps);
            (g.bm, g.bn)
        };
        // Square warp tiles: the taller of two equally square grids.
        assert_eq!(tile(1, 32, 32), (32, 32));
        assert_eq!(tile(2, 32, 32), (64, 32));
        assert_eq!(tile(3, 32, 32), (96, 32));
        assert_eq!(tile(4, 32, 32), (64, 64));
        assert_eq!(tile(8, 32, 32), (128, 64));
        assert_eq!(tile(12, 32, 32), (128, 96));
        // Wide warp tiles (64 × 32): eight warps cover a 128-tile in one block tile.
        assert_eq!(tile(4, 64, 32), (128, 64));
        assert_eq!(tile(8, 64, 32), (128, 128));
    }
}
