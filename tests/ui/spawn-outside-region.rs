use taskweave::{spawn, task};

#[task(writes = a[0..1])]
fn set(a: &mut [f32]) {
    a[0] = 1.0;
}

fn main() {
    let mut a = [0.0f32; 1];
    spawn!(set(&mut a));
}
