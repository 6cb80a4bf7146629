use taskweave::task;

#[task(writes = a[0..1])]
fn set(a: &mut [f32])
where
    f32: Copy,
{
    a[0] = 1.0;
}

fn main() {}
