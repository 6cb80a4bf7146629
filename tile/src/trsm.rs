//! TRSM on tiles, and the line solves the blocked factorizations share.
//!
//! [`trsm`] solves `op(A)·X = α·B` (left) or `X·op(A) = α·B` (right) in place of `B`, for a
//! triangular `A` of either triangle, transposed or not, with a unit or stored diagonal.
//!
//! Every case is first put in one form, `T·X' = α·B'`: on the left `T = op(A)` and `X' = X`, on
//! the right `T = op(A)ᵀ` and `X' = Xᵀ` (a transposed view, nothing moves). `T` lower solves
//! forward, upper backward. Triangles of 16, 32 and 64 are solved in registers
//! (`regs`); larger ones whose side is a multiple of 64 in 64-blocks, each solved
//! in registers and the rows after it updated on the engine with `K = 64` (`solve_by_64`).
//! Otherwise (or with too little scratch) the solve walks `T`'s diagonal in blocks of [`P`] = 16:
//!
//! 1. **Line solve** ([`solve_lines`]): the 16 rows of `X'` at the diagonal block are solved
//!    against it by substitution, each column of `X'` (a line) by one thread, its 16 values in
//!    registers and the block's coefficients read by every thread at once.
//! 2. **Update**: the rows of `X'` still to solve lose the product of `T`'s column block and the
//!    rows just solved, a `K = 16` multiply: when `X'` fits in the block's scratch it is staged
//!    there (with `T` beside it if that fits too) and updated with multiply-adds on shared memory
//!    ([`staged::update`](super::staged)); otherwise on the tensor cores (the
//!    [`engine`](super::engine)) over global memory, written on `X` itself so that its stores
//!    stay row-major.
//!
//! | operation | shared memory | threads |
//! | --- | --- | --- |
//! | [`trsm`] | as [`gemm`](super::gemm()) (one engine stage at least) | any multiple of 32 |
//!
//! Error bound (tested): the residual of each element, `op(A)·X − α·B` (or `X·op(A) − α·B`), is
//! within `4(n + 2)ε` times the same product taken in absolute values, the backward-error bound
//! of substitution.

use super::args::{self, disjoint, gmat, gmat_mut};
use super::engine::{Gmat, Mask, Product, Shape};
use super::flags::{Alpha, Diag, Op, Side, Uplo};
use super::lanes::Team;
use super::numeric::Element;
use super::regs;
use super::shapes::Tiled;
use super::smem::Scratch;
use super::staged::{Part, Room, copy, update};
use super::unroll::{array, hot, unroll};
use taskweave_device::Block;
use taskweave_device::operand::{MatMut, MatRef};

pub use super::lines::P;
use super::lines::substitute;

/// `x := t⁻¹·x` for the `P × P` triangular `t` (lower and solved forward, or upper and solved
/// backward; a unit diagonal when `unit`) and each column of the `P × w` matrix `x`: every
/// thread of the block calls it, each solving its share of the columns.
///
/// One function per element type (not inlined): the tasks that solve lines share its code.
///
/// # Safety
/// `t` and `x` are valid memory that no other thread writes during the call, and they do not
/// overlap.
#[inline(never)]
pub(crate) unsafe fn solve_lines<T: Element>(
    team: Team,
    t: Gmat<T>,
    x: Gmat<T>,
    forward: bool,
    unit: bool,
) {
    team.for_each_item(x.cols, |line| {
        // SAFETY: inside `x` (the caller's promise).
        let mut v: [T; N] = array(hot!(|k| unsafe { *x.at(k as u32, line) }));
        substitute(
            &mut v,
            // SAFETY: inside `t` (both indices are below `P`).
            hot!(|r: usize, c: usize| unsafe { *t.at(r as u32, c as u32) }),
            forward,
            unit,
        );
        // SAFETY: inside `x`.
        unroll::<N>(hot!(|k| unsafe { *x.at(k as u32, line) = v[k] }));
    });
}

use super::lines::N;

/// The block side of the solves and factorizations of tiles larger than 64: the largest side the
/// register path takes.
pub(crate) const BIG: u32 = 64;

/// `x := α·x` over the `rows × cols` matrix `x`, spread over the block's threads.
///
/// # Safety
/// `x` is valid memory that no other thread accesses during the call.
#[inline(always)]
pub(crate) unsafe fn scale<T: Element>(team: &Team, x: Gmat<T>, alpha: T) {
    team.for_each_cell(x.rows, x.cols, |r, c| {
        // SAFETY: inside `x`.
        unsafe { *x.at(r, c) = alpha * *x.at(r, c) };
    });
}

/// `T·X' = α·B'` in place of `x` (`n × w`), `t` being `n × n` triangular: lower (forward) or
/// upper (backward), see the module docs.
///
/// One function per shape (not inlined), shared by every task that solves with it.
///
/// # Safety
/// As for [`Shape::multiply`]: valid, non-overlapping operands, sides multiples of 16.
#[inline(never)]
pub(crate) unsafe fn solve<S: Shape>(
    block: &Block,
    scratch: Scratch,
    t: Gmat<S::Elem>,
    x: Gmat<S::Elem>,
    forward: bool,
    unit: bool,
    alpha: S::Elem,
) {
    let team = Team::new(block);
    let (n, w) = (t.rows, x.cols);
    let room = Room::of(block, 0);
    // SAFETY: the caller's promise; the room is the block's scratch.
    if unsafe { regs::solve(block, &team, room, t, x, forward, unit, alpha) } {
        return;
    }
    // SAFETY: the caller's promise; the room and the scratch are the block's, used one after the
    // other (each step ends with a barrier).
    if unsafe { solve_by_64::<S>(block, &team, room, scratch, t, x, forward, unit, alpha) } {
        return;
    }
    if room.fits::<S::Elem>(&[(n, w)]) {
        // SAFETY: the caller's promise; the staged matrices fit in the scratch.
        unsafe { solve_staged(block, &team, room, t, x, forward, unit, alpha) };
        return;
    }
    if alpha != S::Elem::ONE {
        // SAFETY: the caller's promise.
        unsafe { scale(&team, x, alpha) };
        block.sync();
    }
    for (_, r0, (rest0, rest)) in steps(t.rows, P, forward) {
        // SAFETY: the caller's promise; the sub-blocks lie inside `t` and `x`.
        unsafe {
            solve_lines(
                team,
                t.sub(r0, r0, P, P),
                x.sub(r0, 0, P, x.cols),
                forward,
                unit,
            )
        };
        block.sync();
        if rest == 0 {
            continue;
        }
        // SAFETY: the caller's promise; the rows updated and the rows read are disjoint.
        unsafe { update_rest::<S>(block, scratch, t, x, (r0, P), (rest0, rest), S::Elem::ONE) };
    }
}

/// The steps of a blocked solve of `n` rows in blocks of `side`, in solve order (down for a
/// forward solve, up for a backward one): each step's index, the block's first row, and the
/// rows still to solve after it, `(first, count)`.
#[inline(always)]
fn steps(n: u32, side: u32, forward: bool) -> impl Iterator<Item = (u32, u32, (u32, u32))> {
    let blocks = n / side;
    (0..blocks).map(move |step| {
        let r0 = if forward { step } else { blocks - 1 - step } * side;
        let rest = if forward {
            (r0 + side, n - r0 - side)
        } else {
            (0, r0)
        };
        (step, r0, rest)
    })
}

/// `X'[rest] = β·X'[rest] − T[rest, solved]·X'[solved]` on the engine, written on X in its own
/// orientation (so that its stores stay row-major): the update after the rows `solved` =
/// `(first, count)` of `X'` are solved, for the rows `rest` = `(first, count)` still to solve.
///
/// # Safety
/// As for [`Shape::multiply`]; the two row ranges are disjoint and inside `x`.
#[inline(always)]
unsafe fn update_rest<S: Shape>(
    block: &Block,
    scratch: Scratch,
    t: Gmat<S::Elem>,
    x: Gmat<S::Elem>,
    (r0, size): (u32, u32),
    (rest0, rest): (u32, u32),
    beta: S::Elem,
) {
    let (c, a, b) = (
        x.sub(rest0, 0, rest, x.cols),
        t.sub(rest0, r0, rest, size),
        x.sub(r0, 0, size, x.cols),
    );
    let p = if x.trans {
        Product {
            c: c.t(),
            a: b.t(),
            b: a.t(),
            alpha: -S::Elem::ONE,
            beta,
        }
    } else {
        Product {
            c,
            a,
            b,
            alpha: -S::Elem::ONE,
            beta,
        }
    };
    // SAFETY: the caller's promise.
    unsafe { S::multiply(block, scratch, &p, Mask::All) };
}

/// [`solve`] of a triangle larger than 64 whose side is a multiple of 64, in blocks of 64: each
/// block's rows of `X'` in registers ([`regs::solve`]), then the rows still to solve updated on
/// the engine with `K = 64`. The blocked 16-wide paths took a `K = 16` engine call or a staged
/// update per 16 rows; a 128-tile solve now takes two register solves and one update. `α`
/// scales the first block's rows in its solve and every other row in the first update (`β`).
/// Returns `false`, having done nothing, when the triangle is not such a side or the room cannot
/// hold a 64-block's register solve.
///
/// # Safety
/// As for [`solve`].
#[allow(
    clippy::too_many_arguments,
    reason = "`solve`'s arguments, the team and the room"
)]
#[inline(always)]
unsafe fn solve_by_64<S: Shape>(
    block: &Block,
    team: &Team,
    room: Room,
    scratch: Scratch,
    t: Gmat<S::Elem>,
    x: Gmat<S::Elem>,
    forward: bool,
    unit: bool,
    alpha: S::Elem,
) -> bool {
    let n = t.rows;
    if n <= BIG || !n.is_multiple_of(BIG) || !regs::solves::<S::Elem>(room, BIG, team) {
        return false;
    }
    for (step, r0, (rest0, rest)) in steps(n, BIG, forward) {
        let scale = if step == 0 { alpha } else { S::Elem::ONE };
        // SAFETY: the caller's promise; the blocks lie inside `t` and `x`, and the register path
        // takes them (checked above: the same side and room every step).
        let solved = unsafe {
            regs::solve(
                block,
                team,
                room,
                t.sub(r0, r0, BIG, BIG),
                x.sub(r0, 0, BIG, x.cols),
                forward,
                unit,
                scale,
            )
        };
        debug_assert!(solved);
        if rest > 0 {
            // SAFETY: as above; the rows updated and the rows read are disjoint.
            unsafe { update_rest::<S>(block, scratch, t, x, (r0, BIG), (rest0, rest), scale) };
        }
    }
    true
}

/// [`solve`] on the right-hand side staged in shared memory, and the triangle too when it fits
/// beside it (else read from global memory, where the cache keeps it after the first step). The
/// same blocked algorithm with the updates done by [`update`] on shared memory, where the engine's
/// `K = 16` calls paid staging and an epilogue for each step (about 10 µs each on the H100; one
/// 64-tile solve took 67 µs).
///
/// # Safety
/// As for [`solve`]; `room` holds an `n × w` staged matrix.
#[allow(
    clippy::too_many_arguments,
    reason = "`solve`'s arguments, the team and the room"
)]
#[inline(always)]
unsafe fn solve_staged<T: Element>(
    block: &Block,
    team: &Team,
    room: Room,
    t: Gmat<T>,
    x: Gmat<T>,
    forward: bool,
    unit: bool,
    alpha: T,
) {
    let (n, w) = (t.rows, x.cols);
    // SAFETY: the caller's promises; each matrix is taken only where it fits, the barriers order
    // each phase's writes before the next phase's reads, and the rows updated at a step are
    // disjoint from the rows read.
    unsafe {
        let (sx, room) = room.take::<T>(n, w);
        copy(team, x, sx, x, Part::All, alpha);
        let t = if room.fits::<T>(&[(n, n)]) {
            let (st, _) = room.take::<T>(n, n);
            copy(
                team,
                t,
                st,
                t,
                if forward { Part::Lower } else { Part::Upper },
                T::ONE,
            );
            st
        } else {
            t
        };
        block.sync();
        for (_, r0, (rest0, rest)) in steps(n, P, forward) {
            solve_lines(
                *team,
                t.sub(r0, r0, P, P),
                sx.sub(r0, 0, P, w),
                forward,
                unit,
            );
            block.sync();
            if rest == 0 {
                continue;
            }
            update(
                team,
                sx.sub(rest0, 0, rest, w),
                t.sub(rest0, r0, rest, P),
                sx.sub(r0, 0, P, w),
                Part::All,
            );
            block.sync();
        }
        copy(team, sx, x, x, Part::All, T::ONE);
    }
    block.sync();
}

/// Solves `op(A)·X = α·B` (`side = Left`) or `X·op(A) = α·B` (`Right`) for the triangular `A`
/// (`uplo` triangle; `diag = Unit` takes its diagonal as ones), writing `X` over `B`. `A` must
/// not overlap `B` (refused in checked mode). Every thread of the block calls it.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
#[inline(always)]
pub fn trsm<T: Tiled, const CHECKED: bool>(
    block: &Block,
    b: MatMut<'_, T, CHECKED>,
    a: MatRef<'_, T, CHECKED>,
    side: Side,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    Alpha(alpha): Alpha<T>,
) {
    let (ga, gb) = (gmat(&a, op), gmat_mut(&b));
    let shapes = [
        (ga.rows as usize, ga.cols as usize),
        (gb.rows as usize, gb.cols as usize),
    ];
    args::sides("trsm", &shapes);
    let n = if side == Side::Left { gb.rows } else { gb.cols };
    if ga.rows != ga.cols || ga.rows != n {
        args::bad_shapes("trsm", &shapes);
    }
    if !(a.is_ok() && b.is_ok()) {
        return;
    }
    disjoint("trsm", &b, &a);
    // op(A) lower: a forward solve on the left; its transpose, upper, backward on the right.
    let lower = (uplo == Uplo::Lower) == (op == Op::N);
    let (t, x, forward) = match side {
        Side::Left => (ga, gb, lower),
        Side::Right => (ga.t(), gb.t(), !lower),
    };
    // SAFETY: the handles were checked inside their arrays and apart (in checked mode; the
    // caller's word otherwise); sides are multiples of 16.
    unsafe {
        solve::<T::Shape>(
            block,
            Scratch::of(block),
            t,
            x,
            forward,
            diag == Diag::Unit,
            alpha,
        )
    };
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::reference::{self, Matrix};
    use crate::testing::{Shared, config, on_block, on_block_staged, side, staged_bytes};
    use proptest::prelude::*;

    /// A well-scaled triangle: diagonal in `±[2, 3]`, the rest in `[-1, 1]`.
    fn triangle<T: Element>(n: usize, seed: u64) -> Matrix<T> {
        let m = Matrix::<T>::random(n, n, 3, seed);
        let values = m.dense();
        m.from_fn(|i, j| {
            let v = values[i * n + j];
            if i == j {
                v.signum() * (2.0 + v.abs())
            } else {
                v
            }
        })
    }

    fn check<T: Tiled>(
        (m, w): (usize, usize),
        flags: (Side, Uplo, Op, Diag),
        alpha: f64,
        warps: u32,
        seed: u64,
        staged: Staged,
    ) {
        let (side, n) = (flags.0, if flags.0 == Side::Left { m } else { w });
        // The right-hand side staged is `n × (lines)`; the triangle beside it when there is room.
        let lines = if side == Side::Left { w } else { m };
        let bytes = match staged {
            Staged::No => 4 * T::Shape::stage_bytes(warps) as usize,
            Staged::Rhs => staged_bytes::<T>(&[(n, lines)]),
            Staged::Both => staged_bytes::<T>(&[(n, lines), (n, n)]),
        };
        check_with::<T>(
            (m, w),
            flags,
            alpha,
            warps,
            seed,
            bytes,
            staged != Staged::No,
        );
    }

    /// [`check`] in `bytes` of scratch that every path may use.
    fn check_in<T: Tiled>(
        dims: (usize, usize),
        flags: (Side, Uplo, Op, Diag),
        alpha: f64,
        warps: u32,
        seed: u64,
        bytes: usize,
    ) {
        check_with::<T>(dims, flags, alpha, warps, seed, bytes, true);
    }

    /// [`check`] in `bytes` of scratch, which the paths that stage may use when `room`.
    fn check_with<T: Tiled>(
        (m, w): (usize, usize),
        (side, uplo, op, diag): (Side, Uplo, Op, Diag),
        alpha: f64,
        warps: u32,
        seed: u64,
        bytes: usize,
        room: bool,
    ) {
        let n = if side == Side::Left { m } else { w };
        let a = triangle::<T>(n, seed);
        let mut b = Matrix::<T>::random(m, w, 1, seed + 1);
        let (sa, sb) = (Shared::of(&a.data), Shared::of_mut(&mut b.data));
        let (ra, rb) = (a.rect, b.rect);
        on_block_staged(warps, bytes, room, |block| {
            trsm(
                block,
                sb.mat_mut(rb),
                sa.mat(ra),
                side,
                uplo,
                op,
                diag,
                Alpha(T::from_f64(alpha)),
            );
        });
        let (residual, scale) = reference::trsm_residual(side, uplo, op, diag, alpha, &a, &b);
        let what = std::format!("trsm {side:?} {uplo:?} {op:?} {diag:?} {m}x{w}");
        reference::assert_small(
            &b,
            &residual,
            &scale,
            4.0 * (n as f64 + 2.0) * T::EPSILON,
            &what,
        );
    }

    /// Which of TRSM's paths a test takes: the engine's over global memory, the right-hand side
    /// staged with the triangle in global memory, or both staged.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Staged {
        No,
        Rhs,
        Both,
    }

    fn flags() -> impl Strategy<Value = (Side, Uplo, Op, Diag)> {
        (
            prop_oneof![Just(Side::Left), Just(Side::Right)],
            prop_oneof![Just(Uplo::Lower), Just(Uplo::Upper)],
            prop_oneof![Just(Op::N), Just(Op::T)],
            prop_oneof![Just(Diag::NonUnit), Just(Diag::Unit)],
        )
    }

    proptest! {
        #![proptest_config(config(64))]

        #[test]
        fn trsm_solves_every_side_triangle_and_transpose(
            dims in (side(), side()),
            flags in flags(),
            alpha in prop_oneof![Just(1.0), Just(-0.5)],
            warps in 1u32..=4,
            seed in 0u64..1000,
            f32 in any::<bool>(),
            staged in prop_oneof![Just(Staged::No), Just(Staged::Rhs), Just(Staged::Both)],
        ) {
            if f32 {
                check::<f32>(dims, flags, alpha, warps, seed, staged);
            } else {
                check::<f64>(dims, flags, alpha, warps, seed, staged);
            }
        }
    }

    /// Every path on fixed small cases, so that Miri (one property case) runs each of them.
    #[test]
    fn every_path_solves_the_cholesky_and_lu_cases() {
        for staged in [Staged::No, Staged::Rhs, Staged::Both] {
            let cases = [
                (Side::Right, Uplo::Lower, Op::T, Diag::NonUnit),
                (Side::Left, Uplo::Lower, Op::N, Diag::Unit),
                (Side::Left, Uplo::Upper, Op::T, Diag::NonUnit),
            ];
            for flags in cases {
                check::<f64>((32, 16), flags, -0.5, 2, 7, staged);
            }
        }
    }

    /// The scratch of the engine's four stages at four warps: room for a 64-block's register
    /// solve (38.6 KiB in f64), not for a staged 128-tile.
    fn engine<T: Tiled>() -> usize {
        4 * T::Shape::stage_bytes(4) as usize
    }

    /// Triangles past 64 take the blocked register path: every side, triangle, transpose and
    /// diagonal, `α` on every row (the first block's in its solve, the rest in the first update).
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a 128-triangle's register solves run for minutes under Miri"
    )]
    fn triangles_past_64_solve_in_blocks_of_64() {
        for n in [128, 192, 256] {
            for side in [Side::Left, Side::Right] {
                for uplo in [Uplo::Lower, Uplo::Upper] {
                    for op in [Op::N, Op::T] {
                        for diag in [Diag::NonUnit, Diag::Unit] {
                            let dims = if side == Side::Left { (n, 16) } else { (16, n) };
                            let flags = (side, uplo, op, diag);
                            check_in::<f64>(dims, flags, -0.5, 4, 3, engine::<f64>());
                            check_in::<f32>(dims, flags, -0.5, 4, 4, engine::<f32>());
                        }
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "tile::trsm: the output overlaps an input")]
    fn trsm_refuses_a_right_hand_side_over_its_triangle() {
        let mut data = std::vec![1.0f64; 64 * 64];
        let s = Shared::of_mut(&mut data);
        on_block(1, 64 * 1024, |block| {
            let t = |o| crate::Rect::new(o, 32, 32, 64);
            trsm(
                block,
                s.mat_mut(t(16)),
                s.mat(t(0)),
                Side::Left,
                Uplo::Lower,
                Op::N,
                Diag::Unit,
                Alpha(1.0),
            );
        });
    }
}
