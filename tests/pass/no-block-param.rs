//! A task without a `&Block` parameter: its body runs once per thread of the block, so here every
//! lane writes the same value.

use taskweave::{task, task_region};

#[task(writes = out[i..i + 1])]
fn set(out: &mut [i64], i: usize, value: i64) {
    out[i] = value;
}

task_region! {
    fn fill(out: &mut [i64], value: i64) {
        for i in 0..out.len() {
            spawn!(set(out, i, value - i as i64));
        }
    }
}

fn main() {
    let mut out = vec![0i64; 5];
    fill(&mut out, 7)
        .cpu_lanes(3)
        .run(&taskweave::Runtime::cpu())
        .expect("the region runs");
    assert_eq!(out, [7, 6, 5, 4, 3]);
}
