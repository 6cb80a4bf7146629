use taskweave::task;

#[task(writes = a[0..1])]
fn set(a: &mut [f32], x: &u32) {
    a[0] = *x as f32;
}

fn main() {}
