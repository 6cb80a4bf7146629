use taskweave::task;

#[task(writes = a[0..1])]
fn set<T: Copy>(a: &mut [T], x: T) {
    a[0] = x;
}

fn main() {}
