use taskweave::task;

#[task(writes = a[i])]
fn set(a: &mut [f32], i: usize) {
    a[i] = 1.0;
}

fn main() {}
