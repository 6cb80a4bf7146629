use taskweave::task_region;

task_region! {
    fn region(#[out] x: &mut [f32], #[output] n: usize) {
        let _ = (x, n);
    }
}

fn main() {}
