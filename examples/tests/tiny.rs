//! Every workload at a tiny size on the CPU backend, with blocks of several lanes, checked against
//! its sequential reference: small enough for Miri, which `scripts/miri.sh` runs over it to check
//! the example kernels' `unsafe` code (the dynamic programs' unchecked shared-memory accesses in
//! `dp.rs`) and the shared memory and barriers every kernel uses, lane against lane.

use taskweave::{Policy, Runtime};
use taskweave_examples::workloads::*;

fn tiny() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(Dtw::new(&DtwParams { n: 8, tile: 4 }).unwrap()),
        Box::new(
            Heat::new(&HeatParams {
                n: 8,
                tile: 4,
                steps: 2,
            })
            .unwrap(),
        ),
        Box::new(
            IntHist::new(&IntHistParams {
                n: 8,
                tile: 4,
                bins: 3,
            })
            .unwrap(),
        ),
        Box::new(
            Jacobi::new(&JacobiParams {
                n: 8,
                tile: 4,
                steps: 2,
            })
            .unwrap(),
        ),
        Box::new(Lud::new(&LudParams { nb: 2, tile: 4 }).unwrap()),
        Box::new(Sat::new(&SatParams { n: 8, tile: 4 }).unwrap()),
        Box::new(SmithWaterman::new(&SmwParams { n: 8, tile: 4 }).unwrap()),
        Box::new(Nw::new(&NwParams { n: 12, tile: 6 }).unwrap()),
    ]
}

#[test]
fn every_workload_at_a_tiny_size_with_blocks_of_several_lanes() {
    let runtime = Runtime::cpu_with(2);
    for mut w in tiny() {
        let report = w
            .fresh()
            .policy(Policy::Grr)
            .threads(3)
            .cpu_lanes(3)
            .run(&runtime)
            .unwrap_or_else(|e| panic!("{}: {e}", w.name()));
        assert_eq!(report.tasks, w.tasks(), "{}", w.name());
        let verdict = w.verify();
        assert!(verdict.passed(), "{} ({}): {verdict}", w.name(), w.size());
    }
}

#[test]
fn a_pinned_array_runs_like_a_vec_in_a_region_and_a_plan() {
    use taskweave_kernels::dags::bump_chunks;
    let runtime = Runtime::cpu_with(2);
    let start: Vec<u32> = (0..10).collect();
    let mut x = runtime.pinned(&start).unwrap();
    assert!(
        !x.is_locked(),
        "the CPU runtime's arrays are ordinary heap memory"
    );
    bump_chunks(&mut x, 4).run(&runtime).unwrap();
    let mut plan = bump_chunks(&mut x, 4).plan(&runtime).unwrap();
    plan.run(bump_chunks(&mut x, 4), &runtime).unwrap();
    let want: Vec<u32> = start.iter().map(|v| v + 2).collect();
    assert_eq!(&x[..], &want[..]);
}
