use taskweave::task;

#[task(writes = a[0..1])]
fn set(a: &mut [f32], _: ...) {
    a[0] = 1.0;
}

fn main() {}
