use taskweave::task;

#[task(reads = n[0..4], writes = a[0..4])]
fn fill(a: &mut [f32], n: usize) {
    a[0] = n as f32;
}

fn main() {}
