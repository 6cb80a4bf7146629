//! Tasks that declare no ranges: `#[task]` and `#[task()]` infer each array's access from its type
//! (`&[T]` reads it all, `&mut [T]` reads and writes it all), and a task may have no array at all.

use taskweave::{Block, task, task_region};

/// `y[i] += x[i]`: reads `x`, reads and writes `y`.
#[task]
fn add(b: &Block, x: &[u32], y: &mut [u32]) {
    b.par_for(0..y.len(), |i| y[i] += x[i]);
}

/// `out[0] = Σ x`: reads `x`, reads and writes `out`.
#[task()]
fn total(b: &Block, x: &[u32], out: &mut [u32]) {
    if b.thread() == 0 {
        out[0] = (0..x.len()).map(|i| x[i]).sum();
    }
    b.sync();
}

/// Touches no array: no dependence at all.
#[task]
fn idle(b: &Block, n: u32) {
    b.par_for(0..n as usize, |_| {});
}

task_region! {
    /// Two readers of `x` (no edge between them), then a writer of `x` after both.
    pub fn readers_then_writer(x: &mut [u32], y: &mut [u32], z: &mut [u32]) {
        spawn!(add(x, y));
        spawn!(total(x, z));
        spawn!(idle(4));
        spawn!(add(y, x));
    }
}

fn main() {
    let (mut x, mut y, mut z) = (vec![1u32, 2, 3], vec![10u32, 20, 30], vec![0u32]);
    let ins = readers_then_writer(&mut x, &mut y, &mut z)
        .inspect()
        .expect("inspection succeeds");
    let edges: Vec<(u32, u32)> = (0..4u32)
        .flat_map(|t| {
            ins.dag
                .children_of(t)
                .iter()
                .map(move |&c| (t, c))
                .collect::<Vec<_>>()
        })
        .collect();
    // 0 and 1 only read `x`: concurrent. 3 writes `x` after both readers and reads `y` after 0.
    assert_eq!(edges, [(0, 3), (1, 3)]);
    assert_eq!(ins.dag.ready, [0, 1, 2]);

    readers_then_writer(&mut x, &mut y, &mut z)
        .cpu_lanes(2)
        .run(&taskweave::Runtime::cpu())
        .expect("the region runs");
    assert_eq!(y, [11, 22, 33]);
    assert_eq!(z, [6]);
    assert_eq!(x, [12, 24, 36]);
}
