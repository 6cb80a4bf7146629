//! A region with a read-only and a read-write array, run on the CPU backend.

use taskweave::{Block, task, task_region};

/// `y[i] += k * x[i]` over `lo..hi`.
#[task(reads = [x[lo..hi], y[lo..hi]], writes = y[lo..hi])]
fn axpy(b: &Block, x: &[f32], y: &mut [f32], lo: usize, hi: usize, k: f32) {
    b.par_for(lo..hi, |i| y[i] += k * x[i]);
}

task_region! {
    /// `y += k * x`, in chunks of `chunk`, twice.
    pub fn axpy_twice(x: &[f32], y: &mut [f32], chunk: usize, k: f32) {
        for _ in 0..2 {
            let mut lo = 0;
            while lo < x.len() {
                let hi = (lo + chunk).min(x.len());
                spawn!(axpy(x, y, lo, hi, k));
                lo = hi;
            }
        }
    }
}

fn main() {
    let x: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let mut y = vec![1.0f32; 10];
    let report = axpy_twice(&x, &mut y, 4, 0.5)
        .run(&taskweave::Runtime::cpu())
        .expect("the region runs");
    assert_eq!(report.tasks, 6);
    // Each chunk's second task depends on its first: three edges.
    assert_eq!(report.edges, 3);
    assert_eq!(report.critical_path, 2);
    let expected: Vec<f32> = x.iter().map(|v| 1.0 + v).collect();
    assert_eq!(y, expected);
    assert_eq!(x, (0..10).map(|i| i as f32).collect::<Vec<_>>());
}
