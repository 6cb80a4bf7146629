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
