use taskweave::task_region;

task_region! {
    struct Region;
}

fn main() {}
