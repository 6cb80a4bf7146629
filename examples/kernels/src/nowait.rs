//! The target regions of the OpenMP hidden-helper-thread benchmarks B1–B4: a triangular,
//! daxpy-like update over vectors of length `N`, `O(N²/2)` work per region.
//!
//! - [`tri`] is the paper's `C(a, X, Y, N)`: `y[i] += a · Σ_{j ≤ i} x[j]`. It reads all of `x`
//!   and writes `y`.
//! - [`tri_self`] has the same triangular work on one vector, element by element (`v[i]` is
//!   stepped `i + 1` times), so its only access is `inout: v`. It stands in for the paper's
//!   `C(a, X, X, N)`, whose in-place prefix would be a chain of dependent tasks inside the region
//!   (OpenMP's version races instead).
//!
//! Each region splits its rows into tasks of `rows` rows. The vectors are resident
//! (`DeviceArray`): as in the paper, data is mapped once, outside the timed part.

use taskweave::{Block, task, task_region};

/// `y[i] += a · Σ_{j ≤ i} x[j]` for the rows `lo..hi`.
#[task(reads = [x[0..hi], y[lo..hi]], writes = y[lo..hi])]
pub fn tri_rows(b: &Block, x: &[f64], y: &mut [f64], a: f64, lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| {
        let mut sum = 0.0;
        for j in 0..=i {
            sum += x[j];
        }
        y[i] += a * sum;
    });
}

/// `v[i] ← v[i] · (1 − a) + a`, `i + 1` times, for the rows `lo..hi`.
#[task(reads = v[lo..hi], writes = v[lo..hi])]
pub fn tri_self_rows(b: &Block, v: &mut [f64], a: f64, lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| {
        let mut value = v[i];
        for _ in 0..=i {
            value = value * (1.0 - a) + a;
        }
        v[i] = value;
    });
}

task_region! {
    /// The paper's `C(a, X, Y, N)` on resident vectors, `rows` rows per task.
    pub fn tri(x: &DeviceArray<f64>, y: &mut DeviceArray<f64>, a: f64, rows: usize) {
        let n = y.len();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + rows).min(n);
            spawn!(tri_rows(x, y, a, lo, hi));
            lo = hi;
        }
    }
}

task_region! {
    /// Triangular work on one resident vector, `rows` rows per task (see the module docs).
    pub fn tri_self(v: &mut DeviceArray<f64>, a: f64, rows: usize) {
        let n = v.len();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + rows).min(n);
            spawn!(tri_self_rows(v, a, lo, hi));
            lo = hi;
        }
    }
}

/// The sequential reference of [`tri`].
#[cfg(not(target_arch = "nvptx64"))]
pub fn tri_reference(x: &[f64], y: &mut [f64], a: f64) {
    let mut sum = 0.0;
    for (i, y) in y.iter_mut().enumerate() {
        sum += x[i];
        *y += a * sum;
    }
}

/// The sequential reference of [`tri_self`].
#[cfg(not(target_arch = "nvptx64"))]
pub fn tri_self_reference(v: &mut [f64], a: f64) {
    for (i, v) in v.iter_mut().enumerate() {
        for _ in 0..=i {
            *v = *v * (1.0 - a) + a;
        }
    }
}
