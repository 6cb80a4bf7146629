use taskweave::task_region;

fn helper(_: usize) {}

task_region! {
    fn region(a: &mut [f32], n: usize) {
        let _ = a;
        spawn!(helper(n));
    }
}

fn main() {}
