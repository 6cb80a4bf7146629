//! The block-level multiply engine that GEMM, SYRK and the panel updates of TRSM, POTRF and
//! GETRF are built on: `C = α·op(A)·op(B) + β·C` over global memory, staged through shared memory.
//!
//! 1. **Block tiles.** The block's warps form a `wm × wn` grid; warp `w` owns a warp tile of
//!    `MI × NI` atoms (32 × 32 elements by default), so the block covers a `BM × BN` block tile of
//!    C at a time and walks C's block tiles in row-major order. Any warp count works; on the host
//!    a block of one lane is one warp and walks every block tile alone.
//! 2. **Staging.** For each block tile, `K` streams through `KC`-deep chunks of op(A) (`BM × KC`)
//!    and op(B) (`KC × BN`), each copied by the whole block with 16-byte `cp.async` into one of
//!    `stages` slots (as many as the scratch holds, up to [`MAX_STAGES`]): while the warps multiply
//!    chunk `k`, chunks `k + 1 …` are in flight. An operand whose rows are not 16-byte aligned is
//!    copied element by element instead. A chunk is stored [`KMajor`] when the operand is
//!    contiguous along `k` in global memory and [`MnMajor`] otherwise, each padded so that the
//!    atoms' fragment loads are conflict-free.
//! 3. **Accumulators** live in registers for the whole `K` loop; each thread holds only its own
//!    lanes' registers, indexed by constants once the loops unroll (no local memory).
//! 4. **Epilogue.** Each accumulator element goes to C with `α` and `β` (C is not read when
//!    `β = 0`), two adjacent columns per 16-byte store where C is aligned. With `α = ±1`, C is
//!    read into the accumulators before the `K` loop instead, so its latency hides behind the
//!    copies. A `keep(row, col)` predicate masks the stores (SYRK writes one triangle), and block
//!    tiles it rules out entirely are skipped.

use core::marker::PhantomData;

use super::frag::{Atom, Fragment, Layout};
use super::lanes::{Lanes, Team};
use super::numeric::Element;
use super::smem::{self, KMajor, Major, MnMajor, Scratch, SharedTile, Word};
use super::unroll::{array, hot, unroll};
use taskweave_device::Block;

/// The most pipeline stages the engine uses.
pub const MAX_STAGES: u32 = 4;

/// A matrix in global memory: element `(i, j)` at `ptr[i * ld + j]`, or at `ptr[j * ld + i]` when
/// `trans` (then the stored matrix is `cols × rows`).
#[derive(Debug)]
pub struct Gmat<T> {
    /// Element `(0, 0)`.
    pub ptr: *mut T,
    /// Rows of the logical matrix.
    pub rows: u32,
    /// Columns of the logical matrix.
    pub cols: u32,
    /// Leading dimension of the stored matrix.
    pub ld: u32,
    /// The logical matrix is the stored one transposed.
    pub trans: bool,
}

impl<T> Clone for Gmat<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Gmat<T> {}

impl<T> Gmat<T> {
    /// The `rows × cols` block at `(i, j)` of the logical matrix.
    #[inline(always)]
    pub fn sub(&self, i: u32, j: u32, rows: u32, cols: u32) -> Self {
        let (r, c) = if self.trans { (j, i) } else { (i, j) };
        Self {
            ptr: self
                .ptr
                .wrapping_add(r as usize * self.ld as usize + c as usize),
            rows,
            cols,
            ..*self
        }
    }

    /// The transpose.
    #[inline(always)]
    pub fn t(&self) -> Self {
        Self {
            rows: self.cols,
            cols: self.rows,
            trans: !self.trans,
            ..*self
        }
    }

    /// Where element `(i, j)` is.
    #[inline(always)]
    pub fn at(&self, i: u32, j: u32) -> *mut T {
        let (r, c) = if self.trans { (j, i) } else { (i, j) };
        self.ptr
            .wrapping_add(r as usize * self.ld as usize + c as usize)
    }

    /// `true` when every stored row starts 16-byte aligned.
    #[inline(always)]
    fn aligned(&self) -> bool {
        (self.ptr as usize) % 16 == 0 && (self.ld as usize * size_of::<T>()) % 16 == 0
    }
}

/// The warp tile and staging shape of one atom, and the engine instantiated for it: see
/// [`WarpTile`].
pub trait Shape {
    /// The element type of the operands and the accumulators.
    type Elem: Element + Word;
    /// The atom.
    type Atom: Atom<Elem = Self::Elem, Acc = Self::Elem>;
    /// Depth of a staged chunk.
    const KC: u32;
    /// Rows of a warp tile.
    const WM: u32;
    /// Columns of a warp tile.
    const WN: u32;
    /// Padding of a [`KMajor`] chunk's rows, in elements.
    const PAD_K: u32;
    /// Padding of an [`MnMajor`] chunk's rows, in elements.
    const PAD_MN: u32;

    /// The block-tile geometry for `warps` warps.
    fn geometry(warps: u32) -> Geometry {
        Geometry::new(warps, Self::WM, Self::WN)
    }

    /// Shared-memory bytes one pipeline stage takes for `warps` warps (the larger of the two
    /// staging layouts).
    fn stage_bytes(warps: u32) -> u32;

    /// `C = α·op(A)·op(B) + β·C` for the block, staged through `scratch`, on the elements of C
    /// that `mask` selects (block and warp tiles with none are skipped). Every thread of the
    /// block calls it; it ends with a block barrier, so the result is visible to every thread.
    ///
    /// The engine is one function per shape, not inlined: every task that multiplies with one
    /// shape shares its code, which keeps a crate's PTX (and `ptxas`'s time) in proportion to the
    /// shapes it uses rather than to its task kinds.
    ///
    /// # Safety
    /// The operands' elements are valid memory, C overlaps neither A nor B, `K` is a multiple of
    /// [`KC`](Self::KC), `M` and `N` of 16, and `scratch` is the block's and unused by anything
    /// else until the call returns (it panics when it holds less than one stage,
    /// [`stage_bytes`](Self::stage_bytes)).
    unsafe fn multiply(block: &Block, scratch: Scratch, p: &Product<Self::Elem>, mask: Mask);

    /// [`multiply`](Self::multiply) with one more path in the epilogue: a warp tile wholly
    /// inside an aligned C and wholly kept by `mask` loads and stores its pairs with no
    /// per-element test. [`gemm`](fn@super::gemm) and [`syrk`](fn@super::syrk) call this one (every
    /// trailing update of the factorizations, and the SYRK of Cholesky's fused chain task); the
    /// panel updates inside TRSM, POTRF and GETRF keep `multiply`.
    ///
    /// It is a second function per shape on purpose (`bench/results/update-engine-h200/`). With
    /// the path in the one engine, a 64-tile GEMM task ran 12% faster on the H200 but the
    /// chain's fused SYRK + POTRF 3.3 µs slower. With GEMM alone on the second function the
    /// fused task was slower still, though its code had not changed: our reading (not traced)
    /// is that its SYRK now ran on code that the thousands of GEMM tasks no longer kept warm.
    /// With SYRK here too it is faster again. The panels keep the smaller engine.
    ///
    /// # Safety
    /// As for [`multiply`](Self::multiply).
    unsafe fn multiply_whole(block: &Block, scratch: Scratch, p: &Product<Self::Elem>, mask: Mask);
}

/// Which elements of C a product writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Every element.
    All,
    /// On and below the diagonal (block tiles wholly above it are skipped).
    Lower,
    /// On and above the diagonal.
    Upper,
}

impl Mask {
    /// Whether element `(r, c)` is written.
    #[inline(always)]
    fn keep(self, r: u32, c: u32) -> bool {
        match self {
            Mask::All => true,
            Mask::Lower => r >= c,
            Mask::Upper => r <= c,
        }
    }

    /// Whether every element of the `rows × cols` block at `(r0, c0)` is written.
    #[inline(always)]
    fn whole(self, r0: u32, c0: u32, rows: u32, cols: u32) -> bool {
        match self {
            Mask::All => true,
            Mask::Lower => r0 + 1 >= c0 + cols,
            Mask::Upper => r0 + rows <= c0 + 1,
        }
    }

    /// Whether the `rows × cols` block at `(r0, c0)` holds no written element.
    #[inline(always)]
    fn skip(self, r0: u32, c0: u32, rows: u32, cols: u32) -> bool {
        match self {
            Mask::All => false,
            Mask::Lower => r0 + rows <= c0,
            Mask::Upper => c0 + cols <= r0,
        }
    }
}

/// A shape: `MI × NI` atoms `A` per warp, chunks `KC` deep, staged rows padded by `PK` elements
/// ([`KMajor`]) or `PM` elements ([`MnMajor`]).
#[derive(Clone, Copy, Debug)]
pub struct WarpTile<
    A,
    const MI: usize,
    const NI: usize,
    const KC: u32,
    const PK: u32,
    const PM: u32,
>(PhantomData<A>);

impl<A: Atom, const MI: usize, const NI: usize, const KC: u32, const PK: u32, const PM: u32> Shape
    for WarpTile<A, MI, NI, KC, PK, PM>
where
    A::Elem: Element,
    A: Atom<Acc = <A as Atom>::Elem>,
{
    type Elem = A::Elem;
    type Atom = A;
    const KC: u32 = KC;
    const WM: u32 = MI as u32 * A::M;
    const WN: u32 = NI as u32 * A::N;
    const PAD_K: u32 = PK;
    const PAD_MN: u32 = PM;

    fn stage_bytes(warps: u32) -> u32 {
        let g = Self::geometry(warps);
        let bytes = A::Elem::BYTES;
        let most = |n| {
            chunk_layout(false, n, KC, PK, PM, bytes)
                .1
                .max(chunk_layout(true, n, KC, PK, PM, bytes).1)
        };
        most(g.bm) + most(g.bn)
    }

    #[inline(always)]
    unsafe fn multiply(block: &Block, scratch: Scratch, p: &Product<A::Elem>, mask: Mask) {
        // SAFETY: the caller's promises, passed on.
        unsafe { Self::staged::<false>(block, scratch, p, mask) }
    }

    #[inline(always)]
    unsafe fn multiply_whole(block: &Block, scratch: Scratch, p: &Product<A::Elem>, mask: Mask) {
        // SAFETY: the caller's promises, passed on.
        unsafe { Self::staged::<true>(block, scratch, p, mask) }
    }
}

impl<A, const MI: usize, const NI: usize, const KC: u32, const PK: u32, const PM: u32>
    WarpTile<A, MI, NI, KC, PK, PM>
where
    A::Elem: Element,
    A: Atom<Acc = <A as Atom>::Elem>,
{
    /// The engine for the staging layouts that suit `p`'s operands, with the whole-tile
    /// epilogue when `WHOLE` (see [`Shape::multiply_whole`]).
    ///
    /// # Safety
    /// As for [`Shape::multiply`].
    #[inline(always)]
    unsafe fn staged<const WHOLE: bool>(
        block: &Block,
        scratch: Scratch,
        p: &Product<A::Elem>,
        mask: Mask,
    ) {
        let (a, b) = (Source { m: p.a, b: false }, Source { m: p.b, b: true });
        // SAFETY: the caller's promises, passed on.
        unsafe {
            match (a.k_contiguous(), b.k_contiguous()) {
                (true, true) => {
                    shared::<A, MI, NI, KC, PK, PM, KMajor, KMajor, WHOLE>(block, scratch, p, mask)
                }
                (true, false) => {
                    shared::<A, MI, NI, KC, PK, PM, KMajor, MnMajor, WHOLE>(block, scratch, p, mask)
                }
                (false, true) => {
                    shared::<A, MI, NI, KC, PK, PM, MnMajor, KMajor, WHOLE>(block, scratch, p, mask)
                }
                (false, false) => shared::<A, MI, NI, KC, PK, PM, MnMajor, MnMajor, WHOLE>(
                    block, scratch, p, mask,
                ),
            }
        }
    }
}

/// The engine for one shape and one pair of staging layouts: see [`Shape::multiply`].
///
/// # Safety
/// As for [`Shape::multiply`].
#[inline(never)]
unsafe fn shared<
    A,
    const MI: usize,
    const NI: usize,
    const KC: u32,
    const PK: u32,
    const PM: u32,
    MA: Major,
    MB: Major,
    const WHOLE: bool,
>(
    block: &Block,
    scratch: Scratch,
    p: &Product<A::Elem>,
    mask: Mask,
) where
    A: Atom<Acc = <A as Atom>::Elem>,
    A::Elem: Element,
{
    let keep = move |r, c| mask.keep(r, c);
    let skip = move |r0, c0, rows, cols| mask.skip(r0, c0, rows, cols);
    let whole = move |r0, c0, rows, cols| mask.whole(r0, c0, rows, cols);
    let e = Engine::<A, MI, NI, KC, PK, PM> {
        p: *p,
        a: Source { m: p.a, b: false },
        b: Source { m: p.b, b: true },
        _marker: PhantomData,
    };
    // SAFETY: the caller's promises, passed on.
    unsafe { e.run::<MA, MB, WHOLE>(block, scratch, keep, skip, whole) }
}

/// The block-tile geometry: a `wm × wn` grid of warps.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    /// Warps down the block tile.
    pub wm: u32,
    /// Warps across.
    pub wn: u32,
    /// Rows of the block tile.
    pub bm: u32,
    /// Columns of the block tile.
    pub bn: u32,
}

impl Geometry {
    /// `wm × wn = warps` making the block tile as close to square as the count allows for warp
    /// tiles of `warp_rows × warp_cols`, the taller on a tie (`wm ≥ wn` for square warp tiles):
    /// each block tile streams its rows of A and its columns of B through all of `K`, so the
    /// squarer it is, the fewer times a tile reads each operand. Eight warps of `64 × 32` warp
    /// tiles make one `128 × 128` block tile (a 128-tile in one pass), not `256 × 64`.
    ///
    /// For square warp tiles that is the largest divisor of `warps` at most its square root,
    /// found by the loop the engine has always run: the shapes are constants, so the branch
    /// folds, and the default shapes' code (every factorization's) is what it was.
    #[inline(always)]
    pub fn new(warps: u32, warp_rows: u32, warp_cols: u32) -> Self {
        let mut wn = 1;
        if warp_rows == warp_cols {
            let mut d = 1;
            while d * d <= warps {
                if warps.is_multiple_of(d) {
                    wn = d;
                }
                d += 1;
            }
        } else {
            let gap = |wm: u32, wn: u32| (wm * warp_rows).abs_diff(wn * warp_cols);
            for n in 2..=warps {
                if warps.is_multiple_of(n) && gap(warps / n, n) < gap(warps / wn, wn) {
                    wn = n;
                }
            }
        }
        let wm = warps / wn;
        Self {
            wm,
            wn,
            bm: wm * warp_rows,
            bn: wn * warp_cols,
        }
    }
}

/// Elements per 16-byte chunk.
const fn per_chunk<T>() -> u32 {
    16 / size_of::<T>() as u32
}

/// The staged chunk of one operand, `mn` rows deep `kc`: its row stride in elements and its bytes.
const fn chunk_layout(
    k_major: bool,
    mn: u32,
    kc: u32,
    pad_k: u32,
    pad_mn: u32,
    bytes: u32,
) -> (u32, u32) {
    let (rows, stride) = if k_major {
        (mn, kc + pad_k)
    } else {
        (kc, mn + pad_mn)
    };
    (stride, (rows * stride * bytes).next_multiple_of(16))
}

/// What the engine multiplies.
#[derive(Debug)]
pub struct Product<T> {
    /// The output, `M × N` (a transposed output is written element by element).
    pub c: Gmat<T>,
    /// op(A), `M × K`.
    pub a: Gmat<T>,
    /// op(B), `K × N`.
    pub b: Gmat<T>,
    /// `α`.
    pub alpha: T,
    /// `β`.
    pub beta: T,
}

impl<T: Copy> Clone for Product<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Copy> Copy for Product<T> {}

/// One operand's source in `(mn, k)` coordinates: A as itself, B transposed.
struct Source<T> {
    m: Gmat<T>,
    /// `true` for B: `(mn, k)` is element `(k, mn)` of `m`.
    b: bool,
}

impl<T> Clone for Source<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Source<T> {}

impl<T: Word> Source<T> {
    /// `true` when consecutive `k` are adjacent in memory.
    #[inline(always)]
    fn k_contiguous(&self) -> bool {
        self.m.trans == self.b
    }

    #[inline(always)]
    fn at(&self, mn: u32, k: u32) -> *const T {
        if self.b {
            self.m.at(k, mn)
        } else {
            self.m.at(mn, k)
        }
    }

    /// Starts copying rows `mn0 .. mn0 + rows` (those below `valid`) at depth `k0 .. k0 + kc`
    /// into `tile`: the calling thread copies the 16-byte chunks `share` gives it.
    ///
    /// # Safety
    /// The source rows below `valid` and the tile's chunk are valid memory, and nothing reads the
    /// tile until a wait and a barrier.
    #[inline(always)]
    unsafe fn stage<M: Major>(
        &self,
        share: &Share,
        tile: &SharedTile<T, M>,
        (mn0, valid): (u32, u32),
        k0: u32,
        aligned: bool,
    ) {
        let e = per_chunk::<T>();
        share
            .first
            .zip(share.chunk, |l, c| (l, c))
            .for_each(|_, (first, chunk)| {
                let mut line = first;
                while line < share.lines {
                    let (mn, k) = if M::K_CONTIGUOUS {
                        (line, chunk)
                    } else {
                        (chunk, line)
                    };
                    line += share.step;
                    if mn >= valid {
                        continue;
                    }
                    if aligned {
                        // SAFETY: the caller's promise; the source and the tile chunk are 16-byte
                        // aligned (aligned rows, chunks at multiples of 16 bytes).
                        unsafe { tile.copy16(mn, k, self.at(mn0 + mn, k0 + k)) };
                        continue;
                    }
                    for x in 0..e {
                        let (m2, k2) = if M::K_CONTIGUOUS {
                            (mn, k + x)
                        } else {
                            (mn + x, k)
                        };
                        // SAFETY: the caller's promise.
                        unsafe { tile.set(m2, k2, *self.at(mn0 + m2, k0 + k2)) };
                    }
                }
            });
    }
}

/// The 16-byte chunks of a staged operand a thread copies, worked out once per operation: a
/// staged chunk is `lines` lines of `per_line` chunks, and thread `tid` copies chunk
/// `tid % per_line` of lines `tid / per_line`, `+ step`, … (`step = threads / per_line`), so the
/// copies need no division.
#[derive(Clone, Copy, Debug)]
struct Share {
    first: Lanes<u32>,
    chunk: Lanes<u32>,
    step: u32,
    lines: u32,
}

impl Share {
    /// The share of the calling thread's lanes for an operand of `rows` rows, staged `k_major`
    /// or not, `kc` deep, in elements of `e` per chunk.
    #[inline(always)]
    fn new(team: &Team, k_major: bool, rows: u32, kc: u32, e: u32) -> Self {
        let (per_line, lines) = if k_major {
            (kc / e, rows)
        } else {
            (rows / e, kc)
        };
        // Every shape's warp tiles are 32 wide, so a staged line of `rows / e` chunks divides
        // the block's threads, as does a `k` line of at most 8 chunks.
        assert!(
            team.threads().is_multiple_of(per_line),
            "tile engine: a staged line must divide the block's threads"
        );
        let first_thread = team.warp() * 32;
        Self {
            first: Lanes::from_fn(|lane| (first_thread + lane) / per_line),
            chunk: Lanes::from_fn(|lane| (first_thread + lane) % per_line * e),
            step: team.threads() / per_line,
            lines,
        }
    }
}

/// The engine for one shape and one problem.
struct Engine<
    A: Atom,
    const MI: usize,
    const NI: usize,
    const KC: u32,
    const PK: u32,
    const PM: u32,
> {
    p: Product<A::Elem>,
    a: Source<A::Elem>,
    b: Source<A::Elem>,
    _marker: PhantomData<A>,
}

impl<A, const MI: usize, const NI: usize, const KC: u32, const PK: u32, const PM: u32>
    Engine<A, MI, NI, KC, PK, PM>
where
    A: Atom<Acc = <A as Atom>::Elem>,
    A::Elem: Element,
{
    const WM: u32 = MI as u32 * A::M;
    const WN: u32 = NI as u32 * A::N;

    /// The whole product (see [`Shape::multiply`]; `WHOLE` for [`Shape::multiply_whole`]:
    /// warp tiles that `kept` says are wholly written take the untested epilogue).
    #[inline(always)]
    unsafe fn run<MA: Major, MB: Major, const WHOLE: bool>(
        &self,
        block: &Block,
        scratch: Scratch,
        keep: impl Fn(u32, u32) -> bool + Copy,
        skip: impl Fn(u32, u32, u32, u32) -> bool + Copy,
        kept: impl Fn(u32, u32, u32, u32) -> bool + Copy,
    ) {
        let p = &self.p;
        let team = Team::new(block);
        let g = Geometry::new(team.warps(), Self::WM, Self::WN);
        let (m, n, k) = (p.c.rows, p.c.cols, p.a.cols);
        let bytes = A::Elem::BYTES;
        let (a_stride, a_bytes) = chunk_layout(MA::K_CONTIGUOUS, g.bm, KC, PK, PM, bytes);
        let (b_stride, b_bytes) = chunk_layout(MB::K_CONTIGUOUS, g.bn, KC, PK, PM, bytes);
        let stage = a_bytes + b_bytes;
        let stages = (scratch.bytes() / stage).min(MAX_STAGES);
        if stages == 0 {
            too_little_scratch(stage, scratch.bytes());
        }
        // On the CPU backend a block has fewer lanes than the GPU's block has warps, and so
        // smaller stages: check the scratch against the GPU's, so that a run fails here where it
        // would fail there.
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let gpu_warps = taskweave_device::arch::host::gpu_threads() / 32;
            let gpu_stage = WarpTile::<A, MI, NI, KC, PK, PM>::stage_bytes(gpu_warps.max(1));
            if gpu_warps > team.warps() && scratch.bytes() < gpu_stage {
                too_little_scratch(gpu_stage, scratch.bytes());
            }
        }
        // SAFETY: each slot's tiles lie within `stages * stage <= scratch.bytes()`.
        let tiles = |slot: u32| unsafe {
            (
                scratch.tile::<A::Elem, MA>(slot * stage, a_stride),
                scratch.tile::<A::Elem, MB>(slot * stage + a_bytes, b_stride),
            )
        };
        let (a_aligned, b_aligned) = (self.a.m.aligned(), self.b.m.aligned());
        let pairs =
            !p.c.trans && p.c.aligned() && <<A::C as Fragment>::Layout as Layout>::COL_PAIRS;
        // α = ±1 (every factorization's update) is folded into C's load and the final store,
        // exactly; any other α scales A's fragments. Either way the epilogue reads nothing.
        let (pre, scale, post) = if p.alpha == A::Elem::ONE || p.alpha == -A::Elem::ONE {
            (p.alpha * p.beta, A::Elem::ONE, p.alpha)
        } else {
            (p.beta, p.alpha, A::Elem::ONE)
        };
        let chunks = k / KC;
        let (wi, wj) = (team.warp() / g.wn, team.warp() % g.wn);
        let e = per_chunk::<A::Elem>();
        let a_share = Share::new(&team, MA::K_CONTIGUOUS, g.bm, KC, e);
        let b_share = Share::new(&team, MB::K_CONTIGUOUS, g.bn, KC, e);

        let mut i0 = 0;
        while i0 < m {
            let mut j0 = 0;
            while j0 < n {
                if skip(i0, j0, g.bm, g.bn) {
                    j0 += g.bn;
                    continue;
                }
                let (rows, cols) = ((m - i0).min(g.bm), (n - j0).min(g.bn));
                let (r0, c0) = (i0 + wi * Self::WM, j0 + wj * Self::WN);
                // A warp whose tile holds no stored element copies its share but multiplies
                // nothing (the test is the same for every lane of the warp).
                let idle = wi * Self::WM >= rows
                    || wj * Self::WN >= cols
                    || skip(r0, c0, Self::WM, Self::WN);
                // Every element of the warp tile is in C and kept: no per-element tests.
                let whole = WHOLE
                    && pairs
                    && r0 + Self::WM <= m
                    && c0 + Self::WN <= n
                    && kept(r0, c0, Self::WM, Self::WN);
                // Slots fill and drain in order: chunk `c` goes to slot `c % stages`.
                let mut fill = 0;
                let mut issue = |chunk: u32| {
                    let (ta, tb) = tiles(fill);
                    fill = if fill + 1 == stages { 0 } else { fill + 1 };
                    // SAFETY: rows below `rows` and `cols` lie inside A and B (the caller's
                    // promise), and the slot is free: its last reader passed a barrier since.
                    unsafe {
                        self.a
                            .stage(&a_share, &ta, (i0, rows), chunk * KC, a_aligned);
                        self.b
                            .stage(&b_share, &tb, (j0, cols), chunk * KC, b_aligned);
                    }
                };
                for s in 0..stages - 1 {
                    if s < chunks {
                        issue(s);
                    }
                    smem::commit();
                }
                let mut acc = self.init(r0, c0, pre, keep, whole, pairs);
                let mut drain = 0;
                for chunk in 0..chunks {
                    if stages == 1 {
                        block.sync();
                        issue(chunk);
                        smem::commit();
                    }
                    // Chunk `chunk` is the oldest group but `stages - 2` younger ones.
                    match stages {
                        1 | 2 => smem::wait::<0>(),
                        3 => smem::wait::<1>(),
                        _ => smem::wait::<2>(),
                    }
                    block.sync();
                    if stages > 1 {
                        if chunk + stages - 1 < chunks {
                            issue(chunk + stages - 1);
                        }
                        smem::commit();
                    }
                    if !idle {
                        let (ta, tb) = tiles(drain);
                        // SAFETY: the warp tile lies in the block tile the slot holds.
                        unsafe {
                            Self::step(&mut acc, &ta, &tb, wi * Self::WM, wj * Self::WN, scale)
                        };
                    }
                    drain = if drain + 1 == stages { 0 } else { drain + 1 };
                }
                if !idle {
                    self.finish(&acc, r0, c0, post, keep, whole, pairs);
                }
                // No warp may refill a slot that another still reads.
                block.sync();
                j0 += g.bn;
            }
            i0 += g.bm;
        }
    }

    /// The accumulators before the `K` loop: `pre·C` (zero when `β = 0`: C is not read). With
    /// `whole`, every pair of the warp tile is inside C and kept, and is loaded untested.
    ///
    /// C goes into the accumulators as it is, two adjacent columns per load where `pairs`, and is
    /// scaled by `pre` only once every load is issued. Scaling each element as it arrived gave
    /// ptxas a load, a multiply and a select per element, which it issued a few at a time under
    /// the kernel's register cap: a `β = 1` batch of 128-tiles waited on C's latency several
    /// times per block tile and ran at 9.3 TFLOP/s against 16.1 with `β = 0`. Whether to read
    /// and how is chosen once for the warp tile, outside the unrolled arrays: chosen per
    /// fragment, it left the wide shape's 64 accumulators a lane partly in local memory.
    #[inline(always)]
    fn init(
        &self,
        r0: u32,
        c0: u32,
        pre: A::Elem,
        keep: impl Fn(u32, u32) -> bool + Copy,
        whole: bool,
        pairs: bool,
    ) -> [[A::C; NI]; MI] {
        let p = &self.p;
        let read = p.beta != A::Elem::ZERO;
        let inside = |row: u32, col: u32| row < p.c.rows && col < p.c.cols && keep(row, col);
        let one = |row: u32, col: u32| {
            if inside(row, col) {
                // SAFETY: inside C (the caller's promise).
                unsafe { *p.c.at(row, col) }
            } else {
                A::Elem::ZERO
            }
        };
        if !read {
            return array(hot!(|_| array(hot!(|_| A::C::from_fn(|_, _, _, _| {
                A::Elem::ZERO
            })))));
        }
        let origin = |i: usize, j: usize| (r0 + i as u32 * A::M, c0 + j as u32 * A::N);
        let mut acc: [[A::C; NI]; MI] = if whole {
            array(hot!(|i| {
                array(hot!(|j| {
                    let (ri, cj) = origin(i, j);
                    // SAFETY: inside C (`whole`) and aligned, as for `store_pair` in `finish`.
                    A::C::from_pairs(|r, c| unsafe { load_pair(p.c.at(ri + r, cj + c)) })
                }))
            }))
        } else if pairs {
            array(hot!(|i| {
                array(hot!(|j| {
                    let (ri, cj) = origin(i, j);
                    A::C::from_pairs(|r, c| {
                        let (row, col) = (ri + r, cj + c);
                        if inside(row, col) && inside(row, col + 1) {
                            // SAFETY: inside C and aligned, as for `store_pair` in `finish`.
                            unsafe { load_pair(p.c.at(row, col)) }
                        } else {
                            (one(row, col), one(row, col + 1))
                        }
                    })
                }))
            }))
        } else {
            array(hot!(|i| {
                array(hot!(|j| {
                    let (ri, cj) = origin(i, j);
                    A::C::from_fn(|_, _, r, c| one(ri + r, cj + c))
                }))
            }))
        };
        if pre != A::Elem::ONE {
            unroll::<MI>(hot!(|i| {
                unroll::<NI>(hot!(|j| acc[i][j].map(|_, _, v| pre * v)));
            }));
        }
        acc
    }

    /// One staged chunk into the warp's accumulators, A's fragments scaled by `scale` unless it
    /// is one (fixed-count loops over register arrays, which unroll to constant indices).
    ///
    /// # Safety
    /// The warp tile at `(wr, wc)` of the block tile lies in the staged tiles.
    #[inline(always)]
    unsafe fn step<MA: Major, MB: Major>(
        acc: &mut [[A::C; NI]; MI],
        ta: &SharedTile<A::Elem, MA>,
        tb: &SharedTile<A::Elem, MB>,
        wr: u32,
        wc: u32,
        scale: A::Elem,
    ) {
        let mut ks = 0;
        while ks < KC {
            // SAFETY: inside the staged tiles (the caller's promise).
            let mut fa: [A::A; MI] =
                array(hot!(|i| unsafe { A::load_a(ta, wr + i as u32 * A::M, ks) }));
            if scale != A::Elem::ONE {
                unroll::<MI>(hot!(|i| A::scale_a(&mut fa[i], scale)));
            }
            unroll::<NI>(hot!(|j| {
                // SAFETY: as above.
                let fb = unsafe { A::load_b(tb, wc + j as u32 * A::N, ks) };
                unroll::<MI>(hot!(|i| A::mma(&mut acc[i][j], &fa[i], &fb)));
            }));
            ks += A::K;
        }
    }

    /// Writes `post·acc` to C (untested pairs with `whole`, as in [`init`](Self::init)).
    #[allow(
        clippy::too_many_arguments,
        reason = "the warp tile's place and how to store it"
    )]
    #[inline(always)]
    fn finish(
        &self,
        acc: &[[A::C; NI]; MI],
        r0: u32,
        c0: u32,
        post: A::Elem,
        keep: impl Fn(u32, u32) -> bool,
        whole: bool,
        pairs: bool,
    ) {
        let p = &self.p;
        let value = |_row: u32, _col: u32, v: A::Elem| post * v;
        unroll::<MI>(hot!(|i| {
            unroll::<NI>(hot!(|j| {
                let frag = &acc[i][j];
                let (ri, cj) = (r0 + i as u32 * A::M, c0 + j as u32 * A::N);
                if whole {
                    frag.for_each_pair(|r, c, x, y| {
                        let (row, col) = (ri + r, cj + c);
                        let pair = [value(row, col, x), value(row, col + 1, y)];
                        // SAFETY: inside C (`whole`), aligned as below.
                        unsafe { store_pair(p.c.at(row, col), pair) };
                    });
                    return;
                }
                if pairs {
                    frag.for_each_pair(|r, c, x, y| {
                        let (row, col) = (ri + r, cj + c);
                        if row >= p.c.rows || col >= p.c.cols {
                            return;
                        }
                        match (keep(row, col), keep(row, col + 1)) {
                            (true, true) => {
                                let pair = [value(row, col, x), value(row, col + 1, y)];
                                // SAFETY: inside C (columns come in pairs of an even first, and
                                // `N` is even), aligned: an even column of an aligned operand.
                                unsafe { store_pair(p.c.at(row, col), pair) };
                            }
                            (first, second) => {
                                if first {
                                    // SAFETY: inside C.
                                    unsafe { *p.c.at(row, col) = value(row, col, x) };
                                }
                                if second {
                                    // SAFETY: inside C.
                                    unsafe { *p.c.at(row, col + 1) = value(row, col + 1, y) };
                                }
                            }
                        }
                    });
                    return;
                }
                frag.for_each(|_, _, r, c, v| {
                    let (row, col) = (ri + r, cj + c);
                    if row < p.c.rows && col < p.c.cols && keep(row, col) {
                        // SAFETY: inside C.
                        unsafe { *p.c.at(row, col) = value(row, col, v) };
                    }
                });
            }));
        }));
    }
}

/// Two f64 as one 16-byte access.
#[repr(C, align(16))]
struct Pair16<T>([T; 2]);
/// Two f32 as one 8-byte access.
#[repr(C, align(8))]
struct Pair8<T>([T; 2]);

/// Loads two adjacent elements in one 16-byte (f64) or 8-byte (f32) load.
///
/// # Safety
/// `at` and the next element are valid for reads and `at` is aligned to twice the element size.
#[inline(always)]
pub(crate) unsafe fn load_pair<T: Copy>(at: *const T) -> (T, T) {
    // SAFETY: the caller's promise; the alignment of the wrapper matches the promise.
    let [x, y] = unsafe {
        if size_of::<T>() == 8 {
            at.cast::<Pair16<T>>().read().0
        } else {
            at.cast::<Pair8<T>>().read().0
        }
    };
    (x, y)
}

/// Stores two adjacent elements in one 16-byte (f64) or 8-byte (f32) store.
///
/// # Safety
/// `at` and the next element are valid for writes and `at` is aligned to twice the element size.
#[inline(always)]
pub(crate) unsafe fn store_pair<T: Copy>(at: *mut T, pair: [T; 2]) {
    // SAFETY: the caller's promise; the alignment of the wrapper matches the promise.
    unsafe {
        if size_of::<T>() == 8 {
            at.cast::<Pair16<T>>().write(Pair16(pair));
        } else {
            at.cast::<Pair8<T>>().write(Pair8(pair));
        }
    }
}

#[cold]
#[inline(never)]
pub(crate) fn too_little_scratch(stage: u32, have: u32) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (stage, have);
        panic!(
            "tile op: too little block scratch for one pipeline stage; raise the region's `shared_bytes`"
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::panic!(
        "tile op: one pipeline stage needs {stage} bytes of block scratch, the block has {have} left; raise the region's `shared_bytes`"
    );
}
