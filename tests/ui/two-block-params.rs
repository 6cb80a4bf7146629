use taskweave::{Block, task};

#[task(writes = a[0..4])]
fn zero(b: &Block, a: &mut [f32], c: &Block) {
    b.par_for(0..4, |i| a[i] = 0.0);
    c.sync();
}

fn main() {}
