//! Random region programs give, bit for bit, what running their tasks one after another in spawn
//! order gives, under every policy, worker count and lane count of the CPU backend.
//!
//! A program is a pseudo-random sequence of tasks drawn from a seed by ordinary host code that the
//! region's body calls. Each task reads one or two random (possibly overlapping, possibly empty)
//! ranges and writes a random range, with an integer body whose result depends on everything it
//! read, so any missing dependence or lost write changes the result.

use std::ops::Range;

use proptest::prelude::*;
use taskweave::{Block, Policy, Runtime, task, task_region};

// ---------------------------------------------------------------------------------------------
// Programs.

/// xorshift64*: a small deterministic generator the region body and the reference share.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Self(seed ^ 0x9E37_79B9_7F4A_7C15 | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A range of an array of `len` elements: often short, sometimes all of it or empty.
    fn range(&mut self, len: usize) -> Range<usize> {
        match self.below(8) {
            0 => 0..len,
            1 => {
                let at = self.below(len + 1);
                at..at
            }
            2 | 3 => {
                let lo = self.below(len + 1);
                lo..(lo + 1 + self.below(4)).min(len)
            }
            _ => {
                let (a, b) = (self.below(len + 1), self.below(len + 1));
                a.min(b)..a.max(b)
            }
        }
    }
}

/// One task of a program.
#[derive(Clone, Debug)]
enum Op {
    /// `update`: reads `x[r]`, reads and writes `x[w]`.
    Update {
        r: Range<usize>,
        w: Range<usize>,
        salt: u64,
    },
    /// `overwrite`: reads `x[r]`, writes `x[w]` without reading it.
    Overwrite {
        r: Range<usize>,
        w: Range<usize>,
        salt: u64,
    },
    /// `gather`: reads `x[a]` and `x[c]` through a `&[u64]` parameter, writes `y[w]`.
    Gather {
        a: Range<usize>,
        c: Range<usize>,
        w: Range<usize>,
        salt: u64,
    },
    /// `cross`: reads `y[r]`, reads and writes `x[w]`.
    Cross {
        r: Range<usize>,
        w: Range<usize>,
        salt: u64,
    },
}

/// The `n` tasks that `seed` draws for arrays of `len_x` and `len_y` elements.
fn program(seed: u64, n: usize, len_x: usize, len_y: usize) -> Vec<Op> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|t| {
            let salt = rng.next() ^ t as u64;
            match rng.below(4) {
                0 => Op::Update {
                    r: rng.range(len_x),
                    w: rng.range(len_x),
                    salt,
                },
                1 => Op::Overwrite {
                    r: rng.range(len_x),
                    w: rng.range(len_x),
                    salt,
                },
                2 => Op::Gather {
                    a: rng.range(len_x),
                    c: rng.range(len_x),
                    w: rng.range(len_y),
                    salt,
                },
                _ => Op::Cross {
                    r: rng.range(len_y),
                    w: rng.range(len_x),
                    salt,
                },
            }
        })
        .collect()
}

/// An order-sensitive digest of `get(i)` over `range`.
fn digest(range: Range<usize>, get: impl Fn(usize) -> u64) -> u64 {
    range.fold(0xCBF2_9CE4_8422_2325, |h, i| {
        (h ^ get(i)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

// ---------------------------------------------------------------------------------------------
// The tasks. Every lane computes the digests of the read ranges itself, then the block waits at a
// barrier before any lane writes, so overlapping read and write ranges are read before written
// for any lane count.

#[task(reads = [x[r0..r1], x[w0..w1]], writes = x[w0..w1])]
fn update(b: &Block, x: &mut [u64], r0: usize, r1: usize, w0: usize, w1: usize, salt: u64) {
    let s = digest(r0..r1, |i| x[i]);
    b.sync();
    b.par_for(w0..w1, |i| {
        x[i] = x[i].wrapping_mul(31) ^ s ^ (i as u64) ^ salt;
    });
}

#[task(reads = x[r0..r1], writes = x[w0..w1])]
fn overwrite(b: &Block, x: &mut [u64], r0: usize, r1: usize, w0: usize, w1: usize, salt: u64) {
    let s = digest(r0..r1, |i| x[i]);
    b.sync();
    b.par_for(w0..w1, |i| x[i] = s.rotate_left(i as u32 % 64) ^ salt);
}

#[task(reads = [x[a0..a1], x[c0..c1]], writes = y[w0..w1])]
#[allow(clippy::too_many_arguments)]
fn gather(
    b: &Block,
    x: &[u64],
    y: &mut [u64],
    a0: usize,
    a1: usize,
    c0: usize,
    c1: usize,
    w0: usize,
    w1: usize,
    salt: u64,
) {
    let s = digest(a0..a1, |i| x[i]);
    let t = digest(c0..c1, |i| x[i]);
    b.par_for(w0..w1, |i| {
        y[i] = s.rotate_left(7) ^ t ^ (i as u64).wrapping_mul(salt | 1);
    });
}

#[task(reads = [y[r0..r1], x[w0..w1]], writes = x[w0..w1])]
#[allow(clippy::too_many_arguments)]
fn cross(
    b: &Block,
    y: &[u64],
    x: &mut [u64],
    r0: usize,
    r1: usize,
    w0: usize,
    w1: usize,
    salt: u64,
) {
    let s = digest(r0..r1, |i| y[i]);
    b.par_for(w0..w1, |i| x[i] = x[i].wrapping_add(s) ^ salt);
}

task_region! {
    /// The program `seed` draws, `n` tasks long.
    fn random_program(x: &mut [u64], y: &mut [u64], seed: u64, n: usize) {
        for op in program(seed, n, x.len(), y.len()) {
            match op {
                Op::Update { r, w, salt } => spawn!(update(x, r.start, r.end, w.start, w.end, salt)),
                Op::Overwrite { r, w, salt } => {
                    spawn!(overwrite(x, r.start, r.end, w.start, w.end, salt));
                }
                Op::Gather { a, c, w, salt } => {
                    spawn!(gather(x, y, a.start, a.end, c.start, c.end, w.start, w.end, salt));
                }
                Op::Cross { r, w, salt } => spawn!(cross(y, x, r.start, r.end, w.start, w.end, salt)),
            }
        }
    }
}

/// The same program, one task after another on plain vectors.
fn sequential(x: &mut [u64], y: &mut [u64], seed: u64, n: usize) {
    for op in program(seed, n, x.len(), y.len()) {
        match op {
            Op::Update { r, w, salt } => {
                let s = digest(r, |i| x[i]);
                for i in w {
                    x[i] = x[i].wrapping_mul(31) ^ s ^ (i as u64) ^ salt;
                }
            }
            Op::Overwrite { r, w, salt } => {
                let s = digest(r, |i| x[i]);
                for i in w {
                    x[i] = s.rotate_left(i as u32 % 64) ^ salt;
                }
            }
            Op::Gather { a, c, w, salt } => {
                let s = digest(a, |i| x[i]);
                let t = digest(c, |i| x[i]);
                for i in w {
                    y[i] = s.rotate_left(7) ^ t ^ (i as u64).wrapping_mul(salt | 1);
                }
            }
            Op::Cross { r, w, salt } => {
                let s = digest(r, |i| y[i]);
                for i in w {
                    x[i] = x[i].wrapping_add(s) ^ salt;
                }
            }
        }
    }
}

fn initial(seed: u64, len: usize) -> Vec<u64> {
    let mut rng = Rng::new(seed.rotate_left(17));
    (0..len).map(|_| rng.next()).collect()
}

// ---------------------------------------------------------------------------------------------
// The property.

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 96,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_schedule_matches_the_sequential_run(
        seed in any::<u64>(),
        n in 0usize..28,
        len_x in 1usize..48,
        len_y in 0usize..16,
    ) {
        let (x0, y0) = (initial(seed, len_x), initial(!seed, len_y));
        let (mut want_x, mut want_y) = (x0.clone(), y0.clone());
        sequential(&mut want_x, &mut want_y, seed, n);

        for policy in Policy::ALL {
            for workers in 1..=4 {
                for lanes in [1, 3] {
                    let (mut x, mut y) = (x0.clone(), y0.clone());
                    let report = random_program(&mut x, &mut y, seed, n)
                        .policy(policy)
                        .cpu_lanes(lanes)
                        .run(&Runtime::cpu_with(workers));
                    let report = match report {
                        Ok(report) => report,
                        Err(e) => {
                            return Err(TestCaseError::fail(format!(
                                "policy {policy:?}, {workers} workers, {lanes} lanes: {e}"
                            )));
                        }
                    };
                    prop_assert_eq!(report.tasks, n);
                    prop_assert_eq!(
                        report.worker_stats.iter().map(|s| s.tasks as usize).sum::<usize>(),
                        n
                    );
                    prop_assert_eq!(
                        (&x, &y),
                        (&want_x, &want_y),
                        "policy {:?}, {} workers, {} lanes",
                        policy,
                        workers,
                        lanes
                    );
                }
            }
        }
    }
}

/// A fixed long program, so that one run has deep chains and wide fan-outs whatever the seeds.
#[test]
fn a_long_program_matches_the_sequential_run() {
    let (seed, n) = (0x5EED, 400);
    let (x0, y0) = (initial(seed, 64), initial(!seed, 32));
    let (mut want_x, mut want_y) = (x0.clone(), y0.clone());
    sequential(&mut want_x, &mut want_y, seed, n);
    for policy in Policy::ALL {
        let (mut x, mut y) = (x0.clone(), y0.clone());
        random_program(&mut x, &mut y, seed, n)
            .policy(policy)
            .cpu_lanes(2)
            .run(&Runtime::cpu_with(3))
            .unwrap_or_else(|e| panic!("{policy:?}: {e}"));
        assert_eq!((&x, &y), (&want_x, &want_y), "{policy:?}");
    }
}
