//! The small tiles of a factorization's critical path held in registers: TRSM, POTRF and GETRF of
//! tiles of side 16, 32 or 64.
//!
//! A blocked Cholesky or LU waits, at every block column, on one tile's factorization and one
//! tile's triangular solve: their latency, not their rate, sets the factorization's span. The
//! blocked paths ([`staged`](super::staged), the [`engine`](super::engine)) walk the tile in
//! 16-wide steps, each a line solve, a barrier and a `K = 16` update over shared memory, and one
//! 64-tile took 46–49 µs on the H100 inside a factorization (bench/results/panel-h100/).
//!
//! Here the tile never leaves registers. Each thread holds an `8 × 4` block of it ([`FR`] rows
//! of [`FC`] columns: 32 values), thread `t` the row block `t mod n/8` and the column block
//! `t / (n/8)`, so that a warp holds whole columns. The threads meet once per step of the
//! unblocked algorithm (POTRF and GETRF: once per two steps), with the step's values passed
//! through a small exchange buffer in shared memory:
//!
//! - **POTRF and GETRF** take their steps two at a time (POTRF in f64 one at a time, below): the
//!   threads holding columns `j` and `j + 1` (and, for GETRF, rows `j` and `j + 1`) publish them;
//!   after the block's barrier every thread works out the `2 × 2` pivot block and subtracts
//!   `m_r·x_c` for both steps from its entries after them (a rank-2 update), `m_r` from the
//!   columns and `x_c` from the columns (POTRF) or the rows (GETRF) times the pivots'
//!   reciprocals, masked to zero for the entries not after each step. The columns of `L` stay
//!   unscaled until the end, which scales each once by its pivot, kept aside. A pair's chain
//!   holds two pivots' reciprocals in series; for f64 Cholesky, whose reciprocal square roots are
//!   the dearest, the steps stay single (bench/results/pair-loop-h200/).
//! - **TRSM**: the lines (the independent right-hand sides) are the block's columns, and a line
//!   lives in one warp, so a warp solves its lines alone. The lanes holding entry `q` of their
//!   lines finish it and publish it; after the warp's barrier every lane adds the triangle's
//!   column `q`, staged negated in shared memory with zeros on and off its triangle, times the published
//!   entries. The zeros are the masks. The block meets only after staging and at the end.
//!
//! A register array stays in registers only when every index into it is a constant, so the steps
//! run in groups of eight, unrolled, in a loop over the groups: the register a step reads (its
//! row `j mod 8` and column `j mod 4` in a block) is fixed, and only which threads hold it is a
//! runtime predicate. Two exchange buffers alternate by step parity, so one barrier per step
//! suffices. The buffers and the staged triangle are read and written with `ld.shared` /
//! `st.shared` at 32-bit addresses ([`Buf`]), with 16 bytes after every 16 elements so that the
//! eight row blocks a warp reads at once fall on different banks.
//!
//! The first register path cut the tile into lines held by four lanes each, each 16-step block
//! unrolled: a 48 KB loop body per pass that the POTRF's warps waited on instruction fetch for
//! (41% of its stalls), and generic loads and stores for every exchange. Rolled into 8-step
//! groups, with shared accesses, a 64-tile's GETRF inside the LU at 4096 takes 33 µs instead of 62,
//! its POTRF 26 instead of 30 and Cholesky's TRSM 18 instead of 22.5
//! (bench/results/potrf-rolled-h200/).
//!
//! | operation | shared memory (elements of `T`) | threads |
//! | --- | --- | --- |
//! | TRSM, side `n` | `n` columns of `n` (16 bytes more each), the reciprocals (`n`) and two buffers of a round's lines (`4·threads/(n/8)`), with 16 bytes per 16 elements (38.6 KiB for an f64 64-tile on 128 threads) | any multiple of 32 |
//! | POTRF, GETRF, side `n` | two buffers of `n` (POTRF), four (GETRF), and the `n` pivots, with 16 bytes per 16 elements | at least `n²/32` |
//!
//! Larger tiles whose side is a multiple of 64 are cut into 64-blocks that come here one at a
//! time (`factor::by_64`, `trsm::solve_by_64`). The operations fall back to the blocked paths for
//! other sides, too little scratch or (the factorizations) too few threads.

use super::engine::{Gmat, load_pair, store_pair};
use super::lanes::{Lanes, Team};
use super::numeric::Element;
#[cfg(target_arch = "nvptx64")]
use super::smem::window;
use super::staged::Room;
use super::unroll::{array, hot, unroll};
use taskweave_device::Block;
use taskweave_device::arch;

/// Elements in 16 bytes: the gap [`pos`] leaves after every 16 elements of an exchange buffer, a
/// staged column or the pivots, which keeps every even element 16-byte aligned and spreads the
/// lanes that read them at once over different banks.
#[inline(always)]
fn gap<T>() -> usize {
    16 / size_of::<T>()
}

/// Rows of the block of a factored tile that one thread holds.
const FR: usize = 8;
/// Columns of that block.
const FC: usize = 4;

/// What one thread holds of a factored tile: `cells[i][k]` is element `(8·bi + i, 4·bj + k)`,
/// `(bi, bj)` being the thread's block.
type Cells<T> = [[Lanes<T>; FC]; FR];

/// Where element `r` of an exchange buffer or a staged column sits: groups of 16 elements [`gap`]
/// apart, so that the eight row blocks of [`FR`] a warp reads at once start on different banks
/// (f64: two blocks 64 bytes apart, then 16 more) and every even element is 16-byte aligned
/// (f64 pairs).
#[inline(always)]
fn pos<T>(r: u32) -> usize {
    r as usize + (r as usize / 16) * gap::<T>()
}

/// Elements of `T` in the block's shared memory, read and written as `ld.shared` /
/// `st.shared` at 32-bit addresses on the GPU: through a generic pointer each access was a
/// generic load or store, slower than a shared one and with 64-bit address arithmetic around it
/// (bench/results/potrf-rolled-h200/).
#[derive(Clone, Copy)]
struct Buf<T> {
    #[cfg(target_arch = "nvptx64")]
    base: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    base: *mut T,
    _marker: core::marker::PhantomData<T>,
}

impl<T: Element> Buf<T> {
    /// The buffer at `p`, a pointer into the block's shared memory.
    #[inline(always)]
    fn of(p: *mut T) -> Self {
        Self {
            #[cfg(target_arch = "nvptx64")]
            base: window(p.cast()),
            #[cfg(not(target_arch = "nvptx64"))]
            base: p,
            _marker: core::marker::PhantomData,
        }
    }

    /// The buffer from element `i` on.
    #[inline(always)]
    fn add(self, i: usize) -> Self {
        Self {
            #[cfg(target_arch = "nvptx64")]
            base: self.base + (i * size_of::<T>()) as u32,
            #[cfg(not(target_arch = "nvptx64"))]
            base: self.base.wrapping_add(i),
            _marker: core::marker::PhantomData,
        }
    }

    /// Element `i`.
    ///
    /// # Safety
    /// Element `i` lies in the buffer and no other thread writes it now.
    #[inline(always)]
    unsafe fn get(self, i: usize) -> T {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's promise.
        return unsafe { T::ld(self.add(i).base) };
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's promise.
        return unsafe { *self.base.add(i) };
    }

    /// Stores element `i`.
    ///
    /// # Safety
    /// Element `i` lies in the buffer and no other thread accesses it now.
    #[inline(always)]
    unsafe fn set(self, i: usize, v: T) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: the caller's promise.
        unsafe {
            T::st(self.add(i).base, v)
        };
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's promise.
        unsafe {
            *self.base.add(i) = v
        };
    }

    /// Elements `i` and `i + 1`, in one load on the GPU.
    ///
    /// # Safety
    /// As for [`get`](Self::get), both elements; `i` even and the buffer 16-byte aligned.
    #[inline(always)]
    unsafe fn pair(self, i: usize) -> [T; 2] {
        #[cfg(target_arch = "nvptx64")]
        {
            // SAFETY: the caller's promise (aligned to twice the element).
            let (x, y) = unsafe { T::ld2(self.add(i).base) };
            [x, y]
        }
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: the caller's promise.
        unsafe {
            [self.get(i), self.get(i + 1)]
        }
    }

    /// Stores elements `i` and `i + 1`.
    ///
    /// # Safety
    /// As for [`pair`](Self::pair), writing.
    #[inline(always)]
    unsafe fn put_pair(self, i: usize, v: [T; 2]) {
        // SAFETY: the caller's promise. (Two stores: `st.shared.v2` is not among `Word`'s
        // instructions, and a step stores few.)
        unsafe {
            self.set(i, v[0]);
            self.set(i + 1, v[1]);
        }
    }
}

/// Which factorization [`factor`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// POTRF: `A = L·Lᵀ` in the lower triangle.
    Cholesky,
    /// GETRF without pivoting: unit-lower `L` below the diagonal, `U` on and above.
    Lu,
}

/// POTRF or GETRF of the square tile `a` in registers (module docs): each thread holds an
/// `8 × 4` block of the tile. Returns `None`, having done nothing, when the side is not 16, 32 or
/// 64, the block has fewer than `n²/32` threads, or `room` cannot hold the exchange buffers; else
/// the factorization's result as [`potrf`](super::potrf()) and [`getrf`](super::getrf()) give it.
/// Every thread of the block calls it and gets the same result; it ends with a barrier.
///
/// # Safety
/// `a` is valid memory that only this block accesses during the call; `room` is the block's and
/// unused until the call returns.
#[inline(always)]
pub(crate) unsafe fn factor<T: Element>(
    block: &Block,
    team: &Team,
    room: Room,
    a: Gmat<T>,
    kind: Kind,
) -> Option<Result<(), usize>> {
    // Cholesky in f64 takes its steps one at a time: two steps at one barrier put two f64
    // reciprocal square roots, one after the other, on the chain of every pair, which made its
    // POTRF slower (bench/results/chain-steps-h200/, pair-loop-h200/); LU and f32 gain from the
    // pairs.
    let single = kind == Kind::Cholesky && core::mem::size_of::<T>() == 8;
    // SAFETY: the caller's promises.
    unsafe { factor_by(block, team, room, a, kind, single) }
}

/// [`factor`], its steps one per barrier when `single` (Cholesky only), else two.
///
/// # Safety
/// As for [`factor`].
#[inline(always)]
unsafe fn factor_by<T: Element>(
    block: &Block,
    team: &Team,
    room: Room,
    a: Gmat<T>,
    kind: Kind,
    single: bool,
) -> Option<Result<(), usize>> {
    debug_assert!(
        !single || kind == Kind::Cholesky,
        "single steps are Cholesky's"
    );
    let n = a.rows;
    if !matches!(n, 16 | 32 | 64) || team.threads() < n * n / (FR * FC) as u32 {
        return None;
    }
    // A step's exchange buffers (its two columns, and for LU its two rows), twice, alternating by
    // step parity so that one barrier per step suffices: a buffer is written again two steps
    // later, after every thread has passed the barrier that ends the reads of the step between.
    let stride = pos::<T>(n);
    let per_step = if kind == Kind::Lu { 4 } else { 2 } * stride;
    // And the pivots, `diag[j]` column j's as the steps left it: they leave the columns of L
    // unscaled, and the end scales them.
    let (exchange, _) = room.take_array::<T>(2 * per_step + stride)?;
    let exchange = Buf::of(exchange);
    let diag = exchange.add(2 * per_step);
    let grid = Grid::of(n, team);
    // Lower triangle only for Cholesky: the upper one is neither read nor written.
    let kept = |r: u32, c: u32| c < n && (kind == Kind::Lu || c <= r);
    let mut cells: Cells<T> = array(hot!(|i| array(hot!(|k| Lanes::from_fn(|lane| {
        let (r, c) = grid.cell(lane, i, k);
        if kept(r, c) {
            // SAFETY: inside `a` (the caller's promise).
            unsafe { *a.at(r, c) }
        } else {
            T::ZERO
        }
    })))));
    let mut failed = None;
    if single {
        for q in 0..n / FR as u32 {
            unroll::<FR>(hot!(|u| {
                if failed.is_none() {
                    let at = Exchange {
                        columns: exchange.add((u % 2) * per_step),
                        stride,
                        diag,
                    };
                    // SAFETY: as for the pairs below; the parity of the step is u's, FR being
                    // even.
                    failed = unsafe { eliminate_one(block, grid, &mut cells, at, n, q, u) };
                }
            }));
            if failed.is_some() {
                break;
            }
        }
    } else {
        for q in 0..n / FR as u32 {
            unroll::<{ FR / 2 }>(hot!(|v| {
                if failed.is_none() {
                    let at = Exchange {
                        columns: exchange.add((v % 2) * per_step),
                        stride,
                        diag,
                    };
                    // SAFETY: the buffers lie in the room (the caller's promise); the parity of the
                    // step is v's, FR / 2 being even.
                    failed = unsafe { eliminate(block, grid, &mut cells, at, n, q, 2 * v, kind) };
                }
            }));
            if failed.is_some() {
                break;
            }
        }
    }
    // The last step's second pivot was written after its barrier.
    block.sync();
    // Scale the finished columns: L[r][c] = a[r][c]·s_c below the diagonal (Cholesky: and on it,
    // d·s = √d), s_c being 1/√d_c (Cholesky) or 1/d_c (LU).
    let done = failed.map_or(n, |j| j as u32);
    unroll::<FC>(hot!(|k| {
        let scale = Lanes::from_fn(|lane| {
            let c = (FC as u32 * grid.bj(lane) + k as u32).min(n - 1);
            // SAFETY: inside the pivots (clamped for the threads past the tile, whose results
            // are not stored), written before the last barrier.
            let d = unsafe { diag.get(pos::<T>(c)) };
            match kind {
                Kind::Cholesky => d.rsqrt(),
                Kind::Lu => d.recip(),
            }
        });
        unroll::<FR>(hot!(|i| {
            cells[i][k] = cells[i][k]
                .zip(scale, |v, s| (v, s))
                .map_lane(|lane, (v, s)| {
                    let (r, c) = grid.cell(lane, i, k);
                    if c < done && (r > c || (kind == Kind::Cholesky && r == c)) {
                        v * s
                    } else {
                        v
                    }
                });
        }));
    }));
    unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| cells[i][k].for_each(
        |lane, v| {
            let (r, c) = grid.cell(lane, i, k);
            if kept(r, c) {
                // SAFETY: as for the loads.
                unsafe { *a.at(r, c) = v };
            }
        }
    )))));
    block.sync();
    Some(failed.map_or(Ok(()), Err))
}

/// Which `8 × 4` block of an `n`-tile each thread of a block holds: thread `t` holds row block
/// `t mod n/8` and column block `t / (n/8)`, so that a warp holds whole column blocks (a step's
/// column is published by the lanes of one or two warps) and its lanes read eight different row
/// groups of the exchange buffer. Threads past `n²/32` hold column blocks past the tile.
#[derive(Clone, Copy)]
struct Grid {
    /// `log2(n / 8)`.
    shift: u32,
    /// The calling warp's first thread.
    first: u32,
}

impl Grid {
    #[inline(always)]
    fn of(n: u32, team: &Team) -> Self {
        Self {
            shift: (n / FR as u32).trailing_zeros(),
            first: team.warp() * arch::WARP_SIZE,
        }
    }

    /// The row block of `lane`'s thread.
    #[inline(always)]
    fn bi(self, lane: u32) -> u32 {
        (self.first + lane) & ((1 << self.shift) - 1)
    }

    /// The column block of `lane`'s thread.
    #[inline(always)]
    fn bj(self, lane: u32) -> u32 {
        (self.first + lane) >> self.shift
    }

    /// The element `cells[i][k]` of `lane`'s thread is.
    #[inline(always)]
    fn cell(self, lane: u32, i: usize, k: usize) -> (u32, u32) {
        (
            FR as u32 * self.bi(lane) + i as u32,
            FC as u32 * self.bj(lane) + k as u32,
        )
    }
}

/// Where one thread's cells of a matrix in global memory lie: element `(r0 + i, c0 + k)` of the
/// logical matrix at `base + i·rs + k·cs`, worked out once per thread. Through [`Gmat::at`] each
/// cell's address took a transpose select and a full multiply, and `ptxas` serialized the stores
/// on the address registers they shared: with the staged triangle, the loads and stores of a
/// 64-tile's lines held two thirds of a TRSM's samples (bench/results/chain-tiles-h200/). The
/// factorizations keep [`Gmat::at`]: there the spots, live across every step, cost a POTRF 20%.
#[derive(Clone, Copy)]
struct Spots<T> {
    base: *mut T,
    rs: usize,
    cs: usize,
}

impl<T> Spots<T> {
    /// The cells of `m` from `(r0, c0)` on.
    #[inline(always)]
    fn of(m: Gmat<T>, r0: u32, c0: u32) -> Self {
        let (rs, cs) = if m.trans {
            (1, m.ld as usize)
        } else {
            (m.ld as usize, 1)
        };
        Self {
            base: m.ptr.wrapping_add(r0 as usize * rs + c0 as usize * cs),
            rs,
            cs,
        }
    }

    /// Where cell `(i, k)` is.
    #[inline(always)]
    fn at(self, i: usize, k: usize) -> *mut T {
        self.base.wrapping_add(i * self.rs + k * self.cs)
    }
}

/// Where a step of [`factor`] exchanges its values.
#[derive(Clone, Copy)]
struct Exchange<T> {
    /// The step's buffers, [`pos`]`(n)` elements each, `stride` apart: its two columns, then
    /// (LU) its two rows.
    columns: Buf<T>,
    stride: usize,
    /// `diag[pos(j)]`: the pivot of column `j`, as the steps left it.
    diag: Buf<T>,
}

impl<T: Element> Exchange<T> {
    /// Column `j + h` of step `j`.
    #[inline(always)]
    fn column(self, h: usize) -> Buf<T> {
        self.columns.add(h * self.stride)
    }

    /// Row `j + h` of step `j` (LU).
    #[inline(always)]
    fn row(self, h: usize) -> Buf<T> {
        self.columns.add((2 + h) * self.stride)
    }
}

/// Step `j = 8·q + u` of a Cholesky [`factor`], alone at its barrier: column `j` is published,
/// with its pivot into `diag`, the block meets, and every thread subtracts the step from its
/// entries after `j`. Returns `j` when its pivot is not positive, the same in every thread.
///
/// # Safety
/// As for [`eliminate`].
#[inline(always)]
unsafe fn eliminate_one<T: Element>(
    block: &Block,
    grid: Grid,
    cells: &mut Cells<T>,
    at: Exchange<T>,
    n: u32,
    q: u32,
    u: usize,
) -> Option<usize> {
    let j = FR as u32 * q + u as u32;
    let (cq, cc) = (j / FC as u32, u % FC);
    let row_from = |bi: u32, i: usize| bi > q || (bi == q && i >= u);
    let column_after = |bj: u32, k: usize| bj > cq || (bj == cq && k > cc);
    let column = at.column(0);
    // Column j from row j on, zeros above. The zeros are the multipliers' mask, written once by
    // the lanes that publish instead of applied by every lane to every multiplier (5.6% off the
    // probe's POTRF, bench/results/chain-tiles-h200/). A row above j meets only its cells right
    // of the diagonal (never stored) and the finished columns, whose entries are masked to zero;
    // its own value would do as well were it finite, but the upper cells are not bounded, and a
    // non-finite one times zero is a NaN in a finished column. Row j's multiplier is the pivot
    // itself, positive and finite for finite input, and meets the same cells. The pivot is read
    // from the column: read from `diag` (the same value), the load in `by_64`'s inlined copy of
    // this loop was miscompiled by ptxas 13.0 against the base register the loop advances (64
    // bytes per group of steps), and 128-tiles failed as not positive definite
    // (bench/results/potrf-zeros-h200/).
    unroll::<{ FR / 2 }>(hot!(|p| {
        let v = cells[2 * p][cc].zip(cells[2 * p + 1][cc], |x, y| [x, y]);
        v.for_each(|lane, v| {
            if grid.bj(lane) == cq {
                let bi = grid.bi(lane);
                let r = FR as u32 * bi + 2 * p as u32;
                let kept = |h: usize, x: T| if row_from(bi, 2 * p + h) { x } else { T::ZERO };
                // SAFETY: inside the buffer (`r < n`), `r` even.
                unsafe { column.put_pair(pos::<T>(r), [kept(0, v[0]), kept(1, v[1])]) };
            }
        });
    }));
    cells[u][cc].for_each(|lane, v| {
        if grid.bj(lane) == cq && grid.bi(lane) == q {
            // SAFETY: inside the pivots (`j < n`).
            unsafe { at.diag.set(pos::<T>(j), v) };
        }
    });
    block.sync();
    // SAFETY: written before the barrier by the thread holding (j, j).
    let d = unsafe { column.get(pos::<T>(j)) };
    if fails(d, Kind::Cholesky) {
        return Some(j as usize);
    }
    let f = d.recip();
    // The multipliers: column j as published.
    let mut m: [Lanes<T>; FR] = [Lanes::splat(T::ZERO); FR];
    unroll::<{ FR / 2 }>(hot!(|p| {
        let v = Lanes::from_fn(|lane| {
            let r = FR as u32 * grid.bi(lane) + 2 * p as u32;
            // SAFETY: written before the barrier (every row), `r` even.
            unsafe { column.pair(pos::<T>(r)) }
        });
        unroll::<2>(hot!(|h| m[2 * p + h] = v.map(|v| v[h])));
    }));
    // The multiplied entries times the negated factor (the update is then a plain FMA), masked
    // to zero in the columns not after j: the buffer holds the pivot at j, and its zeros before
    // j would not mask an infinite factor (a subnormal pivot) in the finished columns.
    let nf = -f;
    let mut x: [Lanes<T>; FC] = [Lanes::splat(T::ZERO); FC];
    unroll::<{ FC / 2 }>(hot!(|p| {
        let v = Lanes::from_fn(|lane| {
            let c = (FC as u32 * grid.bj(lane) + 2 * p as u32).min(n - 2);
            // SAFETY: written before the barrier (every row); `c` even, clamped into the buffer
            // for the threads past the tile (whose results are not stored).
            unsafe { column.pair(pos::<T>(c)) }
        });
        unroll::<2>(hot!(|h| {
            let k = 2 * p + h;
            x[k] = v.map_lane(|lane, v| {
                if column_after(grid.bj(lane), k) {
                    v[h] * nf
                } else {
                    -T::ZERO
                }
            });
        }));
    }));
    unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| {
        cells[i][k] = cells[i][k]
            .zip(m[i], |v, m| (v, m))
            .zip(x[k], |(v, m), x| m.fma(x, v));
    }))));
    None
}

/// Whether pivot `d` fails: not positive (NaN included) for Cholesky, zero for LU.
#[inline(always)]
fn fails<T: Element>(d: T, kind: Kind) -> bool {
    match kind {
        Kind::Cholesky => d.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater),
        Kind::Lu => d == T::ZERO,
    }
}

/// Steps `j = 8·q + u` and `j + 1` of [`factor`] (`u` even), at one barrier: the threads holding
/// columns `j` and `j + 1` (and, LU, rows `j` and `j + 1`) publish them as the steps before left
/// them, the block meets, and every thread works out the `2 × 2` pivot block, finishes its
/// share of column `j + 1` (row `j + 1`) by step `j`, and subtracts both steps from its entries
/// after them: a rank-2 update. The columns stay unscaled, for [`factor`]'s end to scale; the
/// pivot of column `j` is recorded before the barrier, that of `j + 1` after it. Returns the
/// step whose pivot fails (not positive, Cholesky; zero, LU), the same in every thread, having
/// applied the steps before it.
///
/// One barrier per two steps: a step's time is mostly its chain (the barrier, the loads after
/// it, the pivot's reciprocal, the update), not its arithmetic (bench/results/panels-h200/).
///
/// # Safety
/// `at`'s buffers are this step's, 16-byte aligned, and its pivots `pos(n)` long.
#[allow(
    clippy::too_many_arguments,
    reason = "one step's registers, place and buffers"
)]
#[inline(always)]
unsafe fn eliminate<T: Element>(
    block: &Block,
    grid: Grid,
    cells: &mut Cells<T>,
    at: Exchange<T>,
    n: u32,
    q: u32,
    u: usize,
    kind: Kind,
) -> Option<usize> {
    let j = FR as u32 * q + u as u32;
    // The column block holding columns j and j + 1, and j's place in it (0 or 2).
    let (cq, cc) = (j / FC as u32, u % FC);
    // Whether row 8·bi + i comes after j + s; whether column 4·bj + k does.
    let row_after = |bi: u32, i: usize, s: usize| bi > q || (bi == q && i > u + s);
    let column_after = |bj: u32, k: usize, s: usize| bj > cq || (bj == cq && k > cc + s);
    // Publish columns j and j + 1 from the threads holding them, every row (the rows before them
    // are masked out where they are read).
    unroll::<2>(hot!(|h| unroll::<{ FR / 2 }>(hot!(|p| {
        let v = cells[2 * p][cc + h].zip(cells[2 * p + 1][cc + h], |x, y| [x, y]);
        v.for_each(|lane, v| {
            if grid.bj(lane) == cq {
                let r = FR as u32 * grid.bi(lane) + 2 * p as u32;
                // SAFETY: inside the buffer (`r < n`), `r` even.
                unsafe { at.column(h).put_pair(pos::<T>(r), v) };
            }
        });
    }))));
    cells[u][cc].for_each(|lane, v| {
        if grid.bj(lane) == cq && grid.bi(lane) == q {
            // SAFETY: inside the pivots (`j < n`).
            unsafe { at.diag.set(pos::<T>(j), v) };
        }
    });
    // LU: and rows j and j + 1 from the threads holding them, every column of the tile.
    if kind == Kind::Lu {
        unroll::<2>(hot!(|h| unroll::<{ FC / 2 }>(hot!(|p| {
            let v = cells[u + h][2 * p].zip(cells[u + h][2 * p + 1], |x, y| [x, y]);
            v.for_each(|lane, v| {
                let c = FC as u32 * grid.bj(lane) + 2 * p as u32;
                if grid.bi(lane) == q && c < n {
                    // SAFETY: inside the buffer (`c < n`), `c` even.
                    unsafe { at.row(h).put_pair(pos::<T>(c), v) };
                }
            });
        }))));
    }
    block.sync();
    // The pivot block: a[j][j], a[j+1][j] (one pair, `j` even), a[j][j+1], a[j+1][j+1].
    // SAFETY: written before the barrier by the threads holding them.
    let ([d0, low], d1) = unsafe {
        (
            at.column(0).pair(pos::<T>(j)),
            at.column(1).get(pos::<T>(j + 1)),
        )
    };
    let up = match kind {
        Kind::Cholesky => low,
        // SAFETY: as for the pivot block.
        Kind::Lu => unsafe { at.row(0).get(pos::<T>(j + 1)) },
    };
    if fails(d0, kind) {
        return Some(j as usize);
    }
    let f0 = d0.recip();
    // Step j's multiples: of column j in column j + 1 (`a[j][j+1]/d0`), and of row j in row j + 1
    // (`a[j+1][j]/d0`; the same for Cholesky).
    let (g, h) = (up * f0, low * f0);
    // Column j + 1's pivot after step j.
    let d1 = (-low).fma(g, d1);
    let second_fails = fails(d1, kind);
    let f1 = if second_fails { T::ZERO } else { d1.recip() };
    if !second_fails {
        cells[u][cc].for_each(|lane, _| {
            if grid.bj(lane) == cq && grid.bi(lane) == q {
                // SAFETY: inside the pivots (`j + 1 < n`); read after the factorization's last
                // barrier.
                unsafe { at.diag.set(pos::<T>(j + 1), d1) };
            }
        });
    }
    // Each thread's multipliers: its rows' entries of column j, and of column j + 1 after step
    // j (zero for rows not after the step, whose entries after it stay: LU's U, Cholesky's
    // unused upper triangle).
    let mut m0: [Lanes<T>; FR] = [Lanes::splat(T::ZERO); FR];
    let mut m1: [Lanes<T>; FR] = [Lanes::splat(T::ZERO); FR];
    unroll::<{ FR / 2 }>(hot!(|p| {
        let [a0, a1] = [0, 1].map(|s| {
            Lanes::from_fn(|lane| {
                let r = FR as u32 * grid.bi(lane) + 2 * p as u32;
                // SAFETY: written before the barrier (every row), `r` even.
                unsafe { at.column(s).pair(pos::<T>(r)) }
            })
        });
        unroll::<2>(hot!(|e| {
            let i = 2 * p + e;
            let (x0, x1) = (a0.map(|v| v[e]), a1.map(|v| v[e]));
            m0[i] = x0.map_lane(|lane, v| {
                if row_after(grid.bi(lane), i, 0) {
                    v
                } else {
                    T::ZERO
                }
            });
            m1[i] = x0.zip(x1, |x0, x1| (-x0).fma(g, x1)).map_lane(|lane, v| {
                if row_after(grid.bi(lane), i, 1) {
                    v
                } else {
                    T::ZERO
                }
            });
        }));
    }));
    // The entries of columns j and j + 1 (Cholesky) or rows j and j + 1 (LU) by which they are
    // multiplied, the second after step j, times the steps' factors, zero for the columns not
    // after them (the finished columns of L, and the steps' own).
    let sources = match kind {
        Kind::Cholesky => [at.column(0), at.column(1)],
        Kind::Lu => [at.row(0), at.row(1)],
    };
    let mut x0: [Lanes<T>; FC] = [Lanes::splat(T::ZERO); FC];
    let mut x1: [Lanes<T>; FC] = [Lanes::splat(T::ZERO); FC];
    unroll::<{ FC / 2 }>(hot!(|p| {
        let [b0, b1] = sources.map(|source| {
            Lanes::from_fn(|lane| {
                let c = (FC as u32 * grid.bj(lane) + 2 * p as u32).min(n - 2);
                // SAFETY: written before the barrier (every column); `c` even, clamped into the
                // buffer for the threads past the tile (whose results are not stored).
                unsafe { source.pair(pos::<T>(c)) }
            })
        });
        unroll::<2>(hot!(|e| {
            let k = 2 * p + e;
            let (y0, y1) = (b0.map(|v| v[e]), b1.map(|v| v[e]));
            x0[k] = y0.map_lane(|lane, v| {
                if column_after(grid.bj(lane), k, 0) {
                    v * f0
                } else {
                    T::ZERO
                }
            });
            x1[k] = y0.zip(y1, |y0, y1| (-y0).fma(h, y1)).map_lane(|lane, v| {
                if !second_fails && column_after(grid.bj(lane), k, 1) {
                    v * f1
                } else {
                    T::ZERO
                }
            });
        }));
    }));
    // The entries after the steps: a[r][c] −= m0_r·x0_c + m1_r·x1_c.
    unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| {
        let v = cells[i][k]
            .zip(m0[i], |v, m| (v, m))
            .zip(x0[k], |(v, m), x| (-m).fma(x, v));
        cells[i][k] = v
            .zip(m1[i], |v, m| (v, m))
            .zip(x1[k], |(v, m), x| (-m).fma(x, v));
    }))));
    second_fails.then_some(j as usize + 1)
}

/// Elements from one staged column of an `n`-triangle to the next: [`pos`]`(n)` and one more
/// [`gap`], so that the lanes of a warp, which stage 32 neighbouring columns of one row at once,
/// spread over eight banks' pairs instead of two (f64: 74 words, not 72). Measured within 1% of
/// the shorter column either way (bench/results/trsm64-h200/), at 1 KiB more scratch for a
/// 64-triangle; the factorizations were measured with it.
#[inline(always)]
fn column_stride<T>(n: u32) -> usize {
    pos::<T>(n) + gap::<T>()
}

/// The exchange buffer's elements for `lines` lines (a multiple of [`FC`]).
#[inline(always)]
fn row_len<T>(lines: u32) -> usize {
    pos::<T>(lines).next_multiple_of(2)
}

/// The lines of `x` that one round of [`solve`] holds: [`FC`] per thread, `n/8` threads per line
/// block.
#[inline(always)]
fn round_lines(n: u32, team: &Team) -> u32 {
    FC as u32 * (team.threads() >> (n / FR as u32).trailing_zeros())
}

/// The room [`solve`] takes for an `n × n` triangle, if `n` is 16, 32 or 64: the staged triangle
/// (one padded column per step), the diagonal's reciprocals and two exchange buffers of a round's
/// lines.
#[inline(always)]
fn solve_room<T: Element>(room: Room, n: u32, team: &Team) -> Option<(Buf<T>, Buf<T>, Buf<T>)> {
    if !matches!(n, 16 | 32 | 64) {
        return None;
    }
    let stride = column_stride::<T>(n);
    let (tt, room) = room.take_array::<T>(n as usize * stride)?;
    let (inverse, room) = room.take_array::<T>(n as usize)?;
    let (rows, _) = room.take_array::<T>(2 * row_len::<T>(round_lines(n, team)))?;
    Some((Buf::of(tt), Buf::of(inverse), Buf::of(rows)))
}

/// Whether [`solve`] with an `n × n` triangle takes the register path in `room`: `n` is 16, 32 or
/// 64 and the room holds what it stages. A caller that must not start what it cannot finish asks
/// first.
#[inline(always)]
pub(crate) fn solves<T: Element>(room: Room, n: u32, team: &Team) -> bool {
    solve_room::<T>(room, n, team).is_some()
}

/// `x := α·t⁻¹·x` for the `n × n` triangular `t` (lower and solved forward, or upper and solved
/// backward; a unit diagonal when `unit`) and each column (line) of the `n × w` matrix `x`, in
/// registers (module docs). Returns `false`, having done nothing, when `n` is not 16, 32 or 64 or
/// `room` cannot hold the staged triangle. Every thread of the block calls it; it ends with a
/// barrier when it returns `true`.
///
/// # Safety
/// `t` and `x` are valid memory that no other thread accesses during the call, and they do not
/// overlap; `room` is the block's and unused until the call returns.
#[allow(
    clippy::too_many_arguments,
    reason = "the solve's operands and its room"
)]
#[inline(always)]
pub(crate) unsafe fn solve<T: Element>(
    block: &Block,
    team: &Team,
    room: Room,
    t: Gmat<T>,
    x: Gmat<T>,
    forward: bool,
    unit: bool,
    alpha: T,
) -> bool {
    let (n, w) = (t.rows, x.cols);
    let Some((tt, inverse, rows)) = solve_room::<T>(room, n, team) else {
        return false;
    };
    let stride = column_stride::<T>(n);
    // SAFETY: the caller's promises; the staged triangle and the reciprocals lie in the room.
    unsafe {
        stage_triangle(team, t, tt, stride, forward);
        if !unit {
            team.for_each_item(n, |q| inverse.set(q as usize, (*t.at(q, q)).recip()));
        }
    }
    block.sync();
    let grid = Grid::of(n, team);
    let per_round = round_lines(n, team);
    let len = row_len::<T>(per_round);
    let groups = n / FR as u32;
    let pairs = Pairs::of(x);
    let mut first = 0;
    while first < w {
        let line = |lane: u32, k: usize| first + FC as u32 * grid.bj(lane) + k as u32;
        let spots = |lane: u32| Spots::of(x, FR as u32 * grid.bi(lane), line(lane, 0));
        // Every load first, then the scaling: a load scaled as it arrives kept the next ones
        // waiting behind it.
        let mut cells: Cells<T> = [[Lanes::splat(T::ZERO); FC]; FR];
        match pairs {
            Pairs::Down => unroll::<{ FR / 2 }>(hot!(|p| unroll::<FC>(hot!(|k| {
                let v = Lanes::from_fn(|lane| {
                    if line(lane, k) < w {
                        // SAFETY: inside `x` (the caller's promise), lines past its end
                        // skipped; rows `2p` and `2p + 1` of a line are neighbours, aligned.
                        unsafe { load_pair(spots(lane).at(2 * p, k)).into() }
                    } else {
                        [T::ZERO; 2]
                    }
                });
                cells[2 * p][k] = v.map(|v| v[0]);
                cells[2 * p + 1][k] = v.map(|v| v[1]);
            })))),
            Pairs::Across => unroll::<FR>(hot!(|i| unroll::<{ FC / 2 }>(hot!(|p| {
                let v = Lanes::from_fn(|lane| {
                    if line(lane, 2 * p) < w {
                        // SAFETY: as above; lines `2p` and `2p + 1` are neighbours, aligned,
                        // and both inside `x` (`w` is even).
                        unsafe { load_pair(spots(lane).at(i, 2 * p)).into() }
                    } else {
                        [T::ZERO; 2]
                    }
                });
                cells[i][2 * p] = v.map(|v| v[0]);
                cells[i][2 * p + 1] = v.map(|v| v[1]);
            })))),
            Pairs::None => {
                cells = array(hot!(|i| array(hot!(|k| Lanes::from_fn(|lane| {
                    if line(lane, k) < w {
                        // SAFETY: inside `x` (the caller's promise), lines past its end skipped.
                        unsafe { *spots(lane).at(i, k) }
                    } else {
                        T::ZERO
                    }
                })))));
            }
        }
        if alpha != T::ONE {
            unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| {
                cells[i][k] = cells[i][k].map(|v| alpha * v);
            }))));
        }
        for s in 0..groups {
            let g = if forward { s } else { groups - 1 - s };
            // The group's reciprocals, loaded before its steps: loaded at its step, each was a
            // shared-memory latency on the chain of steps.
            let scales: [T; FR] = array(hot!(|i| if unit {
                T::ONE
            } else {
                // SAFETY: inside the reciprocals (the caller's promise).
                unsafe { inverse.get(FR * g as usize + i) }
            }));
            unroll::<FR>(hot!(|v| {
                let u = if forward { v } else { FR - 1 - v };
                // SAFETY: inside the room's buffers (the caller's promise); the parity of the
                // step is v's, FR being even.
                unsafe {
                    let row = rows.add((v % 2) * len);
                    substitute(
                        team, grid, &mut cells, tt, stride, scales[u], row, g, u, unit,
                    )
                };
            }));
        }
        match pairs {
            Pairs::Down => unroll::<{ FR / 2 }>(hot!(|p| unroll::<FC>(hot!(|k| {
                cells[2 * p][k]
                    .zip(cells[2 * p + 1][k], |x, y| [x, y])
                    .for_each(|lane, v| {
                        if line(lane, k) < w {
                            // SAFETY: as for the loads.
                            unsafe { store_pair(spots(lane).at(2 * p, k), v) };
                        }
                    });
            })))),
            Pairs::Across => unroll::<FR>(hot!(|i| unroll::<{ FC / 2 }>(hot!(|p| {
                cells[i][2 * p]
                    .zip(cells[i][2 * p + 1], |x, y| [x, y])
                    .for_each(|lane, v| {
                        if line(lane, 2 * p) < w {
                            // SAFETY: as for the loads.
                            unsafe { store_pair(spots(lane).at(i, 2 * p), v) };
                        }
                    });
            })))),
            Pairs::None => unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| cells[i][k].for_each(
                |lane, v| {
                    if line(lane, k) < w {
                        // SAFETY: as for the loads.
                        unsafe { *spots(lane).at(i, k) = v };
                    }
                }
            ))))),
        }
        first += per_round;
    }
    block.sync();
    true
}

/// How [`solve`] moves a thread's cells of `x` to and from global memory: two neighbours in one
/// access where `x` allows it. Element by element, a warp's every load and store of a 64-tile
/// touched 32 sectors for 8 bytes a lane; in pairs the stores took 3,000 cycles of a TRSM where
/// they took 4,900 (bench/results/trsm64-h200/).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pairs {
    /// Entries `2p` and `2p + 1` of a line are neighbours: `x` is transposed (its lines are its
    /// stored rows).
    Down,
    /// Lines `2p` and `2p + 1` are neighbours at each entry, and `x` has an even count of them.
    Across,
    /// One element at a time: `x` or its leading dimension is not aligned to two elements.
    None,
}

impl Pairs {
    #[inline(always)]
    fn of<T>(x: Gmat<T>) -> Self {
        let two = 2 * size_of::<T>();
        if !(x.ptr as usize).is_multiple_of(two) || !x.ld.is_multiple_of(2) {
            Self::None
        } else if x.trans {
            Self::Down
        } else if x.cols.is_multiple_of(2) {
            Self::Across
        } else {
            Self::None
        }
    }
}

/// The cells [`stage_triangle`] loads per thread before it stores them: a 64-triangle's 32 on
/// 128 threads at once, one memory latency where batches of
/// [`COPY_BATCH`](super::lanes::COPY_BATCH) waited four (bench/results/chain-tiles-h200/).
const STAGE_BATCH: usize = 32;

/// Copies the strict `forward` (lower) or backward (upper) triangle of `t`, negated, into padded
/// columns at `tt`, column `q` at `q·stride` with row `k` at [`pos`]`(k)`, and zeros elsewhere, the diagonal
/// included (a step multiplies by them, which must not be a NaN, and the zeros spare the steps
/// their masks), walking `t`'s stored rows so that the global reads coalesce. No barrier.
///
/// # Safety
/// `t` is valid; `tt` holds `n` columns of `stride` elements that no other thread accesses.
#[inline(always)]
unsafe fn stage_triangle<T: Element>(
    team: &Team,
    t: Gmat<T>,
    tt: Buf<T>,
    stride: usize,
    forward: bool,
) {
    let n = t.rows;
    let place = |o: u32, i: u32| if t.trans { (i, o) } else { (o, i) };
    team.copy_cells_by::<STAGE_BATCH, T>(
        n,
        n,
        T::ZERO,
        |o, i| {
            let (k, q) = place(o, i);
            if (forward && k > q) || (!forward && k < q) {
                // SAFETY: inside `t` (the caller's promise).
                unsafe { *t.at(k, q) }
            } else {
                T::ZERO
            }
        },
        |o, i, v| {
            let (k, q) = place(o, i);
            // Negated as it is stored, once every load of the batch is in flight: negated as
            // it arrived, each load waited for the one before, and staging took 13 thousand
            // cycles where it takes 5.5 (bench/results/trsm64-h200/).
            // SAFETY: inside the columns (the caller's promise).
            unsafe { tt.set(q as usize * stride + pos::<T>(k), -v) };
        },
    );
}

/// Step `q = 8·g + u` of [`solve`]: the lanes holding entry `q` of their lines finish it (times
/// `scale`, the pivot's reciprocal) and publish it, the warp meets (a line lives in one warp),
/// and every lane subtracts its multiples of column `q` of the triangle from its entries (the
/// staged zeros leave the entries not after `q`).
///
/// # Safety
/// `tt` holds the staged triangle; `row` is this step's exchange buffer, 16-byte aligned, for a
/// round's lines.
#[allow(
    clippy::too_many_arguments,
    reason = "one step's registers, place and triangle"
)]
#[inline(always)]
unsafe fn substitute<T: Element>(
    team: &Team,
    grid: Grid,
    cells: &mut Cells<T>,
    tt: Buf<T>,
    stride: usize,
    scale: T,
    row: Buf<T>,
    g: u32,
    u: usize,
    unit: bool,
) {
    let q = FR as u32 * g + u as u32;
    // The step's column first: loaded after the warp's barrier, its latency sat on the chain of
    // steps (the barrier orders shared accesses, so nothing hoists it). With the negated triangle
    // this took a 64-tile's steps from 11.9 to 10.2 thousand cycles.
    let column = tt.add(q as usize * stride);
    let columns: [Lanes<[T; 2]>; FR / 2] = array(hot!(|p| Lanes::from_fn(|lane| {
        let e = FR as u32 * grid.bi(lane) + 2 * p as u32;
        // SAFETY: inside column q of the staged triangle, `e` even.
        unsafe { column.pair(pos::<T>(e)) }
    })));
    if !unit {
        unroll::<FC>(hot!(|k| {
            cells[u][k] =
                cells[u][k].map_lane(|lane, v| if grid.bi(lane) == g { v * scale } else { v });
        }));
    }
    unroll::<{ FC / 2 }>(hot!(|p| {
        let v = cells[u][2 * p].zip(cells[u][2 * p + 1], |x, y| [x, y]);
        v.for_each(|lane, v| {
            if grid.bi(lane) == g {
                let l = FC as u32 * grid.bj(lane) + 2 * p as u32;
                // SAFETY: inside the buffer (a round's lines), `l` even.
                unsafe { row.put_pair(pos::<T>(l), v) };
            }
        });
    }));
    // A line's entries, every row of them, live in one warp, so the warp meets only its own lanes.
    team.sync_warp();
    let mut solved: [Lanes<T>; FC] = [Lanes::splat(T::ZERO); FC];
    unroll::<{ FC / 2 }>(hot!(|p| {
        let v = Lanes::from_fn(|lane| {
            let l = FC as u32 * grid.bj(lane) + 2 * p as u32;
            // SAFETY: written before the barrier, `l` even.
            unsafe { row.pair(pos::<T>(l)) }
        });
        solved[2 * p] = v.map(|v| v[0]);
        solved[2 * p + 1] = v.map(|v| v[1]);
    }));
    unroll::<{ FR / 2 }>(hot!(|p| {
        unroll::<2>(hot!(|h| unroll::<FC>(hot!(|k| {
            let i = 2 * p + h;
            // The column is staged negated: one multiply-add, no sign flip.
            cells[i][k] = cells[i][k]
                .zip(columns[p], |x, c| (x, c[h]))
                .zip(solved[k], |(x, c), v| c.fma(v, x));
        }))));
    }));
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::args::{gmat, gmat_mut};
    use crate::flags::{Diag, Op, Side, Uplo};
    use crate::reference::{self, Matrix};
    use crate::testing::{Shared, on_block};
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Scratch enough for every operation here.
    const SCRATCH: usize = 40 * 1024;

    /// A triangle with its diagonal in `±[2, 3]` (the rest in `[-1, 1]`).
    fn triangle<T: Element>(n: usize, seed: u64) -> Matrix<T> {
        let m = Matrix::<T>::random(n, n, 3, seed);
        let v = m.dense();
        m.from_fn(|i, j| {
            let x = v[i * n + j];
            if i == j {
                x.signum() * (2.0 + x.abs())
            } else {
                x
            }
        })
    }

    /// The right-hand side (or its transpose) with rows `pad` elements longer than it: an odd
    /// `pad` misaligns its rows, an even one starts it on two elements' alignment (one element
    /// further into the buffer than `Matrix::random` puts it, where the allocator aligned the
    /// buffer to one element only, as Miri's may).
    fn rhs<T: Element>(n: usize, w: usize, warps: u32, trans: bool, pad: usize) -> Matrix<T> {
        let (rows, cols) = if trans { (w, n) } else { (n, w) };
        let mut m = Matrix::<T>::random(rows, cols, pad, 5 + warps as u64);
        let start = m.data.as_ptr().wrapping_add(m.rect.offset) as usize;
        if pad % 2 == 0 && !start.is_multiple_of(2 * size_of::<T>()) {
            // The buffer holds `2·pad + 1` elements past the matrix.
            m.rect.offset += 1;
        }
        m
    }

    /// Runs [`solve`] on `T·X = α·B` (`X` stored as is, or as the transpose of a `w × n` matrix,
    /// made by [`rhs`] with `pad`) in `scratch` bytes and checks the residual; returns whether
    /// the registers took it (when they did not, checks that nothing moved) and how the cells of
    /// `X` moved.
    #[allow(clippy::too_many_arguments, reason = "a test's every dimension")]
    fn solve_padded<T: Element>(
        scratch: usize,
        n: usize,
        w: usize,
        warps: u32,
        forward: bool,
        unit: bool,
        trans: bool,
        pad: usize,
    ) -> (bool, Pairs) {
        let a = triangle::<T>(n, n as u64 + w as u64);
        let mut b = rhs::<T>(n, w, warps, trans, pad);
        let (sa, sb, ra, rb) = (
            Shared::of(&a.data),
            Shared::of_mut(&mut b.data),
            a.rect,
            b.rect,
        );
        let taken = AtomicBool::new(true);
        let pairs = {
            let x = gmat_mut(&sb.mat_mut(rb));
            Pairs::of(if trans { x.t() } else { x })
        };
        let alpha = -0.5;
        on_block(warps, scratch, |block| {
            let team = Team::new(block);
            let t = gmat(&sa.mat(ra), Op::N);
            let x = gmat_mut(&sb.mat_mut(rb));
            let x = if trans { x.t() } else { x };
            // SAFETY: the test's matrices, disjoint; the scratch is the block's.
            let done = unsafe {
                solve(
                    block,
                    &team,
                    Room::of(block, 0),
                    t,
                    x,
                    forward,
                    unit,
                    T::from_f64(alpha),
                )
            };
            taken.fetch_and(done, Ordering::Relaxed);
        });
        if !taken.load(Ordering::Relaxed) {
            assert_eq!(
                b.data, b.before,
                "a declined solve leaves the right-hand side alone"
            );
            return (false, pairs);
        }
        let uplo = if forward { Uplo::Lower } else { Uplo::Upper };
        let diag = if unit { Diag::Unit } else { Diag::NonUnit };
        // X stored as Xᵀ: B·Tᵀ = α·B₀, a right-side solve with the transpose.
        let (side, op) = if trans {
            (Side::Right, Op::T)
        } else {
            (Side::Left, Op::N)
        };
        let (residual, scale) = reference::trsm_residual(side, uplo, op, diag, alpha, &a, &b);
        let what = std::format!(
            "registers' trsm n {n} w {w} warps {warps} forward {forward} unit {unit} trans {trans}"
        );
        reference::assert_small(
            &b,
            &residual,
            &scale,
            4.0 * (n as f64 + 2.0) * T::EPSILON,
            &what,
        );
        (true, pairs)
    }

    fn check_solve<T: Element>(
        n: usize,
        w: usize,
        warps: u32,
        forward: bool,
        unit: bool,
        trans: bool,
    ) -> bool {
        solve_padded::<T>(SCRATCH, n, w, warps, forward, unit, trans, 1).0
    }

    #[test]
    fn the_registers_solve_every_direction_and_orientation() {
        let sizes: &[(usize, usize, u32)] = if cfg!(miri) {
            // Every emulated lane is interpreted: the 16-tile on every path (f32 too), and a
            // 32-tile of two lanes per line on two warps, f64 forward only (below).
            &[(16, 16, 1), (32, 16, 2)]
        } else {
            &[
                (16, 16, 1),
                (16, 40, 2),
                (32, 48, 1),
                (32, 16, 3),
                (64, 64, 4),
                (64, 96, 2),
                (64, 16, 1),
            ]
        };
        for &(n, w, warps) in sizes {
            for (forward, unit, trans) in [
                (true, false, false),
                (true, true, false),
                (false, false, true),
                (false, true, false),
                (true, false, true),
            ] {
                if cfg!(miri) && n > 16 && !(forward && !unit && !trans) {
                    continue;
                }
                assert!(check_solve::<f64>(n, w, warps, forward, unit, trans));
                if !cfg!(miri) || n == 16 {
                    assert!(check_solve::<f32>(n, w, warps, forward, unit, trans));
                }
            }
        }
    }

    /// `B·Bᵀ / n + I`: symmetric positive definite.
    fn spd(n: usize, seed: u64) -> Matrix<f64> {
        let b = Matrix::<f64>::random(n, n, 0, seed).dense();
        Matrix::<f64>::random(n, n, 2, seed + 1).from_fn(|i, j| {
            let dot: f64 = (0..n).map(|q| b[i * n + q] * b[j * n + q]).sum();
            dot / n as f64 + if i == j { 1.0 } else { 0.0 }
        })
    }

    fn run_factor(
        a: &mut Matrix<f64>,
        warps: u32,
        scratch: usize,
        kind: Kind,
    ) -> Option<Result<(), usize>> {
        run_factor_by(a, warps, scratch, kind, false)
    }

    fn run_factor_by(
        a: &mut Matrix<f64>,
        warps: u32,
        scratch: usize,
        kind: Kind,
        single: bool,
    ) -> Option<Result<(), usize>> {
        let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
        let result = std::sync::Mutex::new(std::vec::Vec::new());
        on_block(warps, scratch, |block| {
            let team = Team::new(block);
            // SAFETY: the test's matrix; the scratch is the block's.
            let r = unsafe {
                factor_by(
                    block,
                    &team,
                    Room::of(block, 0),
                    gmat_mut(&sa.mat_mut(ra)),
                    kind,
                    single,
                )
            };
            result.lock().unwrap().push(r);
        });
        let all = result.into_inner().unwrap();
        assert!(
            all.windows(2).all(|p| p[0] == p[1]),
            "threads disagree: {all:?}"
        );
        all[0]
    }

    #[test]
    fn the_registers_factor_like_the_reference() {
        let cases: &[(usize, u32)] = if cfg!(miri) {
            &[(16, 1), (32, 1)]
        } else {
            &[(16, 1), (32, 1), (32, 3), (64, 4), (64, 6)]
        };
        for &(n, warps) in cases {
            // Two steps per barrier, then one (what f64 takes on the GPU).
            for single in [false, true] {
                let mut a = spd(n, n as u64);
                assert_eq!(
                    run_factor_by(&mut a, warps, SCRATCH, Kind::Cholesky, single),
                    Some(Ok(()))
                );
                let (residual, scale) = reference::potrf_residual(&a);
                reference::assert_small(
                    &a,
                    &residual,
                    &scale,
                    4.0 * (n as f64 + 2.0) * f64::EPSILON,
                    "registers' potrf",
                );
                for i in 0..n {
                    for j in i + 1..n {
                        assert_eq!(a.get(i, j), a.original(i, j), "potrf wrote ({i}, {j})");
                    }
                }
            }
            let m = Matrix::<f64>::random(n, n, 1, 3);
            let v = m.dense();
            let mut a =
                m.from_fn(|i, j| v[i * n + j] + if i == j { n as f64 / 4.0 + 1.0 } else { 0.0 });
            assert_eq!(run_factor(&mut a, warps, SCRATCH, Kind::Lu), Some(Ok(())));
            let (residual, scale) = reference::getrf_residual(&a);
            reference::assert_small(
                &a,
                &residual,
                &scale,
                4.0 * (n as f64 + 2.0) * f64::EPSILON,
                "registers' getrf",
            );
        }
    }

    #[test]
    fn a_failed_pivot_stops_every_thread_at_its_column() {
        let (n, warps) = if cfg!(miri) { (32, 1) } else { (64, 4) };
        let mut a = Matrix::<f64>::random(n, n, 0, 1).from_fn(|i, j| match (i == j, i) {
            (false, _) => 0.0,
            (true, 21) => -1.0,
            (true, _) => 4.0,
        });
        assert_eq!(
            run_factor(&mut a, warps, SCRATCH, Kind::Cholesky),
            Some(Err(21))
        );
        assert_eq!(
            a.get(20, 20),
            2.0,
            "the columns before the failure are factored"
        );
        assert_eq!(
            a.get(21, 21),
            -1.0,
            "the failed column is left as its step found it"
        );
        let mut b = Matrix::<f64>::random(n, n, 0, 1).from_fn(|i, j| match (i == j, i) {
            (false, _) => 0.0,
            (true, 21) => -1.0,
            (true, _) => 4.0,
        });
        assert_eq!(
            run_factor_by(&mut b, warps, SCRATCH, Kind::Cholesky, true),
            Some(Err(21)),
            "one step per barrier"
        );
        assert_eq!((b.get(20, 20), b.get(21, 21)), (2.0, -1.0));
        // The first of a step's two columns failing.
        let mut a = Matrix::<f64>::random(n, n, 0, 1).from_fn(|i, j| match (i == j, i) {
            (false, _) => 0.0,
            (true, 20) => 0.0,
            (true, _) => 9.0,
        });
        assert_eq!(
            run_factor(&mut a, warps, SCRATCH, Kind::Cholesky),
            Some(Err(20))
        );
        assert_eq!((a.get(19, 19), a.get(20, 20)), (3.0, 0.0));
        let mut a = Matrix::<f64>::random(n, n, 0, 1)
            .from_fn(|i, j| if i == j && i != 9 { 1.0 } else { 0.0 });
        assert_eq!(run_factor(&mut a, warps, SCRATCH, Kind::Lu), Some(Err(9)));
    }

    #[test]
    fn the_registers_move_aligned_cells_in_pairs() {
        // Even rows from an even offset move two cells at a time, down a line when the lines are
        // stored rows (`trans`) and across two lines otherwise; an odd count of lines, or rows
        // that an odd pad misaligns, one at a time. Every path must solve alike. (Under Miri,
        // which interprets every emulated lane, the two paired ones on a 16-tile and one warp;
        // the other tests there take the single path.)
        let (n, warps, cases): (usize, u32, &[(usize, usize)]) = if cfg!(miri) {
            (16, 1, &[(2, 16)])
        } else {
            (64, 2, &[(2, 64), (2, 40), (2, 36), (2, 37), (1, 64)])
        };
        for &(pad, w) in cases {
            for trans in [false, true] {
                let want = match (pad % 2, trans, w % 2) {
                    (1, _, _) => Pairs::None,
                    (_, true, _) => Pairs::Down,
                    (_, false, 0) => Pairs::Across,
                    _ => Pairs::None,
                };
                let (solved, pairs) =
                    solve_padded::<f64>(SCRATCH, n, w, warps, true, false, trans, pad);
                assert!(solved);
                assert!(pairs == want, "pad {pad} w {w} trans {trans}");
            }
        }
    }

    #[test]
    fn the_registers_decline_what_they_cannot_hold() {
        // A side they do not cut, too few threads for a 64-tile's lines, too little scratch.
        assert!(!check_solve::<f64>(48, 16, 1, true, false, false));
        // (Declined before any read: any values do.)
        let mut a = Matrix::<f64>::random(64, 64, 1, 2);
        assert_eq!(run_factor(&mut a, 3, SCRATCH, Kind::Cholesky), None);
        assert_eq!(
            a.data, a.before,
            "a declined factorization leaves the tile alone"
        );
        let mut a = spd(32, 1);
        assert_eq!(run_factor(&mut a, 1, 16, Kind::Lu), None);
        // The triangle's padded columns (16 bytes more than the column between two), its
        // reciprocals and two exchange buffers of a round's lines (four warps hold 4·128/(n/8)
        // lines), with 16 bytes after every 16 elements (a 32-tile under Miri, which interprets
        // every emulated lane).
        let n = if cfg!(miri) { 32 } else { 64 };
        let pos = |k: usize| k + 2 * (k / 16);
        let need = (n * (pos(n) + 2) + n + 2 * pos(4 * 128 / (n / 8))) * 8;
        assert!(!solve_padded::<f64>(need - 16, n, 16, 4, true, false, false, 1).0);
        assert!(solve_padded::<f64>(need, n, 16, 4, true, false, false, 1).0);
    }
}
