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
//! `t / (n/8)`, so that a warp holds whole columns: warp `w` of a 64-tile holds its columns
//! `16w..16w + 16`, a *panel*, and one warp holds all of a smaller tile.
//!
//! - **POTRF and GETRF** run one panel at a time. The panel's warp factors it alone, meeting its
//!   lanes at a warp barrier per step: the lanes holding column `j` (and, for GETRF, row `j`)
//!   publish it in shared memory, zero for the entries not after `j`, and every lane subtracts
//!   `m_r·x_c` from its entries, `m_r` from the column and `x_c` from the column (POTRF) or the
//!   row (GETRF) times the pivot's reciprocal. The block then meets once, and every later
//!   panel's warp applies the panel's published columns to its own (POTRF: a rank-16 update with
//!   no barrier; GETRF: step by step, each publishing its own row `j` to itself). The columns of
//!   `L` stay unscaled until the end, which scales each once by its pivot, kept aside.
//! - **TRSM**: the lines (the independent right-hand sides) are the block's columns, so each
//!   warp solves its own lines alone. The lanes holding entry `q` of their lines publish it; the
//!   warp meets, and every lane subtracts the triangle's column `q`, staged in shared memory
//!   divided by the pivot and with zeros on and off its triangle, times the published entries.
//!   The zeros are the masks; the entries are divided by their pivots once, at the end.
//!
//! Column `j`'s entries, every row of them, live in one warp: that is what lets a panel's warp
//! factor it without the other warps, and a warp solve its lines alone. A 64-tile's
//! factorization meets the block four times instead of 64, the TRSM twice (after staging and at
//! the end), and their chains of steps wait on warp barriers only.
//!
//! A register array stays in registers only when every index into it is a constant, so the steps
//! run in groups of eight, unrolled, in a loop over the groups: the register a step reads (its
//! row `j mod 8` and column `j mod 4` in a block) is fixed, and only which threads hold it is a
//! runtime predicate. The TRSM's two exchange buffers (GETRF's row buffers) alternate by step
//! parity, so one barrier per step suffices. The buffers and the staged triangle are read and
//! written with `ld.shared` / `st.shared` at 32-bit addresses ([`Buf`]), with 16 bytes after
//! every 16 elements so that the eight row blocks a warp reads at once fall on different banks.
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
//! | TRSM, side `n` | `n` columns of `n`, the reciprocals (`n`) and two buffers of a round's lines (`4·threads/(n/8)`), with 16 bytes per 16 elements (37.6 KiB for an f64 64-tile on 128 threads) | any multiple of 32 |
//! | POTRF, GETRF, side `n` | a panel's columns (`min(n, 1024/n)` of `n`), twice when there are two panels or more, the `n` pivots, their factors and two row buffers of `n`, with 16 bytes per 16 elements (20.3 KiB for an f64 64-tile) | at least `n²/32` |
//!
//! Larger tiles whose side is a multiple of 64 are cut into 64-blocks that come here one at a
//! time (`factor::by_64`, `trsm::solve_by_64`). The operations fall back to the blocked paths for
//! other sides, too little scratch or (the factorizations) too few threads.

use super::engine::Gmat;
use super::lanes::{Lanes, Team};
use super::numeric::Element;
#[cfg(target_arch = "nvptx64")]
use super::smem::window;
use super::staged::Room;
use super::unroll::{array, hot, unroll};
use crate::Block;
use crate::arch;

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
/// 64, the block has fewer than `n²/32` threads, or `room` cannot hold the panels; else the
/// factorization's result as [`potrf`](super::potrf()) and [`getrf`](super::getrf()) give it.
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
    let n = a.rows;
    if !matches!(n, 16 | 32 | 64) || team.threads() < n * n / (FR * FC) as u32 {
        return None;
    }
    // Warp w holds the columns of panel w (module docs): 16 of a 64-tile, all of a smaller one.
    let width = (FR as u32 * FC as u32 * arch::WARP_SIZE / n).min(n);
    let panels = n / width;
    let stride = pos::<T>(n);
    // The published columns of one panel, twice when there are two panels or more (alternating:
    // panel p + 2 is written after the barrier that ends every warp's reads of panel p), then
    // the pivots, their factors and two row buffers (LU), each `stride` long.
    let copies = panels.min(2) as usize;
    let columns = width as usize * stride;
    let (space, _) = room.take_array::<T>(copies * columns + 4 * stride)?;
    let space = Buf::of(space);
    let at = Places {
        diag: space.add(copies * columns),
        factors: space.add(copies * columns + stride),
        rows: space.add(copies * columns + 2 * stride),
        stride,
        n,
        kind,
    };
    let grid = Grid::of(n, team);
    let warp = team.warp();
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
    for p in 0..panels {
        let start = p * width;
        let panel = space.add((p as usize % copies) * columns);
        if warp == p {
            for q in start / FR as u32..(start + width) / FR as u32 {
                unroll::<FR>(hot!(|u| {
                    if failed.is_none() {
                        // SAFETY: the buffers lie in the room (the caller's promise).
                        failed = unsafe { produce(team, grid, &mut cells, panel, at, start, q, u) };
                    }
                }));
                if failed.is_some() {
                    break;
                }
            }
        }
        block.sync();
        // Every warp finds the panel's first failed pivot, where its producer stopped.
        // SAFETY: the pivots up to the first failed one were written before the barrier.
        let stop = unsafe { at.first_failure(start, width) };
        if warp > p && warp < panels {
            let end = stop.unwrap_or(start + width);
            // SAFETY: the panel's columns before `end` and their factors were written before
            // the barrier.
            unsafe { consume(team, grid, &mut cells, panel, at, start, end) };
        }
        if let Some(j) = stop {
            failed = Some(j as usize);
            break;
        }
    }
    // Scale the finished columns: L[r][c] = a[r][c]·s_c below the diagonal (Cholesky: and on it,
    // d·s = √d), s_c being 1/√d_c (Cholesky) or 1/d_c (LU). The pivots were written before the
    // last barrier.
    let done = failed.map_or(n, |j| j as u32);
    unroll::<FC>(hot!(|k| {
        let scale = Lanes::from_fn(|lane| {
            let c = (FC as u32 * grid.bj(lane) + k as u32).min(n - 1);
            // SAFETY: inside the pivots (clamped for the threads past the tile, whose results
            // are not stored), written before the last barrier.
            let d = unsafe { at.diag.get(pos::<T>(c)) };
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

/// Where [`factor`]'s steps find what the panels share, besides the panels' columns.
#[derive(Clone, Copy)]
struct Places<T> {
    /// `diag[pos(j)]`: the pivot of step `j` as its step found it.
    diag: Buf<T>,
    /// `factors[pos(j)]`: what step `j` multiplies `x_c` by, `1/d` (`s²` for Cholesky).
    factors: Buf<T>,
    /// Two row buffers (LU), by step parity: row `j` of the tile, each warp its own columns,
    /// zero for the columns not after `j`.
    rows: Buf<T>,
    /// Elements from one buffer or column to the next: [`pos`]`(n)`.
    stride: usize,
    n: u32,
    kind: Kind,
}

impl<T: Element> Places<T> {
    /// Whether pivot `d` fails: not positive (NaN included) for Cholesky, zero for LU.
    #[inline(always)]
    fn fails(self, d: T) -> bool {
        match self.kind {
            Kind::Cholesky => d.partial_cmp(&T::ZERO) != Some(core::cmp::Ordering::Greater),
            Kind::Lu => d == T::ZERO,
        }
    }

    /// The first failed pivot among the `width` steps from `start`, if any.
    ///
    /// # Safety
    /// The pivots of those steps are written, up to the first failed one.
    #[inline(always)]
    unsafe fn first_failure(self, start: u32, width: u32) -> Option<u32> {
        // SAFETY: the caller's promise; a step past a failed one is never read.
        (start..start + width).find(|&j| self.fails(unsafe { self.diag.get(pos::<T>(j)) }))
    }

    /// The row buffer of step `u`'s parity.
    #[inline(always)]
    fn row(self, u: usize) -> Buf<T> {
        self.rows.add((u % 2) * self.stride)
    }

    /// Publishes row `j = 8·q + u` of the calling warp's columns (LU): the threads holding it
    /// write its entries after `j`, zeros before. No barrier.
    ///
    /// # Safety
    /// No other warp accesses those columns of the row buffer.
    #[inline(always)]
    unsafe fn publish_row(self, grid: Grid, cells: &Cells<T>, q: u32, u: usize) {
        let j = FR as u32 * q + u as u32;
        let row = self.row(u);
        unroll::<{ FC / 2 }>(hot!(|p| {
            let v = cells[u][2 * p].zip(cells[u][2 * p + 1], |x, y| [x, y]);
            v.for_each(|lane, v| {
                let c = FC as u32 * grid.bj(lane) + 2 * p as u32;
                if grid.bi(lane) == q && c < self.n {
                    let after = |h: u32, v: T| if c + h > j { v } else { T::ZERO };
                    // SAFETY: inside the buffer (`c < n`), `c` even.
                    unsafe { row.put_pair(pos::<T>(c), [after(0, v[0]), after(1, v[1])]) };
                }
            });
        }));
    }

    /// Subtracts `m_r·x_c·f` from each thread's entries: `m_r` from `column` at its rows (zero
    /// for the rows not after the step), `x_c` from `source` at its columns (zero for the
    /// columns not after it: the column itself for Cholesky, the row for LU).
    ///
    /// # Safety
    /// `column` and `source` are published and `pos(n)` long.
    #[inline(always)]
    unsafe fn update(self, grid: Grid, cells: &mut Cells<T>, column: Buf<T>, source: Buf<T>, f: T) {
        let n = self.n;
        let mut m: [Lanes<T>; FR] = [Lanes::splat(T::ZERO); FR];
        unroll::<{ FR / 2 }>(hot!(|p| {
            let v = Lanes::from_fn(|lane| {
                let r = FR as u32 * grid.bi(lane) + 2 * p as u32;
                // SAFETY: published (the caller's promise), `r` even.
                unsafe { column.pair(pos::<T>(r)) }
            });
            m[2 * p] = v.map(|v| v[0]);
            m[2 * p + 1] = v.map(|v| v[1]);
        }));
        let mut x: [Lanes<T>; FC] = [Lanes::splat(T::ZERO); FC];
        unroll::<{ FC / 2 }>(hot!(|p| {
            let v = Lanes::from_fn(|lane| {
                let c = (FC as u32 * grid.bj(lane) + 2 * p as u32).min(n - 2);
                // SAFETY: published (the caller's promise); `c` even, clamped into the buffer
                // for the threads past the tile (whose results are not stored).
                unsafe { source.pair(pos::<T>(c)) }
            });
            x[2 * p] = v.map(|v| v[0] * f);
            x[2 * p + 1] = v.map(|v| v[1] * f);
        }));
        unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| {
            cells[i][k] = cells[i][k]
                .zip(m[i], |v, m| (v, m))
                .zip(x[k], |(v, m), x| (-m).fma(x, v));
        }))));
    }
}

/// Step `j = 8·q + u` of [`factor`], in the warp whose panel (from column `start`) holds column
/// `j`: the threads holding column `j` publish it into `panel`, zero for the rows not after `j`,
/// and its pivot into `diag` (LU: and row `j`), the warp meets, and every lane updates its
/// entries after `j`. Column `j` stays unscaled, for [`factor`]'s end to scale. Returns the step
/// when its pivot fails, the same in every lane; the pivot is published first, so that the other
/// warps find it.
///
/// # Safety
/// `panel` holds the panel's columns, `at`'s buffers are the room's, and no other warp accesses
/// `panel` or the warp's columns of the row buffers until the block's next barrier.
#[allow(
    clippy::too_many_arguments,
    reason = "one step's registers, place and buffers"
)]
#[inline(always)]
unsafe fn produce<T: Element>(
    team: &Team,
    grid: Grid,
    cells: &mut Cells<T>,
    panel: Buf<T>,
    at: Places<T>,
    start: u32,
    q: u32,
    u: usize,
) -> Option<usize> {
    let j = FR as u32 * q + u as u32;
    // The column block holding column j, and j's place in it.
    let (cq, cc) = (j / FC as u32, u % FC);
    let column = panel.add((j - start) as usize * at.stride);
    // Whether row 8·bi + i comes after j.
    let row_after = |bi: u32, i: usize| bi > q || (bi == q && i > u);
    unroll::<{ FR / 2 }>(hot!(|p| {
        let v = cells[2 * p][cc].zip(cells[2 * p + 1][cc], |x, y| [x, y]);
        v.for_each(|lane, v| {
            let bi = grid.bi(lane);
            if grid.bj(lane) == cq {
                let r = FR as u32 * bi + 2 * p as u32;
                let after = |h: usize, v: T| if row_after(bi, 2 * p + h) { v } else { T::ZERO };
                // SAFETY: inside the column (`r < n`), `r` even.
                unsafe { column.put_pair(pos::<T>(r), [after(0, v[0]), after(1, v[1])]) };
            }
        });
    }));
    cells[u][cc].for_each(|lane, v| {
        if grid.bj(lane) == cq && grid.bi(lane) == q {
            // SAFETY: inside the pivots (`j < n`).
            unsafe { at.diag.set(pos::<T>(j), v) };
        }
    });
    if at.kind == Kind::Lu {
        // SAFETY: the warp's columns of the row buffer are its own (the caller's promise).
        unsafe { at.publish_row(grid, cells, q, u) };
    }
    team.sync_warp();
    // SAFETY: written before the warp barrier by the lane holding (j, j).
    let d = unsafe { at.diag.get(pos::<T>(j)) };
    if at.fails(d) {
        return Some(j as usize);
    }
    let f = match at.kind {
        // L[r][j] = a[r][j]·s (at the end); the update subtracts a[r][j]·(a[c][j]·s²).
        Kind::Cholesky => {
            let s = d.rsqrt();
            s * s
        }
        Kind::Lu => d.recip(),
    };
    cells[u][cc].for_each(|lane, _| {
        if grid.bj(lane) == cq && grid.bi(lane) == q {
            // SAFETY: inside the factors (`j < n`).
            unsafe { at.factors.set(pos::<T>(j), f) };
        }
    });
    let source = if at.kind == Kind::Cholesky {
        column
    } else {
        at.row(u)
    };
    // SAFETY: both published before the warp barrier.
    unsafe { at.update(grid, cells, column, source, f) };
    None
}

/// The steps `start..end` of a panel, published by its warp, in a warp of a later panel: every
/// lane updates its entries by each step's column and factor (LU: and by the row `j` of the
/// warp's own columns, which it publishes to itself first, step by step).
///
/// # Safety
/// The panel's columns and the factors of the steps are published; no other warp accesses the
/// warp's columns of the row buffers.
#[inline(always)]
unsafe fn consume<T: Element>(
    team: &Team,
    grid: Grid,
    cells: &mut Cells<T>,
    panel: Buf<T>,
    at: Places<T>,
    start: u32,
    end: u32,
) {
    let column = |j: u32| panel.add((j - start) as usize * at.stride);
    match at.kind {
        Kind::Cholesky => {
            for j in start..end {
                // SAFETY: the caller's promise.
                unsafe {
                    let f = at.factors.get(pos::<T>(j));
                    at.update(grid, cells, column(j), column(j), f);
                }
            }
        }
        Kind::Lu => {
            for q in start / FR as u32..end.div_ceil(FR as u32) {
                unroll::<FR>(hot!(|u| {
                    let j = FR as u32 * q + u as u32;
                    if j < end {
                        // SAFETY: the caller's promise; the warp's columns of the row are its
                        // own, published before the warp barrier.
                        unsafe {
                            at.publish_row(grid, cells, q, u);
                            team.sync_warp();
                            let f = at.factors.get(pos::<T>(j));
                            at.update(grid, cells, column(j), at.row(u), f);
                        }
                    }
                }));
            }
        }
    }
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
    let stride = pos::<T>(n);
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
    let stride = pos::<T>(n);
    // SAFETY: the caller's promises; the staged triangle and the reciprocals lie in the room.
    unsafe {
        stage_triangle(team, t, tt, stride, forward, unit);
        if !unit {
            team.for_each_item(n, |q| inverse.set(q as usize, (*t.at(q, q)).recip()));
        }
    }
    block.sync();
    let grid = Grid::of(n, team);
    let per_round = round_lines(n, team);
    let len = row_len::<T>(per_round);
    let groups = n / FR as u32;
    let mut first = 0;
    while first < w {
        let line = |lane: u32, k: usize| first + FC as u32 * grid.bj(lane) + k as u32;
        let mut cells: Cells<T> = array(hot!(|i| array(hot!(|k| Lanes::from_fn(|lane| {
            let (e, l) = (FR as u32 * grid.bi(lane) + i as u32, line(lane, k));
            if l < w {
                // SAFETY: inside `x` (the caller's promise), lines past its end skipped.
                let v = unsafe { *x.at(e, l) };
                if alpha == T::ONE { v } else { alpha * v }
            } else {
                T::ZERO
            }
        })))));
        for s in 0..groups {
            let g = if forward { s } else { groups - 1 - s };
            unroll::<FR>(hot!(|v| {
                let u = if forward { v } else { FR - 1 - v };
                // SAFETY: inside the room's buffers (the caller's promise); the parity of the
                // step is v's, FR being even.
                unsafe {
                    let row = rows.add((v % 2) * len);
                    substitute(team, grid, &mut cells, tt, stride, row, g, u)
                };
            }));
        }
        // Finish the entries: x_e = b_e / t_ee, the steps having left them unscaled.
        if !unit {
            unroll::<FR>(hot!(|i| {
                let scale = Lanes::from_fn(|lane| {
                    // SAFETY: inside the reciprocals, written before the first step's barrier.
                    unsafe { inverse.get((FR as u32 * grid.bi(lane) + i as u32) as usize) }
                });
                unroll::<FC>(hot!(|k| cells[i][k] = cells[i][k].zip(scale, |v, s| v * s)));
            }));
        }
        unroll::<FR>(hot!(|i| unroll::<FC>(hot!(|k| cells[i][k].for_each(
            |lane, v| {
                let (e, l) = (FR as u32 * grid.bi(lane) + i as u32, line(lane, k));
                if l < w {
                    // SAFETY: as for the loads.
                    unsafe { *x.at(e, l) = v };
                }
            }
        )))));
        first += per_round;
    }
    block.sync();
    true
}

/// Copies the strict `forward` (lower) or backward (upper) triangle of `t` into padded columns at
/// `tt`, column `q` at `q·stride` with row `k` at [`pos`]`(k)`, and zeros elsewhere, the diagonal
/// included (a step multiplies by them, which must not be a NaN, and the zeros spare the steps
/// their masks), walking `t`'s stored rows so that the global reads coalesce. Unless `unit`,
/// column `q` is divided by `t_qq`: the steps then subtract `(t_kq / t_qq)·b_q` with `b_q`
/// unscaled, and [`solve`] divides each entry by its pivot once, at the end, instead of a multiply
/// and two selects per line every step. No barrier.
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
    unit: bool,
) {
    let n = t.rows;
    let place = |o: u32, i: u32| if t.trans { (i, o) } else { (o, i) };
    team.copy_cells(
        n,
        n,
        T::ZERO,
        |o, i| {
            let (k, q) = place(o, i);
            if (forward && k > q) || (!forward && k < q) {
                // SAFETY: inside `t` (the caller's promise).
                let v = unsafe { *t.at(k, q) };
                if unit {
                    v
                } else {
                    // SAFETY: as for `v`.
                    v * unsafe { *t.at(q, q) }.recip()
                }
            } else {
                T::ZERO
            }
        },
        |o, i, v| {
            let (k, q) = place(o, i);
            // SAFETY: inside the columns (the caller's promise).
            unsafe { tt.set(q as usize * stride + pos::<T>(k), v) };
        },
    );
}

/// Step `q = 8·g + u` of [`solve`]: the lanes holding entry `q` of their lines publish it, the
/// warp meets (a line lives in one warp), and every lane subtracts its multiples of column `q` of
/// the staged triangle (divided by the pivot, [`stage_triangle`]) from its entries (the staged
/// zeros leave the entries not after `q`).
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
    row: Buf<T>,
    g: u32,
    u: usize,
) {
    let q = FR as u32 * g + u as u32;
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
    let column = tt.add(q as usize * stride);
    unroll::<{ FR / 2 }>(hot!(|p| {
        let c = Lanes::from_fn(|lane| {
            let e = FR as u32 * grid.bi(lane) + 2 * p as u32;
            // SAFETY: inside column q of the staged triangle, `e` even.
            unsafe { column.pair(pos::<T>(e)) }
        });
        unroll::<2>(hot!(|h| unroll::<FC>(hot!(|k| {
            let i = 2 * p + h;
            cells[i][k] = cells[i][k]
                .zip(c, |x, c| (x, c[h]))
                .zip(solved[k], |(x, c), v| (-c).fma(v, x));
        }))));
    }));
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::tile::args::{gmat, gmat_mut};
    use crate::tile::flags::{Diag, Op, Side, Uplo};
    use crate::tile::reference::{self, Matrix};
    use crate::tile::testing::{Shared, on_block};
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

    /// Runs [`solve`] on `T·X = α·B` (`X` stored as is, or as the transpose of a `w × n` matrix)
    /// in `scratch` bytes and checks the residual; returns whether the registers took it (when
    /// they did not, checks that nothing moved).
    fn solve_in<T: Element>(
        scratch: usize,
        n: usize,
        w: usize,
        warps: u32,
        forward: bool,
        unit: bool,
        trans: bool,
    ) -> bool {
        let a = triangle::<T>(n, n as u64 + w as u64);
        let (rows, cols) = if trans { (w, n) } else { (n, w) };
        let mut b = Matrix::<T>::random(rows, cols, 1, 5 + warps as u64);
        let (sa, sb, ra, rb) = (
            Shared::of(&a.data),
            Shared::of_mut(&mut b.data),
            a.rect,
            b.rect,
        );
        let taken = AtomicBool::new(true);
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
            return false;
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
        true
    }

    fn check_solve<T: Element>(
        n: usize,
        w: usize,
        warps: u32,
        forward: bool,
        unit: bool,
        trans: bool,
    ) -> bool {
        solve_in::<T>(SCRATCH, n, w, warps, forward, unit, trans)
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
        let (sa, ra) = (Shared::of_mut(&mut a.data), a.rect);
        let result = std::sync::Mutex::new(std::vec::Vec::new());
        on_block(warps, scratch, |block| {
            let team = Team::new(block);
            // SAFETY: the test's matrix; the scratch is the block's.
            let r = unsafe {
                factor(
                    block,
                    &team,
                    Room::of(block, 0),
                    gmat_mut(&sa.mat_mut(ra)),
                    kind,
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
            let mut a = spd(n, n as u64);
            assert_eq!(
                run_factor(&mut a, warps, SCRATCH, Kind::Cholesky),
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
        let mut a = Matrix::<f64>::random(n, n, 0, 1)
            .from_fn(|i, j| if i == j && i != 9 { 1.0 } else { 0.0 });
        assert_eq!(run_factor(&mut a, warps, SCRATCH, Kind::Lu), Some(Err(9)));
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
        // The triangle's padded columns, its reciprocals and two exchange buffers of a round's
        // lines (four warps hold 4·128/(n/8) lines), with 16 bytes after every 16 elements (a
        // 32-tile under Miri, which interprets every emulated lane).
        let n = if cfg!(miri) { 32 } else { 64 };
        let pos = |k: usize| k + 2 * (k / 16);
        let need = (n * pos(n) + n + 2 * pos(4 * 128 / (n / 8))) * 8;
        assert!(!solve_in::<f64>(need - 16, n, 16, 4, true, false, false));
        assert!(solve_in::<f64>(need, n, 16, 4, true, false, false));
    }
}
