//! Floating-point math for task bodies, the same on both targets (`taskweave::math`).
//!
//! `f64::sqrt` and the other methods of `std` do not exist in device code, which has `core` only.
//! Call these functions instead; each takes `f32` or `f64`:
//!
//! ```
//! use taskweave_device::math;
//!
//! let r = math::sqrt(math::fma(3.0f64, 3.0, 16.0)); // √(3·3 + 16)
//! assert_eq!(r, 5.0);
//! assert_eq!(math::powi(2.0f32, -2), 0.25);
//! ```
//!
//! 1. **On the host** each function is its `std` method (`sqrt` is `f64::sqrt`, `ln` is `f64::ln`).
//! 2. **On `nvptx64`** the correctly rounded operations lower to one PTX instruction through
//!    `core::f64::math` (`sqrt.rn`, `fma.rn`, `cvt.rmi` for `floor`, …), so they agree with the host
//!    to the bit. `powi` multiplies by repeated squaring, as the host's `__powidf2` does. The
//!    transcendental functions (`exp`, `ln`, `sin`, …) come from the `libm` crate, Rust's port of
//!    musl's libm, which is within an ulp or two of the host's libm (tested below).

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`: the types this module's functions take.
///
/// Its methods are the free functions of this module. They have the names of `std`'s, so that
/// with `use taskweave::math::Float` in scope `x.sqrt()` works in device code too (on the host the
/// inherent method runs, which is the same function).
pub trait Float: Copy + sealed::Sealed {
    /// `|x|`.
    fn abs(self) -> Self;
    /// The square root, correctly rounded (`sqrt.rn` on the GPU).
    fn sqrt(self) -> Self;
    /// The cube root.
    fn cbrt(self) -> Self;
    /// The largest integer not above `x`.
    fn floor(self) -> Self;
    /// The smallest integer not below `x`.
    fn ceil(self) -> Self;
    /// The nearest integer, halves away from zero.
    fn round(self) -> Self;
    /// The integer part.
    fn trunc(self) -> Self;
    /// `x · a + b` with one rounding (`fma.rn` on the GPU); `std`'s `mul_add`.
    fn fma(self, a: Self, b: Self) -> Self;
    /// `x` to the integer power `n`, by repeated squaring.
    fn powi(self, n: i32) -> Self;
    /// `x` to the power `n`.
    fn powf(self, n: Self) -> Self;
    /// `eˣ`.
    fn exp(self) -> Self;
    /// `2ˣ`.
    fn exp2(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// The base-2 logarithm.
    fn log2(self) -> Self;
    /// The base-10 logarithm.
    fn log10(self) -> Self;
    /// The sine of `x` radians.
    fn sin(self) -> Self;
    /// The cosine of `x` radians.
    fn cos(self) -> Self;
    /// The tangent of `x` radians.
    fn tan(self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The arctangent, in radians.
    fn atan(self) -> Self;
    /// The four-quadrant arctangent of `self / x` (`self` is the `y` coordinate), in radians.
    fn atan2(self, x: Self) -> Self;
    /// `√(self² + y²)` without undue overflow.
    fn hypot(self, y: Self) -> Self;
}

/// One free function per operation, documented once for both types.
macro_rules! functions {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name<T: Float>(x: T $(, $arg: $ty)*) -> T {
            Float::$name(x $(, $arg)*)
        }
    )*};
}

functions! {
    /// `|x|`.
    abs();
    /// The square root, correctly rounded (`sqrt.rn` on the GPU).
    sqrt();
    /// The cube root.
    cbrt();
    /// The largest integer not above `x`.
    floor();
    /// The smallest integer not below `x`.
    ceil();
    /// The nearest integer, halves away from zero.
    round();
    /// The integer part.
    trunc();
    /// `x · a + b` with one rounding (`fma.rn` on the GPU); `std`'s `mul_add`.
    fma(a: T, b: T);
    /// `x` to the integer power `n`, by repeated squaring.
    powi(n: i32);
    /// `x` to the power `n`.
    powf(n: T);
    /// `eˣ`.
    exp();
    /// `2ˣ`.
    exp2();
    /// The natural logarithm.
    ln();
    /// The base-2 logarithm.
    log2();
    /// The base-10 logarithm.
    log10();
    /// The sine of `x` radians.
    sin();
    /// The cosine of `x` radians.
    cos();
    /// The tangent of `x` radians.
    tan();
    /// The hyperbolic tangent.
    tanh();
    /// The arctangent, in radians.
    atan();
    /// The four-quadrant arctangent of `x / other` (`x` is the `y` coordinate), in radians.
    atan2(other: T);
    /// `√(x² + y²)` without undue overflow.
    hypot(y: T);
}

/// `impl Float` for `$t`: `std` on the host; on the GPU `core::$t::math` for the correctly rounded
/// operations and the `libm` functions named in the braces for the others.
macro_rules! float {
    ($t:ident {
        exp: $exp:ident, exp2: $exp2:ident, ln: $ln:ident, log2: $log2:ident, log10: $log10:ident,
        powf: $powf:ident, sin: $sin:ident, cos: $cos:ident, tan: $tan:ident, tanh: $tanh:ident,
        atan: $atan:ident, atan2: $atan2:ident, hypot: $hypot:ident $(,)?
    }) => {
        #[cfg(not(target_arch = "nvptx64"))]
        impl Float for $t {
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                $t::sqrt(self)
            }
            #[inline(always)]
            fn cbrt(self) -> Self {
                $t::cbrt(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                $t::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                $t::ceil(self)
            }
            #[inline(always)]
            fn round(self) -> Self {
                $t::round(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                $t::trunc(self)
            }
            #[inline(always)]
            fn fma(self, a: Self, b: Self) -> Self {
                $t::mul_add(self, a, b)
            }
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                $t::powi(self, n)
            }
            #[inline(always)]
            fn powf(self, n: Self) -> Self {
                $t::powf(self, n)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $t::exp(self)
            }
            #[inline(always)]
            fn exp2(self) -> Self {
                $t::exp2(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                $t::ln(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                $t::log2(self)
            }
            #[inline(always)]
            fn log10(self) -> Self {
                $t::log10(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                $t::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                $t::cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                $t::tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $t::tanh(self)
            }
            #[inline(always)]
            fn atan(self) -> Self {
                $t::atan(self)
            }
            #[inline(always)]
            fn atan2(self, x: Self) -> Self {
                $t::atan2(self, x)
            }
            #[inline(always)]
            fn hypot(self, y: Self) -> Self {
                $t::hypot(self, y)
            }
        }

        #[cfg(target_arch = "nvptx64")]
        impl Float for $t {
            #[inline(always)]
            fn abs(self) -> Self {
                $t::abs(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                core::$t::math::sqrt(self)
            }
            #[inline(always)]
            fn cbrt(self) -> Self {
                core::$t::math::cbrt(self)
            }
            #[inline(always)]
            fn floor(self) -> Self {
                core::$t::math::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                core::$t::math::ceil(self)
            }
            #[inline(always)]
            fn round(self) -> Self {
                core::$t::math::round(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                core::$t::math::trunc(self)
            }
            #[inline(always)]
            fn fma(self, a: Self, b: Self) -> Self {
                core::$t::math::mul_add(self, a, b)
            }
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                soft::powi(self, n)
            }
            #[inline(always)]
            fn powf(self, n: Self) -> Self {
                libm::$powf(self, n)
            }
            #[inline(always)]
            fn exp(self) -> Self {
                libm::$exp(self)
            }
            #[inline(always)]
            fn exp2(self) -> Self {
                libm::$exp2(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                libm::$ln(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                libm::$log2(self)
            }
            #[inline(always)]
            fn log10(self) -> Self {
                libm::$log10(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                libm::$sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                libm::$cos(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                libm::$tan(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                libm::$tanh(self)
            }
            #[inline(always)]
            fn atan(self) -> Self {
                libm::$atan(self)
            }
            #[inline(always)]
            fn atan2(self, x: Self) -> Self {
                libm::$atan2(self, x)
            }
            #[inline(always)]
            fn hypot(self, y: Self) -> Self {
                libm::$hypot(self, y)
            }
        }
    };
}

float!(f32 {
    exp: expf,
    exp2: exp2f,
    ln: logf,
    log2: log2f,
    log10: log10f,
    powf: powf,
    sin: sinf,
    cos: cosf,
    tan: tanf,
    tanh: tanhf,
    atan: atanf,
    atan2: atan2f,
    hypot: hypotf,
});
float!(f64 {
    exp: exp,
    exp2: exp2,
    ln: log,
    log2: log2,
    log10: log10,
    powf: pow,
    sin: sin,
    cos: cos,
    tan: tan,
    tanh: tanh,
    atan: atan,
    atan2: atan2,
    hypot: hypot,
});

/// What the GPU computes in software, compiled on the host too so that tests compare it with
/// `std`.
#[cfg(any(target_arch = "nvptx64", test))]
mod soft {
    use core::ops::{Div, Mul};

    /// `x` to the power `n` by repeated squaring: compiler-rt's `__powidf2`, which `f64::powi`
    /// calls on the host, step for step.
    #[inline(always)]
    pub fn powi<T: Copy + Mul<Output = T> + Div<Output = T> + From<u8>>(mut x: T, n: i32) -> T {
        let one = T::from(1u8);
        let mut r = one;
        let mut b = n;
        loop {
            if b & 1 != 0 {
                r = r * x;
            }
            b /= 2;
            if b == 0 {
                break;
            }
            x = x * x;
        }
        if n < 0 { one / r } else { r }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two finite `f64`s of one sign.
    fn ulps64(a: f64, b: f64) -> u64 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
    }

    fn ulps32(a: f32, b: f32) -> u64 {
        if a == b || (a.is_nan() && b.is_nan()) {
            return 0;
        }
        u64::from((a.to_bits() as i32).abs_diff(b.to_bits() as i32))
    }

    /// Deterministic inputs over a wide range of magnitudes and both signs.
    fn inputs() -> impl Iterator<Item = f64> {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        (0..4000).map(move |i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
            let magnitude = 10f64.powi(i % 13 - 6);
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            sign * unit * magnitude
        })
    }

    /// The device's transcendental functions (the `libm` crate) agree with the host's (`std`) to
    /// within 2 ulps, in both precisions. (Not under Miri: no `unsafe` here, and thousands of
    /// interpreted libm calls.)
    #[test]
    #[cfg_attr(miri, ignore)]
    fn the_device_functions_agree_with_std() {
        type Pair64 = (&'static str, fn(f64) -> f64, fn(f64) -> f64);
        let pairs64: [Pair64; 10] = [
            ("exp", libm::exp, f64::exp),
            ("exp2", libm::exp2, f64::exp2),
            ("ln", |x| libm::log(x.abs()), |x| x.abs().ln()),
            ("log2", |x| libm::log2(x.abs()), |x| x.abs().log2()),
            ("log10", |x| libm::log10(x.abs()), |x| x.abs().log10()),
            ("sin", libm::sin, f64::sin),
            ("cos", libm::cos, f64::cos),
            ("tan", libm::tan, f64::tan),
            ("tanh", libm::tanh, f64::tanh),
            ("atan", libm::atan, f64::atan),
        ];
        for (name, device, host) in pairs64 {
            for x in inputs() {
                let (d, h) = (device(x), host(x));
                assert!(ulps64(d, h) <= 2, "{name}({x:e}): device {d:e}, host {h:e}");
            }
        }
        type Pair32 = (&'static str, fn(f32) -> f32, fn(f32) -> f32);
        let pairs32: [Pair32; 6] = [
            ("expf", libm::expf, f32::exp),
            ("lnf", |x| libm::logf(x.abs()), |x| x.abs().ln()),
            ("sinf", libm::sinf, f32::sin),
            ("cosf", libm::cosf, f32::cos),
            ("tanhf", libm::tanhf, f32::tanh),
            ("atanf", libm::atanf, f32::atan),
        ];
        for (name, device, host) in pairs32 {
            for x in inputs().map(|x| x as f32) {
                let (d, h) = (device(x), host(x));
                assert!(ulps32(d, h) <= 2, "{name}({x:e}): device {d:e}, host {h:e}");
            }
        }
        for (x, y) in inputs().zip(inputs().skip(7)) {
            let pow = |x: f64, y: f64| (x.abs(), y.clamp(-30.0, 30.0));
            let (px, py) = pow(x, y);
            let checks = [
                ("pow", libm::pow(px, py), px.powf(py)),
                ("atan2", libm::atan2(x, y), x.atan2(y)),
                ("hypot", libm::hypot(x, y), x.hypot(y)),
            ];
            for (name, d, h) in checks {
                assert!(
                    ulps64(d, h) <= 2,
                    "{name}({x:e}, {y:e}): device {d:e}, host {h:e}"
                );
            }
        }
    }

    /// The device's `powi` is the host's, to the bit.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn powi_is_the_hosts_to_the_bit() {
        for x in inputs() {
            for n in [-7, -2, -1, 0, 1, 2, 3, 10, 31] {
                assert_eq!(soft::powi(x, n).to_bits(), x.powi(n).to_bits(), "{x:e}^{n}");
                let x = x as f32;
                assert_eq!(soft::powi(x, n).to_bits(), x.powi(n).to_bits(), "{x:e}^{n}");
            }
        }
    }

    /// The correctly rounded operations exactly; the others within 1e-12 (Miri perturbs them on
    /// purpose, as a libm may round them either way).
    #[test]
    fn the_functions_compute_what_they_name() {
        assert_eq!(sqrt(2.0f64), core::f64::consts::SQRT_2);
        assert_eq!(fma(2.0f32, 3.0, 1.0), 7.0);
        assert_eq!(abs(-1.5f64), 1.5);
        assert_eq!((floor(-1.5f64), ceil(-1.5f64)), (-2.0, -1.0));
        assert_eq!((round(2.5f32), trunc(-2.7f32)), (3.0, -2.0));
        let close =
            |got: f64, want: f64| assert!((got - want).abs() <= 1e-12 * want.abs(), "{got}");
        close(powi(3.0f64, 3), 27.0);
        close(cbrt(27.0f64), 3.0);
        close(ln(exp(1.0f64)), 1.0);
        close(sin(core::f64::consts::FRAC_PI_2), 1.0);
        close(hypot(3.0f64, 4.0), 5.0);
    }
}
