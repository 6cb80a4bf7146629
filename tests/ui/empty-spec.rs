use taskweave::task;

#[task]
fn nothing(a: &mut [f32]) {
    a[0] = 1.0;
}

fn main() {}
