//! Mutation checks on the CPU backend: with one dependence dropped, two dependent tasks swapped or
//! one task skipped, and the region run one task at a time in an order that the mutation allows
//! and the DAG forbids, the verification must fail (`taskweave_examples::mutation`).
//!
//! - Every workload at its test size (`workloads::small`): every mutation (each edge dropped, each
//!   pair of dependent tasks swapped, each task skipped).
//! - Every workload at a benchmark-like shape: a sample weighted to the hardest cases (the last
//!   task of each kind skipped and its dependences dropped), plus edges spread over the DAG. The
//!   shapes keep the benchmark's tiles, so one task's mistake is as large a share of its tile as in
//!   the benchmark, with 16 × 16 tiles instead of 48–90 a side (the checks compare every element at
//!   its part's scale, so more tiles would not dilute a mistake, and the debug build runs each
//!   mutated region in well under a second); LU-D runs the benchmark's own DAG of 15 × 15 tiles,
//!   with tiles of 16 instead of 32.
//! - The other example regions (the scheduler benchmark's DAGs, the `nowait` regions, the fault
//!   regions, the two regions called `step`), every mutation. Not `nw::nw_odd_tiles`: a timing
//!   region of independent tiles that read tiles nobody writes, whose output has no reference.
//!
//! `sampled_mutations_at_the_benchmark_sizes` (ignored: minutes) does the same at the benchmark
//! sizes themselves: `cargo test --release -p taskweave-examples --test mutation -- --ignored`.

use taskweave::inspect::Inspection;
use taskweave::{DeviceArray, Region, Runtime};
use taskweave_examples::mutation::{self, Mutation, Report, Subject};
use taskweave_examples::workloads::*;
use taskweave_kernels::{dags, faults, nowait, same_name};

/// The benchmark's tile sizes (and steps, and bins) with 16 × 16 tiles; LU-D with the
/// benchmark's 15 × 15 tiles of 16 (see the module docs).
fn benchmark_like() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(Dtw::new(&DtwParams { n: 1024, tile: 64 }).unwrap()),
        Box::new(
            Heat::new(&HeatParams {
                n: 512,
                tile: 32,
                steps: 1,
            })
            .unwrap(),
        ),
        Box::new(
            IntHist::new(&IntHistParams {
                n: 256,
                tile: 16,
                bins: 16,
            })
            .unwrap(),
        ),
        Box::new(
            Jacobi::new(&JacobiParams {
                n: 1024,
                tile: 64,
                steps: 2,
            })
            .unwrap(),
        ),
        Box::new(Lud::new(&LudParams { nb: 15, tile: 16 }).unwrap()),
        Box::new(Sat::new(&SatParams { n: 512, tile: 32 }).unwrap()),
        Box::new(SmithWaterman::new(&SmwParams { n: 1024, tile: 64 }).unwrap()),
        Box::new(Nw::new(&NwParams { n: 512, tile: 32 }).unwrap()),
    ]
}

/// Whether `m` drops the edge between two of LU-D's `bmod` tasks, `bmod(k, i, j)` and a later
/// `bmod(k', i, j)` (the only conflict two `bmod`s have is the tile they both update). Both
/// subtract a product from tile `(i, j)`: the updates commute, so the other order changes only
/// the rounding, which no check of a floating-point result can tell from the reference's own.
/// The edge keeps them from running at once (a lost update), which a run one task at a time
/// cannot show.
fn commuting_updates(ins: &Inspection, m: Mutation) -> bool {
    let kind = |t: u32| ins.task_ref(t).kind;
    matches!(m, Mutation::DropEdge { parent, child } if kind(parent) == "bmod" && kind(child) == "bmod")
}

/// Asserts that `report` caught all of its `mutations` but those `expected` lets escape, and
/// that every run ran.
fn assert_caught(report: &Report, mutations: usize, expected: impl Fn(Mutation) -> bool) {
    assert!(report.failed.is_empty(), "{report}");
    let unexpected: Vec<&Mutation> = report.escaped.iter().filter(|&&m| !expected(m)).collect();
    assert!(
        unexpected.is_empty(),
        "{report}\nunexpected: {unexpected:?}"
    );
    assert_eq!(
        report.caught + report.unchanged + report.escaped.len(),
        mutations,
        "{report}"
    );
    assert!(report.caught > 0, "{report}");
}

/// Runs the mutation check of every workload of `set`, with the mutations `pick` chooses from
/// its inspection, and asserts that all are caught but LU-D's commuting updates.
fn check_workloads(set: Vec<Box<dyn Workload>>, pick: impl Fn(&Inspection) -> Vec<Mutation>) {
    let runtime = Runtime::cpu_with(1);
    let mut failures = Vec::new();
    for mut w in set {
        let ins = w.inspect().unwrap();
        let mutations = pick(&ins);
        let report = mutation::check(w.as_mut(), &mutations, &runtime);
        eprintln!("{report}");
        let expected = |m| w.name() == "LU-D" && commuting_updates(&ins, m);
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_caught(&report, mutations.len(), expected)
        })) {
            failures.push(panic);
        }
    }
    if let Some(first) = failures.into_iter().next() {
        std::panic::resume_unwind(first);
    }
}

/// The sample at a benchmark size: the last task of each kind and its dependences, and 4 more
/// edges and swaps.
fn sample(ins: &Inspection) -> Vec<Mutation> {
    let kinds: Vec<u32> = ins.tasks[..ins.task_count()]
        .iter()
        .map(|t| t.kind)
        .collect();
    Mutation::sample(&ins.dag, &kinds, 4)
}

#[test]
fn every_mutation_of_every_workload_fails_its_verification_at_test_size() {
    check_workloads(small(), |ins| Mutation::every(&ins.dag));
}

#[test]
fn sampled_mutations_of_every_workload_fail_its_verification_at_benchmark_like_shapes() {
    check_workloads(benchmark_like(), sample);
}

#[test]
#[ignore = "minutes: run with --release --ignored"]
fn sampled_mutations_at_the_benchmark_sizes() {
    check_workloads(all(), sample);
}

/// A region with a check that is not a [`Workload`]: its fresh outputs hold `fill`, a value no
/// correct run leaves and that a task reading it before it is written passes on.
struct Plain<T> {
    label: &'static str,
    data: Vec<T>,
    fill: T,
    region: for<'a> fn(&'a mut [T]) -> Region<'a>,
    check: fn(&[T]) -> bool,
}

impl<T: Copy + std::fmt::Debug> Subject for Plain<T> {
    fn label(&self) -> String {
        self.label.to_owned()
    }
    fn region(&mut self) -> Region<'_> {
        self.data.fill(self.fill);
        (self.region)(&mut self.data)
    }
    fn verify(&self) -> Result<(), String> {
        if (self.check)(&self.data) {
            Ok(())
        } else {
            Err(format!(
                "{}: wrong output {:?}…",
                self.label,
                &self.data[..4]
            ))
        }
    }
}

/// A `nowait` region on resident vectors, checked against the sequential reference: `self_only`
/// runs `tri_self` on `y`, otherwise `tri` reads `x` into `y`.
struct Resident {
    runtime: Runtime,
    x: DeviceArray<f64>,
    y: Option<DeviceArray<f64>>,
    self_only: bool,
}

const N: usize = 40;
const A: f64 = 1e-3;

fn x0() -> Vec<f64> {
    (0..N).map(|i| 1.0 + (i % 7) as f64 * 0.25).collect()
}

fn y0() -> Vec<f64> {
    (0..N).map(|i| (i % 5) as f64 * 0.5).collect()
}

impl Subject for Resident {
    fn label(&self) -> String {
        (if self.self_only { "tri_self" } else { "tri" }).to_owned()
    }
    fn region(&mut self) -> Region<'_> {
        let y = self.y.insert(self.runtime.upload(&y0()).unwrap());
        if self.self_only {
            nowait::tri_self(y, A, 8)
        } else {
            nowait::tri(&self.x, y, A, 8)
        }
    }
    fn verify(&self) -> Result<(), String> {
        let got = self.y.as_ref().ok_or("nothing ran")?.download().unwrap();
        let mut want = y0();
        if self.self_only {
            nowait::tri_self_reference(&mut want, A);
        } else {
            nowait::tri_reference(&x0(), &mut want, A);
        }
        if got == want {
            Ok(())
        } else {
            Err(format!("{}: y differs from the reference", self.label()))
        }
    }
}

/// `dags::bump_all` on a resident vector of zeros: every element must come out 1.
struct Bumps {
    runtime: Runtime,
    x: Option<DeviceArray<u32>>,
}

impl Subject for Bumps {
    fn label(&self) -> String {
        "dags::bump_all".to_owned()
    }
    fn region(&mut self) -> Region<'_> {
        dags::bump_all(self.x.insert(self.runtime.upload(&[0u32; 12]).unwrap()))
    }
    fn verify(&self) -> Result<(), String> {
        let got = self.x.as_ref().ok_or("nothing ran")?.download().unwrap();
        if got.iter().all(|&v| v == 1) {
            Ok(())
        } else {
            Err(format!("bump_all: {got:?}"))
        }
    }
}

#[test]
fn every_mutation_of_the_other_example_regions_fails_their_checks() {
    const T: usize = 6;
    const UNWRITTEN: u32 = u32::MAX / 2;
    let runtime = Runtime::cpu_with(1);
    let mut subjects: Vec<Box<dyn Subject>> = vec![
        Box::new(Plain {
            label: "dags::wavefront",
            data: vec![0; T * T],
            fill: UNWRITTEN,
            region: |g| dags::wavefront(g, T, 0),
            check: |g| dags::check_wavefront(g, T),
        }),
        Box::new(Plain {
            label: "dags::chain",
            data: vec![0; 12],
            fill: UNWRITTEN,
            region: |c| dags::chain(c, 0),
            check: dags::check_chain,
        }),
        Box::new(Plain {
            label: "dags::independent",
            data: vec![0; 12],
            fill: UNWRITTEN,
            region: |x| dags::independent(x, 0),
            check: dags::check_independent,
        }),
        Box::new(Plain {
            label: "faults::faulty_fan",
            data: vec![0; 12],
            fill: 5,
            region: |x| faults::faulty_fan(x, 0, 0),
            check: |x| (0..x.len()).all(|i| x[i] == 6 + if i > 0 { i as u32 } else { 0 }),
        }),
        Box::new(Plain {
            label: "faults::faulty",
            data: vec![0; 12],
            fill: 5,
            region: |x| faults::faulty(x, 0, 0, 0),
            check: |x| x[..x.len() - 1].iter().all(|&v| v == 6) && x[x.len() - 1] == 5,
        }),
        Box::new(Plain {
            label: "same_name::add::step",
            data: vec![0; 8],
            fill: 3,
            region: |x| same_name::add::step(x),
            check: |x| x.iter().all(|&v| v == 4),
        }),
        Box::new(Plain {
            label: "same_name::double::step",
            data: vec![0; 8],
            fill: 3,
            region: |x| same_name::double::step(x),
            check: |x| x.iter().all(|&v| v == 6),
        }),
        Box::new(Plain {
            label: "faults::touch_all",
            data: vec![0; 4],
            fill: 5,
            region: |x| faults::touch_all(x),
            check: |x| x == [6, 5, 5, 5],
        }),
    ];
    for self_only in [false, true] {
        let data = Runtime::cpu_with(1);
        subjects.push(Box::new(Resident {
            x: data.upload(&x0()).unwrap(),
            y: None,
            runtime: data,
            self_only,
        }));
    }
    let data = Runtime::cpu_with(1);
    subjects.push(Box::new(Bumps {
        x: None,
        runtime: data,
    }));
    for s in &mut subjects {
        let ins = s.region().inspect().unwrap();
        let mutations = Mutation::every(&ins.dag);
        let report = mutation::check(s.as_mut(), &mutations, &runtime);
        eprintln!("{report}");
        assert_caught(&report, mutations.len(), |_| false);
    }
}
