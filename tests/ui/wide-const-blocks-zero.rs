use taskweave::{Block, task};

const WIDTH: u32 = 0;

// A constant is checked where it is evaluated.
#[task(writes = a[..], blocks = WIDTH)]
fn split(b: &Block, a: &mut [f32]) {
    let _ = (b, a);
}

fn main() {}
