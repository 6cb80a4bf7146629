use taskweave::task;

#[task(reads = a[0..4])]
fn clobber(a: &[f32]) {
    a[0] = 1.0;
}

fn main() {}
