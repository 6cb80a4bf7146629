use taskweave::task_region;

task_region! {
    fn region(#[output] x: &[f32], n: usize) {
        let _ = (x, n);
    }
}

fn main() {}
