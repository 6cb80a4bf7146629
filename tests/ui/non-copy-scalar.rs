use taskweave::task;

#[task(writes = a[0..1])]
fn label(a: &mut [f32], name: String) {
    a[0] = name.len() as f32;
}

fn main() {}
