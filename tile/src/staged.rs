//! The small-tile paths of POTRF, GETRF and TRSM: the operands in shared memory.
//!
//! One tile's factorization sits on a blocked algorithm's critical path (Cholesky's POTRF → TRSM
//! → SYRK chain), so what counts there is its latency, not its rate. Walked over global memory,
//! each `16`-wide step of the blocked algorithm pays global latencies and one call of the
//! multiply [`engine`](super::engine) for a `K = 16` trailing update whose staging and epilogue
//! cost more than the product itself.
//!
//! When the tile fits in the block's scratch, the factorizations here copy it in once, run the
//! same blocked algorithm on shared memory with plain multiply-adds, and copy the result out
//! once:
//!
//! - [`copy`] moves a matrix between global and shared memory, walking the global side along its
//!   contiguous direction;
//! - [`update`] is the `K = 16` trailing update `C −= A·B`, each thread keeping a column of `B`
//!   in registers and walking its share of the column's rows;
//! - [`solve_lines`] solves whole lines (columns of `X'` in `T·X' = B'`), a thread per line, with
//!   no barrier: a line's blocks are substituted in registers and the rest of the line updated
//!   at once.
//!
//! TRSM stages its right-hand side (and its triangle, when both fit) and runs the blocked solve
//! with [`update`] between the line solves ([`trsm`](super::trsm())). Its first staged version
//! solved each whole line by one thread, with no blocking: the 64-tile solve then took 83 µs on
//! the H100 with both operands in shared memory and 123 µs with the triangle in global memory,
//! against 67 µs for the engine's updates (bench/results/panel-h100/).
//!
//! The staged matrices are stored row-major with one element of padding per row, so that a warp
//! walking down a column (the line solves, the diagonal block's loads) touches every bank once.
//!
//! The operands are [`Gmat`]s in both memories: on the GPU a generic address reaches shared memory
//! as well as global memory.

use super::engine::Gmat;
use super::lanes::Team;
use super::lines::{P, substitute};
use super::numeric::Element;
use super::unroll::{array, hot, unroll};
use taskweave_device::Block;

const N: usize = P as usize;

/// Shared memory for staged operands: the block's scratch after its first `reserved` bytes.
#[derive(Clone, Copy)]
pub(crate) struct Room {
    base: *mut u8,
    bytes: usize,
}

impl Room {
    /// The scratch of `block` after `reserved` bytes (a multiple of 16).
    #[inline(always)]
    pub(crate) fn of(block: &Block, reserved: usize) -> Self {
        let (base, bytes) = block.scratch_rest();
        #[cfg(all(test, not(target_arch = "nvptx64")))]
        let bytes = if tests::staging_off() { 0 } else { bytes };
        let reserved = reserved.min(bytes);
        Self {
            base: base.wrapping_add(reserved),
            bytes: bytes - reserved,
        }
    }

    /// The bytes a padded `rows × cols` matrix of `T` takes, rounded up to 16.
    #[inline(always)]
    pub(crate) fn need<T>(rows: u32, cols: u32) -> usize {
        (rows as usize * (cols as usize + 1) * size_of::<T>()).next_multiple_of(16)
    }

    /// Whether matrices of these shapes fit, one after the other.
    #[inline(always)]
    pub(crate) fn fits<T>(&self, shapes: &[(u32, u32)]) -> bool {
        shapes
            .iter()
            .map(|&(r, c)| Self::need::<T>(r, c))
            .sum::<usize>()
            <= self.bytes
    }

    /// `len` elements of `T` at the start of the room and the room after it (rounded up to 16
    /// bytes), or `None` when they do not fit.
    #[inline(always)]
    pub(crate) fn take_array<T>(self, len: usize) -> Option<(*mut T, Self)> {
        let need = (len * size_of::<T>()).next_multiple_of(16);
        (need <= self.bytes).then(|| {
            let rest = Self {
                base: self.base.wrapping_add(need),
                bytes: self.bytes - need,
            };
            (self.base.cast(), rest)
        })
    }

    /// A padded `rows × cols` matrix at the start of the room, and the room after it.
    ///
    /// # Safety
    /// The matrix fits ([`fits`](Self::fits)).
    #[inline(always)]
    pub(crate) unsafe fn take<T>(self, rows: u32, cols: u32) -> (Gmat<T>, Self) {
        let need = Self::need::<T>(rows, cols);
        debug_assert!(need <= self.bytes);
        let m = Gmat {
            ptr: self.base.cast(),
            rows,
            cols,
            ld: cols + 1,
            trans: false,
        };
        let rest = Self {
            base: self.base.wrapping_add(need),
            bytes: self.bytes - need,
        };
        (m, rest)
    }
}

/// Which elements a copy moves.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    All,
    /// On and below the diagonal.
    Lower,
    /// On and above the diagonal.
    Upper,
}

/// `dst := α·src` over the elements `part` names, spread over the block's threads and walked
/// along `along`'s stored rows (the global operand's, so that its accesses coalesce). No barrier.
///
/// # Safety
/// Both are valid `rows × cols` matrices that do not overlap, and no other thread accesses the
/// elements this call writes.
#[inline(always)]
pub(crate) unsafe fn copy<T: Element>(
    team: &Team,
    src: Gmat<T>,
    dst: Gmat<T>,
    along: Gmat<T>,
    part: Part,
    alpha: T,
) {
    let (rows, cols) = (src.rows, src.cols);
    // Cells numbered along the global operand's stored rows.
    let (outer, inner) = if along.trans {
        (cols, rows)
    } else {
        (rows, cols)
    };
    let place = |o: u32, i: u32| if along.trans { (i, o) } else { (o, i) };
    let kept = |(r, c): (u32, u32)| match part {
        Part::All => true,
        Part::Lower => c <= r,
        Part::Upper => r <= c,
    };
    team.copy_cells(
        outer,
        inner,
        T::ZERO,
        |o, i| {
            let (r, c) = place(o, i);
            if kept((r, c)) {
                // SAFETY: inside `src` (the caller's promise).
                unsafe { *src.at(r, c) }
            } else {
                T::ZERO
            }
        },
        |o, i, v| {
            let (r, c) = place(o, i);
            if kept((r, c)) {
                // SAFETY: inside `dst` (the caller's promise).
                unsafe { *dst.at(r, c) = if alpha == T::ONE { v } else { alpha * v } };
            }
        },
    );
}

/// `c −= a·b` for `a` of `c.rows × 16` and `b` of `16 × c.cols` (only `c`'s lower triangle when
/// `part` is [`Part::Lower`]), spread over the block's threads: each keeps a column of `b` in
/// registers and walks its share of the column's rows, two rows at a time so that two chains of
/// multiply-adds overlap. The threads of a warp work on neighbouring columns of one row, so each
/// load of `a` is one broadcast. No barrier.
///
/// (Blocks of `4 × 4` cells per thread, sixteen accumulators, made one 64-tile POTRF 63 → 95 µs on
/// the H100: more instructions, register spills, and loads of `b` that hit the same banks.)
///
/// # Safety
/// The matrices are valid, `c` overlaps neither operand, and no other thread accesses `c`.
#[inline(always)]
pub(crate) unsafe fn update<T: Element>(
    team: &Team,
    c: Gmat<T>,
    a: Gmat<T>,
    b: Gmat<T>,
    part: Part,
) {
    let (rows, cols) = (c.rows, c.cols);
    // As many row groups as keep every thread on one column: a single round.
    let groups = (team.threads() / cols).max(1);
    team.for_each_item(cols * groups, |item| {
        let (col, group) = (item % cols, item / cols);
        // SAFETY: inside `b` (the caller's promise).
        let bq: [T; N] = array(hot!(|q| unsafe { *b.at(q as u32, col) }));
        let first = if part == Part::Lower { col } else { 0 };
        let mut row = first + group;
        while row + groups < rows {
            let next = row + groups;
            // SAFETY: inside `a` and `c`.
            unsafe {
                let (mut x, mut y) = (*c.at(row, col), *c.at(next, col));
                unroll::<N>(hot!(|q| {
                    x = (-*a.at(row, q as u32)).fma(bq[q], x);
                    y = (-*a.at(next, q as u32)).fma(bq[q], y);
                }));
                *c.at(row, col) = x;
                *c.at(next, col) = y;
            }
            row += 2 * groups;
        }
        if row < rows {
            // SAFETY: as above.
            unsafe {
                let mut x = *c.at(row, col);
                unroll::<N>(hot!(|q| x = (-*a.at(row, q as u32)).fma(bq[q], x)));
                *c.at(row, col) = x;
            }
        }
    });
}

/// `x := t⁻¹·x` for the `n × n` triangular `t` (lower and solved forward, or upper and solved
/// backward; a unit diagonal when `unit`) and each column (line) of the `n × w` matrix `x`, one
/// thread per line. No barrier: a thread reads `t` and its own line only.
///
/// Blocked by 16: the line's block is substituted in registers, stored, and subtracted from the
/// rest of the line at once (right-looking), so each element of the line is loaded and stored
/// once per block.
///
/// # Safety
/// `t` and `x` are valid memory that no other thread writes during the call, and they do not
/// overlap; `n` is a multiple of 16.
#[inline(always)]
pub(crate) unsafe fn solve_lines<T: Element>(
    team: &Team,
    t: Gmat<T>,
    x: Gmat<T>,
    forward: bool,
    unit: bool,
) {
    let blocks = t.rows / P;
    team.for_each_item(x.cols, |line| {
        for step in 0..blocks {
            let i = if forward { step } else { blocks - 1 - step };
            let r0 = i * P;
            // SAFETY: inside `x` (the caller's promise).
            let mut v: [T; N] = array(hot!(|k| unsafe { *x.at(r0 + k as u32, line) }));
            substitute(
                &mut v,
                // SAFETY: inside `t`.
                hot!(|r: usize, c: usize| unsafe { *t.at(r0 + r as u32, r0 + c as u32) }),
                forward,
                unit,
            );
            // SAFETY: inside `x`.
            unroll::<N>(hot!(|k| unsafe { *x.at(r0 + k as u32, line) = v[k] }));
            let (mut row, end) = if forward { (r0 + P, t.rows) } else { (0, r0) };
            while row < end {
                // SAFETY: inside `t` and `x`.
                unsafe {
                    let mut acc = *x.at(row, line);
                    unroll::<N>(hot!(|q| acc = (-*t.at(row, r0 + q as u32)).fma(v[q], acc)));
                    *x.at(row, line) = acc;
                }
                row += 1;
            }
        }
    });
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
pub(crate) mod tests {
    use core::cell::Cell;

    std::thread_local! {
        static OFF: Cell<bool> = const { Cell::new(false) };
    }

    /// Whether the calling (emulated) thread runs the operations over global memory only.
    pub(crate) fn staging_off() -> bool {
        OFF.with(Cell::get)
    }

    /// Turns staging off (or back on) for the calling thread; `on_block` passes it on to the
    /// lanes it spawns, so that a test can run the global-memory paths on any tile size.
    pub(crate) fn set_staging_off(off: bool) {
        OFF.with(|o| o.set(off));
    }
}
