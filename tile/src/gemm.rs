//! GEMM and SYRK on tiles.
//!
//! | operation | computes | shared memory | threads |
//! | --- | --- | --- | --- |
//! | [`gemm`] | `C = α·op(A)·op(B) + β·C` | one stage ([`Shape::stage_bytes`]), up to 4 | any multiple of 32 |
//! | [`syrk`] | `C = α·op(A)·op(A)ᵀ + β·C` on one triangle | as `gemm` | as `gemm` |
//! | [`gemm_gang`] | `gemm`, each block of a wide task's gang on its part of C | as `gemm` | as `gemm` |
//!
//! Every side must be a multiple of 16 from 16 to 256. With the default f64 shape and 128
//! threads (a 64 × 64 block tile, 16-deep chunks), one stage is 18,944 bytes for row-major A and
//! B (20,480 at most, [`Shape::stage_bytes`]): 42 KiB of `shared_bytes` gives two stages, 72 KiB
//! three. The operations use whatever scratch the task has not taken with [`Block::shared`] and
//! leave it as they found it.
//!
//! Error bound (tested): each element of the result is within `γ·(|α|·(|op(A)|·|op(B)|) + |β|·|C|)`
//! of the exact value, with `γ = 2(k + 2)ε` for the element type's `ε` (`k` the inner
//! dimension), as for any summation of `k` products.

use super::args::{self, disjoint, gmat, gmat_mut};
use super::engine::{Mask, Product, Shape};
use super::flags::{Alpha, Beta, Op, Uplo};
use super::shapes::Tiled;
use super::smem::Scratch;
use taskweave_device::Block;
use taskweave_device::operand::{MatMut, MatRef};

/// `C = α·op(A)·op(B) + β·C` with `T`'s default engine shape (see [`shapes`](super::shapes)).
/// `C` must not overlap `A` or `B` (refused in checked mode). Every thread of the block calls it;
/// on return the result is visible to all of them.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
#[inline(always)]
pub fn gemm<T: Tiled, const CHECKED: bool>(
    block: &Block,
    c: MatMut<'_, T, CHECKED>,
    a: MatRef<'_, T, CHECKED>,
    op_a: Op,
    b: MatRef<'_, T, CHECKED>,
    op_b: Op,
    alpha: Alpha<T>,
    beta: Beta<T>,
) {
    gemm_with::<T::Shape, CHECKED>(block, c, a, op_a, b, op_b, alpha, beta);
}

/// [`gemm`] on the engine shape `S`: for example [`Tf32Tile`](super::shapes::Tf32Tile) to run
/// an f32 GEMM on TF32 tensor cores, or an sm_90 f64 shape.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
#[inline(always)]
pub fn gemm_with<S: Shape, const CHECKED: bool>(
    block: &Block,
    c: MatMut<'_, S::Elem, CHECKED>,
    a: MatRef<'_, S::Elem, CHECKED>,
    op_a: Op,
    b: MatRef<'_, S::Elem, CHECKED>,
    op_b: Op,
    Alpha(alpha): Alpha<S::Elem>,
    Beta(beta): Beta<S::Elem>,
) {
    let (ga, gb, gc) = (gmat(&a, op_a), gmat(&b, op_b), gmat_mut(&c));
    let shapes = [
        (gc.rows as usize, gc.cols as usize),
        (ga.rows as usize, ga.cols as usize),
        (gb.rows as usize, gb.cols as usize),
    ];
    args::sides("gemm", &shapes);
    if ga.rows != gc.rows || gb.cols != gc.cols || ga.cols != gb.rows {
        args::bad_shapes("gemm", &shapes);
    }
    if !(a.is_ok() && b.is_ok() && c.is_ok()) {
        return;
    }
    disjoint("gemm", &c, &a);
    disjoint("gemm", &c, &b);
    let p = Product {
        c: gc,
        a: ga,
        b: gb,
        alpha,
        beta,
    };
    // SAFETY: the handles were checked inside their arrays, C overlaps neither input (checked
    // above in checked mode; the caller's word otherwise), and the sides are multiples of 16,
    // hence of every shape's chunk depth.
    unsafe { S::multiply_whole(block, Scratch::of(block), &p, Mask::All) };
}

/// [`gemm`] shared by the gang of a wide task (`#[task(blocks = K)]`): C is cut into a grid of
/// `K` parts (two rows of parts for every column when `K` is a power of two, else one column of
/// `K`), each a multiple of 16 on both sides, and each block of the gang multiplies its own part
/// (a gang wider than C has parts leaves the rest idle). Every thread of every block of the gang
/// calls it with the same operands. No gang barrier: the parts are disjoint, and the task's
/// children see the whole result once the gang ends. Within a task that goes on to read other
/// blocks' parts, call [`Gang::sync`](taskweave_device::Gang::sync) first.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
#[inline(always)]
pub fn gemm_gang<T: Tiled, const CHECKED: bool>(
    block: &Block,
    c: MatMut<'_, T, CHECKED>,
    a: MatRef<'_, T, CHECKED>,
    op_a: Op,
    b: MatRef<'_, T, CHECKED>,
    op_b: Op,
    alpha: Alpha<T>,
    beta: Beta<T>,
) {
    let gang = block.gang();
    let Some((rows, cols)) = gang_part(c.rows(), c.cols(), gang.rank(), gang.size()) else {
        return;
    };
    let k = match op_a {
        Op::N => a.cols(),
        Op::T => a.rows(),
    };
    let part_a = match op_a {
        Op::N => a.sub(rows.start, 0, rows.len(), k),
        Op::T => a.sub(0, rows.start, k, rows.len()),
    };
    let part_b = match op_b {
        Op::N => b.sub(0, cols.start, k, cols.len()),
        Op::T => b.sub(cols.start, 0, cols.len(), k),
    };
    let part_c = c.into_sub(rows.start, cols.start, rows.len(), cols.len());
    gemm_with::<T::Shape, CHECKED>(block, part_c, part_a, op_a, part_b, op_b, alpha, beta);
}

/// The rows and columns of C (`m × n`, sides multiples of 16) that rank `rank` of a gang of
/// `size` computes in [`gemm_gang`], or `None` when its part is empty.
pub fn gang_part(
    m: usize,
    n: usize,
    rank: u32,
    size: u32,
) -> Option<(core::ops::Range<usize>, core::ops::Range<usize>)> {
    let size = size as usize;
    // A grid of `grid_rows × grid_cols = size` parts, twice as many rows as columns (or as
    // many) when `size` is a power of two; one column otherwise.
    let (grid_rows, grid_cols) = if size.is_power_of_two() {
        let cols = 1usize << (size.trailing_zeros() / 2);
        (size / cols, cols)
    } else {
        (size, 1)
    };
    let (r, c) = (rank as usize / grid_cols, rank as usize % grid_cols);
    // In units of 16 rows or columns, shared as evenly as they go.
    let split = |len: usize, parts: usize, at: usize| {
        let units = len / 16;
        (units * at / parts * 16)..(units * (at + 1) / parts * 16)
    };
    let (rows, cols) = (split(m, grid_rows, r), split(n, grid_cols, c));
    (!rows.is_empty() && !cols.is_empty()).then_some((rows, cols))
}

/// `C = α·op(A)·op(A)ᵀ + β·C` on the `uplo` triangle of the square `C` (the other triangle is
/// neither read nor written). With `op = N`, A is `n × k`; with `op = T`, `k × n`.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
#[inline(always)]
pub fn syrk<T: Tiled, const CHECKED: bool>(
    block: &Block,
    c: MatMut<'_, T, CHECKED>,
    uplo: Uplo,
    a: MatRef<'_, T, CHECKED>,
    op: Op,
    alpha: Alpha<T>,
    beta: Beta<T>,
) {
    syrk_with::<T::Shape, CHECKED>(block, c, uplo, a, op, alpha, beta);
}

/// [`syrk`] on the engine shape `S`.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
#[inline(always)]
pub fn syrk_with<S: Shape, const CHECKED: bool>(
    block: &Block,
    c: MatMut<'_, S::Elem, CHECKED>,
    uplo: Uplo,
    a: MatRef<'_, S::Elem, CHECKED>,
    op: Op,
    Alpha(alpha): Alpha<S::Elem>,
    Beta(beta): Beta<S::Elem>,
) {
    let (ga, gc) = (gmat(&a, op), gmat_mut(&c));
    let shapes = [
        (gc.rows as usize, gc.cols as usize),
        (ga.rows as usize, ga.cols as usize),
    ];
    args::sides("syrk", &shapes);
    if gc.rows != gc.cols || ga.rows != gc.rows {
        args::bad_shapes("syrk", &shapes);
    }
    if !(a.is_ok() && c.is_ok()) {
        return;
    }
    disjoint("syrk", &c, &a);
    let p = Product {
        c: gc,
        a: ga,
        b: ga.t(),
        alpha,
        beta,
    };
    // SAFETY: as in `gemm_with`.
    unsafe { S::multiply_whole(block, Scratch::of(block), &p, mask(uplo)) };
}

/// The mask that writes the `uplo` triangle.
fn mask(uplo: Uplo) -> Mask {
    match uplo {
        Uplo::Lower => Mask::Lower,
        Uplo::Upper => Mask::Upper,
    }
}

/// The engine on the `uplo` triangle of `p.c` only.
///
/// # Safety
/// As for [`Shape::multiply`].
#[inline(always)]
pub(crate) unsafe fn triangle<S: Shape>(
    block: &Block,
    scratch: Scratch,
    p: &Product<S::Elem>,
    uplo: Uplo,
) {
    // SAFETY: the caller's promise.
    unsafe { S::multiply(block, scratch, p, mask(uplo)) };
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::Rect;
    use crate::reference::{self, Matrix};
    use crate::shapes::F32Tile;
    use crate::shapes::{F64M16K4Tile, F64M16K8Tile, F64M16K8WideTile, F64M16K16Tile, Tf32Tile};
    use crate::testing::{Shared, config, on_block, side};
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![Just(Op::N), Just(Op::T)]
    }

    /// Runs `gemm_with::<S>` on a block of `warps` warps and checks it against the reference.
    #[allow(clippy::too_many_arguments)]
    fn check_gemm<S: Shape>(
        (m, n, k): (usize, usize, usize),
        (op_a, op_b): (Op, Op),
        (alpha, beta): (f64, f64),
        pad: usize,
        warps: u32,
        seed: u64,
        slack: f64,
    ) {
        let conv = |v: f64| <S::Elem as crate::Element>::from_f64(v);
        let (ar, ac) = if op_a == Op::N { (m, k) } else { (k, m) };
        let (br, bc) = if op_b == Op::N { (k, n) } else { (n, k) };
        let a = Matrix::<S::Elem>::random(ar, ac, pad, seed);
        let b = Matrix::<S::Elem>::random(br, bc, pad + 2, seed + 1);
        let mut c = Matrix::<S::Elem>::random(m, n, pad, seed + 2);
        let want = reference::gemm(&c, &a, op_a, &b, op_b, alpha, beta);
        let bound = reference::gemm_bound(&c, &a, op_a, &b, op_b, alpha, beta);
        let (sa, sb, sc) = (
            Shared::of(&a.data),
            Shared::of(&b.data),
            Shared::of_mut(&mut c.data),
        );
        let (ra, rb, rc) = (a.rect, b.rect, c.rect);
        let bytes = 4 * S::stage_bytes(warps) as usize;
        on_block(warps, bytes, |block| {
            gemm_with::<S, true>(
                block,
                sc.mat_mut(rc),
                sa.mat(ra),
                op_a,
                sb.mat(rb),
                op_b,
                Alpha(conv(alpha)),
                Beta(conv(beta)),
            );
        });
        let eps = <S::Elem as crate::Element>::EPSILON * slack;
        reference::assert_close(&c, &want, &bound, 2.0 * (k as f64 + 2.0) * eps, "gemm");
    }

    proptest! {
        #![proptest_config(config(24))]

        #[test]
        fn f64_gemm_matches_the_reference(
            (m, n, k) in (side(), side(), side()),
            ops in (op(), op()),
            alpha in prop_oneof![Just(1.0), Just(-1.0), Just(0.75)],
            beta in prop_oneof![Just(0.0), Just(1.0), Just(-0.5)],
            pad in prop_oneof![Just(0usize), Just(2), Just(5)],
            warps in 1u32..=4,
            seed in 0u64..1000,
        ) {
            check_gemm::<<f64 as Tiled>::Shape>((m, n, k), ops, (alpha, beta), pad, warps, seed, 1.0);
        }

        #[test]
        fn f32_gemm_matches_the_reference(
            (m, n, k) in (side(), side(), side()),
            ops in (op(), op()),
            beta in prop_oneof![Just(0.0f64), Just(1.0)],
            pad in prop_oneof![Just(0usize), Just(3)],
            warps in 1u32..=3,
            seed in 0u64..1000,
        ) {
            check_gemm::<<f32 as Tiled>::Shape>((m, n, k), ops, (-1.0, beta), pad, warps, seed, 1.0);
        }
    }

    proptest! {
        #![proptest_config(config(16))]

        #[test]
        fn syrk_updates_one_triangle_only(
            (n, k) in (side(), side()),
            uplo in prop_oneof![Just(Uplo::Lower), Just(Uplo::Upper)],
            op in op(),
            beta in prop_oneof![Just(0.0), Just(1.0)],
            warps in 1u32..=4,
            seed in 0u64..1000,
            // An aligned C (no padding) takes the paired loads and stores, a padded one the
            // element path.
            pad in 0usize..=1,
        ) {
            let (ar, ac) = if op == Op::N { (n, k) } else { (k, n) };
            let a = Matrix::<f64>::random(ar, ac, 2, seed);
            let mut c = Matrix::<f64>::random(n, n, pad, seed + 1);
            let (want, bound) = reference::syrk(uplo, op, &c, &a, -1.0, beta);
            let (sa, sc) = (Shared::of(&a.data), Shared::of_mut(&mut c.data));
            let (ra, rc) = (a.rect, c.rect);
            on_block(warps, 4 * <f64 as Tiled>::Shape::stage_bytes(warps) as usize, |block| {
                syrk(block, sc.mat_mut(rc), uplo, sa.mat(ra), op, Alpha(-1.0), Beta(beta));
            });
            reference::assert_close(&c, &want, &bound, 2.0 * (k as f64 + 2.0) * f64::EPSILON, "syrk");
        }
    }

    /// The engine's paths for C and the operands, each at least once, small enough for Miri (one
    /// property case there may miss some): C aligned (paired loads and stores) and not (element
    /// by element), warp tiles that C cuts (row and column edges), operands whose rows are and
    /// are not 16-byte aligned (copied 16 bytes at a time, or element by element), staged either
    /// way (`Op::N` and `Op::T`), and `α` folded into C or scaling A's fragments.
    #[test]
    fn whole_and_cut_warp_tiles_and_unaligned_operands_match_the_reference() {
        type S = <f64 as Tiled>::Shape;
        for (mnk, pad) in [((32, 32, 16), 0), ((32, 32, 16), 1), ((48, 16, 16), 0)] {
            check_gemm::<S>(mnk, (Op::N, Op::N), (-1.0, 1.0), pad, 1, 11, 1.0);
        }
        check_gemm::<S>((32, 32, 16), (Op::T, Op::T), (0.5, 1.0), 1, 1, 12, 1.0);
    }

    /// One case of each alternative shape, 64 × 48 × 80 with every transpose.
    fn every_op<S: Shape>(slack: f64) {
        for ops in [
            (Op::N, Op::N),
            (Op::N, Op::T),
            (Op::T, Op::N),
            (Op::T, Op::T),
        ] {
            for warps in [1, 4] {
                check_gemm::<S>((64, 48, 80), ops, (-1.0, 1.0), 2, warps, 7, slack);
                check_gemm::<S>((32, 64, 48), ops, (0.5, -2.0), 1, warps, 8, slack);
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "minutes under Miri; the property tests cover the engine"
    )]
    fn the_sm90_f64_shapes_match_the_reference() {
        every_op::<F64M16K4Tile>(1.0);
        every_op::<F64M16K8Tile>(1.0);
        every_op::<F64M16K16Tile>(1.0);
        every_op::<F64M16K8WideTile>(1.0);
        // Block tiles of 128 x 64 (128 x 128 on eight warps) on a C both smaller and not a
        // multiple of them.
        for warps in [1, 2, 4, 8] {
            check_gemm::<F64M16K8WideTile>(
                (144, 80, 64),
                (Op::N, Op::T),
                (-1.0, 1.0),
                0,
                warps,
                9,
                1.0,
            );
            check_gemm::<F64M16K8WideTile>(
                (256, 256, 32),
                (Op::N, Op::N),
                (1.0, 0.0),
                1,
                warps,
                10,
                1.0,
            );
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "minutes under Miri; the property tests cover the engine"
    )]
    fn tf32_gemm_is_within_tf32_rounding() {
        // Each TF32 operand carries a relative error of up to 2^-11: 2^13 times f32's epsilon
        // bounds the products' error.
        every_op::<Tf32Tile>(f64::from(1u32 << 13));
        every_op::<F32Tile>(1.0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "minutes under Miri; the property tests cover the engine"
    )]
    fn a_tf32_gemm_is_not_exact_f32() {
        // The point of the opt-in: the same product on TF32 misses the f32 bound.
        let result = std::panic::catch_unwind(|| {
            check_gemm::<Tf32Tile>((64, 64, 64), (Op::N, Op::N), (1.0, 0.0), 0, 1, 3, 1.0)
        });
        assert!(result.is_err());
    }

    #[test]
    #[should_panic(expected = "tile::gemm: the output overlaps an input")]
    fn gemm_refuses_an_output_that_overlaps_an_input() {
        let mut data = std::vec![0.0f64; 64 * 64];
        let s = Shared::of_mut(&mut data);
        on_block(1, 64 * 1024, |block| {
            let (c, a) = (
                Rect::new(0, 32, 32, 64),
                Rect::new(16 * 64 + 16, 32, 32, 64),
            );
            gemm(
                block,
                s.mat_mut(c),
                s.mat(a),
                Op::N,
                s.mat(Rect::new(32, 32, 32, 64)),
                Op::N,
                Alpha(1.0),
                Beta(1.0),
            );
        });
    }

    #[test]
    #[should_panic(expected = "do not fit together")]
    fn gemm_refuses_a_side_that_is_not_a_multiple_of_16() {
        let mut data = std::vec![0.0f64; 64 * 64];
        let s = Shared::of_mut(&mut data);
        on_block(1, 64 * 1024, |block| {
            let t = |o| Rect::new(o, 24, 24, 64);
            gemm(
                block,
                s.mat_mut(t(0)),
                s.mat(t(32)),
                Op::N,
                s.mat(t(2048)),
                Op::N,
                Alpha(1.0),
                Beta(1.0),
            );
        });
    }

    #[test]
    #[should_panic(expected = "raise the region's `shared_bytes`")]
    fn gemm_says_when_the_scratch_is_too_small() {
        let mut data = std::vec![0.0f64; 64 * 64];
        let s = Shared::of_mut(&mut data);
        on_block(1, 1024, |block| {
            let t = |o| Rect::new(o, 32, 32, 64);
            gemm(
                block,
                s.mat_mut(t(0)),
                s.mat(t(32)),
                Op::N,
                s.mat(t(2048)),
                Op::N,
                Alpha(1.0),
                Beta(1.0),
            );
        });
    }
}
