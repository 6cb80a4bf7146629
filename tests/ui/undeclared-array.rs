use taskweave::task;

#[task(writes = a[0..4])]
fn copy(a: &mut [f32], b: &[f32]) {
    a[0] = b[0];
}

fn main() {}
