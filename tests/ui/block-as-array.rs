use taskweave::{Block, task};

#[task(reads = b[0..1], writes = a[0..1])]
fn set(b: &Block, a: &mut [f32]) {
    let _ = b;
    a[0] = 1.0;
}

fn main() {}
