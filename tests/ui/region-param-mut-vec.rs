use taskweave::task_region;

task_region! {
    fn region(a: &mut Vec<f32>) {
        let _ = a;
    }
}

fn main() {}
