use taskweave::task;

#[task(writes = a[lo..hi])]
fn zero(a: &mut [f32], (lo, hi): (usize, usize)) {
    a[lo] = 0.0;
    a[hi - 1] = 0.0;
}

fn main() {}
