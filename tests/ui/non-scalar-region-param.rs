use taskweave::task_region;

task_region! {
    fn region(a: &mut [f32], names: Vec<String>) {
        let _ = (a, names);
    }
}

fn main() {}
