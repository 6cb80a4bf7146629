use taskweave::{Block, Runtime, task, task_region};

#[task]
fn bump(b: &Block, x: &mut [u32]) {
    b.par_for(0..x.len(), |i| x[i] += 1);
}

task_region! {
    fn bump_all(x: &mut [u32]) {
        spawn!(bump(x));
    }
}

// A region borrows its runtime for the whole run, so the runtime cannot be dropped under it.
fn main() {
    let runtime = Runtime::cpu();
    let shared = &runtime;
    let mut x = vec![0u32; 4];
    std::thread::scope(|s| {
        s.spawn(move || bump_all(&mut x).run(shared));
        drop(runtime);
    });
}
