//! Wide tasks (`#[task(blocks = K)]`) on the CPU backend: every rank of a gang runs once, the gang
//! barrier orders what the ranks write, wide tasks beside one-block ones give the sequential
//! result under every policy, checked mode covers each rank's accesses, and a gang that cannot
//! run is a clear error rather than a hang.
//!
//! This crate has no `build.rs`, so its regions have no PTX; `Runtime::cpu()` needs none.

use taskweave::tile::reference::{self, Matrix};
use taskweave::tile::{self, Alpha, Beta, Op, Rect};
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

macro_rules! gemm_on_a_gang {
    ($blocks:literal, $name:ident) => {
        /// `C = A·op(B) + C` on `m × n` (`k` inner, rows unpadded) shared by a gang of `$blocks`
        /// (4: a grid of parts; 3: parts of rows only).
        #[task(reads = [a[..], b[..], c[..]], writes = c[..], blocks = $blocks)]
        #[allow(clippy::too_many_arguments)]
        fn $name(
            blk: &Block,
            c: &mut [f64],
            a: &[f64],
            b: &[f64],
            m: usize,
            n: usize,
            k: usize,
            bt: bool,
        ) {
            let (op_b, (br, bc)) = if bt { (Op::T, (n, k)) } else { (Op::N, (k, n)) };
            tile::gemm_gang(
                blk,
                c.mat_mut(Rect::new(0, m, n, n)),
                a.mat(Rect::new(0, m, k, k)),
                Op::N,
                b.mat(Rect::new(0, br, bc, bc)),
                op_b,
                Alpha(1.0),
                Beta(1.0),
            );
        }
    };
}

gemm_on_a_gang!(4, gemm4);
gemm_on_a_gang!(3, gemm3);

// ---------------------------------------------------------------------------------------------
// Regions.

task_region! {
    #[allow(clippy::too_many_arguments)]
    fn gang_gemm(c: &mut [f64], a: &[f64], b: &[f64], m: usize, n: usize, k: usize, bt: bool, three: bool) {
        if three {
            spawn!(gemm3(c, a, b, m, n, k, bt));
        } else {
            spawn!(gemm4(c, a, b, m, n, k, bt));
        }
    }
}

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

/// The policies each test runs under: all of them, or under Miri (scripts/miri.sh, which runs
/// these tests for the gang's unsafe code) one dynamic and the static one, so that the
/// interpreter takes seconds rather than minutes.
fn policies() -> &'static [Policy] {
    if cfg!(miri) {
        &[Policy::Grr, Policy::Static]
    } else {
        &Policy::ALL
    }
}

#[test]
fn every_rank_of_every_gang_runs_once() {
    for &policy in policies() {
        for lanes in [1, 2] {
            if cfg!(miri) && lanes == 2 {
                continue;
            }
            // Under Miri, fewer spans and no idle worker: every spin is interpreted.
            let (spans, workers) = if cfg!(miri) { (2, 4) } else { (8, 5) };
            let mut out = vec![0u32; spans * 37];
            quartered(&mut out, spans)
                .policy(policy)
                .cpu_lanes(lanes)
                .run(&Runtime::cpu_with(workers))
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
    let (gangs, workers) = if cfg!(miri) { (2, 3) } else { (24, 4) };
    let mut want = vec![0u64; 3 * gangs];
    for k in 0..gangs {
        for r in 0..3 {
            let next = (r + 1) % 3;
            want[3 * k + r] = (0..4)
                .map(|round| k as u64 * 10 + round * 3 + next as u64)
                .sum();
        }
    }
    for &policy in policies() {
        let (mut a, mut c) = (vec![0u64; 3 * gangs], vec![0u64; 3 * gangs]);
        rotations(&mut a, &mut c, gangs)
            .policy(policy)
            .run(&Runtime::cpu_with(workers))
            .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
        assert_eq!(c, want, "{policy:?}");
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "the same steps as the tests above, for minutes under Miri"
)]
fn wide_tasks_beside_narrow_ones_give_the_sequential_result() {
    let (rounds, block) = (6, 5);
    let v0: Vec<u32> = (0..40u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    let mut want = v0.clone();
    mixed_reference(&mut want, rounds, block);
    for &policy in policies() {
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
fn backends_that_cannot_launch_a_gang_together_refuse_wide_tasks() {
    for backend in [Backend::GridBarrier, Backend::Graph, Backend::Streams] {
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
        assert!(
            text.contains("persistent, the barrier or the CPU"),
            "{text}"
        );
    }
    // The barrier backend runs them (on a GPU; here it has none).
    let mut out = vec![0u32; 8];
    let err = quartered(&mut out, 1)
        .backend(Backend::Barrier)
        .run(&Runtime::cpu())
        .expect_err("no GPU here");
    assert!(matches!(err, Error::NoGpu { .. }), "{err}");
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

#[test]
#[cfg_attr(
    miri,
    ignore = "the tile GEMM takes minutes under Miri; its unsafe code is in group A"
)]
fn a_gemm_shared_by_a_gang_matches_the_reference() {
    for (m, n, k) in [(64, 64, 32), (48, 80, 16), (128, 32, 48)] {
        for bt in [false, true] {
            for three in [false, true] {
                let a = Matrix::<f64>::random(m, k, 0, 1);
                let b = if bt {
                    Matrix::<f64>::random(n, k, 0, 2)
                } else {
                    Matrix::<f64>::random(k, n, 0, 3)
                };
                let mut c = Matrix::<f64>::random(m, n, 0, 4);
                let op_b = if bt { Op::T } else { Op::N };
                let want = reference::gemm(&c, &a, Op::N, &b, op_b, 1.0, 1.0);
                let bound = reference::gemm_bound(&c, &a, Op::N, &b, op_b, 1.0, 1.0);
                assert_eq!((a.rect.offset, b.rect.offset, c.rect.offset), (0, 0, 0));
                gang_gemm(&mut c.data, &a.data, &b.data, m, n, k, bt, three)
                    .shared_bytes(tile::scratch_need(64))
                    .threads(64)
                    .run(&Runtime::cpu_with(4))
                    .unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
                let gamma = 2.0 * (k as f64 + 2.0) * f64::EPSILON;
                reference::assert_close(
                    &c,
                    &want,
                    &bound,
                    gamma,
                    &format!("{m}x{n}x{k} bt={bt} three={three}"),
                );
            }
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "safe arithmetic over a million cells")]
fn gang_parts_cover_c_once() {
    for size in 1..=9u32 {
        for (m, n) in [(16, 16), (64, 256), (256, 256), (48, 32)] {
            let mut hits = vec![0u32; m * n];
            for rank in 0..size {
                if let Some((rows, cols)) = tile::gang_part(m, n, rank, size) {
                    assert!(rows.start % 16 == 0 && rows.end % 16 == 0, "{size} {m}x{n}");
                    assert!(cols.start % 16 == 0 && cols.end % 16 == 0, "{size} {m}x{n}");
                    for i in rows {
                        for j in cols.clone() {
                            hits[i * n + j] += 1;
                        }
                    }
                }
            }
            assert!(hits.iter().all(|&h| h == 1), "{size} ranks on {m}x{n}");
        }
    }
}
