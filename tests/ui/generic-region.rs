use taskweave::task_region;

task_region! {
    fn region<T: Copy>(a: &mut [T]) {
        let _ = a;
    }
}

fn main() {}
