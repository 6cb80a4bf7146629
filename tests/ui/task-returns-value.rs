use taskweave::task;

#[task(reads = a[0..4])]
fn sum(a: &[f32]) -> f32 {
    a[0] + a[1] + a[2] + a[3]
}

fn main() {}
