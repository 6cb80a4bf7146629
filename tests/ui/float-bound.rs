use taskweave::task;

#[task(writes = a[0..hi])]
fn zero(a: &mut [f32], hi: f32) {
    a[0] = hi;
}

fn main() {}
