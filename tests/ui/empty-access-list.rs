use taskweave::task;

#[task(reads = [], writes = a[0..4])]
fn zero(a: &mut [f32]) {
    a[0] = 0.0;
}

fn main() {}
