use taskweave::{task, task_region};

#[task(writes = a[0..1])]
fn set(a: &mut [f32], x: f32) {
    a[0] = x;
}

task_region! {
    fn region(a: &mut [f32], x: f32) {
        spawn!(set(x, x));
    }
}

fn main() {}
