use taskweave::task;

#[task(writes = a[0..4])]
fn zero(a: &[f32]) {
    let _ = a[0];
}

fn main() {}
