//! Every function of `taskweave::math`, in f32 and f64, applied by one task each: the device build
//! compiles them all into PTX (which `scripts/check-ptx.sh` assembles), and `selfcheck` compares
//! what the GPU computes with `std` on the host.

use taskweave::math::{self, Float};
use taskweave::{Block, task, task_region};

/// The functions, by index, as `apply` computes them.
pub const FUNCTIONS: [&str; 22] = [
    "abs", "sqrt", "cbrt", "floor", "ceil", "round", "trunc", "fma", "powi", "powf", "exp", "exp2",
    "ln", "log2", "log10", "sin", "cos", "tan", "tanh", "atan", "atan2", "hypot",
];

/// Function `k` of [`FUNCTIONS`] at `x`, with fixed second arguments; logarithms, roots and
/// `powf` take `|x|`.
#[inline(always)]
pub fn apply<T: Float + From<f32>>(k: usize, x: T) -> T {
    let (half, two) = (T::from(0.5), T::from(2.0));
    let a = math::abs(x);
    match k {
        0 => math::abs(x),
        1 => math::sqrt(a),
        2 => math::cbrt(x),
        3 => math::floor(x),
        4 => math::ceil(x),
        5 => math::round(x),
        6 => math::trunc(x),
        7 => math::fma(x, two, half),
        8 => math::powi(x, 3),
        9 => math::powf(a, half),
        10 => math::exp(x),
        11 => math::exp2(x),
        12 => math::ln(a),
        13 => math::log2(a),
        14 => math::log10(a),
        15 => math::sin(x),
        16 => math::cos(x),
        17 => math::tan(x),
        18 => math::tanh(x),
        19 => math::atan(x),
        20 => math::atan2(x, two),
        _ => math::hypot(x, two),
    }
}

/// `y[k * n + i] = apply(k, x[i])` for every function `k`, `n = x.len()`.
#[task]
pub fn apply64(b: &Block, x: &[f64], y: &mut [f64]) {
    let n = x.len();
    b.par_for(0..FUNCTIONS.len() * n, |e| y[e] = apply(e / n, x[e % n]));
}

/// The f32 twin of [`apply64`].
#[task]
pub fn apply32(b: &Block, x: &[f32], y: &mut [f32]) {
    let n = x.len();
    b.par_for(0..FUNCTIONS.len() * n, |e| y[e] = apply(e / n, x[e % n]));
}

task_region! {
    /// Applies every function to every element of `x64` and `x32`.
    pub fn check_math(x64: &[f64], y64: &mut [f64], x32: &[f32], y32: &mut [f32]) {
        spawn!(apply64(x64, y64));
        spawn!(apply32(x32, y32));
    }
}

/// Inputs of both signs and several magnitudes (host only).
#[cfg(not(target_arch = "nvptx64"))]
pub fn inputs() -> Vec<f64> {
    (0..64)
        .map(|i| {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            sign * (0.37 + f64::from(i) * 0.81) * 10f64.powi(i % 5 - 2)
        })
        .collect()
}

/// Units in the last place between two results; 0 for two NaNs.
#[cfg(not(target_arch = "nvptx64"))]
pub fn ulps(a: f64, b: f64) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        0
    } else {
        (a.to_bits() as i64).abs_diff(b.to_bits() as i64)
    }
}

/// [`ulps`] for `f32`.
#[cfg(not(target_arch = "nvptx64"))]
pub fn ulps32(a: f32, b: f32) -> u64 {
    if a == b || (a.is_nan() && b.is_nan()) {
        0
    } else {
        u64::from((a.to_bits() as i32).abs_diff(b.to_bits() as i32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_computes_every_function_as_std_does() {
        let x64 = inputs();
        let x32: Vec<f32> = x64.iter().map(|&x| x as f32).collect();
        let mut y64 = vec![0.0; FUNCTIONS.len() * x64.len()];
        let mut y32 = vec![0.0f32; FUNCTIONS.len() * x32.len()];
        check_math(&x64, &mut y64, &x32, &mut y32)
            .run(&taskweave::Runtime::cpu())
            .unwrap();
        let n = x64.len();
        for (e, (&got64, &got32)) in y64.iter().zip(&y32).enumerate() {
            let (k, i) = (e / n, e % n);
            assert_eq!(
                got64.to_bits(),
                apply(k, x64[i]).to_bits(),
                "{}",
                FUNCTIONS[k]
            );
            assert_eq!(
                got32.to_bits(),
                apply(k, x32[i]).to_bits(),
                "{}",
                FUNCTIONS[k]
            );
        }
        assert_eq!(y64[n], x64[0].sqrt(), "function 1 is sqrt");
    }
}
