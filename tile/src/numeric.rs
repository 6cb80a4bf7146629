//! The element types of tile math.
//!
//! 1. [`Element`]: the types tile operations take (`f64`, `f32`), with the few operations they need
//!    that `core` lacks on the GPU (`sqrt` is one PTX instruction there, `std`'s on the host).
//! 2. [`F16`] and [`Bf16`]: 16-bit floats as bit patterns, for the half-precision `mma.sync`
//!    shapes. Rust's own `f16` is unstable; these convert to and from `f32` on both targets with
//!    round-to-nearest-even, so host code can build inputs and read results.
//! 3. [`round_tf32`]: TF32 rounding (10-bit mantissa, nearest with ties away from zero, as
//!    `cvt.rna.tf32.f32`), which TF32 tensor-core operands go through.

/// A floating-point element of a tile operation: `f64` or `f32`.
pub trait Element:
    Copy
    + Default
    + PartialEq
    + PartialOrd
    + core::fmt::Debug
    + core::ops::Add<Output = Self>
    + core::ops::Sub<Output = Self>
    + core::ops::Mul<Output = Self>
    + core::ops::Div<Output = Self>
    + core::ops::Neg<Output = Self>
    + super::smem::Word
    + sealed::Sealed
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The machine epsilon, for error bounds.
    const EPSILON: f64;
    /// The square root, correctly rounded.
    fn sqrt(self) -> Self;
    /// `self · a + b`: fused (one rounding) on the GPU; on the host, a multiply and an add, so that
    /// the CPU backend needs no FMA hardware.
    fn fma(self, a: Self, b: Self) -> Self;
    /// `1 / √self` for a positive normal `self`, within a few units in the last place. On the GPU
    /// the hardware's approximation refined by Newton steps: a chain of a few multiply-adds, where
    /// a correctly rounded square root and then a division are each a sequence of their own (with
    /// a branch to a slow path). On the host, `1 / self.sqrt()`.
    fn rsqrt(self) -> Self;
    /// `1 / self` for a normal `self`, within a few units in the last place, as [`rsqrt`](Self::rsqrt).
    fn recip(self) -> Self;
    /// `self` as `f64`.
    fn to_f64(self) -> f64;
    /// `v` rounded to `Self`.
    fn from_f64(v: f64) -> Self;
    /// The bits, zero-extended to 64.
    fn to_bits64(self) -> u64;
    /// The value of the low bits of `bits`.
    fn from_bits64(bits: u64) -> Self;
}

impl Element for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const EPSILON: f64 = f64::EPSILON;
    #[inline(always)]
    fn sqrt(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let out: f64;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!("sqrt.rn.f64 {0}, {1};", out(reg64) out, in(reg64) self,
                    options(pure, nomem, nostack, preserves_flags))
            };
            out
        }
        #[cfg(not(target_arch = "nvptx64"))]
        f64::sqrt(self)
    }
    #[inline(always)]
    fn fma(self, a: Self, b: Self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        return core::f64::math::mul_add(self, a, b);
        #[cfg(not(target_arch = "nvptx64"))]
        return self * a + b;
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut y: f64;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!("rsqrt.approx.ftz.f64 {0}, {1};", out(reg64) y, in(reg64) self,
                    options(pure, nomem, nostack, preserves_flags))
            };
            // Two Newton steps, y += y·(1/2 − (x/2)·y²): each doubles the correct bits.
            let half = 0.5 * self;
            for _ in 0..2 {
                let e = core::f64::math::mul_add(-(half * y), y, 0.5);
                y = core::f64::math::mul_add(y, e, y);
            }
            y
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            1.0 / f64::sqrt(self)
        }
    }
    #[inline(always)]
    fn recip(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let y: f64;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!("rcp.approx.ftz.f64 {0}, {1};", out(reg64) y, in(reg64) self,
                    options(pure, nomem, nostack, preserves_flags))
            };
            // One step of third order, y += y·(e + e²) with e = 1 − x·y: the approximation's
            // relative error ε becomes about ε³, below f64's rounding from the 2⁻²⁰ that the
            // approximation of x's leading bits leaves, in three dependent FMAs where two Newton
            // steps took four (a factorization's pivot waits on them at every step).
            let e = core::f64::math::mul_add(-self, y, 1.0);
            let t = core::f64::math::mul_add(e, e, e);
            core::f64::math::mul_add(y, t, y)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            1.0 / self
        }
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        f64::from_bits(bits)
    }
}

impl Element for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    const EPSILON: f64 = f32::EPSILON as f64;
    #[inline(always)]
    fn sqrt(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let out: f32;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!("sqrt.rn.f32 {0}, {1};", out(reg32) out, in(reg32) self,
                    options(pure, nomem, nostack, preserves_flags))
            };
            out
        }
        #[cfg(not(target_arch = "nvptx64"))]
        f32::sqrt(self)
    }
    #[inline(always)]
    fn fma(self, a: Self, b: Self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        return core::f32::math::mul_add(self, a, b);
        #[cfg(not(target_arch = "nvptx64"))]
        return self * a + b;
    }
    #[inline(always)]
    fn rsqrt(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut y: f32;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!("rsqrt.approx.ftz.f32 {0}, {1};", out(reg32) y, in(reg32) self,
                    options(pure, nomem, nostack, preserves_flags))
            };
            // One Newton step, y += y·(1/2 − (x/2)·y²): each doubles the correct bits.
            let half = 0.5 * self;
            for _ in 0..1 {
                let e = core::f32::math::mul_add(-(half * y), y, 0.5);
                y = core::f32::math::mul_add(y, e, y);
            }
            y
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            1.0 / f32::sqrt(self)
        }
    }
    #[inline(always)]
    fn recip(self) -> Self {
        #[cfg(target_arch = "nvptx64")]
        {
            let mut y: f32;
            // SAFETY: a register-to-register instruction.
            unsafe {
                core::arch::asm!("rcp.approx.ftz.f32 {0}, {1};", out(reg32) y, in(reg32) self,
                    options(pure, nomem, nostack, preserves_flags))
            };
            // One Newton step, y += y·(1 − x·y).
            for _ in 0..1 {
                let e = core::f32::math::mul_add(-self, y, 1.0);
                y = core::f32::math::mul_add(y, e, y);
            }
            y
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            1.0 / self
        }
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn to_bits64(self) -> u64 {
        u64::from(self.to_bits())
    }
    #[inline(always)]
    fn from_bits64(bits: u64) -> Self {
        f32::from_bits(bits as u32)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for f64 {}
    impl Sealed for f32 {}
}

/// An IEEE binary16 value, as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct F16(pub u16);

/// A bfloat16 value (the top half of an `f32`), as its bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl F16 {
    /// `v` rounded to nearest-even; overflow gives infinity, NaN stays NaN.
    pub const fn from_f32(v: f32) -> Self {
        let bits = v.to_bits();
        let sign = ((bits >> 16) & 0x8000) as u16;
        let exp = ((bits >> 23) & 0xff) as i32;
        let man = bits & 0x7f_ffff;
        if exp == 0xff {
            // Infinity or NaN (keep a quiet NaN).
            return Self(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return Self(sign | 0x7c00);
        }
        if e <= 0 {
            // Subnormal or zero: shift the full significand right and round.
            if e < -10 {
                return Self(sign);
            }
            let full = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let half = full >> shift;
            let rest = full & ((1 << shift) - 1);
            let mid = 1 << (shift - 1);
            let up = rest > mid || (rest == mid && half & 1 == 1);
            return Self(sign | (half + up as u32) as u16);
        }
        let half = ((e as u32) << 10) | (man >> 13);
        let rest = man & 0x1fff;
        let up = rest > 0x1000 || (rest == 0x1000 && half & 1 == 1);
        // A carry out of the mantissa bumps the exponent, up to infinity: still correct.
        Self(sign | (half + up as u32) as u16)
    }

    /// The exact `f32` value.
    pub const fn to_f32(self) -> f32 {
        let sign = ((self.0 & 0x8000) as u32) << 16;
        let exp = ((self.0 >> 10) & 0x1f) as u32;
        let man = (self.0 & 0x3ff) as u32;
        let bits = if exp == 0x1f {
            sign | 0x7f80_0000 | (man << 13)
        } else if exp != 0 {
            sign | ((exp + 127 - 15) << 23) | (man << 13)
        } else if man == 0 {
            sign
        } else {
            // Subnormal: normalize.
            let lead = 31 - man.leading_zeros(); // position of the top set bit, below 10
            let shift = 10 - lead;
            sign | ((127 - 15 + 1 - shift) << 23) | (((man << shift) & 0x3ff) << 13)
        };
        f32::from_bits(bits)
    }
}

impl Bf16 {
    /// `v` rounded to nearest-even; NaN stays NaN.
    pub const fn from_f32(v: f32) -> Self {
        let bits = v.to_bits();
        if v.is_nan() {
            return Self(((bits >> 16) | 0x40) as u16);
        }
        let round = 0x7fff + ((bits >> 16) & 1);
        Self((bits.wrapping_add(round) >> 16) as u16)
    }

    /// The exact `f32` value.
    pub const fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
}

/// `v` rounded to TF32 (nearest, ties away from zero), as an `f32` whose low 13 mantissa bits are
/// zero: what `cvt.rna.tf32.f32` gives.
#[inline(always)]
pub fn round_tf32(v: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let out: u32;
        // SAFETY: a register-to-register instruction.
        unsafe {
            core::arch::asm!("cvt.rna.tf32.f32 {0}, {1};", out(reg32) out, in(reg32) v,
                options(pure, nomem, nostack, preserves_flags))
        };
        f32::from_bits(out)
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        if !v.is_finite() {
            return v;
        }
        f32::from_bits(v.to_bits().wrapping_add(0x1000) & !0x1fff)
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::{Bf16, Element, F16, round_tf32};

    /// `2^e` exactly (`powi` is not exact under Miri), for a normal `f32`.
    fn pow2(e: i32) -> f32 {
        f32::from_bits(((127 + e) as u32) << 23)
    }

    #[test]
    fn f16_round_trips_every_finite_value_and_rounds_to_nearest_even() {
        for bits in 0..=u16::MAX {
            let h = F16(bits);
            let v = h.to_f32();
            if v.is_nan() {
                assert!(F16::from_f32(v).to_f32().is_nan());
                continue;
            }
            assert_eq!(F16::from_f32(v), h, "bits {bits:#06x} = {v}");
        }
        // 1 + 2^-11 is halfway between 1 and the next f16 (1 + 2^-10): ties go to even (1).
        assert_eq!(F16::from_f32(1.0 + pow2(-11)).to_f32(), 1.0);
        assert_eq!(
            F16::from_f32(1.0 + 3.0 * pow2(-11)).to_f32(),
            1.0 + 2.0 * pow2(-10)
        );
        assert_eq!(F16::from_f32(70000.0).to_f32(), f32::INFINITY);
        assert_eq!(F16::from_f32(pow2(-24)).to_f32(), pow2(-24));
        assert_eq!(F16::from_f32(pow2(-26)).to_f32(), 0.0);
    }

    #[test]
    fn bf16_keeps_the_top_half_rounded_to_nearest_even() {
        assert_eq!(Bf16::from_f32(1.0).to_f32(), 1.0);
        assert_eq!(Bf16::from_f32(1.0 + pow2(-8)).to_f32(), 1.0);
        assert_eq!(
            Bf16::from_f32(1.0 + 3.0 * pow2(-8)).to_f32(),
            1.0 + pow2(-6)
        );
        assert!(Bf16::from_f32(f32::NAN).to_f32().is_nan());
    }

    #[test]
    fn tf32_keeps_ten_mantissa_bits_rounding_half_away_from_zero() {
        assert_eq!(round_tf32(1.0 + pow2(-11)), 1.0 + pow2(-10));
        assert_eq!(round_tf32(-(1.0 + pow2(-11))), -(1.0 + pow2(-10)));
        assert_eq!(round_tf32(1.0 + pow2(-12)), 1.0);
        assert_eq!(round_tf32(3.0).to_bits() & 0x1fff, 0);
    }

    #[test]
    fn element_sqrt_and_conversions() {
        assert_eq!(Element::sqrt(2.25f64), 1.5);
        assert_eq!(Element::sqrt(2.25f32), 1.5);
        assert_eq!(<f32 as Element>::from_f64(0.5).to_f64(), 0.5);
    }
}
