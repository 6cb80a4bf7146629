use taskweave::task_region;

task_region! {
    fn region(self, a: &mut [f32]) {
        let _ = a;
    }
}

fn main() {}
