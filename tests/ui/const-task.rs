use taskweave::task;

#[task(writes = a[0..1])]
const fn set(a: &mut [f32]) {
    let _ = a;
}

fn main() {}
