//! The quickstart's kernels: two tasks and a region. This library compiles for the host and, from
//! `build.rs`, for the GPU.

use taskweave::{Block, math, task, task_region};

/// `y = a·x + y` over tile `t` of `n` elements.
#[task(reads = x[t * n..(t + 1) * n], writes = y[t * n..(t + 1) * n])]
pub fn axpy(b: &Block, x: &[f32], y: &mut [f32], t: usize, n: usize, a: f32) {
    b.par_for(t * n..(t + 1) * n, |i| y[i] = math::fma(a, x[i], y[i]));
}

/// `out[0] = √(Σ y²)`, once every tile of `y` is written.
#[task]
pub fn norm(b: &Block, y: &[f32], out: &mut [f32]) {
    if b.thread() == 0 {
        let mut sum = 0.0f32;
        for i in 0..y.len() {
            sum += y[i] * y[i];
        }
        out[0] = math::sqrt(sum);
    }
    b.sync();
}

task_region! {
    /// `y += a·x`, one task per tile of `n` elements, then the norm of `y`.
    pub fn axpy_norm(x: &[f32], y: &mut [f32], out: &mut [f32], n: usize, a: f32) {
        for t in 0..x.len() / n {
            spawn!(axpy(x, y, t, n, a));
        }
        spawn!(norm(y, out));
    }
}
