//! An `unsafe fn` task: the generated dispatch calls it inside `unsafe` (the only `unsafe` the
//! task macro emits for the task's own sake), and `scripts/miri.sh` runs this test so that Miri
//! sees that call.

use taskweave::{Runtime, task, task_region};

/// Doubles `v[i]`.
///
/// # Safety
/// None beyond a safe task's: `unsafe` here only marks the function, as a user may.
#[task(reads = v[i..i + 1], writes = v[i..i + 1])]
unsafe fn double(v: &mut [u32], i: usize) {
    v[i] *= 2;
}

task_region! {
    /// One `double` per element.
    fn doubles(v: &mut [u32]) {
        for i in 0..v.len() {
            spawn!(double(v, i));
        }
    }
}

#[test]
fn an_unsafe_fn_task_runs_like_any_other() {
    let mut v: Vec<u32> = (0..5).collect();
    let report = doubles(&mut v)
        .run(&Runtime::cpu_with(2))
        .expect("the region runs");
    assert_eq!(report.tasks, 5);
    assert_eq!(v, [0, 2, 4, 6, 8]);
}
