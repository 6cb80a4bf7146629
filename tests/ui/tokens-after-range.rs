use taskweave::task;

#[task(writes = a[0..1, 2])]
fn set(a: &mut [f32]) {
    a[0] = 1.0;
}

fn main() {}
