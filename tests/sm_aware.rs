//! SM-aware workers and the affinity policy on the CPU backend, where each of the runtime's worker
//! threads counts as one SM: the same results with `workers_per_sm` and `sms` under every policy,
//! the worker-to-SM mapping in the statistics, the options the device cannot place, and where the
//! affinity policy sends a task.

use std::ops::Range;

use taskweave::graph::NO_AFFINE_PARENT;
use taskweave::{Block, Error, Policy, Runtime, task, task_region};

/// Tile `(i, j)` of an `n × n` grid of `s × s` tiles, stored tile after tile, row by row.
fn tile(i: usize, j: usize, n: usize, s: usize) -> Range<usize> {
    let start = (i * n + j) * s * s;
    start..start + s * s
}

/// The whole tile left of `(i, j)`, or nothing in the first column.
fn left(i: usize, j: usize, n: usize, s: usize) -> Range<usize> {
    if j == 0 { 0..0 } else { tile(i, j - 1, n, s) }
}

/// The last row of the tile above `(i, j)`, or nothing in the first row.
fn above(i: usize, j: usize, n: usize, s: usize) -> Range<usize> {
    if i == 0 {
        0..0
    } else {
        let t = tile(i - 1, j, n, s);
        t.end - s..t.end
    }
}

/// Element `(r, c)` of tile `(i, j)` from the last column of the tile on its left and the last
/// row of the tile above.
fn cell(left: u32, up: u32, i: usize, j: usize, n: usize, e: usize) -> u32 {
    left.wrapping_mul(3) ^ up.wrapping_add((i * n + j + e) as u32)
}

/// One wavefront tile: it reads all of its left neighbour and a row of the one above, so its
/// affine parent is the left neighbour (the one above in the first column).
#[task(reads = [g[left(i, j, n, s)], g[above(i, j, n, s)]], writes = g[tile(i, j, n, s)])]
fn wave(b: &Block, g: &mut [u32], i: usize, j: usize, n: usize, s: usize) {
    let (own, l, u) = (tile(i, j, n, s).start, left(i, j, n, s), above(i, j, n, s));
    b.par_for(0..s * s, |e| {
        let (r, c) = (e / s, e % s);
        let from_left = if l.is_empty() {
            0
        } else {
            g[l.start + r * s + s - 1]
        };
        let from_up = if u.is_empty() { 0 } else { g[u.start + c] };
        g[own + e] = cell(from_left, from_up, i, j, n, e);
    });
}

task_region! {
    /// An `n × n` wavefront of tiles.
    fn wavefront(g: &mut [u32], n: usize, s: usize) {
        for i in 0..n {
            for j in 0..n {
                spawn!(wave(g, i, j, n, s));
            }
        }
    }
}

/// The wavefront computed in order.
fn reference(n: usize, s: usize) -> Vec<u32> {
    let mut g = vec![0u32; n * n * s * s];
    for i in 0..n {
        for j in 0..n {
            let (l, u) = (left(i, j, n, s), above(i, j, n, s));
            for e in 0..s * s {
                let (r, c) = (e / s, e % s);
                let from_left = if l.is_empty() {
                    0
                } else {
                    g[l.start + r * s + s - 1]
                };
                let from_up = if u.is_empty() { 0 } else { g[u.start + c] };
                g[tile(i, j, n, s).start + e] = cell(from_left, from_up, i, j, n, e);
            }
        }
    }
    g
}

#[test]
fn sm_aware_workers_give_the_same_results_under_every_policy() {
    let (n, s) = (6, 4);
    let want = reference(n, s);
    // Four "SMs": the runtime's four worker threads.
    let runtime = Runtime::cpu_with(4);
    // The options (workers per SM, SMs), then the workers they give, and the SM of worker `w`,
    // `first + w / per`.
    let cases = [
        (Some(1), None::<Range<u32>>, [4u32, 0, 1]),
        (Some(3), None, [12, 0, 3]),
        (Some(2), Some(1..3), [4, 1, 2]),
        (None, Some(2..4), [2, 2, 1]),
    ];
    // Under Miri, which checks the backend's pointers into the tables, three policies suffice:
    // the default, and the two that read tables of their own (the affine parents and who ran each
    // task; the ranks). No other test under Miri is sure to run the priority policy.
    let policies = if cfg!(miri) {
        &[Policy::Grr, Policy::Affinity, Policy::Priority][..]
    } else {
        &Policy::ALL[..]
    };
    for (k, &policy) in policies.iter().enumerate() {
        for (per_sm, sms, [workers, first, per]) in cases.clone() {
            let mut g = vec![0u32; n * n * s * s];
            let mut region = wavefront(&mut g, n, s)
                .policy(policy)
                .cpu_lanes(1 + k as u32 % 2);
            if let Some(p) = per_sm {
                region = region.workers_per_sm(p);
            }
            if let Some(set) = sms.clone() {
                region = region.sms(set);
            }
            let case = format!("{} with {per_sm:?} per SM on {sms:?}", policy.name());
            let report = region
                .run(&runtime)
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert!(g == want, "{case}: the grid differs from the reference");
            assert_eq!(report.workers, workers, "{case}");
            let sm: Vec<u32> = report.worker_stats.iter().map(|st| st.sm).collect();
            let expected: Vec<u32> = (0..workers).map(|w| first + w / per).collect();
            assert_eq!(sm, expected, "{case}: the SM of each worker");
            assert_eq!(report.sm_spread(), ((workers / per) as usize, per, per));
        }
    }
}

#[test]
fn what_the_device_cannot_place_is_refused_before_anything_runs() {
    let (n, s) = (2, 2);
    let runtime = Runtime::cpu_with(2);
    let refuse = |region: taskweave::Region<'_>| match region.run(&runtime) {
        Err(Error::SmOptions { region, option, .. }) => (region, option),
        other => panic!("expected an SmOptions error, got {other:?}"),
    };
    let mut g = vec![7u32; n * n * s * s];
    let error = wavefront(&mut g, n, s).sms(1..3).run(&runtime).unwrap_err();
    assert_eq!(
        error.to_string(),
        "region `wavefront`: `sms(1..3)` is outside the device's SMs 0..2"
    );
    assert_eq!(
        refuse(wavefront(&mut g, n, s).sms(1..1)),
        ("wavefront", "sms(1..1)".to_owned())
    );
    assert_eq!(
        refuse(wavefront(&mut g, n, s).workers_per_sm(0)).1,
        "workers_per_sm(0)"
    );
    let both = wavefront(&mut g, n, s).workers(2).workers_per_sm(1);
    assert_eq!(refuse(both).1, "workers(2)");
    assert!(g.iter().all(|&x| x == 7), "no task ran");
}

#[test]
fn a_wavefront_tile_has_its_left_neighbour_as_affine_parent() {
    let (n, s) = (4, 2);
    let mut g = vec![0u32; n * n * s * s];
    let ins = wavefront(&mut g, n, s).inspect().expect("inspection");
    assert!(
        ins.affine_parents().is_none(),
        "only the affinity policy records the ranges"
    );
    let ins = wavefront(&mut g, n, s)
        .policy(Policy::Affinity)
        .inspect()
        .expect("inspection");
    let parents = ins.affine_parents().expect("the ranges were recorded");
    for i in 0..n {
        for j in 0..n {
            let want = match (i, j) {
                (0, 0) => NO_AFFINE_PARENT,
                (_, 0) => ((i - 1) * n) as u32,
                _ => (i * n + j - 1) as u32,
            };
            assert_eq!(parents[i * n + j], want, "tile ({i}, {j})");
        }
    }
}

/// `x[lo..hi] = v`.
#[task(writes = x[lo..hi])]
fn put(b: &Block, x: &mut [u32], lo: usize, hi: usize, v: u32) {
    b.par_for(lo..hi, |i| x[i] = v);
}

/// `z[0] = Σ x[0..8] + y[0]`.
#[task(reads = [x[0..8], y[0..1]], writes = z[0..1])]
fn combine(b: &Block, x: &[u32], y: &[u32], z: &mut [u32]) {
    if b.thread() == 0 {
        z[0] = (0..8).map(|i| x[i]).sum::<u32>() + y[0];
    }
    b.sync();
}

task_region! {
    /// Two roots, `y` (task 0) and `x` (task 1), and a child sharing 32 bytes with `x`'s and 4
    /// with `y`'s.
    fn two_roots(x: &mut [u32], y: &mut [u32], z: &mut [u32]) {
        spawn!(put(y, 0, 1, 5));
        spawn!(put(x, 0, 8, 1));
        spawn!(combine(x, y, z));
    }
}

#[test]
fn affinity_sends_a_child_to_the_worker_that_ran_its_affine_parent() {
    // The roots are dealt to workers 0 and 1 in spawn order. Whichever finishes last frees the
    // child: under AFFINITY it runs on worker 1, where task 1 ran (kept there, or pushed there from
    // worker 0); under GRR the shared cursor sends it to worker 0 either way.
    let runtime = Runtime::cpu_with(2);
    for _ in 0..if cfg!(miri) { 2 } else { 20 } {
        for (policy, child_on) in [(Policy::Affinity, 1), (Policy::Grr, 0)] {
            let (mut x, mut y, mut z) = (vec![0u32; 8], vec![0u32; 1], vec![0u32; 1]);
            let report = two_roots(&mut x, &mut y, &mut z)
                .policy(policy)
                .trace(true)
                .run(&runtime)
                .expect("the region runs");
            assert_eq!(z[0], 13);
            let trace = report.trace.expect("tracing was on");
            let workers: Vec<u32> = trace.iter().map(|r| r.worker).collect();
            assert_eq!(workers, [0, 1, child_on], "{}", policy.name());
        }
    }
    let (mut x, mut y, mut z) = (vec![0u32; 8], vec![0u32; 1], vec![0u32; 1]);
    let ins = two_roots(&mut x, &mut y, &mut z)
        .policy(Policy::Affinity)
        .inspect()
        .expect("inspection");
    assert_eq!(
        ins.affine_parents(),
        Some(&[NO_AFFINE_PARENT, NO_AFFINE_PARENT, 1][..])
    );
}

#[test]
fn a_wavefront_under_affinity_still_spreads_over_the_workers() {
    // Every tile has an affine parent: followed blindly, the whole wavefront would run on the
    // worker of tile (0, 0). A child goes home only while the home's queue is drained, so the
    // second round already sends tile (0, 2) elsewhere (its home holds tile (1, 0)).
    let (n, s) = (8, 2);
    let mut g = vec![0u32; n * n * s * s];
    let report = wavefront(&mut g, n, s)
        .policy(Policy::Affinity)
        .run(&Runtime::cpu_with(4))
        .expect("the region runs");
    assert!(g == reference(n, s));
    let busy = report.worker_stats.iter().filter(|st| st.tasks > 0).count();
    assert!(busy >= 2, "{:?}", report.worker_stats);
    let continuations: u32 = report.worker_stats.iter().map(|st| st.continuations).sum();
    assert!(continuations > 0, "{:?}", report.worker_stats);
}
