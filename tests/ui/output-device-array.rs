use taskweave::task_region;

task_region! {
    fn region(#[output] x: &mut taskweave::DeviceArray<f32>) {
        let _ = x;
    }
}

fn main() {}
