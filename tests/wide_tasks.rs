//! Wide tasks (`#[task(blocks = K)]`) on the CPU backend: every rank of a gang runs once, the gang
//! barrier orders what the ranks write, wide tasks beside one-block ones give the sequential
//! result under every policy, checked mode covers each rank's accesses, and a gang that cannot
//! run is a clear error rather than a hang.
//!
//! This crate has no `build.rs`, so its regions have no PTX; `Runtime::cpu()` needs none.

use taskweave::{Backend, Block, Error, Policy, Runtime, task, task_region};

// ---------------------------------------------------------------------------------------------
// Tasks.

/// Each of the gang's 4 blocks writes its rank + 1 over its quarter of `out[lo..hi]`.
#[task(writes = out[lo..hi], blocks = 4)]
fn quarters(b: &Block, out: &mut [u32], lo: usize, hi: usize) {
    let g = b.gang();
    let share = (hi - lo).div_ceil(g.size() as usize);
    let start = (lo + g.rank() as usize * share).min(hi);
    let end = (start + share).min(hi);
    b.par_for(start..end, |i| out[i] += g.rank() + 1);
}

/// Three blocks: rank `r` writes `a[lo + r]`, the gang meets, then rank `r` copies its neighbour's
/// `a[lo + (r + 1) % 3]` into `b[lo + r]`. Without the barrier the copy could read the old value.
#[task(reads = a[lo..lo + 3], writes = [a[lo..lo + 3], c[lo..lo + 3]], blocks = 3)]
fn rotate(b: &Block, a: &mut [u64], c: &mut [u64], lo: usize, seed: u64) {
    let g = b.gang();
    let r = g.rank() as usize;
    for round in 0..4u64 {
        if b.thread() == 0 {
            a[lo + r] = seed * 10 + round * 3 + r as u64;
        }
        g.sync();
        if b.thread() == 0 {
            c[lo + r] += a[lo + (r + 1) % 3];
        }
        g.sync();
    }
}

/// `v[i] = v[i] * 3 + 1` over `lo..hi`: a one-block task.
#[task(reads = v[lo..hi], writes = v[lo..hi])]
fn step(b: &Block, v: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| v[i] = v[i].wrapping_mul(3).wrapping_add(1));
}

/// A wide task over `v[lo..hi]` whose ranks share the range: `v[i] = v[i] ^ (i * 7)` by rank
/// `i % size`, then (after the gang barrier) `v[lo] += v[hi - 1]` by rank 0.
#[task(reads = v[lo..hi], writes = v[lo..hi], blocks = 2)]
fn mix(b: &Block, v: &mut [u32], lo: usize, hi: usize) {
    let g = b.gang();
    b.par_for(lo..hi, |i| {
        if i % g.size() as usize == g.rank() as usize {
            v[i] ^= (i as u32).wrapping_mul(7);
        }
    });
    g.sync();
    if g.rank() == 0 && b.thread() == 0 {
        v[lo] = v[lo].wrapping_add(v[hi - 1]);
    }
}

/// Rank 1 of the gang writes `v[hi]`, one past its declared range.
#[task(writes = v[lo..hi], blocks = 2)]
fn overreach(b: &Block, v: &mut [u32], lo: usize, hi: usize) {
    if b.gang().rank() == 1 && b.thread() == 0 {
        v[hi] = 7;
    } else if b.thread() == 0 {
        v[lo] = 1;
    }
}

/// Rank 2 panics while the others wait for it at the gang barrier.
#[task(writes = v[..], blocks = 3)]
fn falter(b: &Block, v: &mut [u32]) {
    let g = b.gang();
    if g.rank() == 2 {
        panic!("rank 2 gives up");
    }
    if b.thread() == 0 {
        v[g.rank() as usize] = 1;
    }
    g.sync();
}

// ---------------------------------------------------------------------------------------------
// Regions.

task_region! {
    fn quartered(out: &mut [u32], spans: usize) {
        let len = out.len() / spans;
        for s in 0..spans {
            spawn!(quarters(out, s * len, (s + 1) * len));
        }
    }
}

task_region! {
    fn rotations(a: &mut [u64], c: &mut [u64], gangs: usize) {
        for k in 0..gangs {
            spawn!(rotate(a, c, 3 * k, k as u64));
        }
    }
}

task_region! {
    /// Rounds of one-block steps over blocks of `v` and wide mixes over pairs of blocks.
    fn mixed(v: &mut [u32], rounds: usize, block: usize) {
        let blocks = v.len() / block;
        for round in 0..rounds {
            for k in 0..blocks {
                spawn!(step(v, k * block, (k + 1) * block));
            }
            for k in (round % 2..blocks.saturating_sub(1)).step_by(2) {
                spawn!(mix(v, k * block, (k + 2) * block));
            }
        }
    }
}

task_region! {
    fn overreaching(v: &mut [u32]) {
        spawn!(overreach(v, 0, 4));
    }
}

task_region! {
    fn faltering(v: &mut [u32]) {
        spawn!(falter(v));
    }
}

// ---------------------------------------------------------------------------------------------
// References.

/// [`mixed`], one task after another.
fn mixed_reference(v: &mut [u32], rounds: usize, block: usize) {
    let blocks = v.len() / block;
    for round in 0..rounds {
        for x in v.iter_mut() {
            *x = x.wrapping_mul(3).wrapping_add(1);
        }
        for k in (round % 2..blocks.saturating_sub(1)).step_by(2) {
            let (lo, hi) = (k * block, (k + 2) * block);
            for (i, x) in v.iter_mut().enumerate().take(hi).skip(lo) {
                *x ^= (i as u32).wrapping_mul(7);
            }
            v[lo] = v[lo].wrapping_add(v[hi - 1]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.

#[test]
fn every_rank_of_every_gang_runs_once() {
    for policy in Policy::ALL {
        for lanes in [1, 2] {
            let mut out = vec![0u32; 8 * 37];
            quartered(&mut out, 8)
                .policy(policy)
                .cpu_lanes(lanes)
                .run(&Runtime::cpu_with(5))
                .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
            for span in out.chunks(37) {
                let share = 37usize.div_ceil(4);
                let want: Vec<u32> = (0..37).map(|i| (i / share) as u32 + 1).collect();
                assert_eq!(span, want.as_slice(), "{policy:?}, {lanes} lanes");
            }
        }
    }
}

#[test]
fn the_gang_barrier_orders_the_ranks_writes() {
    let gangs = 24;
    let mut want = vec![0u64; 3 * gangs];
    for k in 0..gangs {
        for r in 0..3 {
            let next = (r + 1) % 3;
            want[3 * k + r] = (0..4)
                .map(|round| k as u64 * 10 + round * 3 + next as u64)
                .sum();
        }
    }
    for policy in Policy::ALL {
        let (mut a, mut c) = (vec![0u64; 3 * gangs], vec![0u64; 3 * gangs]);
        rotations(&mut a, &mut c, gangs)
            .policy(policy)
            .run(&Runtime::cpu_with(4))
            .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
        assert_eq!(c, want, "{policy:?}");
    }
}

#[test]
fn wide_tasks_beside_narrow_ones_give_the_sequential_result() {
    let (rounds, block) = (6, 5);
    let v0: Vec<u32> = (0..40u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut want = v0.clone();
    mixed_reference(&mut want, rounds, block);
    for policy in Policy::ALL {
        for workers in 2..=4 {
            for lanes in [1, 3] {
                let mut v = v0.clone();
                let report = mixed(&mut v, rounds, block)
                    .policy(policy)
                    .cpu_lanes(lanes)
                    .run(&Runtime::cpu_with(workers))
                    .unwrap_or_else(|e| panic!("{policy:?}, {workers} workers: {e}"));
                assert_eq!(v, want, "{policy:?}, {workers} workers, {lanes} lanes");
                // A gang counts once, whichever of its blocks ended it.
                let ran: u32 = report.worker_stats.iter().map(|s| s.tasks).sum();
                assert_eq!(ran as usize, report.tasks, "{policy:?}");
            }
        }
    }
}

#[test]
fn checked_mode_covers_every_rank() {
    let mut v = vec![0u32; 6];
    let err = overreaching(&mut v)
        .checked(true)
        .run(&Runtime::cpu_with(2))
        .expect_err("rank 1 writes outside its declared range");
    let text = err.to_string();
    assert!(matches!(err, Error::TaskPanicked { .. }), "{text}");
    assert!(text.contains("overreach"), "{text}");
    assert_eq!(v, vec![0; 6], "the arrays are left as they were");
}

#[test]
fn a_gang_wider_than_the_workers_is_an_error() {
    let mut out = vec![0u32; 8];
    let err = quartered(&mut out, 1)
        .workers(3)
        .run(&Runtime::cpu())
        .expect_err("4 blocks on 3 workers");
    let text = err.to_string();
    assert!(
        matches!(
            err,
            Error::GangTooWide {
                blocks: 4,
                workers: 3,
                ..
            }
        ),
        "{text}"
    );
    assert!(text.contains("`quarters` runs on 4 blocks"), "{text}");
    // Without a worker count the run takes as many as its widest gang needs.
    quartered(&mut out, 1).run(&Runtime::cpu_with(1)).unwrap();
    assert_eq!(out, [1, 1, 2, 2, 3, 3, 4, 4]);
}

#[test]
fn backends_of_one_block_per_task_refuse_wide_tasks() {
    for backend in [
        Backend::Barrier,
        Backend::GridBarrier,
        Backend::Graph,
        Backend::Streams,
    ] {
        let mut out = vec![0u32; 8];
        let err = quartered(&mut out, 1)
            .backend(backend)
            .run(&Runtime::cpu())
            .expect_err("a wide task on a one-block backend");
        let text = err.to_string();
        assert!(
            matches!(err, Error::GangsUnsupported { blocks: 4, .. }),
            "{text}"
        );
        assert!(text.contains("persistent or the CPU backend"), "{text}");
    }
}

#[test]
fn a_rank_that_panics_ends_the_run_with_an_error() {
    for lanes in [1, 2] {
        let mut v = vec![0u32; 3];
        let err = faltering(&mut v)
            .cpu_lanes(lanes)
            .run(&Runtime::cpu_with(3))
            .expect_err("rank 2 panics");
        let text = err.to_string();
        assert!(matches!(err, Error::TaskPanicked { .. }), "{text}");
        assert!(text.contains("falter"), "{text}");
        assert_eq!(v, vec![0; 3], "the arrays are left as they were");
    }
}
