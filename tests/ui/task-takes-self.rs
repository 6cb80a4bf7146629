use taskweave::task;

#[task(writes = a[0..1])]
fn set(self, a: &mut [f32]) {
    a[0] = 1.0;
}

fn main() {}
