use taskweave::task_region;

task_region! {
    async fn region(a: &mut [f32]) {
        let _ = a;
    }
}

fn main() {}
