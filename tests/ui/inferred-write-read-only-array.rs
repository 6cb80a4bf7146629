use taskweave::task;

// With no ranges declared, `a: &[f32]` is inferred as a read of the whole array: still read-only.
#[task]
fn clobber(a: &[f32]) {
    a[0] = 1.0;
}

fn main() {}
