use taskweave::task_region;

task_region! {
    fn region(a: &mut [f32], (lo, hi): (usize, usize)) {
        let _ = (a, lo, hi);
    }
}

fn main() {}
