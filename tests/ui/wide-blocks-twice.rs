use taskweave::{Block, task};

#[task(blocks = 2, writes = a[..], blocks = 4)]
fn split(b: &Block, a: &mut [f32]) {
    let _ = (b, a);
}

fn main() {}
