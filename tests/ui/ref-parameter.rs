use taskweave::task;

#[task(writes = a[0..1])]
fn set(a: &mut [f32], ref x: f32) {
    a[0] = *x;
}

fn main() {}
