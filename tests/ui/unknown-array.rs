use taskweave::{Block, task};

#[task(reads = b[0..4], writes = a[0..4])]
fn copy(bk: &Block, a: &mut [f32]) {
    bk.par_for(0..4, |i| a[i] = 0.0);
}

fn main() {}
