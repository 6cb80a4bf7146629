//! Property tests of plans: over random regions (a task sequence drawn from a seed, with random
//! array lengths, task counts and range spans), a plan runs exactly the DAG fresh inspection
//! builds, its runs give the arrays fresh runs give, and the verifying mode refuses other scalars
//! exactly when they build another DAG. The runtime's plan cache, over random sequences of calls,
//! reruns a kept plan exactly for the calls that repeat an earlier one, and that plan is the DAG
//! fresh inspection builds.

use proptest::prelude::*;
use taskweave::inspect::Inspection;
use taskweave::{Block, Error, Runtime, task, task_region};

/// `dst[i] = src[i] + 1` over `lo..hi`.
#[task(reads = src[lo..hi], writes = dst[lo..hi])]
fn copy(b: &Block, dst: &mut [u32], src: &[u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| dst[i] = src[i].wrapping_add(1));
}

/// `a[i] = a[i] * 3 + by` over `lo..hi`.
#[task(reads = a[lo..hi], writes = a[lo..hi])]
fn bump(b: &Block, a: &mut [u32], lo: usize, hi: usize, by: u32) {
    b.par_for(lo..hi, |i| a[i] = a[i].wrapping_mul(3).wrapping_add(by));
}

/// `a[at] = Σ b[lo..hi]`.
#[task(reads = [b[lo..hi], a[at..at + 1]], writes = a[at..at + 1])]
fn gather(a: &mut [u32], b: &[u32], lo: usize, hi: usize, at: usize) {
    a[at] = (lo..hi).fold(a[at], |s, i| s.wrapping_add(b[i]));
}

task_region! {
    /// `tasks` tasks drawn from `seed`, each over a range of at most `span` elements: the control
    /// flow, the kinds, the ranges and the scalars all follow the region's own scalars and the
    /// arrays' length.
    fn random(a: &mut [u32], b: &mut [u32], tasks: usize, span: usize, seed: u64) {
        let n = a.len();
        let mut s = seed | 1;
        for _ in 0..tasks {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let lo = (s % n as u64) as usize;
            let hi = (lo + 1 + ((s >> 32) as usize) % span).min(n);
            match (s >> 20) % 5 {
                0 => spawn!(copy(b, a, lo, hi)),
                1 => spawn!(copy(a, b, lo, hi)),
                2 => spawn!(bump(a, lo, hi, (s >> 48) as u32 % 7)),
                3 => spawn!(gather(a, b, lo, hi, (s >> 40) as usize % n)),
                _ => {
                    if s % 3 == 0 {
                        spawn!(bump(b, lo, hi, 1));
                    }
                }
            }
        }
    }
}

/// The region's scalars.
#[derive(Clone, Copy, Debug)]
struct Scalars {
    tasks: usize,
    span: usize,
    seed: u64,
}

fn scalars() -> impl Strategy<Value = Scalars> {
    (0usize..120, 1usize..24, any::<u64>()).prop_map(|(tasks, span, seed)| Scalars {
        tasks,
        span,
        seed,
    })
}

fn data(n: usize, salt: u32) -> (Vec<u32>, Vec<u32>) {
    let a = (0..n as u32)
        .map(|i| i.wrapping_mul(2654435761) ^ salt)
        .collect();
    let b = (0..n as u32)
        .map(|i| i.wrapping_mul(40503) ^ !salt)
        .collect();
    (a, b)
}

fn inspect(n: usize, s: Scalars) -> Inspection {
    let (mut a, mut b) = data(n, 0);
    random(&mut a, &mut b, s.tasks, s.span, s.seed)
        .inspect()
        .unwrap()
}

/// Whether two inspections built the same run: tasks, arguments, DAG and footprints.
fn same(x: &Inspection, y: &Inspection) -> bool {
    x.tasks == y.tasks && x.args == y.args && x.dag == y.dag && x.footprints == y.footprints
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_plan_runs_the_dag_fresh_inspection_builds(n in 1usize..80, s in scalars(), salt in any::<u32>()) {
        let rt = Runtime::cpu_with(2);
        let (mut a, mut b) = data(n, salt);
        let mut plan = random(&mut a, &mut b, s.tasks, s.span, s.seed).plan(&rt).unwrap().verify(true);
        let fresh = inspect(n, s);
        prop_assert!(same(plan.inspection(), &fresh));
        prop_assert!(plan.check_inspection(&fresh).is_ok());
        // Three runs of the plan (kept tables after the first) against three fresh runs.
        let (mut fa, mut fb) = (a.clone(), b.clone());
        for _ in 0..3 {
            let report = plan.run(random(&mut a, &mut b, s.tasks, s.span, s.seed), &rt).unwrap();
            prop_assert_eq!(report.tasks, fresh.task_count());
            random(&mut fa, &mut fb, s.tasks, s.span, s.seed).cache(false).run(&rt).unwrap();
            prop_assert_eq!(&a, &fa);
            prop_assert_eq!(&b, &fb);
        }
        // The plan still holds the DAG it was made with.
        prop_assert!(same(plan.inspection(), &fresh));
    }

    #[test]
    fn other_scalars_are_refused_exactly_when_they_build_another_dag(
        n in 1usize..60,
        s in scalars(),
        t in scalars(),
        flip in 0usize..4,
    ) {
        // Often the same scalars but one, so that equal and unequal DAGs both come up.
        let t = match flip {
            0 => t,
            1 => Scalars { seed: s.seed, ..t },
            2 => Scalars { tasks: s.tasks, span: s.span, ..t },
            _ => s,
        };
        let rt = Runtime::cpu_with(2);
        let (mut a, mut b) = data(n, 1);
        let mut plan = random(&mut a, &mut b, s.tasks, s.span, s.seed).plan(&rt).unwrap().verify(true);
        let other = inspect(n, t);
        let differs = !same(plan.inspection(), &other);
        prop_assert_eq!(plan.check_inspection(&other).is_err(), differs);
        let before = (a.clone(), b.clone());
        match plan.run(random(&mut a, &mut b, t.tasks, t.span, t.seed), &rt) {
            Ok(_) => prop_assert!(!differs),
            Err(Error::PlanMismatch { .. }) => {
                prop_assert!(differs);
                prop_assert_eq!((a, b), before, "nothing ran");
            }
            Err(e) => prop_assert!(false, "unexpected error: {e}"),
        }
    }

    #[test]
    fn the_plan_cache_reruns_the_dag_fresh_inspection_builds_for_repeated_calls(
        n in 1usize..60,
        pool in prop::collection::vec(scalars(), 1..4),
        picks in prop::collection::vec((0usize..4, 0usize..2), 1..10),
        salt in any::<u32>(),
    ) {
        // Calls drawn from a few scalar sets and two array lengths, so that many repeat (eight
        // calls at most, so that the cache never drops one).
        let rt = Runtime::cpu_with(2);
        let mut seen = Vec::new();
        for (pick, shape) in picks {
            let (s, n) = (pool[pick % pool.len()], n + shape);
            let (mut a, mut b) = data(n, salt);
            let (mut fa, mut fb) = (a.clone(), b.clone());
            let report = random(&mut a, &mut b, s.tasks, s.span, s.seed).run(&rt).unwrap();
            let key = (s.tasks, s.span, s.seed, n);
            prop_assert_eq!(report.reused, seen.contains(&key));
            seen.push(key);
            random(&mut fa, &mut fb, s.tasks, s.span, s.seed).cache(false).run(&rt).unwrap();
            prop_assert_eq!(&a, &fa);
            prop_assert_eq!(&b, &fb);
            // The plan the runtime keeps for the call is the DAG fresh inspection builds.
            let fresh = inspect(n, s);
            let same_dag = random(&mut a, &mut b, s.tasks, s.span, s.seed)
                .with_cached_inspection(&rt, |plan| same(plan, &fresh));
            prop_assert_eq!(same_dag, Some(true));
        }
        prop_assert!(rt.cached_plans() <= taskweave::DEFAULT_PLANS);
    }
}
