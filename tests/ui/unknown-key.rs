use taskweave::task;

#[task(read = a[0..4], writes = b[0..4])]
fn copy(a: &[f32], b: &mut [f32]) {
    b[0] = a[0];
}

fn main() {}
