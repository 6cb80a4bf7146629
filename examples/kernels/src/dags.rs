//! The scheduler benchmark's DAGs: many independent tasks, a T×T wavefront and a chain, each with
//! tasks that spin for a given number of cycles (0 for empty tasks).
//!
//! Every task also writes one word of its array, so a run can be checked: the independent tasks
//! write 1, wavefront cell `(i, j)` writes `i + j + 1` (one more than the larger of its two inputs),
//! chain link `k` writes `k + 1`.

use taskweave::{Block, task, task_region};

/// Spins thread 0 of the block for about `cycles` clock cycles (nanoseconds on the CPU backend).
#[inline(always)]
pub fn spin(b: &Block, cycles: u64) {
    if cycles > 0 && b.thread() == 0 {
        let start = taskweave::__private::device::arch::clock64();
        while taskweave::__private::device::arch::clock64().wrapping_sub(start) < cycles {}
    }
}

/// One independent task: marks `x[i]`.
#[task(writes = x[i..i + 1])]
pub fn touch(b: &Block, x: &mut [u32], i: usize, cycles: u64) {
    spin(b, cycles);
    if b.thread() == 0 {
        x[i] = 1;
    }
}

/// The range of the wavefront cell above `(i, j)`, empty on the first row.
pub const fn up(i: usize, j: usize, t: usize) -> core::ops::Range<usize> {
    if i == 0 {
        0..0
    } else {
        (i - 1) * t + j..(i - 1) * t + j + 1
    }
}

/// The range of the wavefront cell left of `(i, j)`, empty on the first column.
pub const fn left(i: usize, j: usize, t: usize) -> core::ops::Range<usize> {
    if j == 0 {
        0..0
    } else {
        i * t + j - 1..i * t + j
    }
}

/// Wavefront cell `(i, j)`: waits for `(i - 1, j)` and `(i, j - 1)`.
#[task(reads = [g[up(i, j, t)], g[left(i, j, t)]], writes = g[i * t + j..i * t + j + 1])]
pub fn cell(b: &Block, g: &mut [u32], i: usize, j: usize, t: usize, cycles: u64) {
    spin(b, cycles);
    if b.thread() == 0 {
        let above = if i > 0 { g[(i - 1) * t + j] } else { 0 };
        let before = if j > 0 { g[i * t + j - 1] } else { 0 };
        g[i * t + j] = above.max(before) + 1;
    }
}

/// Chain link `k`: waits for link `k - 1`.
#[task(reads = c[k.saturating_sub(1)..k], writes = c[k..k + 1])]
pub fn link(b: &Block, c: &mut [u32], k: usize, cycles: u64) {
    spin(b, cycles);
    if b.thread() == 0 {
        c[k] = if k > 0 { c[k - 1] + 1 } else { 1 };
    }
}

task_region! {
    /// `x.len()` independent tasks.
    pub fn independent(x: &mut [u32], cycles: u64) {
        for i in 0..x.len() {
            spawn!(touch(x, i, cycles));
        }
    }
}

task_region! {
    /// A `t × t` wavefront over `g` (`t * t` cells), spawned row by row.
    pub fn wavefront(g: &mut [u32], t: usize, cycles: u64) {
        for i in 0..t {
            for j in 0..t {
                spawn!(cell(g, i, j, t, cycles));
            }
        }
    }
}

task_region! {
    /// A chain of `c.len()` tasks.
    pub fn chain(c: &mut [u32], cycles: u64) {
        for k in 0..c.len() {
            spawn!(link(c, k, cycles));
        }
    }
}

/// Checks a finished run of [`independent`].
pub fn check_independent(x: &[u32]) -> bool {
    x.iter().all(|&v| v == 1)
}

/// Checks a finished run of [`wavefront`].
pub fn check_wavefront(g: &[u32], t: usize) -> bool {
    (0..t * t).all(|e| g[e] as usize == e / t + e % t + 1)
}

/// Checks a finished run of [`chain`].
pub fn check_chain(c: &[u32]) -> bool {
    c.iter().enumerate().all(|(k, &v)| v as usize == k + 1)
}

/// Adds one to `x[i]`.
#[task(reads = x[i..i + 1], writes = x[i..i + 1])]
pub fn bump(b: &Block, x: &mut [u32], i: usize) {
    if b.thread() == 0 {
        x[i] += 1;
    }
}

task_region! {
    /// One `bump` per element of `x`: passed a `DeviceArray`, nothing is copied around a run.
    pub fn bump_all(x: &mut [u32]) {
        for i in 0..x.len() {
            spawn!(bump(x, i));
        }
    }
}

/// Adds one to `x[lo..hi]`.
#[task(reads = x[lo..hi], writes = x[lo..hi])]
pub fn bump_range(b: &Block, x: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| x[i] += 1);
}

task_region! {
    /// One `bump_range` per `chunk` elements of a host array: few tasks over much data, for
    /// timing transfers.
    pub fn bump_chunks(x: &mut [u32], chunk: usize) {
        let mut lo = 0;
        while lo < x.len() {
            let hi = (lo + chunk).min(x.len());
            spawn!(bump_range(x, lo, hi));
            lo = hi;
        }
    }
}

/// `x[i] = i + 1` over `lo..hi`, or only at `lo` when `partial`: a task that breaks an output's
/// promise to write every element it declares, for the self-check.
#[task(writes = x[lo..hi])]
pub fn fill_index(b: &Block, x: &mut [u32], lo: usize, hi: usize, partial: bool) {
    if partial {
        if b.thread() == 0 {
            x[lo] = lo as u32 + 1;
        }
    } else {
        b.par_for(lo..hi, |i| x[i] = i as u32 + 1);
    }
}

/// `x[lo..hi] += x[src]`.
#[task(reads = [x[src..src + 1], x[lo..hi]], writes = x[lo..hi])]
pub fn add_from(b: &Block, x: &mut [u32], src: usize, lo: usize, hi: usize) {
    let v = x[src];
    b.par_for(lo..hi, |i| x[i] += v);
}

task_region! {
    /// Fills every other chunk of `chunk` elements of an `#[output]` array with `i + 1` (the
    /// chunks between stay as the host had them; with `partial`, the last chunk filled gets only
    /// its first element), then adds `x[0]` to the second chunk filled, which reads what the
    /// first task wrote.
    pub fn output_chunks(#[output] x: &mut [u32], chunk: usize, partial: bool) {
        let n = x.len() / chunk;
        let mut c = 0;
        while c < n {
            let lo = c * chunk;
            spawn!(fill_index(x, lo, lo + chunk, partial && c + 2 >= n));
            c += 2;
        }
        if n > 2 {
            spawn!(add_from(x, 0, 2 * chunk, 3 * chunk));
        }
    }
}

#[cfg(not(target_arch = "nvptx64"))]
/// What [`output_chunks`] leaves in an array of `n` elements that held `host` everywhere, on a
/// GPU backend (an element declared written but left unwritten is zero there).
pub fn output_chunks_expected(n: usize, chunk: usize, partial: bool, host: u32) -> Vec<u32> {
    let chunks = n / chunk;
    let last = (0..chunks).step_by(2).next_back();
    (0..n)
        .map(|i| {
            let c = i / chunk;
            if c >= chunks || c % 2 == 1 {
                host
            } else if partial && Some(c) == last {
                if i == c * chunk { i as u32 + 1 } else { 0 }
            } else if c == 2 {
                i as u32 + 2
            } else {
                i as u32 + 1
            }
        })
        .collect()
}
