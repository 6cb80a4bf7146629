use taskweave::task_region;

task_region! {
    fn region(a: &mut [f32]) -> usize {
        a.len()
    }
}

fn main() {}
