use taskweave::task;

#[task(writes = a[0..1])]
fn set(a: &mut [f32], x: *const f32) {
    a[0] = unsafe { *x };
}

fn main() {}
