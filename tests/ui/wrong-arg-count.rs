use taskweave::{task, task_region};

#[task(writes = a[i..i + 1])]
fn set(a: &mut [f32], i: usize, x: f32) {
    a[i] = x;
}

task_region! {
    fn region(a: &mut [f32]) {
        spawn!(set(a, 0));
    }
}

fn main() {}
