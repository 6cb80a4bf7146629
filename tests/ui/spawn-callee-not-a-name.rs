use taskweave::{task, task_region};

#[task(writes = a[0..1])]
fn set(a: &mut [f32]) {
    a[0] = 1.0;
}

task_region! {
    fn region(a: &mut [f32]) {
        spawn!((set)(a));
    }
}

fn main() {}
