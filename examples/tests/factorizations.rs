//! The tile-library examples on the CPU backend: tiled Cholesky, LU and GEMM match their
//! sequential references in f64 and f32, on one-warp and several-warp blocks; and a verification
//! that a missing or misplaced task would have to pass fails (`taskweave_examples::mutation`).
//!
//! The verifications are those the benchmark uses (`taskweave_kernels::matrix::host`): a residual
//! probe with the factorization's backward-error bound, and, at these sizes, every element of the
//! factor against the sequential reference at the factor's scale.

use taskweave::tile::Element;
use taskweave::{Region, Runtime};
use taskweave_examples::mutation::{self, Mutation, Subject};
use taskweave_kernels::matrix::host::{
    self, Check, check_cholesky, check_gemm, check_lu, lu_friendly, random, relative_difference,
    spd,
};
use taskweave_kernels::{cholesky, gemm, lu};

/// The regions as function pointers (a region's array parameters are generic: see
/// `taskweave::ArrayMut`).
fn cholesky_f64(a: &mut [f64], nb: usize, bs: usize) -> Region<'_> {
    cholesky::cholesky_f64(a, nb, bs)
}
fn cholesky_f32(a: &mut [f32], nb: usize, bs: usize) -> Region<'_> {
    cholesky::cholesky_f32(a, nb, bs)
}
fn lu_f64(a: &mut [f64], nb: usize, bs: usize) -> Region<'_> {
    lu::lu_f64(a, nb, bs)
}
fn lu_f32(a: &mut [f32], nb: usize, bs: usize) -> Region<'_> {
    lu::lu_f32(a, nb, bs)
}

/// How far the factors may stray from the sequential reference, relative to their largest
/// element: the test matrices' condition numbers are below 100, so 1000·n·ε is generous for a
/// correct run and far below what one missing or early task does.
fn reference_bound<T: Element>(n: usize) -> f64 {
    1000.0 * n as f64 * T::EPSILON
}

/// A factorization to run and check.
struct Factor<T: Element> {
    label: String,
    nb: usize,
    bs: usize,
    lanes: u32,
    input: Vec<T>,
    a: Vec<T>,
    region: for<'a> fn(&'a mut [T], usize, usize) -> Region<'a>,
    cholesky: bool,
}

impl<T: Element> Factor<T> {
    fn new(
        label: &str,
        nb: usize,
        bs: usize,
        lanes: u32,
        region: for<'a> fn(&'a mut [T], usize, usize) -> Region<'a>,
        cholesky: bool,
    ) -> Self {
        let input = if cholesky {
            spd(nb, bs, 7)
        } else {
            lu_friendly(nb, bs, 7)
        };
        Self {
            label: format!("{label} nb={nb} bs={bs} lanes={lanes}"),
            nb,
            bs,
            lanes,
            a: input.clone(),
            input,
            region,
            cholesky,
        }
    }

    /// The residual probe, and the elementwise comparison with the sequential reference.
    fn checks(&self) -> (Check, f64) {
        let (nb, bs) = (self.nb, self.bs);
        if self.cholesky {
            let reference = host::cholesky(&self.input, nb, bs);
            (
                check_cholesky(&self.input, &self.a, nb, bs),
                relative_difference(&self.a, &reference, nb, bs, |r, c| r >= c),
            )
        } else {
            let reference = host::lu(&self.input, nb, bs);
            (
                check_lu(&self.input, &self.a, nb, bs),
                relative_difference(&self.a, &reference, nb, bs, |_, _| true),
            )
        }
    }
}

impl<T: Element> Subject for Factor<T> {
    fn label(&self) -> String {
        self.label.clone()
    }
    fn region(&mut self) -> Region<'_> {
        self.a.clone_from(&self.input);
        (self.region)(&mut self.a, self.nb, self.bs)
            .shared_bytes(cholesky::SHARED_BYTES)
            .cpu_lanes(self.lanes)
    }
    fn verify(&self) -> Result<(), String> {
        let (residual, difference) = self.checks();
        let bound = reference_bound::<T>(self.nb * self.bs);
        if residual.passed() && difference <= bound {
            Ok(())
        } else {
            Err(format!(
                "residual {residual}; difference from the reference {difference:.2e} (bound {bound:.2e})"
            ))
        }
    }
}

fn run<T: Element>(f: &mut Factor<T>) {
    let report = f.region().run(&Runtime::cpu()).unwrap();
    assert!(report.tasks > 0);
    if let Err(why) = f.verify() {
        panic!("{}: {why}", f.label);
    }
}

#[test]
fn cholesky_matches_the_sequential_reference() {
    for (nb, bs, lanes) in [(4, 16, 1), (3, 32, 3), (2, 64, 2)] {
        run(&mut Factor::<f64>::new(
            "cholesky f64",
            nb,
            bs,
            lanes,
            cholesky_f64,
            true,
        ));
        run(&mut Factor::<f32>::new(
            "cholesky f32",
            nb,
            bs,
            lanes,
            cholesky_f32,
            true,
        ));
    }
}

#[test]
fn lu_matches_the_sequential_reference() {
    for (nb, bs, lanes) in [(4, 16, 1), (3, 32, 3), (2, 64, 2)] {
        run(&mut Factor::<f64>::new(
            "lu f64", nb, bs, lanes, lu_f64, false,
        ));
        run(&mut Factor::<f32>::new(
            "lu f32", nb, bs, lanes, lu_f32, false,
        ));
    }
}

/// The tasks on a longest path of `ins`'s DAG when every task costs one, the tasks
/// `critical_path_sms` sets apart.
fn critical_tasks(ins: &taskweave::inspect::Inspection) -> usize {
    let (levels, top) = (ins.dag.levels(), ins.dag.critical_path());
    (0..ins.task_count())
        .filter(|&t| levels[t] + ins.dag.rank[t] == top)
        .count()
}

#[test]
fn the_critical_path_runs_alone_on_its_sm_and_the_factors_still_match() {
    // Three "SMs" of two workers on the CPU backend; the first runs the critical path alone.
    let runtime = Runtime::cpu_with(3);
    let nb = 5;
    for (mut f, path) in [
        // POTRF(0), then for each diagonal tile the TRSM above it and the task that updates and
        // factors it: 2·nb − 1 tasks.
        (
            Factor::<f64>::new("cholesky f64", nb, 16, 1, cholesky_f64, true),
            2 * nb - 1,
        ),
        // GETRF(0), then the two TRSMs beside and below each factored tile (parallel, both
        // critical: one chain worker runs both) and the task that updates and factors the next
        // diagonal tile: 2·nb − 1 steps.
        (
            Factor::<f64>::new("lu f64", nb, 16, 1, lu_f64, false),
            2 * nb - 1,
        ),
    ] {
        let ins = f.region().inspect().unwrap();
        assert_eq!(ins.dag.critical_path() as usize, path, "{}", f.label);
        // Whole tiles only: a streamed call feeds every task as the body records it.
        assert!(
            ins.edges_as_recorded(),
            "{}: {:?}",
            f.label,
            ins.off_tile_path
        );
        // With a task per operation costing one, paths through the trailing updates are as long
        // as the panel's: every task on one of them is critical.
        let chain = critical_tasks(&ins);
        let report = f
            .region()
            .policy(taskweave::Policy::Static)
            .workers_per_sm(2)
            .critical_path_sms(1)
            .run(&runtime)
            .unwrap();
        if let Err(why) = f.verify() {
            panic!("{}: {why}", f.label);
        }
        let ran: Vec<u32> = report.worker_stats.iter().map(|s| s.tasks).collect();
        assert_eq!(ran.len(), 6, "{}", f.label);
        assert_eq!((ran[0], ran[1]), (chain as u32, 0), "{}: {ran:?}", f.label);
        assert_eq!(
            ran.iter().sum::<u32>() as usize,
            report.tasks,
            "{}",
            f.label
        );
    }
}

#[test]
fn task_costs_set_the_panel_apart_where_task_counts_tie() {
    // With a cost per kind the critical path is the panel alone: POTRF(0), then for each
    // diagonal tile the TRSM above it and the task that updates and factors it.
    let runtime = Runtime::cpu_with(3);
    let nb = 5;
    let us = std::time::Duration::from_micros;
    let costs = taskweave::TaskCosts::new()
        .kind("potrf_f64", us(37))
        .kind("syrk_potrf_f64", us(38))
        .kind("trsm_f64", us(17))
        .kind("syrk_f64", us(11))
        .kind("gemm_f64", us(11));
    let mut f = Factor::<f64>::new("cholesky f64", nb, 16, 1, cholesky_f64, true);
    let report = f
        .region()
        .policy(taskweave::Policy::Static)
        .workers_per_sm(2)
        .critical_path_sms(1)
        .task_costs(costs.clone())
        .run(&runtime)
        .unwrap();
    if let Err(why) = f.verify() {
        panic!("{}: {why}", f.label);
    }
    let ran: Vec<u32> = report.worker_stats.iter().map(|s| s.tasks).collect();
    assert_eq!((ran[0], ran[1]), (2 * nb as u32 - 1, 0), "{ran:?}");
    // Costs the region cannot use are refused before anything runs, in the user's terms.
    let refused = |region: Region<'_>| region.run(&runtime).unwrap_err().to_string();
    let why = refused(
        f.region()
            .policy(taskweave::Policy::Grr)
            .task_costs(costs.clone()),
    );
    assert!(why.contains("`task_costs` need the static policy"), "{why}");
    let why = refused(
        f.region()
            .policy(taskweave::Policy::Static)
            .task_costs(costs.clone().kind("getrf_f64", us(30))),
    );
    assert!(
        why.contains("name `getrf_f64`, which is not a task of the region"),
        "{why}"
    );
    let partial = taskweave::TaskCosts::new().kind("potrf_f64", us(37));
    let why = refused(
        f.region()
            .policy(taskweave::Policy::Static)
            .task_costs(partial),
    );
    assert!(why.contains("give no cost for `trsm_f64`"), "{why}");
}

#[test]
fn a_traced_run_gives_costs_to_plan_with() {
    let runtime = Runtime::cpu_with(2);
    let mut f = Factor::<f64>::new("lu f64", 4, 16, 1, lu_f64, false);
    let traced = f
        .region()
        .policy(taskweave::Policy::Static)
        .trace(true)
        .run(&runtime)
        .unwrap();
    let costs = traced.task_costs().expect("the run was traced");
    let kinds: Vec<&str> = costs.iter().map(|(k, _)| k).collect();
    assert_eq!(kinds, traced.kinds);
    assert!(
        costs.iter().all(|(_, c)| c > std::time::Duration::ZERO),
        "{costs}"
    );
    assert!(f.region().run(&runtime).unwrap().task_costs().is_none());
    f.region()
        .policy(taskweave::Policy::Static)
        .task_costs(costs)
        .run(&runtime)
        .unwrap();
    if let Err(why) = f.verify() {
        panic!("{}: {why}", f.label);
    }
}

#[test]
fn task_counts_match_the_regions() {
    let runtime = Runtime::cpu();
    for nb in 1..5 {
        let mut f = Factor::<f64>::new("cholesky", nb, 16, 1, cholesky_f64, true);
        assert_eq!(
            f.region().run(&runtime).unwrap().tasks,
            cholesky::task_count(nb)
        );
        let mut f = Factor::<f64>::new("lu", nb, 16, 1, lu_f64, false);
        assert_eq!(f.region().run(&runtime).unwrap().tasks, lu::task_count(nb));
    }
}

/// Every mutation of `ins`'s DAG but the dropped edges between two tasks of one kind: those
/// are successive updates of one tile (`syrk` after `syrk`, `gemm` after `gemm`), additions whose
/// order does not change the sum; without the edge they would race on the GPU, which a run one
/// task at a time cannot show. Returns the mutations and how many were left out.
fn mutations(ins: &taskweave::inspect::Inspection) -> (Vec<Mutation>, usize) {
    let kind = |t: u32| ins.tasks[t as usize].kind;
    let all = Mutation::every(&ins.dag);
    let total = all.len();
    let kept: Vec<Mutation> = all
        .into_iter()
        .filter(
            |m| !matches!(*m, Mutation::DropEdge { parent, child } if kind(parent) == kind(child)),
        )
        .collect();
    let left_out = total - kept.len();
    (kept, left_out)
}

#[test]
fn every_mutation_of_the_factorizations_is_caught() {
    let runtime = Runtime::cpu_with(1);
    for subject in [
        Factor::<f64>::new("cholesky f64", 4, 16, 1, cholesky_f64, true),
        Factor::<f64>::new("lu f64", 4, 16, 1, lu_f64, false),
    ] {
        let mut subject = subject;
        let ins = subject.region().inspect().unwrap();
        let (list, accumulations) = mutations(&ins);
        assert!(accumulations >= 2, "{}: {accumulations}", subject.label);
        let report = mutation::check(&mut subject, &list, &runtime);
        assert!(
            report.escaped.is_empty() && report.failed.is_empty(),
            "{report}"
        );
        assert!(report.caught > ins.task_count(), "{report}");
    }
}

/// The tiled GEMM: `C += A·B`, checked by its residual probe.
struct Gemm {
    nb: usize,
    bs: usize,
    a: Vec<f64>,
    b: Vec<f64>,
    c0: Vec<f64>,
    c: Vec<f64>,
}

impl Subject for Gemm {
    fn label(&self) -> String {
        format!("gemm f64 nb={} bs={}", self.nb, self.bs)
    }
    fn region(&mut self) -> Region<'_> {
        self.c.clone_from(&self.c0);
        gemm::gemm_f64(&mut self.c, &self.a, &self.b, self.nb, self.bs)
            .shared_bytes(gemm::SHARED_BYTES)
    }
    fn verify(&self) -> Result<(), String> {
        let check = check_gemm(&self.c0, &self.c, &self.a, &self.b, self.nb, self.bs);
        if check.passed() {
            Ok(())
        } else {
            Err(check.to_string())
        }
    }
}

#[test]
fn a_skipped_gemm_task_is_caught() {
    // The tasks of one C tile form a chain of additions: any order of them gives the same sum,
    // so only a task left out changes the result (a dependence dropped between two of them is a
    // race on the GPU, which a run one task at a time cannot show).
    let (nb, bs) = (3, 16);
    let mut subject = Gemm {
        nb,
        bs,
        a: random(nb, bs, 1),
        b: random(nb, bs, 2),
        c0: random(nb, bs, 3),
        c: Vec::new(),
    };
    let tasks = subject.region().inspect().unwrap().task_count() as u32;
    let skips: Vec<Mutation> = (0..tasks).map(Mutation::Skip).collect();
    let report = mutation::check(&mut subject, &skips, &Runtime::cpu_with(1));
    assert!(
        report.escaped.is_empty() && report.failed.is_empty(),
        "{report}"
    );
    assert_eq!(report.caught, tasks as usize, "{report}");
}

/// A Cholesky and an LU with the region's default options, as a user who sets nothing writes
/// them, verify under every policy: the default scratch holds what every tile operation needs at
/// the GPU's block size.
#[test]
fn the_factorizations_verify_with_default_options_under_every_policy() {
    let runtime = Runtime::cpu();
    for policy in taskweave::Policy::ALL {
        for (cholesky, region) in [
            (
                true,
                cholesky_f64 as for<'a> fn(&'a mut [f64], usize, usize) -> Region<'a>,
            ),
            (false, lu_f64),
        ] {
            let mut f = Factor::<f64>::new("default options", 3, 64, 1, region, cholesky);
            f.a.clone_from(&f.input);
            (f.region)(&mut f.a, f.nb, f.bs)
                .policy(policy)
                .run(&runtime)
                .unwrap_or_else(|e| panic!("{policy}: {e}"));
            if let Err(why) = f.verify() {
                panic!("{} under {policy}: {why}", f.label);
            }
        }
    }
}

/// Too little scratch fails on the CPU backend as it would on the GPU, whose block of 128
/// threads stages more than one emulated lane does: 16 KiB hold a one-lane stage of the f64
/// engine (10 KiB with its 16-deep chunks), and not the GPU's (20 KiB).
#[test]
fn too_little_scratch_fails_on_the_cpu_backend_as_on_the_gpu() {
    let mut f = Factor::<f64>::new("16 KiB", 2, 64, 1, cholesky_f64, true);
    f.a.clone_from(&f.input);
    let error = (f.region)(&mut f.a, f.nb, f.bs)
        .shared_bytes(16 * 1024)
        .cpu_lanes(1)
        .run(&Runtime::cpu())
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("one pipeline stage needs 20480 bytes") && error.contains("`shared_bytes`"),
        "{error}"
    );
    // The GPU's block size is the region's: at 32 threads the stage fits.
    f.a.clone_from(&f.input);
    (f.region)(&mut f.a, f.nb, f.bs)
        .shared_bytes(16 * 1024)
        .threads(32)
        .run(&Runtime::cpu())
        .unwrap();
    f.verify().unwrap();
}
