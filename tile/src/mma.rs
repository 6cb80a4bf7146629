//! The instruction layer: one warp-wide `mma.sync` shape per function.
//!
//! Each function computes `D = A·B + C` for one warp, with `C` and `D` the same registers
//! (`d`). Its operands are the registers each lane holds, in the layout PTX defines for the shape
//! (PTX ISA, "Matrix Fragments for mma.m8n8k4 / m16n8k4 / m16n8k8 / m16n8k16"); the layouts are
//! spelled out once here as functions of `(lane, element)`, with `g = lane / 4` and
//! `t = lane % 4`:
//!
//! | shape | A (row, k) | B (k, col) | C (row, col) |
//! | --- | --- | --- | --- |
//! | f64 `m8n8k4` (sm_80) | `(g, t)` | `(t, g)` | `(g, 2t + i)` |
//! | f64 `m16n8k4` (sm_90) | `(g + 8i, t)` | `(t, g)` | `(g + 8(i / 2), 2t + i % 2)` |
//! | f64 `m16n8k8` (sm_90) | `(g + 8(i % 2), t + 4(i / 2))` | `(t + 4i, g)` | as above |
//! | f64 `m16n8k16` (sm_90) | `(g + 8(i % 2), t + 4(i / 2))` | `(t + 4i, g)` | as above |
//! | tf32 `m16n8k8`, f32 accumulators | `(g + 8(i % 2), t + 4(i / 2))` | `(t + 4i, g)` | as above |
//! | f16 / bf16 `m16n8k16`, f32 accumulators | `(g + 8((i / 2) % 2), 2t + i % 2 + 8(i / 4))` | `(2t + i % 2 + 8(i / 2), g)` | as above |
//!
//! For f16 and bf16 two elements share a 32-bit register, element `2r` in the low half of
//! register `r`.
//!
//! On the GPU each function is the one instruction, in `asm!`. On the host it is emulated for the
//! whole warp from the same layouts: every product is exact in the accumulator type (TF32, f16
//! and bf16 products fit an `f32`), and the sum runs in `k` order with one rounding per step. The
//! tensor cores may sum in another order; the tile operations' error bounds allow for that.

use super::lanes::Lanes;

/// The shape and the register layouts of one `mma.sync` instruction.
#[derive(Clone, Copy, Debug)]
pub struct Instr {
    /// The PTX shape, for messages.
    pub name: &'static str,
    /// Rows of A and C.
    pub m: u32,
    /// Columns of B and C.
    pub n: u32,
    /// Columns of A, rows of B.
    pub k: u32,
    /// Elements of A per lane.
    pub a_elems: usize,
    /// Elements of B per lane.
    pub b_elems: usize,
    /// Elements of C per lane.
    pub c_elems: usize,
    /// `(lane, element)` → `(row, k)` of A.
    pub a: fn(u32, usize) -> (u32, u32),
    /// `(lane, element)` → `(k, col)` of B.
    pub b: fn(u32, usize) -> (u32, u32),
    /// `(lane, element)` → `(row, col)` of C.
    pub c: fn(u32, usize) -> (u32, u32),
}

const fn g(lane: u32) -> u32 {
    lane / 4
}
const fn t(lane: u32) -> u32 {
    lane % 4
}

fn c_8x8(lane: u32, i: usize) -> (u32, u32) {
    (g(lane), 2 * t(lane) + i as u32)
}
fn c_16x8(lane: u32, i: usize) -> (u32, u32) {
    let i = i as u32;
    (g(lane) + 8 * (i / 2), 2 * t(lane) + i % 2)
}
fn a_k4(lane: u32, i: usize) -> (u32, u32) {
    (g(lane) + 8 * i as u32, t(lane))
}
fn a_k8(lane: u32, i: usize) -> (u32, u32) {
    let i = i as u32;
    (g(lane) + 8 * (i % 2), t(lane) + 4 * (i / 2))
}
fn b_k(lane: u32, i: usize) -> (u32, u32) {
    (t(lane) + 4 * i as u32, g(lane))
}
fn a_half(lane: u32, i: usize) -> (u32, u32) {
    let i = i as u32;
    (
        g(lane) + 8 * ((i / 2) % 2),
        2 * t(lane) + i % 2 + 8 * (i / 4),
    )
}
fn b_half(lane: u32, i: usize) -> (u32, u32) {
    let i = i as u32;
    (2 * t(lane) + i % 2 + 8 * (i / 2), g(lane))
}

/// f64 `m8n8k4` (sm_80 and later).
pub const M8N8K4_F64: Instr = Instr {
    name: "m8n8k4.f64",
    m: 8,
    n: 8,
    k: 4,
    a_elems: 1,
    b_elems: 1,
    c_elems: 2,
    a: a_k4,
    b: b_k,
    c: c_8x8,
};
/// f64 `m16n8k4` (sm_90).
pub const M16N8K4_F64: Instr = Instr {
    name: "m16n8k4.f64",
    m: 16,
    n: 8,
    k: 4,
    a_elems: 2,
    b_elems: 1,
    c_elems: 4,
    a: a_k4,
    b: b_k,
    c: c_16x8,
};
/// f64 `m16n8k8` (sm_90).
pub const M16N8K8_F64: Instr = Instr {
    name: "m16n8k8.f64",
    m: 16,
    n: 8,
    k: 8,
    a_elems: 4,
    b_elems: 2,
    c_elems: 4,
    a: a_k8,
    b: b_k,
    c: c_16x8,
};
/// f64 `m16n8k16` (sm_90).
pub const M16N8K16_F64: Instr = Instr {
    name: "m16n8k16.f64",
    m: 16,
    n: 8,
    k: 16,
    a_elems: 8,
    b_elems: 4,
    c_elems: 4,
    a: a_k8,
    b: b_k,
    c: c_16x8,
};
/// tf32 `m16n8k8` with f32 accumulators (sm_80 and later).
pub const M16N8K8_TF32: Instr = Instr {
    name: "m16n8k8.tf32",
    m: 16,
    n: 8,
    k: 8,
    a_elems: 4,
    b_elems: 2,
    c_elems: 4,
    a: a_k8,
    b: b_k,
    c: c_16x8,
};
/// f16 or bf16 `m16n8k16` with f32 accumulators (sm_80 and later).
pub const M16N8K16_HALF: Instr = Instr {
    name: "m16n8k16.f16",
    m: 16,
    n: 8,
    k: 16,
    a_elems: 8,
    b_elems: 4,
    c_elems: 4,
    a: a_half,
    b: b_half,
    c: c_16x8,
};

/// `D = A·B + C` for the whole warp on the host, from the layouts of `instr`: `a(lane, e)` and
/// `b(lane, e)` give element `e` of a lane's A and B fragments; `fma(acc, x, y)` is `acc + x·y`.
#[cfg(not(target_arch = "nvptx64"))]
fn emulate<C: Copy + Default>(
    instr: &Instr,
    d: &mut [Lanes<C>],
    a: impl Fn(u32, usize) -> C,
    b: impl Fn(u32, usize) -> C,
    fma: impl Fn(C, C, C) -> C,
) {
    // Dense copies of the three matrices (every shape fits 16 × 16); the layouts are bijections
    // (tested below), so every element is written.
    let (m, n, k) = (instr.m as usize, instr.n as usize, instr.k as usize);
    let (mut am, mut bm, mut cm) = (
        [C::default(); 256],
        [C::default(); 256],
        [C::default(); 256],
    );
    for lane in 0..32u32 {
        for e in 0..instr.a_elems {
            let (r, q) = (instr.a)(lane, e);
            am[r as usize * k + q as usize] = a(lane, e);
        }
        for e in 0..instr.b_elems {
            let (q, c) = (instr.b)(lane, e);
            bm[q as usize * n + c as usize] = b(lane, e);
        }
        for (e, reg) in d.iter().enumerate().take(instr.c_elems) {
            let (r, c) = (instr.c)(lane, e);
            cm[r as usize * n + c as usize] = reg.get(lane);
        }
    }
    for r in 0..m {
        for c in 0..n {
            let mut acc = cm[r * n + c];
            for q in 0..k {
                acc = fma(acc, am[r * k + q], bm[q * n + c]);
            }
            cm[r * n + c] = acc;
        }
    }
    for lane in 0..32u32 {
        for (e, reg) in d.iter_mut().enumerate().take(instr.c_elems) {
            let (r, c) = (instr.c)(lane, e);
            reg.set(lane, cm[r as usize * n + c as usize]);
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
fn fma64(acc: f64, x: f64, y: f64) -> f64 {
    x.mul_add(y, acc)
}

#[cfg(not(target_arch = "nvptx64"))]
fn fma32(acc: f32, x: f32, y: f32) -> f32 {
    // Products of TF32, f16 and bf16 values are exact in f32.
    acc + x * y
}

/// The f32 value of a TF32 operand register: the tensor cores ignore the low 13 mantissa bits.
#[cfg(not(target_arch = "nvptx64"))]
fn tf32_bits(v: f32) -> f32 {
    f32::from_bits(v.to_bits() & !0x1fff)
}

#[cfg(not(target_arch = "nvptx64"))]
fn half(regs: &[Lanes<u32>], lane: u32, e: usize, to_f32: fn(u16) -> f32) -> f32 {
    let word = regs[e / 2].get(lane);
    to_f32(if e % 2 == 0 {
        word as u16
    } else {
        (word >> 16) as u16
    })
}

/// The calling lane's four results as lane values. Spelled out: `[T; N]::map` is a loop that
/// LLVM may leave rolled, which would put the accumulators in local memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn own<T: Copy>(r: [T; 4]) -> [Lanes<T>; 4] {
    [
        Lanes::from_own(r[0]),
        Lanes::from_own(r[1]),
        Lanes::from_own(r[2]),
        Lanes::from_own(r[3]),
    ]
}

/// f64 `m8n8k4`: `d += a·b` (see [`M8N8K4_F64`]).
#[inline(always)]
pub fn m8n8k4_f64(d: &mut [Lanes<f64>; 2], a: &[Lanes<f64>; 1], b: &[Lanes<f64>; 1]) {
    #[cfg(target_arch = "nvptx64")]
    {
        let (mut d0, mut d1) = (d[0].get(), d[1].get());
        // SAFETY: a register-only warp instruction; tile ops call it with the whole warp converged.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {{{0}, {1}}}, {{{2}}}, {{{3}}}, {{{0}, {1}}};",
                inout(reg64) d0, inout(reg64) d1, in(reg64) a[0].get(), in(reg64) b[0].get(),
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        *d = [Lanes::from_own(d0), Lanes::from_own(d1)];
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulate(
        &M8N8K4_F64,
        d,
        |l, e| a[e].get(l),
        |l, e| b[e].get(l),
        fma64,
    );
}

/// Panics where an sm_90 shape is used in a build for an older GPU.
#[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
fn needs_sm90() -> ! {
    panic!("this f64 mma shape needs sm_90: build with TASKWEAVE_TARGET_CPU=sm_90")
}

/// f64 `m16n8k4`: `d += a·b` (sm_90; see [`M16N8K4_F64`]).
#[inline(always)]
pub fn m16n8k4_f64(d: &mut [Lanes<f64>; 4], a: &[Lanes<f64>; 2], b: &[Lanes<f64>; 1]) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let mut r = [d[0].get(), d[1].get(), d[2].get(), d[3].get()];
        // SAFETY: as for `m8n8k4_f64`.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}}}, {{{6}}}, {{{0}, {1}, {2}, {3}}};",
                inout(reg64) r[0], inout(reg64) r[1], inout(reg64) r[2], inout(reg64) r[3],
                in(reg64) a[0].get(), in(reg64) a[1].get(), in(reg64) b[0].get(),
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        *d = own(r);
    }
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
    {
        let _ = (d, a, b);
        needs_sm90();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulate(
        &M16N8K4_F64,
        d,
        |l, e| a[e].get(l),
        |l, e| b[e].get(l),
        fma64,
    );
}

/// f64 `m16n8k8`: `d += a·b` (sm_90; see [`M16N8K8_F64`]).
#[inline(always)]
pub fn m16n8k8_f64(d: &mut [Lanes<f64>; 4], a: &[Lanes<f64>; 4], b: &[Lanes<f64>; 2]) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let mut r = [d[0].get(), d[1].get(), d[2].get(), d[3].get()];
        // SAFETY: as for `m8n8k4_f64`.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}};",
                inout(reg64) r[0], inout(reg64) r[1], inout(reg64) r[2], inout(reg64) r[3],
                in(reg64) a[0].get(), in(reg64) a[1].get(), in(reg64) a[2].get(), in(reg64) a[3].get(),
                in(reg64) b[0].get(), in(reg64) b[1].get(),
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        *d = own(r);
    }
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
    {
        let _ = (d, a, b);
        needs_sm90();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulate(
        &M16N8K8_F64,
        d,
        |l, e| a[e].get(l),
        |l, e| b[e].get(l),
        fma64,
    );
}

/// f64 `m16n8k16`: `d += a·b` (sm_90; see [`M16N8K16_F64`]).
#[inline(always)]
pub fn m16n8k16_f64(d: &mut [Lanes<f64>; 4], a: &[Lanes<f64>; 8], b: &[Lanes<f64>; 4]) {
    #[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
    {
        let mut r = [d[0].get(), d[1].get(), d[2].get(), d[3].get()];
        // SAFETY: as for `m8n8k4_f64`.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}, {8}, {9}, {10}, {11}}}, {{{12}, {13}, {14}, {15}}}, {{{0}, {1}, {2}, {3}}};",
                inout(reg64) r[0], inout(reg64) r[1], inout(reg64) r[2], inout(reg64) r[3],
                in(reg64) a[0].get(), in(reg64) a[1].get(), in(reg64) a[2].get(), in(reg64) a[3].get(),
                in(reg64) a[4].get(), in(reg64) a[5].get(), in(reg64) a[6].get(), in(reg64) a[7].get(),
                in(reg64) b[0].get(), in(reg64) b[1].get(), in(reg64) b[2].get(), in(reg64) b[3].get(),
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        *d = own(r);
    }
    #[cfg(all(target_arch = "nvptx64", not(target_feature = "sm_90")))]
    {
        let _ = (d, a, b);
        needs_sm90();
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulate(
        &M16N8K16_F64,
        d,
        |l, e| a[e].get(l),
        |l, e| b[e].get(l),
        fma64,
    );
}

/// tf32 `m16n8k8` with f32 accumulators: `d += a·b` (see [`M16N8K8_TF32`]). The operands are
/// `f32` values; the instruction reads their top 19 bits, so round them first
/// ([`round_tf32`](super::numeric::round_tf32)) for round-to-nearest.
#[inline(always)]
pub fn m16n8k8_tf32(d: &mut [Lanes<f32>; 4], a: &[Lanes<f32>; 4], b: &[Lanes<f32>; 2]) {
    #[cfg(target_arch = "nvptx64")]
    {
        let mut r = [d[0].get(), d[1].get(), d[2].get(), d[3].get()];
        let bits = |v: Lanes<f32>| v.get().to_bits();
        // SAFETY: as for `m8n8k4_f64`.
        unsafe {
            core::arch::asm!(
                "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}};",
                inout(reg32) r[0], inout(reg32) r[1], inout(reg32) r[2], inout(reg32) r[3],
                in(reg32) bits(a[0]), in(reg32) bits(a[1]), in(reg32) bits(a[2]), in(reg32) bits(a[3]),
                in(reg32) bits(b[0]), in(reg32) bits(b[1]),
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        *d = own(r);
    }
    #[cfg(not(target_arch = "nvptx64"))]
    emulate(
        &M16N8K8_TF32,
        d,
        |l, e| tf32_bits(a[e].get(l)),
        |l, e| tf32_bits(b[e].get(l)),
        fma32,
    );
}

macro_rules! half_mma {
    ($(#[$doc:meta])* $name:ident, $ty:literal, $to_f32:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name(d: &mut [Lanes<f32>; 4], a: &[Lanes<u32>; 4], b: &[Lanes<u32>; 2]) {
            #[cfg(target_arch = "nvptx64")]
            {
                let mut r = [d[0].get(), d[1].get(), d[2].get(), d[3].get()];
                // SAFETY: as for `m8n8k4_f64`.
                unsafe {
                    core::arch::asm!(
                        concat!("mma.sync.aligned.m16n8k16.row.col.f32.", $ty, ".", $ty, ".f32 {{{0}, {1}, {2}, {3}}}, {{{4}, {5}, {6}, {7}}}, {{{8}, {9}}}, {{{0}, {1}, {2}, {3}}};"),
                        inout(reg32) r[0], inout(reg32) r[1], inout(reg32) r[2], inout(reg32) r[3],
                        in(reg32) a[0].get(), in(reg32) a[1].get(), in(reg32) a[2].get(), in(reg32) a[3].get(),
                        in(reg32) b[0].get(), in(reg32) b[1].get(),
                        options(pure, nomem, nostack, preserves_flags)
                    )
                };
                *d = own(r);
            }
            #[cfg(not(target_arch = "nvptx64"))]
            emulate(
                &M16N8K16_HALF,
                d,
                |l, e| half(a, l, e, $to_f32),
                |l, e| half(b, l, e, $to_f32),
                fma32,
            );
        }
    };
}

half_mma!(
    /// f16 `m16n8k16` with f32 accumulators: `d += a·b` (see [`M16N8K16_HALF`]); each `u32`
    /// holds two [`F16`](super::numeric::F16), element `2r` in the low half.
    m16n8k16_f16,
    "f16",
    |h| super::numeric::F16(h).to_f32()
);
half_mma!(
    /// bf16 `m16n8k16` with f32 accumulators: `d += a·b` (see [`M16N8K16_HALF`]); each `u32`
    /// holds two [`Bf16`](super::numeric::Bf16), element `2r` in the low half.
    m16n8k16_bf16,
    "bf16",
    |h| super::numeric::Bf16(h).to_f32()
);

/// Two 16-bit values in one register, `lo` in the low half.
#[inline(always)]
pub fn pack_halves(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | (u32::from(hi) << 16)
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::*;
    use crate::numeric::{Bf16, F16, round_tf32};
    use std::vec::Vec;

    type F64Mma<const A: usize, const B: usize, const C: usize> =
        fn(&mut [Lanes<f64>; C], &[Lanes<f64>; A], &[Lanes<f64>; B]);
    type HalfMma = fn(&mut [Lanes<f32>; 4], &[Lanes<u32>; 4], &[Lanes<u32>; 2]);

    /// A small deterministic generator of values in [-1, 1).
    fn values(seed: u64, n: usize) -> Vec<f64> {
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn every_layout_is_a_bijection_onto_its_matrix() {
        for instr in [
            M8N8K4_F64,
            M16N8K4_F64,
            M16N8K8_F64,
            M16N8K16_F64,
            M16N8K8_TF32,
            M16N8K16_HALF,
        ] {
            let (m, n, k) = (instr.m, instr.n, instr.k);
            for (map, elems, rows, cols) in [
                (instr.a, instr.a_elems, m, k),
                (instr.b, instr.b_elems, k, n),
                (instr.c, instr.c_elems, m, n),
            ] {
                let mut seen = std::vec![false; (rows * cols) as usize];
                for lane in 0..32 {
                    for e in 0..elems {
                        let (r, c) = map(lane, e);
                        assert!(r < rows && c < cols, "{}: ({r}, {c}) outside", instr.name);
                        assert!(
                            !seen[(r * cols + c) as usize],
                            "{}: ({r}, {c}) twice",
                            instr.name
                        );
                        seen[(r * cols + c) as usize] = true;
                    }
                }
                assert!(seen.iter().all(|&s| s), "{}: not covered", instr.name);
            }
        }
    }

    /// Scatters dense `a` (m×k), `b` (k×n), `c` (m×n) into lanes by `instr`'s layouts, runs `run`,
    /// and compares with the dense product, elementwise within `tol`.
    fn check_f64<const A: usize, const B: usize, const C: usize>(
        instr: Instr,
        run: F64Mma<A, B, C>,
    ) {
        let (m, n, k) = (instr.m as usize, instr.n as usize, instr.k as usize);
        let (a, b, c) = (values(1, m * k), values(2, k * n), values(3, m * n));
        let frag = |map: fn(u32, usize) -> (u32, u32), e: usize, cols: usize, x: &[f64]| {
            Lanes::from_fn(|l| {
                let (r, q) = map(l, e);
                x[r as usize * cols + q as usize]
            })
        };
        let fa: [Lanes<f64>; A] = core::array::from_fn(|e| frag(instr.a, e, k, &a));
        let fb: [Lanes<f64>; B] = core::array::from_fn(|e| frag(instr.b, e, n, &b));
        let mut fc: [Lanes<f64>; C] = core::array::from_fn(|e| frag(instr.c, e, n, &c));
        run(&mut fc, &fa, &fb);
        for lane in 0..32 {
            for (e, reg) in fc.iter().enumerate() {
                let (r, q) = (instr.c)(lane, e);
                let (r, q) = (r as usize, q as usize);
                let want: f64 =
                    c[r * n + q] + (0..k).map(|p| a[r * k + p] * b[p * n + q]).sum::<f64>();
                let got = reg.get(lane);
                assert!(
                    (got - want).abs() <= 1e-14,
                    "{} ({r}, {q}): {got} vs {want}",
                    instr.name
                );
            }
        }
    }

    #[test]
    fn f64_shapes_multiply_their_fragments() {
        check_f64(M8N8K4_F64, m8n8k4_f64);
        check_f64(M16N8K4_F64, m16n8k4_f64);
        check_f64(M16N8K8_F64, m16n8k8_f64);
        check_f64(M16N8K16_F64, m16n8k16_f64);
    }

    #[test]
    fn tf32_shape_rounds_its_operands_and_accumulates_in_f32() {
        let instr = M16N8K8_TF32;
        let (m, n, k) = (16usize, 8usize, 8usize);
        let a: Vec<f32> = values(4, m * k).iter().map(|&v| v as f32).collect();
        let b: Vec<f32> = values(5, k * n).iter().map(|&v| v as f32).collect();
        let fa: [Lanes<f32>; 4] = core::array::from_fn(|e| {
            Lanes::from_fn(|l| {
                let (r, q) = (instr.a)(l, e);
                round_tf32(a[(r * 8 + q) as usize])
            })
        });
        let fb: [Lanes<f32>; 2] = core::array::from_fn(|e| {
            Lanes::from_fn(|l| {
                let (q, c) = (instr.b)(l, e);
                round_tf32(b[(q * 8 + c) as usize])
            })
        });
        let mut fc = [Lanes::splat(0.0f32); 4];
        m16n8k8_tf32(&mut fc, &fa, &fb);
        for lane in 0..32 {
            for (e, reg) in fc.iter().enumerate() {
                let (r, c) = (instr.c)(lane, e);
                let (r, c) = (r as usize, c as usize);
                let exact: f64 = (0..k)
                    .map(|p| f64::from(a[r * k + p]) * f64::from(b[p * n + c]))
                    .sum();
                // Each operand carries a relative error of at most 2^-11 after rounding.
                let bound = k as f64 * 2.0 / 2048.0 + 1e-6;
                let got = f64::from(reg.get(lane));
                assert!((got - exact).abs() <= bound, "({r}, {c}): {got} vs {exact}");
            }
        }
    }

    #[test]
    fn half_shapes_multiply_packed_pairs_exactly_for_small_integers() {
        // Small integers are exact in f16 and bf16 and their products and sums exact in f32, so
        // the result is exact whatever the order of summation.
        let instr = M16N8K16_HALF;
        let (m, n, k) = (16usize, 8usize, 16usize);
        let ints = |seed, len| -> Vec<f32> {
            values(seed, len)
                .iter()
                .map(|v| (v * 8.0).round() as f32)
                .collect()
        };
        let (a, b) = (ints(6, m * k), ints(7, k * n));
        type Conv = fn(f32) -> u16;
        let convs: [(Conv, HalfMma); 2] = [
            (|v| F16::from_f32(v).0, m16n8k16_f16),
            (|v| Bf16::from_f32(v).0, m16n8k16_bf16),
        ];
        for (conv, run) in convs {
            let pack = |map: fn(u32, usize) -> (u32, u32), r: usize, cols: usize, x: &[f32]| {
                Lanes::from_fn(|l| {
                    let at = |e| {
                        let (i, j) = map(l, e);
                        conv(x[i as usize * cols + j as usize])
                    };
                    pack_halves(at(2 * r), at(2 * r + 1))
                })
            };
            let fa: [Lanes<u32>; 4] = core::array::from_fn(|r| pack(instr.a, r, k, &a));
            let fb: [Lanes<u32>; 2] = core::array::from_fn(|r| pack(instr.b, r, n, &b));
            let mut fc = [Lanes::splat(1.0f32); 4];
            run(&mut fc, &fa, &fb);
            for lane in 0..32 {
                for (e, reg) in fc.iter().enumerate() {
                    let (r, c) = (instr.c)(lane, e);
                    let (r, c) = (r as usize, c as usize);
                    let want = 1.0 + (0..k).map(|p| a[r * k + p] * b[p * n + c]).sum::<f32>();
                    assert_eq!(reg.get(lane), want, "({r}, {c})");
                }
            }
        }
    }
}
