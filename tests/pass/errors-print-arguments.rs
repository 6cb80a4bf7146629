//! An inspection error prints the task's arguments as the spawn wrote them: arrays by the
//! region's name for them, scalars by value.

use taskweave::{Error, task, task_region};

#[task(writes = a[lo..hi])]
fn fill(a: &mut [f32], lo: usize, hi: usize, value: f32) {
    a[lo] = value;
    let _ = hi;
}

task_region! {
    fn region(buffer: &mut [f32], flag: bool, c: char) {
        spawn!(fill(buffer, 60, 70, 2.0f32));
        let _ = (flag, c);
    }
}

#[task(writes = out[i..i + 1])]
fn mark(out: &mut [i64], i: usize, by: i64, on: bool, tag: char) {
    out[i] = if on { by } else { tag as i64 };
}

task_region! {
    fn marks(out: &mut [i64]) {
        spawn!(mark(out, 9, -4, true, 'x'));
    }
}

fn main() {
    let mut buffer = vec![0.0f32; 64];
    let error = region(&mut buffer, true, 'c')
        .run(&taskweave::Runtime::cpu())
        .unwrap_err();
    assert!(matches!(error, Error::OutOfBounds { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("`fill(buffer, 60, 70, 2.0)`"), "{message}");

    let mut out = vec![0i64; 4];
    let message = marks(&mut out)
        .run(&taskweave::Runtime::cpu())
        .unwrap_err()
        .to_string();
    assert!(message.contains("`mark(out, 9, -4, true, 'x')`"), "{message}");
}
