//! POTRF and GETRF (without pivoting) of one tile, blocked.
//!
//! Tiles of 16, 32 and 64 are factored in registers (`regs`); larger tiles whose
//! side is a multiple of 64 in 64-blocks, each factored and its panels solved in registers, the
//! trailing matrix updated on the engine with `K = 64` (`by_64`). Other sides, or too little
//! scratch or too few threads for the registers, take the blocked paths below.
//!
//! The blocked paths walk the diagonal in blocks of [`P`] = 16, right-looking:
//!
//! 1. **Diagonal block.** Warp 0 factors the `16 × 16` block in registers: lane `r` holds row
//!    `r`, and each column step broadcasts the pivot and the pivot row or column with warp
//!    shuffles, so the block needs no barrier inside.
//! 2. **Panels.** The block's threads solve the panels against it, one row or column per
//!    thread ([`solve_lines`]): POTRF's column panel `L₂₁ = A₂₁·L₁₁⁻ᵀ`; GETRF's row panel
//!    `U₁₂ = L₁₁⁻¹·A₁₂` and column panel `L₂₁ = A₂₁·U₁₁⁻¹`.
//! 3. **Trailing update** on the tensor cores (the [`engine`](super::engine)), `K = 16`:
//!    POTRF `A₂₂ −= L₂₁·L₂₁ᵀ` on the lower triangle only, GETRF `A₂₂ −= L₂₁·U₁₂`.
//!
//! | operation | shared memory | threads |
//! | --- | --- | --- |
//! | [`potrf`], [`getrf`] | 16 bytes + one engine stage (as [`gemm`](super::gemm())) | any multiple of 32 |
//!
//! Error bounds (tested): the residual `A − L·Lᵀ` (or `A − L·U`) of each element is within
//! `4(n + 2)ε` times `|L|·|Lᵀ|` (or `|L|·|U|`), the backward-error bounds of both
//! factorizations.

use super::args::{self, gmat_mut};
use super::engine::{Gmat, Mask, Product, Shape};
use super::flags::Uplo;
use super::gemm::triangle;
use super::lanes::{Lanes, Team};
use super::numeric::Element;
use super::regs::{self, Kind};
use super::shapes::Tiled;
use super::smem::Scratch;
use super::staged::{self, Part, Room, copy, update};
use super::trsm::{BIG, P, solve_lines};
use super::unroll::{array, hot, unroll};
use taskweave_device::Block;
use taskweave_device::operand::MatMut;

const N: usize = P as usize;

/// The diagonal block's columns as warp registers: `cols[q]` holds element `(lane, q)` in lane
/// `lane < 16` (zero elsewhere, and above the diagonal when `lower_only`).
///
/// # Safety
/// `d` is a valid `16 × 16` block.
#[inline(always)]
unsafe fn load<T: Element>(d: Gmat<T>, lower_only: bool) -> [Lanes<T>; N] {
    array(hot!(|q| {
        Lanes::from_fn(|lane| {
            if lane < P && (!lower_only || lane >= q as u32) {
                // SAFETY: inside the block (the caller's promise).
                unsafe { *d.at(lane, q as u32) }
            } else {
                T::ZERO
            }
        })
    }))
}

/// Writes the columns back: rows `lane < 16`, only on and below the diagonal when `lower_only`.
///
/// # Safety
/// As for [`load`], and no other thread accesses the block.
#[inline(always)]
unsafe fn store<T: Element>(d: Gmat<T>, cols: &[Lanes<T>; N], lower_only: bool) {
    unroll::<N>(hot!(|q| {
        cols[q].for_each(|lane, v| {
            if lane < P && (!lower_only || lane >= q as u32) {
                // SAFETY: inside the block.
                unsafe { *d.at(lane, q as u32) = v };
            }
        });
    }));
}

/// The Cholesky factor of the lower triangle of the `16 × 16` block `d`, in place, by the
/// calling warp (all 32 lanes). Returns the first column whose pivot was not positive.
///
/// # Safety
/// As for [`store`].
#[inline(always)]
unsafe fn cholesky_block<T: Element>(d: Gmat<T>) -> Option<u32> {
    // SAFETY: the caller's promise.
    let mut cols = unsafe { load(d, true) };
    let mut failed = None;
    unroll::<N>(hot!(|c| {
        let c32 = c as u32;
        let pivot = cols[c].broadcast(c32);
        // Not positive, NaN included.
        let positive = pivot.partial_cmp(&T::ZERO) == Some(core::cmp::Ordering::Greater);
        if !positive && failed.is_none() {
            failed = Some(c32);
        }
        let inverse = pivot.rsqrt();
        let root = pivot * inverse;
        cols[c] = cols[c].map_lane(|lane, v| match lane.cmp(&c32) {
            core::cmp::Ordering::Equal => root,
            core::cmp::Ordering::Greater => v * inverse,
            core::cmp::Ordering::Less => v,
        });
        unroll::<N>(hot!(|q| {
            if q > c {
                // A[r][q] -= L[r][c]·L[q][c] for the rows r ≥ q.
                let lqc = cols[c].broadcast(q as u32);
                cols[q] = cols[q]
                    .zip(cols[c], |v, lrc| (v, lrc))
                    .map_lane(|lane, (v, lrc)| {
                        if lane >= q as u32 {
                            (-lrc).fma(lqc, v)
                        } else {
                            v
                        }
                    });
            }
        }));
    }));
    // SAFETY: the caller's promise.
    unsafe { store(d, &cols, true) };
    failed
}

/// LU without pivoting of the `16 × 16` block `d`, in place (unit-lower `L` below the diagonal,
/// `U` on and above), by the calling warp. Returns the first column whose pivot was zero.
///
/// # Safety
/// As for [`store`].
#[inline(always)]
unsafe fn lu_block<T: Element>(d: Gmat<T>) -> Option<u32> {
    // SAFETY: the caller's promise.
    let mut cols = unsafe { load(d, false) };
    let mut failed = None;
    unroll::<N>(hot!(|c| {
        let c32 = c as u32;
        let pivot = cols[c].broadcast(c32);
        if pivot == T::ZERO && failed.is_none() {
            failed = Some(c32);
        }
        let inverse = pivot.recip();
        cols[c] = cols[c].map_lane(|lane, v| if lane > c32 { v * inverse } else { v });
        unroll::<N>(hot!(|q| {
            if q > c {
                // A[r][q] -= L[r][c]·U[c][q] for the rows r > c.
                let ucq = cols[q].broadcast(c32);
                cols[q] = cols[q]
                    .zip(cols[c], |v, lrc| (v, lrc))
                    .map_lane(|lane, (v, lrc)| if lane > c32 { (-lrc).fma(ucq, v) } else { v });
            }
        }));
    }));
    // SAFETY: the caller's promise.
    unsafe { store(d, &cols, false) };
    failed
}

/// Warp 0 factors the diagonal block with `factor`, and every thread learns whether it failed
/// (through a word of the reserved scratch and a barrier).
///
/// # Safety
/// `flags` is the scratch's reserved first 16 bytes; `factor` may assume that only the calling
/// warp accesses `d`.
#[inline(always)]
unsafe fn diagonal<T: Element>(
    block: &Block,
    team: &Team,
    flags: &Scratch,
    d: Gmat<T>,
    factor: impl FnOnce(Gmat<T>) -> Option<u32>,
) -> Option<u32> {
    if team.warp() == 0 {
        // Only warp 0 touches the block now.
        let failed = factor(d);
        Lanes::splat(failed.unwrap_or(u32::MAX)).for_each(|lane, word| {
            if lane == 0 {
                // SAFETY: word 0 of the reserved bytes; the others read it after the barrier,
                // and it is written again only after the next one.
                unsafe { flags.set_word(0, word) };
            }
        });
    }
    block.sync();
    // SAFETY: as above.
    let word = unsafe { flags.word(0) };
    (word != u32::MAX).then_some(word)
}

/// The scratch split into the 16 flag bytes and the engine's share.
#[inline(always)]
fn split(block: &Block) -> (Scratch, Scratch) {
    let scratch = Scratch::of(block);
    if scratch.bytes() < 16 {
        super::engine::too_little_scratch(16, scratch.bytes());
    }
    (scratch, scratch.after(16))
}

/// The Cholesky factorization `A = L·Lᵀ` (`uplo = Lower`; `A = Uᵀ·U` for `Upper`) of the square
/// tile `a`, in place in its `uplo` triangle (the other is neither read nor written). Returns
/// `Err(j)` when the pivot of column `j` is not positive (`A` not positive definite); the tile is
/// then partly factored. Every thread of the block calls it and gets the same result.
#[inline(always)]
pub fn potrf<T: Tiled, const CHECKED: bool>(
    block: &Block,
    a: MatMut<'_, T, CHECKED>,
    uplo: Uplo,
) -> Result<(), usize> {
    let ga = gmat_mut(&a);
    let shape = [(ga.rows as usize, ga.cols as usize)];
    args::sides("potrf", &shape);
    if ga.rows != ga.cols {
        args::bad_shapes("potrf", &shape);
    }
    if !a.is_ok() {
        return Ok(());
    }
    let l = if uplo == Uplo::Lower { ga } else { ga.t() };
    // SAFETY: the handle was checked inside its array.
    unsafe { cholesky::<T>(block, l) }
}

/// [`potrf`] on the lower triangle of `l`, one function per element type (not inlined): every
/// task that factors shares its code.
///
/// # Safety
/// `l` is valid memory that only this block accesses during the call.
#[inline(never)]
unsafe fn cholesky<T: Tiled>(block: &Block, l: Gmat<T>) -> Result<(), usize> {
    let team = Team::new(block);
    let (flags, scratch) = split(block);
    let n = l.rows;
    let room = Room::of(block, 16);
    // SAFETY: the caller's promise; the room is the scratch after the flags.
    if let Some(result) = unsafe { regs::factor(block, &team, room, l, Kind::Cholesky) } {
        return result;
    }
    // SAFETY: as above; the scratch is the room's memory, used one call after the other.
    if let Some(result) = unsafe { by_64(block, &team, room, scratch, l, Kind::Cholesky) } {
        return result;
    }
    if room.fits::<T>(&[(n, n)]) {
        // SAFETY: the caller's promise; the staged tile fits in the scratch after the flags.
        return unsafe { staged_factor(block, &team, &flags, room, l, Part::Lower) };
    }
    // SAFETY: the caller's promise.
    unsafe { cholesky_global(block, &team, &flags, scratch, l) }
}

/// POTRF ([`Kind::Cholesky`], lower triangle) or GETRF ([`Kind::Lu`]) of a tile larger than 64
/// whose side is a multiple of 64, right-looking in blocks of 64: each diagonal block factored in
/// registers ([`regs::factor`]), its panels solved in registers ([`regs::solve`]), the trailing
/// matrix updated on the engine with `K = 64`. The 16-wide paths below took a `K = 16` engine call
/// (or a staged update) per 16 columns and kept nothing in registers. Returns `None`, having done
/// nothing, when the tile is not such a side or the room cannot hold a 64-block's factorization
/// and solve.
///
/// # Safety
/// As for [`cholesky`]; `room` and `scratch` are the block's, unused until the call returns.
#[inline(always)]
unsafe fn by_64<T: Tiled>(
    block: &Block,
    team: &Team,
    room: Room,
    scratch: Scratch,
    a: Gmat<T>,
    kind: Kind,
) -> Option<Result<(), usize>> {
    let n = a.rows;
    if n <= BIG || !n.is_multiple_of(BIG) || !regs::solves::<T>(room, BIG, team) {
        return None;
    }
    for j in (0..n).step_by(BIG as usize) {
        let d = a.sub(j, j, BIG, BIG);
        // SAFETY: the caller's promise; the blocks below lie in `a`, the diagonal block and the
        // panels are disjoint, each call ends with a barrier before the next reuses the scratch.
        unsafe {
            match regs::factor(block, team, room, d, kind) {
                Some(Ok(())) => {}
                Some(Err(c)) => return Some(Err(j as usize + c)),
                // Only the first block can be refused (every block is alike): nothing done yet.
                None => return None,
            }
            let rest = n - j - BIG;
            if rest == 0 {
                break;
            }
            let col = a.sub(j + BIG, j, rest, BIG);
            let trailing = a.sub(j + BIG, j + BIG, rest, rest);
            if kind == Kind::Cholesky {
                // L₂₁ᵀ = L₁₁⁻¹·A₂₁ᵀ, then A₂₂ −= L₂₁·L₂₁ᵀ on the lower triangle.
                let solved = regs::solve(block, team, room, d, col.t(), true, false, T::ONE);
                debug_assert!(solved);
                let p = Product {
                    c: trailing,
                    a: col,
                    b: col.t(),
                    alpha: -T::ONE,
                    beta: T::ONE,
                };
                triangle::<T::Shape>(block, scratch, &p, Uplo::Lower);
            } else {
                // U₁₂ = L₁₁⁻¹·A₁₂, L₂₁ᵀ = U₁₁⁻ᵀ·A₂₁ᵀ, then A₂₂ −= L₂₁·U₁₂.
                let row = a.sub(j, j + BIG, BIG, rest);
                let solved = regs::solve(block, team, room, d, row, true, true, T::ONE)
                    && regs::solve(block, team, room, d.t(), col.t(), true, false, T::ONE);
                debug_assert!(solved);
                let p = Product {
                    c: trailing,
                    a: col,
                    b: row,
                    alpha: -T::ONE,
                    beta: T::ONE,
                };
                T::Shape::multiply(block, scratch, &p, Mask::All);
            }
        }
    }
    Some(Ok(()))
}

/// [`cholesky`] over global memory, the trailing updates on the engine: for tiles that do not
/// fit in the scratch.
///
/// # Safety
/// As for [`cholesky`].
#[inline(always)]
unsafe fn cholesky_global<T: Tiled>(
    block: &Block,
    team: &Team,
    flags: &Scratch,
    scratch: Scratch,
    l: Gmat<T>,
) -> Result<(), usize> {
    let n = l.rows;
    for j in (0..n).step_by(N) {
        let d = l.sub(j, j, P, P);
        // SAFETY: the caller's promise; the blocks below lie in `l`, and `diagonal` runs the
        // factorization on warp 0 alone.
        if let Some(c) = unsafe { diagonal(block, team, flags, d, |d| cholesky_block(d)) } {
            return Err((j + c) as usize);
        }
        let rest = n - j - P;
        if rest == 0 {
            break;
        }
        let panel = l.sub(j + P, j, rest, P);
        // L₂₁ᵀ = L₁₁⁻¹·A₂₁ᵀ: each panel row is a line.
        // SAFETY: as above; the diagonal block and the panel are disjoint.
        unsafe { solve_lines(*team, l.sub(j, j, P, P), panel.t(), true, false) };
        block.sync();
        let p = Product {
            c: l.sub(j + P, j + P, rest, rest),
            a: panel,
            b: panel.t(),
            alpha: -T::ONE,
            beta: T::ONE,
        };
        // SAFETY: as above; the trailing block and the panel are disjoint.
        unsafe { triangle::<T::Shape>(block, scratch, &p, Uplo::Lower) };
    }
    Ok(())
}

/// LU without pivoting of the square tile `a`, in place: unit-lower `L` below the diagonal, `U`
/// on and above. Returns `Err(j)` when the pivot of column `j` is zero; the tile is then partly
/// factored. Every thread of the block calls it and gets the same result.
#[inline(always)]
pub fn getrf<T: Tiled, const CHECKED: bool>(
    block: &Block,
    a: MatMut<'_, T, CHECKED>,
) -> Result<(), usize> {
    let ga = gmat_mut(&a);
    let shape = [(ga.rows as usize, ga.cols as usize)];
    args::sides("getrf", &shape);
    if ga.rows != ga.cols {
        args::bad_shapes("getrf", &shape);
    }
    if !a.is_ok() {
        return Ok(());
    }
    // SAFETY: the handle was checked inside its array.
    unsafe { lu::<T>(block, ga) }
}

/// [`getrf`] on `ga`, one function per element type (not inlined).
///
/// # Safety
/// `ga` is valid memory that only this block accesses during the call.
#[inline(never)]
unsafe fn lu<T: Tiled>(block: &Block, ga: Gmat<T>) -> Result<(), usize> {
    let team = Team::new(block);
    let (flags, scratch) = split(block);
    let n = ga.rows;
    let room = Room::of(block, 16);
    // SAFETY: as in `cholesky`.
    if let Some(result) = unsafe { regs::factor(block, &team, room, ga, Kind::Lu) } {
        return result;
    }
    // SAFETY: as above.
    if let Some(result) = unsafe { by_64(block, &team, room, scratch, ga, Kind::Lu) } {
        return result;
    }
    if room.fits::<T>(&[(n, n)]) {
        // SAFETY: the caller's promise; the staged tile fits in the scratch after the flags.
        return unsafe { staged_factor(block, &team, &flags, room, ga, Part::All) };
    }
    // SAFETY: the caller's promise.
    unsafe { lu_global(block, &team, &flags, scratch, ga) }
}

/// [`lu`] over global memory, the trailing updates on the engine.
///
/// # Safety
/// As for [`lu`].
#[inline(always)]
unsafe fn lu_global<T: Tiled>(
    block: &Block,
    team: &Team,
    flags: &Scratch,
    scratch: Scratch,
    ga: Gmat<T>,
) -> Result<(), usize> {
    let n = ga.rows;
    for j in (0..n).step_by(N) {
        let d = ga.sub(j, j, P, P);
        // SAFETY: as in `cholesky`.
        if let Some(c) = unsafe { diagonal(block, team, flags, d, |d| lu_block(d)) } {
            return Err((j + c) as usize);
        }
        let rest = n - j - P;
        if rest == 0 {
            break;
        }
        let (row, col) = (ga.sub(j, j + P, P, rest), ga.sub(j + P, j, rest, P));
        // SAFETY: as above; the diagonal block and the two panels are disjoint.
        unsafe {
            // U₁₂ = L₁₁⁻¹·A₁₂ (columns are lines), L₂₁ᵀ = U₁₁⁻ᵀ·A₂₁ᵀ (rows are lines).
            solve_lines(*team, d, row, true, true);
            solve_lines(*team, d.t(), col.t(), true, false);
        }
        block.sync();
        let p = Product {
            c: ga.sub(j + P, j + P, rest, rest),
            a: col,
            b: row,
            alpha: -T::ONE,
            beta: T::ONE,
        };
        // SAFETY: as above; the trailing block and the panels are disjoint.
        unsafe { T::Shape::multiply(block, scratch, &p, Mask::All) };
    }
    Ok(())
}

/// POTRF (`part` [`Part::Lower`]) or GETRF ([`Part::All`]) of the tile `g` staged in shared
/// memory: the blocked algorithm of [`cholesky`] and [`lu`], with the trailing updates done by
/// [`update`] on the staged tile instead of the engine over global memory. The tile is copied back
/// (only its `part`) also when a pivot fails, partly factored as the global path leaves it.
///
/// # Safety
/// As for [`cholesky`]; `room` holds an `n × n` staged matrix.
unsafe fn staged_factor<T: Tiled>(
    block: &Block,
    team: &Team,
    flags: &Scratch,
    room: Room,
    g: Gmat<T>,
    part: Part,
) -> Result<(), usize> {
    let n = g.rows;
    // SAFETY: the caller's promises; every block below lies in the staged tile, and the barriers
    // order each phase's writes before the next phase's reads.
    unsafe {
        let (s, _) = room.take::<T>(n, n);
        copy(team, g, s, g, part, T::ONE);
        block.sync();
        let mut result = Ok(());
        for j in (0..n).step_by(N) {
            let d = s.sub(j, j, P, P);
            let failed = if part == Part::Lower {
                diagonal(block, team, flags, d, |d| cholesky_block(d))
            } else {
                diagonal(block, team, flags, d, |d| lu_block(d))
            };
            if let Some(c) = failed {
                result = Err((j + c) as usize);
                break;
            }
            let rest = n - j - P;
            if rest == 0 {
                break;
            }
            let (row, col) = (s.sub(j, j + P, P, rest), s.sub(j + P, j, rest, P));
            let trailing = s.sub(j + P, j + P, rest, rest);
            if part == Part::Lower {
                // L₂₁ᵀ = L₁₁⁻¹·A₂₁ᵀ, then A₂₂ −= L₂₁·L₂₁ᵀ on the lower triangle.
                staged::solve_lines(team, d, col.t(), true, false);
                block.sync();
                update(team, trailing, col, col.t(), Part::Lower);
            } else {
                // U₁₂ = L₁₁⁻¹·A₁₂, L₂₁ᵀ = U₁₁⁻ᵀ·A₂₁ᵀ, then A₂₂ −= L₂₁·U₁₂.
                staged::solve_lines(team, d, row, true, true);
                staged::solve_lines(team, d.t(), col.t(), true, false);
                block.sync();
                update(team, trailing, col, row, Part::All);
            }
            block.sync();
        }
        copy(team, s, g, g, part, T::ONE);
        block.sync();
        result
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::reference::{self, Matrix};
    use crate::testing::{Shared, config, on_block_staged, side, staged_bytes};
    use proptest::prelude::*;

    /// `B·Bᵀ / n + I` for a random `B`: symmetric positive definite, off-diagonals of order one.
    fn spd<T: Element>(n: usize, seed: u64) -> Matrix<T> {
        let b = Matrix::<f64>::random(n, n, 0, seed).dense();
        Matrix::<T>::random(n, n, 2, seed + 1).from_fn(|i, j| {
            let dot: f64 = (0..n).map(|q| b[i * n + q] * b[j * n + q]).sum();
            dot / n as f64 + if i == j { 1.0 } else { 0.0 }
        })
    }

    /// A random matrix with `n / 4 + 1` added to the diagonal: LU needs no pivoting.
    fn dominant<T: Element>(n: usize, seed: u64) -> Matrix<T> {
        let m = Matrix::<T>::random(n, n, 1, seed);
        let v = m.dense();
        m.from_fn(|i, j| v[i * n + j] + if i == j { n as f64 / 4.0 + 1.0 } else { 0.0 })
    }

    /// The scratch for an `n`-tile: the engine's stages, and room for the staged tile if `staged`.
    fn scratch<T: Tiled>(n: usize, warps: u32, staged: bool) -> usize {
        let bytes = 4 * T::Shape::stage_bytes(warps) as usize;
        16 + if staged {
            bytes.max(staged_bytes::<T>(&[(n, n)]))
        } else {
            bytes
        }
    }

    fn check_potrf<T: Tiled>(n: usize, uplo: Uplo, warps: u32, seed: u64, staged: bool) {
        check_potrf_in::<T>(n, uplo, warps, seed, scratch::<T>(n, warps, staged), staged);
    }

    /// [`check_potrf`] with `bytes` of scratch, which the paths that stage may use when `staged`.
    fn check_potrf_in<T: Tiled>(
        n: usize,
        uplo: Uplo,
        warps: u32,
        seed: u64,
        bytes: usize,
        staged: bool,
    ) {
        let mut a = spd::<T>(n, seed);
        let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
        on_block_staged(warps, bytes, staged, |block| {
            assert_eq!(potrf(block, sa.mat_mut(ra), uplo), Ok(()));
        });
        // Upper: the lower triangle of the transpose; check it as such.
        let a = if uplo == Uplo::Upper {
            a.transposed()
        } else {
            a
        };
        let (residual, scale) = reference::potrf_residual(&a);
        reference::assert_small(
            &a,
            &residual,
            &scale,
            4.0 * (n as f64 + 2.0) * T::EPSILON,
            "potrf",
        );
        for i in 0..n {
            for j in i + 1..n {
                assert_eq!(
                    a.get(i, j),
                    a.original(i, j),
                    "potrf wrote ({i}, {j}) above the diagonal"
                );
            }
        }
    }

    fn check_getrf<T: Tiled>(n: usize, warps: u32, seed: u64, staged: bool) {
        check_getrf_in::<T>(n, warps, seed, scratch::<T>(n, warps, staged), staged);
    }

    /// [`check_getrf`] with `bytes` of scratch, which the paths that stage may use when `staged`.
    fn check_getrf_in<T: Tiled>(n: usize, warps: u32, seed: u64, bytes: usize, staged: bool) {
        let mut a = dominant::<T>(n, seed);
        let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
        on_block_staged(warps, bytes, staged, |block| {
            assert_eq!(getrf(block, sa.mat_mut(ra)), Ok(()));
        });
        let (residual, scale) = reference::getrf_residual(&a);
        reference::assert_small(
            &a,
            &residual,
            &scale,
            4.0 * (n as f64 + 2.0) * T::EPSILON,
            "getrf",
        );
    }

    proptest! {
        #![proptest_config(config(16))]

        #[test]
        fn potrf_factors_spd_tiles(
            n in side(),
            upper in any::<bool>(),
            warps in 1u32..=4,
            seed in 0u64..1000,
            f32 in any::<bool>(),
            staged in any::<bool>(),
        ) {
            let uplo = if upper { Uplo::Upper } else { Uplo::Lower };
            if f32 {
                check_potrf::<f32>(n, uplo, warps, seed, staged)
            } else {
                check_potrf::<f64>(n, uplo, warps, seed, staged)
            }
        }

        #[test]
        fn getrf_factors_tiles_without_pivoting(
            n in side(),
            warps in 1u32..=4,
            seed in 0u64..1000,
            f32 in any::<bool>(),
            staged in any::<bool>(),
        ) {
            if f32 { check_getrf::<f32>(n, warps, seed, staged) } else { check_getrf::<f64>(n, warps, seed, staged) }
        }
    }

    /// Tiles past 64 factor in blocks of 64 on the register path, both triangles of POTRF and
    /// GETRF, in the scratch of the engine's four stages alone, too little to stage the tile.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a 128-tile on four warps runs over ten minutes under Miri"
    )]
    fn tiles_past_64_factor_in_blocks_of_64() {
        for n in [128, 192, 256] {
            let (f64_bytes, f32_bytes) = (scratch::<f64>(n, 4, false), scratch::<f32>(n, 4, false));
            assert!(f64_bytes < staged_bytes::<f64>(&[(n, n)]));
            check_potrf_in::<f64>(n, Uplo::Lower, 4, 5, f64_bytes, true);
            check_getrf_in::<f64>(n, 4, 6, f64_bytes, true);
            check_potrf_in::<f64>(n, Uplo::Upper, 4, 7, f64_bytes, true);
            check_potrf_in::<f32>(n, Uplo::Lower, 4, 8, f32_bytes, true);
            check_getrf_in::<f32>(n, 4, 9, f32_bytes, true);
        }
    }

    /// A failing pivot past the first 64-block is reported at its column of the whole tile, with
    /// the blocks before it factored and written back.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "a 128-tile on four warps runs over ten minutes under Miri"
    )]
    fn a_failing_pivot_past_the_first_block_is_reported_at_its_column() {
        let n = 128;
        let mut a = Matrix::<f64>::random(n, n, 0, 1).from_fn(|i, j| {
            if i != j {
                0.0
            } else if i == 100 {
                -1.0
            } else {
                4.0
            }
        });
        let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
        on_block_staged(4, scratch::<f64>(n, 4, false), true, |block| {
            assert_eq!(potrf(block, sa.mat_mut(ra), Uplo::Lower), Err(100));
        });
        assert_eq!(a.get(36, 36), 2.0);
        assert_eq!(a.get(99, 99), 2.0);
        let mut a = Matrix::<f64>::random(n, n, 0, 1)
            .from_fn(|i, j| if i == j && i != 70 { 1.0 } else { 0.0 });
        let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
        on_block_staged(4, scratch::<f64>(n, 4, false), true, |block| {
            assert_eq!(getrf(block, sa.mat_mut(ra)), Err(70));
        });
    }

    #[test]
    fn a_matrix_that_is_not_positive_definite_is_reported_at_its_column() {
        // 4·I with -1 at (37, 37): the first 37 pivots are 4, their factors 2.
        let n = if cfg!(miri) { 48 } else { 64 };
        for staged in [false, true] {
            let mut a = Matrix::<f64>::random(n, n, 0, 1).from_fn(|i, j| {
                if i != j {
                    0.0
                } else if i == 37 {
                    -1.0
                } else {
                    4.0
                }
            });
            let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
            on_block_staged(2, 64 * 1024, staged, |block| {
                assert_eq!(potrf(block, sa.mat_mut(ra), Uplo::Lower), Err(37));
            });
            // The pivots before the failure are factored and copied out.
            assert_eq!(a.get(36, 36), 2.0, "staged: {staged}");
        }
    }

    #[test]
    fn a_zero_pivot_is_reported_at_its_column() {
        for staged in [false, true] {
            let mut a = Matrix::<f64>::random(32, 32, 0, 1)
                .from_fn(|i, j| if i == j && i != 20 { 1.0 } else { 0.0 });
            let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
            on_block_staged(1, 64 * 1024, staged, |block| {
                assert_eq!(getrf(block, sa.mat_mut(ra)), Err(20));
            });
        }
    }
}
