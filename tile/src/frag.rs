//! The fragment layer: warp fragments whose layout is part of their type, and the atoms that
//! multiply them.
//!
//! 1. A [`Layout`] maps `(lane, register)` to the `(row, col)` element it holds. Operand layouts
//!    use `(mn, k)` coordinates: A is `M × K` and B is given as its transpose, `N × K`, as CuTe
//!    does, so one loader serves both. Accumulator layouts use `(m, n)`.
//! 2. A [`Frag<T, L, N>`] is `N` registers per lane laid out by `L`. It loads itself from a
//!    [`SharedTile`] one element per register (or one 16-byte load per register pair, for a
//!    layout that pairs adjacent columns of a tile contiguous along them), and accumulators load
//!    and store through a closure per element.
//! 3. An [`Atom`] is the warp-level multiply the tile operations are built from: one or two
//!    `mma.sync` instructions (see [`mma`](super::mma)) over a `K` of 8 or 16. Operand registers
//!    are in the order PTX gives the instruction's, so they feed it with no move: the tensor core
//!    takes each operand as consecutive registers, and a register pair loaded at once (two `k`
//!    of one row) would sit at two places of that sequence, costing moves for every `mma`
//!    (measured in the SASS: eight moves per f64 `m16n8k8`). For example [`F64x8`] runs `m8n8k4`
//!    twice, over `k = 0..4` and `k = 4..8`.
//!
//! | atom | instructions | M × N × K | A, B, C registers per lane |
//! | --- | --- | --- | --- |
//! | [`F64x8`] | 2 × f64 `m8n8k4` | 8 × 8 × 8 | 2, 2, 2 |
//! | [`F64M16K4`] | 2 × f64 `m16n8k4` | 16 × 8 × 8 | 4, 2, 4 |
//! | [`F64M16K8`] | f64 `m16n8k8` | 16 × 8 × 8 | 4, 2, 4 |
//! | [`F64M16K16`] | f64 `m16n8k16` | 16 × 8 × 16 | 8, 4, 4 |
//! | [`Tf32M16K8`] | tf32 `m16n8k8` | 16 × 8 × 8 | 4, 2, 4 |
//! | [`F16M16K16`], [`Bf16M16K16`] | f16 / bf16 `m16n8k16` | 16 × 8 × 16 | 4, 2, 4 (two halves each) |
//! | [`SimtF32`] | 32 FFMA per lane per `k` | 32 × 32 × 1 | 8, 4, 32 |

use core::marker::PhantomData;

use super::lanes::Lanes;
use super::mma;
use super::numeric::round_tf32;
use super::smem::{Major, SharedTile, Word};
use super::unroll::{array, unroll};

/// Where each register of a warp fragment sits in its matrix.
pub trait Layout: Copy {
    /// Rows of the matrix the fragment covers.
    const ROWS: u32;
    /// Columns of the matrix the fragment covers.
    const COLS: u32;
    /// Registers `2i` and `2i + 1` of every lane hold `(r, c)` and `(r, c + 1)` with `c` even.
    const COL_PAIRS: bool;
    /// The `(row, col)` that register `reg` of lane `lane` holds.
    fn coord(lane: u32, reg: usize) -> (u32, u32);
}

/// `N` registers per lane of a warp fragment laid out by `L`.
#[derive(Clone, Copy, Debug)]
pub struct Frag<T, L, const N: usize> {
    /// The registers, as each lane holds them.
    pub regs: [Lanes<T>; N],
    layout: PhantomData<L>,
}

/// What tile code needs of any fragment.
pub trait Fragment: Copy {
    /// The register type.
    type Elem: Copy;
    /// The layout.
    type Layout: Layout;
    /// Registers per lane.
    const REGS: usize;
    /// Register `reg` of lane `lane` is `f(lane, reg, row, col)`, with `(row, col)` from the layout.
    fn from_fn(f: impl FnMut(u32, usize, u32, u32) -> Self::Elem) -> Self;
    /// Registers `2i` and `2i + 1` of every lane are the pair `f(row, col)`, `(row, col)` being
    /// register `2i`'s place (with [`Layout::COL_PAIRS`], the second sits at `(row, col + 1)`):
    /// one call per pair, so that a pair can come from one load.
    fn from_pairs(f: impl FnMut(u32, u32) -> (Self::Elem, Self::Elem)) -> Self;
    /// Calls `f(lane, reg, row, col, value)` for every register the calling thread holds.
    fn for_each(&self, f: impl FnMut(u32, usize, u32, u32, Self::Elem));
    /// Each register replaced by `f(row, col, value)`.
    fn map(&mut self, f: impl FnMut(u32, u32, Self::Elem) -> Self::Elem);
    /// Calls `f(row, col, first, second)` for registers `2i` and `2i + 1` of every lane the
    /// calling thread holds, `(row, col)` being the first's place (with
    /// [`Layout::COL_PAIRS`], the second sits at `(row, col + 1)`).
    fn for_each_pair(&self, f: impl FnMut(u32, u32, Self::Elem, Self::Elem));
}

impl<T: Copy, L: Layout, const N: usize> Fragment for Frag<T, L, N> {
    type Elem = T;
    type Layout = L;
    const REGS: usize = N;

    #[inline(always)]
    fn from_fn(mut f: impl FnMut(u32, usize, u32, u32) -> T) -> Self {
        let regs = array(|reg| {
            Lanes::from_fn(|lane| {
                let (r, c) = L::coord(lane, reg);
                f(lane, reg, r, c)
            })
        });
        Self {
            regs,
            layout: PhantomData,
        }
    }

    #[inline(always)]
    fn from_pairs(mut f: impl FnMut(u32, u32) -> (T, T)) -> Self {
        // The second of each pair, kept for the odd register that follows (the unrolled loop
        // makes `reg` a constant, so the `None` arm below is never taken for an odd one).
        let mut second: Option<Lanes<T>> = None;
        let regs = array(|reg| match second.take() {
            Some(odd) if reg % 2 == 1 => odd,
            _ => {
                let both = Lanes::from_fn(|lane| {
                    let (r, c) = L::coord(lane, reg);
                    f(r, c)
                });
                second = Some(both.map(|(_, y)| y));
                both.map(|(x, _)| x)
            }
        });
        Self {
            regs,
            layout: PhantomData,
        }
    }

    #[inline(always)]
    fn for_each(&self, mut f: impl FnMut(u32, usize, u32, u32, T)) {
        unroll::<N>(|reg| {
            self.regs[reg].for_each(|lane, v| {
                let (r, c) = L::coord(lane, reg);
                f(lane, reg, r, c, v);
            });
        });
    }

    #[inline(always)]
    fn for_each_pair(&self, mut f: impl FnMut(u32, u32, T, T)) {
        unroll::<N>(|reg| {
            if reg % 2 == 1 {
                return;
            }
            self.regs[reg]
                .zip(self.regs[reg + 1], |x, y| (x, y))
                .for_each(|lane, (x, y)| {
                    let (r, c) = L::coord(lane, reg);
                    f(r, c, x, y);
                });
        });
    }

    #[inline(always)]
    fn map(&mut self, mut f: impl FnMut(u32, u32, T) -> T) {
        unroll::<N>(|reg| {
            self.regs[reg] = self.regs[reg].map_lane(|lane, v| {
                let (r, c) = L::coord(lane, reg);
                f(r, c, v)
            });
        });
    }
}

impl<T: Copy + Default, L: Layout, const N: usize> Frag<T, L, N> {
    /// Every register `value`.
    #[inline(always)]
    pub fn splat(value: T) -> Self {
        Self {
            regs: [Lanes::splat(value); N],
            layout: PhantomData,
        }
    }

    /// The fragment at `(row0, col0)` of `tile`, in `(mn, k)` coordinates, converted by `conv`.
    /// Register pairs come in one load where the tile is contiguous along `k` and the layout
    /// pairs adjacent columns.
    ///
    /// # Safety
    /// Every element the layout names, offset by `(row0, col0)`, lies inside `tile`, and nothing
    /// writes those elements concurrently.
    #[inline(always)]
    pub unsafe fn load<S: Word, M: Major>(
        tile: &SharedTile<S, M>,
        row0: u32,
        col0: u32,
        conv: impl Fn(S) -> T,
    ) -> Self {
        let mut regs = [Lanes::splat(T::default()); N];
        if L::COL_PAIRS && M::K_CONTIGUOUS {
            unroll::<N>(|p| {
                if p % 2 == 1 {
                    return;
                }
                let pair = Lanes::from_fn(|lane| {
                    let (r, c) = L::coord(lane, p);
                    // SAFETY: inside the tile (the caller's promise); `c` is even and the tile's
                    // rows are 16-byte aligned, so the pair is aligned.
                    unsafe { tile.get2(row0 + r, col0 + c) }
                });
                regs[p] = pair.map(|(x, _)| conv(x));
                regs[p + 1] = pair.map(|(_, y)| conv(y));
            });
        } else {
            unroll::<N>(|reg| {
                regs[reg] = Lanes::from_fn(|lane| {
                    let (r, c) = L::coord(lane, reg);
                    // SAFETY: inside the tile (the caller's promise).
                    conv(unsafe { tile.get(row0 + r, col0 + c) })
                });
            });
        }
        Self {
            regs,
            layout: PhantomData,
        }
    }
}

/// A warp-level multiply-accumulate: `C += A·Bᵀ` over one `M × N × K` block, with A given as
/// `M × K` and B as `N × K`, both in `(mn, k)` coordinates.
pub trait Atom {
    /// The element type operands are stored as in memory.
    type Elem: Word;
    /// The accumulator element type.
    type Acc: Copy + Default;
    /// Rows of A and C.
    const M: u32;
    /// Rows of B, columns of C.
    const N: u32;
    /// The shared `k` extent.
    const K: u32;
    /// A's fragment.
    type A: Fragment;
    /// B's fragment.
    type B: Fragment;
    /// The accumulator fragment.
    type C: Fragment<Elem = Self::Acc>;

    /// A's fragment at `(row0, k0)` of `tile`.
    ///
    /// # Safety
    /// As for [`Frag::load`].
    unsafe fn load_a<M: Major>(tile: &SharedTile<Self::Elem, M>, row0: u32, k0: u32) -> Self::A;
    /// B's fragment at `(col0, k0)` of `tile` (B as `N × K`).
    ///
    /// # Safety
    /// As for [`Frag::load`].
    unsafe fn load_b<M: Major>(tile: &SharedTile<Self::Elem, M>, col0: u32, k0: u32) -> Self::B;
    /// `c += a·bᵀ`, for the whole warp.
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B);
    /// `a := s·a`, element by element (as the fragment's registers hold them).
    fn scale_a(a: &mut Self::A, s: Self::Acc);
}

/// Layouts: each a zero-sized type with its map, `g = lane / 4`, `t = lane % 4`.
macro_rules! layout {
    ($(#[$doc:meta])* $name:ident, $rows:expr, $cols:expr, $pairs:expr, |$lane:ident, $reg:ident| $body:expr) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug)]
        pub struct $name;
        impl Layout for $name {
            const ROWS: u32 = $rows;
            const COLS: u32 = $cols;
            const COL_PAIRS: bool = $pairs;
            #[inline(always)]
            fn coord($lane: u32, $reg: usize) -> (u32, u32) {
                let $reg = $reg as u32;
                $body
            }
        }
    };
}

layout!(
    /// 8 × 8 operand (two `k = 4` steps), register `s` of lane `(g, t)` at `(g, t + 4s)`.
    Op8x8,
    8,
    8,
    false,
    |lane, reg| (lane / 4, lane % 4 + 4 * reg)
);
layout!(
    /// 16 × 8 operand, register `i` at `(g + 8(i % 2), t + 4(i / 2))`: PTX's order.
    Op16x8,
    16,
    8,
    false,
    |lane, reg| (lane / 4 + 8 * (reg % 2), lane % 4 + 4 * (reg / 2))
);
layout!(
    /// 16 × 16 operand, register `i` at `(g + 8(i % 2), t + 4(i / 2))`: PTX's order.
    Op16x16,
    16,
    16,
    false,
    |lane, reg| (lane / 4 + 8 * (reg % 2), lane % 4 + 4 * (reg / 2))
);
layout!(
    /// 8 × 16 operand, register `i` at `(g, t + 4i)`: PTX's order.
    Op8x16,
    8,
    16,
    false,
    |lane, reg| (lane / 4, lane % 4 + 4 * reg)
);
layout!(
    /// 8 × 8 accumulator, register `i` at `(g, 2t + i)`.
    Acc8x8,
    8,
    8,
    true,
    |lane, reg| (lane / 4, 2 * (lane % 4) + reg)
);
layout!(
    /// 16 × 8 accumulator, register `i` at `(g + 8(i / 2), 2t + i % 2)`.
    Acc16x8,
    16,
    8,
    true,
    |lane, reg| (lane / 4 + 8 * (reg / 2), 2 * (lane % 4) + reg % 2)
);
layout!(
    /// Half-precision 16 × 16 operand in words of two: register `2h + w` holds `(g + 8h, 2t + 8w)`
    /// and the next column (the PTX layout, unpermuted).
    Half16x16,
    16,
    16,
    false,
    |lane, reg| (lane / 4 + 8 * (reg % 2), 2 * (lane % 4) + 8 * (reg / 2))
);
layout!(
    /// Half-precision 8 × 16 operand in words of two: register `w` holds `(g, 2t + 8w)` and the
    /// next column.
    Half8x16,
    8,
    16,
    false,
    |lane, reg| (lane / 4, 2 * (lane % 4) + 8 * reg)
);
layout!(
    /// SIMT 32 × 1 operand: lane `l` holds rows `l / 8 + 4i`, `i < 8`.
    SimtA,
    32,
    1,
    false,
    |lane, reg| (lane / 8 + 4 * reg, 0)
);
layout!(
    /// SIMT 32 × 1 operand: lane `l` holds rows `l % 8 + 8j`, `j < 4`.
    SimtB,
    32,
    1,
    false,
    |lane, reg| (lane % 8 + 8 * reg, 0)
);
layout!(
    /// SIMT 32 × 32 accumulator: register `4i + j` at `(l / 8 + 4i, l % 8 + 8j)`.
    SimtC,
    32,
    32,
    false,
    |lane, reg| (lane / 8 + 4 * (reg / 4), lane % 8 + 8 * (reg % 4))
);

/// Two f64 `m8n8k4` over `k = 8`.
#[derive(Clone, Copy, Debug)]
pub struct F64x8;
/// Two f64 `m16n8k4` over `k = 8` (sm_90).
#[derive(Clone, Copy, Debug)]
pub struct F64M16K4;
/// One f64 `m16n8k8` (sm_90).
#[derive(Clone, Copy, Debug)]
pub struct F64M16K8;
/// One f64 `m16n8k16` (sm_90).
#[derive(Clone, Copy, Debug)]
pub struct F64M16K16;
/// One tf32 `m16n8k8`, f32 operands rounded to TF32 as they are loaded.
#[derive(Clone, Copy, Debug)]
pub struct Tf32M16K8;
/// One f16 `m16n8k16` with f32 accumulators.
#[derive(Clone, Copy, Debug)]
pub struct F16M16K16;
/// One bf16 `m16n8k16` with f32 accumulators.
#[derive(Clone, Copy, Debug)]
pub struct Bf16M16K16;
/// Exact f32 on the FMA pipes: each lane accumulates an 8 × 4 block of a 32 × 32 tile, one `k`
/// at a time (A and B loads broadcast within lane groups).
#[derive(Clone, Copy, Debug)]
pub struct SimtF32;

#[inline(always)]
fn same<T>(v: T) -> T {
    v
}

impl Atom for F64x8 {
    type Elem = f64;
    type Acc = f64;
    const M: u32 = 8;
    const N: u32 = 8;
    const K: u32 = 8;
    type A = Frag<f64, Op8x8, 2>;
    type B = Frag<f64, Op8x8, 2>;
    type C = Frag<f64, Acc8x8, 2>;
    #[inline(always)]
    unsafe fn load_a<M: Major>(tile: &SharedTile<f64, M>, row0: u32, k0: u32) -> Self::A {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, row0, k0, same) }
    }
    #[inline(always)]
    unsafe fn load_b<M: Major>(tile: &SharedTile<f64, M>, col0: u32, k0: u32) -> Self::B {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, col0, k0, same) }
    }
    #[inline(always)]
    fn scale_a(a: &mut Self::A, s: f64) {
        a.map(|_, _, v| v * s);
    }
    #[inline(always)]
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
        mma::m8n8k4_f64(&mut c.regs, &[a.regs[0]], &[b.regs[0]]);
        mma::m8n8k4_f64(&mut c.regs, &[a.regs[1]], &[b.regs[1]]);
    }
}

impl Atom for F64M16K4 {
    type Elem = f64;
    type Acc = f64;
    const M: u32 = 16;
    const N: u32 = 8;
    const K: u32 = 8;
    type A = Frag<f64, Op16x8, 4>;
    type B = Frag<f64, Op8x8, 2>;
    type C = Frag<f64, Acc16x8, 4>;
    #[inline(always)]
    unsafe fn load_a<M: Major>(tile: &SharedTile<f64, M>, row0: u32, k0: u32) -> Self::A {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, row0, k0, same) }
    }
    #[inline(always)]
    unsafe fn load_b<M: Major>(tile: &SharedTile<f64, M>, col0: u32, k0: u32) -> Self::B {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, col0, k0, same) }
    }
    #[inline(always)]
    fn scale_a(a: &mut Self::A, s: f64) {
        a.map(|_, _, v| v * s);
    }
    #[inline(always)]
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
        // Step `s` takes k = t + 4s: registers `2s` (rows g) and `2s + 1` (rows g + 8) of A.
        mma::m16n8k4_f64(&mut c.regs, &[a.regs[0], a.regs[1]], &[b.regs[0]]);
        mma::m16n8k4_f64(&mut c.regs, &[a.regs[2], a.regs[3]], &[b.regs[1]]);
    }
}

impl Atom for F64M16K8 {
    type Elem = f64;
    type Acc = f64;
    const M: u32 = 16;
    const N: u32 = 8;
    const K: u32 = 8;
    type A = Frag<f64, Op16x8, 4>;
    type B = Frag<f64, Op8x8, 2>;
    type C = Frag<f64, Acc16x8, 4>;
    #[inline(always)]
    unsafe fn load_a<M: Major>(tile: &SharedTile<f64, M>, row0: u32, k0: u32) -> Self::A {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, row0, k0, same) }
    }
    #[inline(always)]
    unsafe fn load_b<M: Major>(tile: &SharedTile<f64, M>, col0: u32, k0: u32) -> Self::B {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, col0, k0, same) }
    }
    #[inline(always)]
    fn scale_a(a: &mut Self::A, s: f64) {
        a.map(|_, _, v| v * s);
    }
    #[inline(always)]
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
        mma::m16n8k8_f64(&mut c.regs, &a.regs, &b.regs);
    }
}

impl Atom for F64M16K16 {
    type Elem = f64;
    type Acc = f64;
    const M: u32 = 16;
    const N: u32 = 8;
    const K: u32 = 16;
    type A = Frag<f64, Op16x16, 8>;
    type B = Frag<f64, Op8x16, 4>;
    type C = Frag<f64, Acc16x8, 4>;
    #[inline(always)]
    unsafe fn load_a<M: Major>(tile: &SharedTile<f64, M>, row0: u32, k0: u32) -> Self::A {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, row0, k0, same) }
    }
    #[inline(always)]
    unsafe fn load_b<M: Major>(tile: &SharedTile<f64, M>, col0: u32, k0: u32) -> Self::B {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, col0, k0, same) }
    }
    #[inline(always)]
    fn scale_a(a: &mut Self::A, s: f64) {
        a.map(|_, _, v| v * s);
    }
    #[inline(always)]
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
        mma::m16n8k16_f64(&mut c.regs, &a.regs, &b.regs);
    }
}

impl Atom for Tf32M16K8 {
    type Elem = f32;
    type Acc = f32;
    const M: u32 = 16;
    const N: u32 = 8;
    const K: u32 = 8;
    type A = Frag<f32, Op16x8, 4>;
    type B = Frag<f32, Op8x8, 2>;
    type C = Frag<f32, Acc16x8, 4>;
    #[inline(always)]
    unsafe fn load_a<M: Major>(tile: &SharedTile<f32, M>, row0: u32, k0: u32) -> Self::A {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, row0, k0, round_tf32) }
    }
    #[inline(always)]
    unsafe fn load_b<M: Major>(tile: &SharedTile<f32, M>, col0: u32, k0: u32) -> Self::B {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, col0, k0, round_tf32) }
    }
    #[inline(always)]
    fn scale_a(a: &mut Self::A, s: f32) {
        a.map(|_, _, v| v * s);
    }
    #[inline(always)]
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
        mma::m16n8k8_tf32(&mut c.regs, &a.regs, &b.regs);
    }
}

macro_rules! half_atom {
    ($name:ident, $instr:path) => {
        impl Atom for $name {
            type Elem = u32;
            type Acc = f32;
            const M: u32 = 16;
            const N: u32 = 8;
            const K: u32 = 16;
            type A = Frag<u32, Half16x16, 4>;
            type B = Frag<u32, Half8x16, 2>;
            type C = Frag<f32, Acc16x8, 4>;
            /// A word tile: element `(mn, w)` holds columns `2w` and `2w + 1`; `k0` counts halves.
            #[inline(always)]
            unsafe fn load_a<M: Major>(tile: &SharedTile<u32, M>, row0: u32, k0: u32) -> Self::A {
                // SAFETY: the caller's promise; layout columns are even, so halve them to words.
                unsafe { load_words(tile, row0, k0) }
            }
            #[inline(always)]
            unsafe fn load_b<M: Major>(tile: &SharedTile<u32, M>, col0: u32, k0: u32) -> Self::B {
                // SAFETY: as above.
                unsafe { load_words(tile, col0, k0) }
            }
            /// Half-precision fragments hold packed pairs; tile operations do not scale them.
            fn scale_a(_: &mut Self::A, s: f32) {
                assert!(s == 1.0, "half-precision atoms take α = 1");
            }
            #[inline(always)]
            fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
                $instr(&mut c.regs, &a.regs, &b.regs);
            }
        }
    };
}

/// A half-precision fragment from a tile of packed pairs (`u32` words along `k`).
///
/// # Safety
/// As for [`Frag::load`], in words.
#[inline(always)]
unsafe fn load_words<L: Layout, M: Major, const N: usize>(
    tile: &SharedTile<u32, M>,
    row0: u32,
    k0: u32,
) -> Frag<u32, L, N> {
    Frag::from_fn(|_, _, r, c| {
        // SAFETY: the caller's promise.
        unsafe { tile.get(row0 + r, (k0 + c) / 2) }
    })
}

half_atom!(F16M16K16, mma::m16n8k16_f16);
half_atom!(Bf16M16K16, mma::m16n8k16_bf16);

impl Atom for SimtF32 {
    type Elem = f32;
    type Acc = f32;
    const M: u32 = 32;
    const N: u32 = 32;
    const K: u32 = 1;
    type A = Frag<f32, SimtA, 8>;
    type B = Frag<f32, SimtB, 4>;
    type C = Frag<f32, SimtC, 32>;
    #[inline(always)]
    unsafe fn load_a<M: Major>(tile: &SharedTile<f32, M>, row0: u32, k0: u32) -> Self::A {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, row0, k0, same) }
    }
    #[inline(always)]
    unsafe fn load_b<M: Major>(tile: &SharedTile<f32, M>, col0: u32, k0: u32) -> Self::B {
        // SAFETY: the caller's promise.
        unsafe { Frag::load(tile, col0, k0, same) }
    }
    #[inline(always)]
    fn scale_a(a: &mut Self::A, s: f32) {
        a.map(|_, _, v| v * s);
    }
    #[inline(always)]
    fn mma(c: &mut Self::C, a: &Self::A, b: &Self::B) {
        unroll::<32>(|r| {
            let (i, j) = (r / 4, r % 4);
            c.regs[r] = c.regs[r].zip(a.regs[i].zip(b.regs[j], |x, y| (x, y)), |s, (x, y)| {
                fma_f32(x, y, s)
            });
        });
    }
}

/// `x·y + s` with one rounding (`fma.rn.f32` on the GPU).
#[inline(always)]
pub(crate) fn fma_f32(x: f32, y: f32, s: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: f32;
        // SAFETY: a register-to-register instruction.
        unsafe {
            core::arch::asm!("fma.rn.f32 {0}, {1}, {2}, {3};", out(reg32) out, in(reg32) x,
                in(reg32) y, in(reg32) s, options(pure, nomem, nostack, preserves_flags))
        };
        out
    }
    #[cfg(not(target_arch = "nvptx64"))]
    x.mul_add(y, s)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::numeric::{Bf16, F16};
    use crate::smem::{KMajor, Major, MnMajor, SharedTile, Word};
    use std::vec::Vec;

    fn values(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                ((s >> 11) % 17) as f64 - 8.0
            })
            .collect()
    }

    fn check_layout<L: Layout>(regs: usize) {
        let mut seen = std::vec![0u32; (L::ROWS * L::COLS) as usize];
        for lane in 0..32 {
            for reg in 0..regs {
                let (r, c) = L::coord(lane, reg);
                assert!(r < L::ROWS && c < L::COLS);
                seen[(r * L::COLS + c) as usize] += 1;
                if L::COL_PAIRS && reg % 2 == 1 {
                    assert_eq!(L::coord(lane, reg - 1), (r, c - 1));
                    assert_eq!(c % 2, 1);
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "not a bijection");
    }

    #[test]
    fn layouts_cover_their_matrices_once() {
        check_layout::<Op8x8>(2);
        check_layout::<Op16x8>(4);
        check_layout::<Op16x16>(8);
        check_layout::<Op8x16>(4);
        check_layout::<Acc8x8>(2);
        check_layout::<Acc16x8>(4);
        check_layout::<SimtC>(32);
    }

    /// `from_pairs` puts each pair where `from_fn` puts its two elements, one call per pair.
    fn check_pairs<L: Layout, const N: usize>() {
        let value = |r: u32, c: u32| f64::from(r * 100 + c);
        let mut calls = 0;
        let paired = Frag::<f64, L, N>::from_pairs(|r, c| {
            calls += 1;
            (value(r, c), value(r, c + 1))
        });
        let single = Frag::<f64, L, N>::from_fn(|_, _, r, c| value(r, c));
        assert_eq!(calls, 32 * N / 2);
        let mut got = Vec::new();
        paired.for_each(|lane, reg, r, c, v| got.push((lane, reg, r, c, v)));
        let mut want = Vec::new();
        single.for_each(|lane, reg, r, c, v| want.push((lane, reg, r, c, v)));
        assert_eq!(got, want);
    }

    #[test]
    fn pairs_fill_the_registers_the_layout_pairs() {
        check_pairs::<Acc8x8, 2>();
        check_pairs::<Acc16x8, 4>();
    }

    /// Stages `x` (`rows × k`, row-major) in a shared tile of major `M` over `buf`.
    fn stage<T: Word, M: Major>(buf: &mut [T], x: &[T], rows: usize, k: usize) -> SharedTile<T, M> {
        let stride = if M::K_CONTIGUOUS { k + 4 } else { rows + 2 };
        let tile = SharedTile::<T, M>::host(buf.as_mut_ptr(), stride as u32);
        for (e, v) in x.iter().enumerate() {
            // SAFETY: `buf` holds `64 * 64` elements, more than any staged tile.
            unsafe { tile.set((e / k) as u32, (e % k) as u32, *v) };
        }
        tile
    }

    /// Runs `A::mma` on integer-valued `a` (m×k) and `b` (n×k), staged in shared tiles of both
    /// majors, and compares with the exact product.
    fn check_atom<A: Atom>(to_elem: impl Fn(f64) -> A::Elem, to_f64: impl Fn(A::Acc) -> f64) {
        let (m, n, k) = (A::M as usize, A::N as usize, A::K as usize);
        let (a, b) = (values(11, m * k), values(12, n * k));
        let (ea, eb): (Vec<A::Elem>, Vec<A::Elem>) = (
            a.iter().map(|&v| to_elem(v)).collect(),
            b.iter().map(|&v| to_elem(v)).collect(),
        );
        let (mut bufa, mut bufb) = (
            std::vec![A::Elem::default(); 64 * 64],
            std::vec![A::Elem::default(); 64 * 64],
        );
        let results = [
            run::<A, KMajor>(&stage(&mut bufa, &ea, m, k), &stage(&mut bufb, &eb, n, k)),
            run::<A, MnMajor>(&stage(&mut bufa, &ea, m, k), &stage(&mut bufb, &eb, n, k)),
        ];
        for c in results {
            c.for_each(|_, _, r, col, v| {
                let want: f64 = (0..k)
                    .map(|q| a[r as usize * k + q] * b[col as usize * k + q])
                    .sum();
                assert_eq!(to_f64(v), want, "({r}, {col})");
            });
        }
    }

    fn run<A: Atom, M: Major>(ta: &SharedTile<A::Elem, M>, tb: &SharedTile<A::Elem, M>) -> A::C {
        // SAFETY: the tiles hold the whole atom.
        let (fa, fb) = unsafe { (A::load_a(ta, 0, 0), A::load_b(tb, 0, 0)) };
        let mut c = A::C::from_fn(|_, _, _, _| A::Acc::default());
        A::mma(&mut c, &fa, &fb);
        c
    }

    #[test]
    fn f64_atoms_multiply_tiles_of_either_major() {
        check_atom::<F64x8>(|v| v, |v| v);
        check_atom::<F64M16K4>(|v| v, |v| v);
        check_atom::<F64M16K8>(|v| v, |v| v);
        check_atom::<F64M16K16>(|v| v, |v| v);
    }

    #[test]
    fn f32_atoms_multiply_small_integers_exactly() {
        check_atom::<Tf32M16K8>(|v| v as f32, f64::from);
        check_atom::<SimtF32>(|v| v as f32, f64::from);
    }

    #[test]
    fn half_atoms_multiply_packed_tiles() {
        // Tiles of words: element (mn, w) packs columns 2w and 2w + 1.
        for (conv, check) in [
            (
                (|v: f64| F16::from_f32(v as f32).0) as fn(f64) -> u16,
                run_half::<F16M16K16> as fn(&[u32], &[u32]) -> Frag<f32, Acc16x8, 4>,
            ),
            (|v: f64| Bf16::from_f32(v as f32).0, run_half::<Bf16M16K16>),
        ] {
            let (a, b) = (values(21, 16 * 16), values(22, 8 * 16));
            let pack = |x: &[f64]| -> Vec<u32> {
                x.chunks(2)
                    .map(|p| mma::pack_halves(conv(p[0]), conv(p[1])))
                    .collect()
            };
            let c = check(&pack(&a), &pack(&b));
            c.for_each(|_, _, r, col, v| {
                let want: f64 = (0..16)
                    .map(|q| a[r as usize * 16 + q] * b[col as usize * 16 + q])
                    .sum();
                assert_eq!(f64::from(v), want);
            });
        }
    }

    fn run_half<A: Atom<Elem = u32, Acc = f32, C = Frag<f32, Acc16x8, 4>>>(
        a: &[u32],
        b: &[u32],
    ) -> Frag<f32, Acc16x8, 4> {
        let (mut a, mut b) = (a.to_vec(), b.to_vec());
        let ta = SharedTile::<u32, KMajor>::host(a.as_mut_ptr(), 8);
        let tb = SharedTile::<u32, KMajor>::host(b.as_mut_ptr(), 8);
        run::<A, KMajor>(&ta, &tb)
    }
}
