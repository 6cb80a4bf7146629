//! Every access form of the grammar: several keys, repeated keys, lists, every kind of range, and a
//! range-valued function call.

use taskweave::{Block, task, task_region};

/// The element range of tile `t` of `n` elements.
pub const fn tile(t: usize, n: usize) -> core::ops::Range<usize> {
    t * n..(t + 1) * n
}

/// Repeated keys, a list under one key, and the same range under both keys (read-write).
#[task(
    reads = x[lo..hi],
    reads = [y[..], z[lo..=last]],
    writes = z[lo..=last],
    writes = w[lo..]
)]
fn keys(
    b: &Block,
    x: &[u32],
    y: &[u32],
    z: &mut [u32],
    w: &mut [u32],
    lo: usize,
    hi: usize,
    last: usize,
) {
    b.par_for(lo..hi, |i| z[i] += x[i] + y[0]);
    b.par_for(lo..w.len(), |i| w[i] = y[y.len() - 1]);
    let _ = last;
}

/// `..hi` and `..`: open starts.
#[task(reads = [x[..hi], y[..]], writes = [z[..hi]])]
fn open(b: &Block, x: &[u32], y: &[u32], z: &mut [u32], hi: usize) {
    b.par_for(0..hi, |i| z[i] = x[i] + y.len() as u32);
}

/// A range-valued call: `a[tile(t, n)]`.
#[task(reads = a[tile(t, n)], writes = c[tile(t, n)])]
fn tiled(b: &Block, a: &[u32], c: &mut [u32], t: usize, n: usize) {
    b.par_for(tile(t, n), |i| c[i] = 2 * a[i]);
}

/// A range-valued block expression.
#[task(writes = c[{ t * n..t * n + n }])]
fn blocky(b: &Block, c: &mut [u32], t: usize, n: usize) {
    b.par_for(t * n..t * n + n, |i| c[i] += 1);
}

task_region! {
    fn all_forms(x: &[u32], y: &[u32], z: &mut [u32], w: &mut [u32], n: usize) {
        spawn!(keys(x, y, z, w, 1, 3, 2));
        spawn!(open(x, y, z, 1));
        for t in 0..x.len() / n {
            spawn!(tiled(x, z, t, n));
            spawn!(blocky(z, t, n));
        }
    }
}

fn main() {
    let x = [1u32, 2, 3, 4];
    let y = [10u32, 20];
    let mut z = [0u32; 4];
    let mut w = [0u32; 4];
    let report = all_forms(&x, &y, &mut z, &mut w, 2)
        .run(&taskweave::Runtime::cpu())
        .expect("the region runs");
    assert_eq!(report.tasks, 2 + 2 * 2);
    // `tiled` overwrites `z` with `2 * x`, `blocky` adds one.
    assert_eq!(z, [3, 5, 7, 9]);
    assert_eq!(w, [0, 20, 20, 20]);
}
