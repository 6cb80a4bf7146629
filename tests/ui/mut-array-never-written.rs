use taskweave::task;

#[task(reads = a[0..4], writes = out[0..1])]
fn sum(a: &mut [f32], out: &mut [f32]) {
    out[0] = a[0] + a[1] + a[2] + a[3];
}

fn main() {}
