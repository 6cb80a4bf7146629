use taskweave::task_region;

task_region! {
    fn region(name: &str) {
        let _ = name;
    }
}

fn main() {}
