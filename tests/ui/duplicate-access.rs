use taskweave::task;

#[task(reads = [a[0..n], a[0..n]], writes = b[0..n])]
fn copy(a: &[f32], b: &mut [f32], n: usize) {
    b[0] = a[n - 1];
}

fn main() {}
