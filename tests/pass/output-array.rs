//! An `#[output]` array: written by one task before another reads it, on the CPU backend; a
//! region reading an element no earlier task writes is refused at inspection.

use taskweave::{Block, Error, task, task_region};

/// `squares[lo..hi] = x[lo..hi]²`.
#[task(reads = x[lo..hi], writes = squares[lo..hi])]
fn square(b: &Block, x: &[f32], squares: &mut [f32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| squares[i] = x[i] * x[i]);
}

/// `sums[at] = Σ squares[lo..hi]`.
#[task(reads = squares[lo..hi], writes = sums[at..at + 1])]
fn sum(b: &Block, squares: &[f32], sums: &mut [f32], lo: usize, hi: usize, at: usize) {
    if b.thread() == 0 {
        let mut total = 0.0;
        for i in lo..hi {
            total += squares[i];
        }
        sums[at] = total;
    }
}

task_region! {
    /// The sum of squares of each `chunk` of `x`; with `early`, the last chunk's sum is taken
    /// before its squares are written.
    pub fn sums_of_squares(
        x: &[f32],
        #[output] squares: &mut [f32],
        #[output] sums: &mut [f32],
        chunk: usize,
        early: bool,
    ) {
        let chunks = x.len() / chunk;
        for c in 0..chunks {
            let (lo, hi) = (c * chunk, (c + 1) * chunk);
            if early && c + 1 == chunks {
                spawn!(sum(squares, sums, lo, hi, c));
            }
            spawn!(square(x, squares, lo, hi));
            spawn!(sum(squares, sums, lo, hi, c));
        }
    }
}

fn main() {
    let rt = taskweave::Runtime::cpu();
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let mut squares = vec![0.0f32; 12];
    // One more element than the chunks: no task writes it, and it stays as it was.
    let mut sums = vec![-1.0f32; 4];
    sums_of_squares(&x, &mut squares, &mut sums, 4, false)
        .run(&rt)
        .expect("the region runs");
    assert_eq!(sums, [14.0, 126.0, 366.0, -1.0]);

    let error = sums_of_squares(&x, &mut squares, &mut sums, 4, true)
        .run(&rt)
        .unwrap_err();
    assert!(
        matches!(error, Error::UnwrittenOutput { array: "squares", element: 8, .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("`sum(squares, sums, 8, 12, 2)`"), "{message}");
}
