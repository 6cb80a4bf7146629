use taskweave::{Block, task, task_region};

#[task(reads = a[0..4], writes = a[0..4])]
fn double(b: &Block, a: &mut [f32]) {
    b.par_for(0..4, |i| a[i] *= 2.0);
}

task_region! {
    fn region(a: &[f32]) {
        spawn!(double(a));
    }
}

fn main() {}
