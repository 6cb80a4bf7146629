use taskweave::{Block, task};

#[task(writes = a[..], blocks = 0)]
fn split(b: &Block, a: &mut [f32]) {
    let _ = (b, a);
}

fn main() {}
