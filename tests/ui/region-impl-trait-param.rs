use taskweave::task_region;

task_region! {
    fn region(a: &mut [f32], n: impl Copy) {
        let _ = (a, n);
    }
}

fn main() {}
