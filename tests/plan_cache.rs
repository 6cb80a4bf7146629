//! The runtime's plan cache on the CPU backend: `region.run` reuses the plan of an earlier call
//! with the same scalar arguments, array shapes and options, and only of such a call.

use std::sync::atomic::{AtomicUsize, Ordering};

use taskweave::{Block, Error, Policy, Runtime, task, task_region};

/// `a[i] = a[i] * 2 + by` over `lo..hi`.
#[task(reads = a[lo..hi], writes = a[lo..hi])]
fn scale(b: &Block, a: &mut [u64], lo: usize, hi: usize, by: u64) {
    b.par_for(lo..hi, |i| a[i] = a[i].wrapping_mul(2).wrapping_add(by));
}

task_region! {
    /// `passes` passes over `a` in chunks of `chunk`, each adding `by` (or `by + 1` on odd passes
    /// when `odd` is set): every scalar changes the tasks or their arguments.
    fn passes(a: &mut [u64], chunk: usize, passes: usize, by: u64, odd: bool) {
        let n = a.len();
        for p in 0..passes {
            let mut lo = 0;
            while lo < n {
                let hi = (lo + chunk).min(n);
                let by = if odd && p % 2 == 1 { by + 1 } else { by };
                spawn!(scale(a, lo, hi, by));
                lo = hi;
            }
        }
    }
}

/// What `passes` computes, sequentially.
fn reference(a: &[u64], passes: usize, by: u64, odd: bool) -> Vec<u64> {
    let mut a = a.to_vec();
    for p in 0..passes {
        let by = if odd && p % 2 == 1 { by + 1 } else { by };
        for x in &mut a {
            *x = x.wrapping_mul(2).wrapping_add(by);
        }
    }
    a
}

fn start(n: usize) -> Vec<u64> {
    (0..n as u64).map(|i| i * 7 % 13).collect()
}

#[test]
fn a_region_called_again_the_same_way_runs_its_kept_plan() {
    let rt = Runtime::cpu_with(2);
    let mut a = start(40);
    let mut expected = a.clone();
    for call in 0..4 {
        let report = passes(&mut a, 8, 3, 5, true).run(&rt).unwrap();
        expected = reference(&expected, 3, 5, true);
        assert_eq!(a, expected, "call {call}");
        assert_eq!(report.reused, call > 0, "call {call}");
        assert_eq!(report.tasks, 15);
    }
    assert_eq!(rt.cached_plans(), 1);
    // Another array of the same length is the same call.
    let mut b = start(40);
    assert!(passes(&mut b, 8, 3, 5, true).run(&rt).unwrap().reused);
    assert_eq!(b, reference(&start(40), 3, 5, true));
}

#[test]
fn every_scalar_the_array_lengths_and_the_options_are_part_of_the_key() {
    let rt = Runtime::cpu_with(2);
    let mut a = start(40);
    passes(&mut a, 8, 3, 5, true).run(&rt).unwrap();
    // Each differs from the first call in one thing only, and none finds its plan.
    let (mut a, mut short) = (start(40), start(39));
    let others = [
        ("chunk", passes(&mut a, 4, 3, 5, true).run(&rt)),
        ("passes", passes(&mut a, 8, 2, 5, true).run(&rt)),
        ("by", passes(&mut a, 8, 3, 6, true).run(&rt)),
        ("odd", passes(&mut a, 8, 3, 5, false).run(&rt)),
        (
            "options",
            passes(&mut a, 8, 3, 5, true)
                .policy(Policy::Static)
                .run(&rt),
        ),
        ("length", passes(&mut short, 8, 3, 5, true).run(&rt)),
    ];
    for (what, report) in &others {
        assert!(
            !report.as_ref().unwrap().reused,
            "another {what} reused the plan"
        );
    }
    assert_eq!(rt.cached_plans(), 1 + others.len());
    // The first call's plan is still there.
    assert!(passes(&mut a, 8, 3, 5, true).run(&rt).unwrap().reused);
}

#[test]
fn the_cache_can_be_turned_off_for_a_region_or_a_runtime() {
    let rt = Runtime::cpu_with(2);
    let mut a = start(16);
    for _ in 0..2 {
        let report = passes(&mut a, 4, 1, 1, false)
            .cache(false)
            .run(&rt)
            .unwrap();
        assert!(!report.reused);
    }
    assert_eq!(rt.cached_plans(), 0);
    passes(&mut a, 4, 1, 1, false).run(&rt).unwrap();
    assert_eq!(rt.cached_plans(), 1);
    rt.cache_plans(0);
    assert_eq!(rt.cached_plans(), 0);
    assert!(!passes(&mut a, 4, 1, 1, false).run(&rt).unwrap().reused);
    assert_eq!(rt.cached_plans(), 0);
    rt.cache_plans(1);
    passes(&mut a, 4, 1, 1, false).run(&rt).unwrap();
    passes(&mut a, 4, 2, 1, false).run(&rt).unwrap();
    assert_eq!(rt.cached_plans(), 1, "one plan, the most recent");
    assert!(passes(&mut a, 4, 2, 1, false).run(&rt).unwrap().reused);
    rt.clear_plans();
    assert_eq!(rt.cached_plans(), 0);
}

/// A scalar that is not a `Scalar`.
#[derive(Clone, Copy, Debug)]
struct Chunks {
    chunk: usize,
}

task_region! {
    /// One pass in chunks, the chunk size in a struct.
    fn by_struct(a: &mut [u64], chunks: Chunks) {
        let n = a.len();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunks.chunk).min(n);
            spawn!(scale(a, lo, hi, 1));
            lo = hi;
        }
    }
}

#[test]
fn a_region_whose_scalars_have_no_words_is_never_cached() {
    let rt = Runtime::cpu_with(2);
    let mut a = start(16);
    for chunk in [4, 4, 8] {
        let report = by_struct(&mut a, Chunks { chunk }).run(&rt).unwrap();
        assert!(!report.reused);
        assert_eq!(report.tasks, 16 / chunk);
    }
    assert_eq!(rt.cached_plans(), 0);
}

/// Chunks of the size this says: state the region's body reads besides its arguments.
static HIDDEN_CHUNK: AtomicUsize = AtomicUsize::new(4);

task_region! {
    /// One pass in chunks of `HIDDEN_CHUNK`: a body the cache cannot key.
    fn hidden(a: &mut [u64]) {
        let n = a.len();
        let chunk = HIDDEN_CHUNK.load(Ordering::Relaxed);
        let mut lo = 0;
        while lo < n {
            let hi = (lo + chunk).min(n);
            spawn!(scale(a, lo, hi, 1));
            lo = hi;
        }
    }
}

/// The one test that changes `HIDDEN_CHUNK`.
#[test]
fn a_body_that_reads_other_state_fails_in_debug_builds_and_runs_with_the_cache_off() {
    let rt = Runtime::cpu_with(2);
    let mut a = start(16);
    HIDDEN_CHUNK.store(4, Ordering::Relaxed);
    assert_eq!(hidden(&mut a).run(&rt).unwrap().tasks, 4);
    HIDDEN_CHUNK.store(8, Ordering::Relaxed);
    let before = a.clone();
    if cfg!(debug_assertions) {
        // The kept plan verifies: it inspects again, finds another DAG and runs nothing.
        match hidden(&mut a).run(&rt) {
            Err(Error::PlanMismatch { region, detail }) => {
                assert_eq!(region, "hidden");
                assert!(detail.contains("`.cache(false)`"), "{detail}");
            }
            other => panic!("expected a plan mismatch, got {other:?}"),
        }
        assert_eq!(a, before, "nothing ran");
        assert_eq!(rt.cached_plans(), 0, "the wrong plan is dropped");
    }
    let report = hidden(&mut a).cache(false).run(&rt).unwrap();
    assert_eq!(report.tasks, 2);
    assert_eq!(a, reference(&before, 1, 1, false));
}

#[test]
fn the_kept_plan_is_the_dag_fresh_inspection_builds() {
    let rt = Runtime::cpu_with(2);
    let mut a = start(30);
    passes(&mut a, 7, 2, 3, true).run(&rt).unwrap();
    let fresh = passes(&mut a, 7, 2, 3, true).inspect().unwrap();
    let same = passes(&mut a, 7, 2, 3, true)
        .with_cached_inspection(&rt, |kept| {
            kept.tasks == fresh.tasks && kept.args == fresh.args && kept.dag == fresh.dag
        })
        .expect("the first call's plan is kept");
    assert!(same);
    assert!(
        passes(&mut a, 7, 2, 4, true)
            .with_cached_inspection(&rt, |_| ())
            .is_none()
    );
}
