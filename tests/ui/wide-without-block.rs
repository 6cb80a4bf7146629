use taskweave::task;

// Every block of the gang would do the same work: the body cannot tell its share.
#[task(writes = a[..], blocks = 4)]
fn split(a: &mut [f32]) {
    a[0] = 1.0;
}

fn main() {}
