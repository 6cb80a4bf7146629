use taskweave::task;

#[task(writes = a[])]
fn zero(a: &mut [f32]) {
    a[0] = 0.0;
}

fn main() {}
