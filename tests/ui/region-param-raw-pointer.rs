use taskweave::task_region;

task_region! {
    fn region(a: *const f32) {
        let _ = a;
    }
}

fn main() {}
