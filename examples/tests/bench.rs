//! The benchmark harness on the CPU backend: a small workload through the whole matrix, then the
//! tables and pictures it produces.

use taskweave::{Policy, Report, Runtime};
use taskweave_examples::bench::{self, Measurement, Metric};
use taskweave_examples::workloads::{Verdict, Workload};
use taskweave_examples::{RunArgs, plots};
use taskweave_kernels::dags;

/// A `t × t` wavefront of empty tasks; `broken` corrupts the output after each run, to see the
/// harness report a mismatch.
struct Wavefront {
    t: usize,
    grid: Vec<u32>,
    broken: bool,
}

impl Workload for Wavefront {
    fn name(&self) -> &'static str {
        if self.broken { "BROKEN" } else { "WAVE" }
    }
    fn size(&self) -> String {
        format!("{0}x{0}", self.t)
    }
    fn tasks(&self) -> usize {
        self.t * self.t
    }
    fn fresh(&mut self) -> taskweave::Region<'_> {
        self.grid.fill(0);
        dags::wavefront(&mut self.grid, self.t, 0)
    }
    fn run(&mut self, runtime: &Runtime, args: &RunArgs) -> Result<Report, taskweave::Error> {
        let report = args.apply(self.fresh()).run(runtime)?;
        if self.broken {
            self.grid[0] = 7;
        }
        Ok(report)
    }
    fn verify(&self) -> Verdict {
        if dags::check_wavefront(&self.grid, self.t) {
            Verdict::Exact
        } else {
            Verdict::Mismatch("grid differs".into())
        }
    }
}

fn args(policy: Policy, trace: bool) -> RunArgs {
    RunArgs {
        backend: Some(taskweave::Backend::Cpu),
        policy: policy.into(),
        workers: Some(2),
        per_sm: None,
        sms: None,
        critical_sms: None,
        threads: 32,
        cpu_lanes: 1,
        unchecked: false,
        trace: trace.then(|| "unused.json".into()),
    }
}

fn matrix() -> Vec<Measurement> {
    let mut workloads: Vec<Box<dyn Workload>> = vec![
        Box::new(Wavefront {
            t: 12,
            grid: vec![0; 144],
            broken: false,
        }),
        Box::new(Wavefront {
            t: 6,
            grid: vec![0; 36],
            broken: true,
        }),
    ];
    let cases = [args(Policy::Grr, true), args(Policy::Local, true)];
    bench::run_matrix(
        &mut workloads,
        &cases,
        3,
        &Runtime::cpu_with(2),
        &indicatif::ProgressBar::hidden(),
    )
}

#[test]
fn the_matrix_times_verifies_and_tabulates_every_case() {
    let all = matrix();
    assert_eq!(all.len(), 4);
    let labels: Vec<&str> = all.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, ["cpu/grr", "cpu/local", "cpu/grr", "cpu/local"]);
    for m in &all {
        assert_eq!(
            m.times_ms.len(),
            3,
            "three timed repetitions after the warm-up"
        );
        assert!(m.times_ms.iter().all(|t| *t > 0.0));
        // Every call's wall time holds its execution.
        assert!(m.wall_ms.iter().zip(&m.times_ms).all(|(w, e)| w >= e));
        assert!(m.first_ms.is_some_and(|(wall, execute)| wall >= execute));
        assert_eq!(m.last.as_ref().map(|r| r.tasks), Some(m.tasks));
    }
    assert!(all[0].passed() && all[1].passed());
    assert!(
        !all[2].passed() && !all[3].passed(),
        "the broken output is caught"
    );

    let table = bench::markdown(&all, "cpu/grr");
    assert!(table.contains("| WAVE | 12x12 | 144 | cpu/grr |"));
    assert!(table.contains("| 1.00x |"));
    assert!(table.contains("FAIL: grid differs"));
    let csv = bench::csv(&all);
    assert_eq!(
        csv.lines().count(),
        1 + 4 * (1 + 3),
        "the first call and three repetitions"
    );
}

#[test]
fn cases_with_workers_per_sm_are_labelled_and_run_that_many_workers() {
    let mut workloads: Vec<Box<dyn Workload>> = vec![Box::new(Wavefront {
        t: 8,
        grid: vec![0; 64],
        broken: false,
    })];
    let cases: Vec<RunArgs> = [1, 2]
        .map(|n| RunArgs {
            workers: None,
            per_sm: Some(n),
            ..args(Policy::Affinity, false)
        })
        .into();
    let all = bench::run_matrix(
        &mut workloads,
        &cases,
        1,
        &Runtime::cpu_with(2),
        &indicatif::ProgressBar::hidden(),
    );
    let labels: Vec<&str> = all.iter().map(|m| m.label.as_str()).collect();
    assert_eq!(labels, ["cpu/affinity/1-per-sm", "cpu/affinity/2-per-sm"]);
    // Two "SMs" on the CPU backend with two worker threads.
    let workers: Vec<u32> = all
        .iter()
        .map(|m| m.last.as_ref().unwrap().workers)
        .collect();
    assert_eq!(workers, [2, 4]);
    assert!(all.iter().all(Measurement::passed));
}

#[test]
fn the_pictures_are_drawn_from_the_results() {
    let all = matrix();
    let dir = std::env::temp_dir().join(format!("taskweave-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    plots::speedup(&all, "cpu/grr", Metric::Wall, &dir.join("speedup.svg")).unwrap();
    let svg = std::fs::read_to_string(dir.join("speedup.svg")).unwrap();
    assert!(svg.contains("cpu/local") && svg.contains("WAVE") && svg.contains("wall time"));

    plots::load(&all, &dir.join("load.svg")).unwrap();
    assert!(
        std::fs::read_to_string(dir.join("load.svg"))
            .unwrap()
            .contains("cpu/grr")
    );

    let report = all[0].last.as_ref().unwrap();
    plots::timeline(report, &dir.join("timeline.svg")).unwrap();
    let svg = std::fs::read_to_string(dir.join("timeline.svg")).unwrap();
    assert!(svg.contains("cell"), "the legend names the task kind");
    // One filled rectangle per task, besides the background and legend boxes.
    assert!(svg.matches("<rect").count() >= 144);

    let untraced = Report {
        trace: None,
        ..report.clone()
    };
    assert!(plots::timeline(&untraced, &dir.join("none.svg")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
