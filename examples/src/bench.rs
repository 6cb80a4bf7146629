//! The benchmark harness: every workload on every backend (and the persistent scheduler under
//! every policy asked for), `reps` timed repetitions each after one warm-up, verified against the
//! sequential reference after the last one.
//!
//! Two figures per call, both from the reports:
//! - **wall**, [`Report::wall_time`]: what the caller waits for one call of the region, as a user
//!   makes it (inspection, transfers, set-up, execution, copies back). The *first call* is the
//!   warm-up, the first call of the case; the *steady state* is the median of the timed
//!   repetitions, each a fresh call of the region.
//! - **execute**, [`Report::execute_time`]: the kernel(s) for the GPU backends, timed with events on
//!   the stream (the graph's replay without its set-up; the streams backend's host wall time from
//!   first launch to end, since host scheduling is that backend's cost).
//!
//! Speedups over a baseline backend are given in both: wall is what a user sees, execute what the
//! schedule alone is worth.

use std::fmt::Write as _;

use indicatif::{ProgressBar, ProgressStyle};
use taskweave::{Backend, Phases, Report, Runtime};

use crate::RunArgs;
use crate::workloads::{Verdict, Workload};

/// One workload run under one set of options, repeated.
#[derive(Debug)]
pub struct Measurement {
    /// The workload's name.
    pub workload: &'static str,
    /// Its size, as the workload describes it.
    pub size: String,
    /// Tasks per run.
    pub tasks: usize,
    /// What ran it: the backend, with the policy for the schedulers that have one
    /// (`persistent/grr`, `barrier`).
    pub label: String,
    /// Execution time of each timed repetition, in milliseconds.
    pub times_ms: Vec<f64>,
    /// Wall time of each timed repetition (the whole call), in milliseconds.
    pub wall_ms: Vec<f64>,
    /// The first call, the warm-up: its wall and execution time, in milliseconds.
    pub first_ms: Option<(f64, f64)>,
    /// The first call's phases: where its host time went.
    pub first_phases: Option<Phases>,
    /// The verdict on the last repetition's output, or why the case failed to run.
    pub outcome: Result<Verdict, String>,
    /// The last repetition's report.
    pub last: Option<Report>,
}

impl Measurement {
    /// `true` when every repetition ran and the output matched the reference.
    pub fn passed(&self) -> bool {
        matches!(&self.outcome, Ok(v) if v.passed())
    }

    /// The median execution time in milliseconds (`NaN` when nothing ran).
    pub fn median(&self) -> f64 {
        median(&self.times_ms)
    }

    /// The steady-state wall time per call: the median over the timed repetitions, in
    /// milliseconds (`NaN` when nothing ran).
    pub fn median_wall(&self) -> f64 {
        median(&self.wall_ms)
    }

    /// The median of `metric`, in milliseconds.
    pub fn steady(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Wall => self.median_wall(),
            Metric::Execute => self.median(),
        }
    }

    /// The fastest and slowest repetitions, in milliseconds.
    pub fn spread(&self) -> (f64, f64) {
        let min = self.times_ms.iter().copied().fold(f64::INFINITY, f64::min);
        let max = self
            .times_ms
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (min, max)
    }
}

/// Which time a comparison uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// The whole call, as the caller waits for it ([`Report::wall_time`]).
    Wall,
    /// The execution alone ([`Report::execute_time`]).
    Execute,
}

impl Metric {
    /// Lower-case name, for titles and file names: `wall` or `execute`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall",
            Metric::Execute => "execute",
        }
    }
}

/// The median of `values` (`NaN` for none).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2.0
    }
}

/// The geometric mean of `values` (`NaN` for none).
pub fn geomean(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// The label of a case: the backend that ran, with the policy where the backend has one, and the
/// active workers per SM when set (`persistent/affinity/2-per-sm`).
pub fn label(backend: &str, args: &RunArgs) -> String {
    match (backend, args.per_sm) {
        ("persistent" | "cpu", None) => format!("{backend}/{}", args.policy.name()),
        ("persistent" | "cpu", Some(n)) => format!("{backend}/{}/{n}-per-sm", args.policy.name()),
        _ => backend.to_owned(),
    }
}

/// Runs every workload under every case, `reps` times after a warm-up, and verifies the last
/// run. A case that fails to run is recorded with its error and the matrix goes on.
pub fn run_matrix(
    workloads: &mut [Box<dyn Workload>],
    cases: &[RunArgs],
    reps: usize,
    runtime: &Runtime,
    progress: &ProgressBar,
) -> Vec<Measurement> {
    progress.set_length((workloads.len() * cases.len() * (reps + 1)) as u64);
    let mut out = Vec::new();
    for workload in workloads.iter_mut() {
        for args in cases {
            progress.set_message(format!(
                "{} {}/{}{}",
                workload.name(),
                args.backend.map_or("auto", Backend::name),
                args.policy.name(),
                args.per_sm
                    .map(|n| format!("/{n}-per-sm"))
                    .unwrap_or_default()
            ));
            out.push(measure(workload.as_mut(), args, reps, runtime, progress));
        }
    }
    progress.finish_and_clear();
    out
}

fn measure(
    workload: &mut dyn Workload,
    args: &RunArgs,
    reps: usize,
    runtime: &Runtime,
    progress: &ProgressBar,
) -> Measurement {
    let mut m = Measurement {
        workload: workload.name(),
        size: workload.size(),
        tasks: workload.tasks(),
        // Until a run reports the backend that ran (no option resolves to one), the option's name.
        label: label(args.backend.map_or("auto", Backend::name), args),
        times_ms: Vec::with_capacity(reps),
        wall_ms: Vec::with_capacity(reps),
        first_ms: None,
        first_phases: None,
        outcome: Err("not run".into()),
        last: None,
    };
    for rep in 0..=reps {
        match workload.run(runtime, args) {
            Ok(report) => {
                m.label = label(report.backend.name(), args);
                let wall = report.wall_time.as_secs_f64() * 1e3;
                let execute = report.execute_time.as_secs_f64() * 1e3;
                if rep == 0 {
                    m.first_ms = Some((wall, execute));
                    m.first_phases = Some(report.phases);
                } else {
                    m.times_ms.push(execute);
                    m.wall_ms.push(wall);
                }
                m.last = Some(report);
            }
            Err(e) => {
                progress.inc((reps + 1 - rep) as u64);
                m.outcome = Err(e.to_string());
                return m;
            }
        }
        progress.inc(1);
    }
    m.outcome = Ok(workload.verify());
    m
}

/// The speedup of `m` over the `baseline`-labelled measurement of the same workload in `metric`
/// (its median time over `m`'s; above 1 means `m` is faster).
pub fn speedup(
    all: &[Measurement],
    m: &Measurement,
    baseline: &str,
    metric: Metric,
) -> Option<f64> {
    let base = all
        .iter()
        .find(|b| b.workload == m.workload && b.label == baseline && b.passed())?;
    m.passed().then(|| base.steady(metric) / m.steady(metric))
}

/// The labels in first-seen order.
pub fn labels(all: &[Measurement]) -> Vec<String> {
    let mut labels: Vec<String> = Vec::new();
    for m in all {
        if !labels.contains(&m.label) {
            labels.push(m.label.clone());
        }
    }
    labels
}

/// The workloads in first-seen order.
pub fn workloads(all: &[Measurement]) -> Vec<&'static str> {
    let mut names = Vec::new();
    for m in all {
        if !names.contains(&m.workload) {
            names.push(m.workload);
        }
    }
    names
}

/// Each label's geometric-mean speedup over `baseline` in `metric`, across the workloads where
/// both passed.
pub fn geomean_speedups(
    all: &[Measurement],
    baseline: &str,
    metric: Metric,
) -> Vec<(String, f64, usize)> {
    labels(all)
        .into_iter()
        .map(|label| {
            let speedups: Vec<f64> = all
                .iter()
                .filter(|m| m.label == label)
                .filter_map(|m| speedup(all, m, baseline, metric))
                .collect();
            (label, geomean(&speedups), speedups.len())
        })
        .collect()
}

/// The per-worker task-load deviation of a run: the standard deviation of tasks per worker, in
/// percent of the mean (Juggler's figure 5). `None` without per-worker statistics.
pub fn load_deviation(report: &Report) -> Option<f64> {
    let tasks: Vec<f64> = report
        .worker_stats
        .iter()
        .map(|s| f64::from(s.tasks))
        .collect();
    if tasks.is_empty() {
        return None;
    }
    let mean = tasks.iter().sum::<f64>() / tasks.len() as f64;
    if mean == 0.0 {
        return None;
    }
    let var = tasks.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / tasks.len() as f64;
    Some(100.0 * var.sqrt() / mean)
}

/// Where the host time of the first call and of the last went, phase by phase ([`Phases`]), as
/// a markdown table after a blank line.
pub fn phases_table(all: &[Measurement]) -> String {
    let mut s = String::from(
        "\n| workload | backend | call | wall (ms) | execute (ms) | record | edges | load | plan \
         | tables | upload | launch | wait | download |\n",
    );
    s.push_str(&format!("|{}\n", " --- |".repeat(14)));
    for m in all {
        let last = m.last.as_ref().map(|r| {
            let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
            (ms(r.wall_time), ms(r.execute_time), r.phases)
        });
        let first = m.first_ms.zip(m.first_phases).map(|((w, e), p)| (w, e, p));
        for (call, row) in [("first", first), ("last", last)] {
            let Some((wall, execute, phases)) = row else {
                continue;
            };
            let cells: Vec<String> = (phases.named().iter())
                .map(|(_, d)| format!("{:.3}", d.as_secs_f64() * 1e3))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | {call} | {wall:.3} | {execute:.3} | {} |",
                m.workload,
                m.label,
                cells.join(" | ")
            );
        }
    }
    s
}

/// The results as a markdown table: wall time per call (first call, steady state) and execute
/// time, speedups over `baseline` in both, then their geometric means.
pub fn markdown(all: &[Measurement], baseline: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| workload | size | tasks | backend | wall first (ms) | wall steady (ms) | execute (ms) \
         | execute min-max (ms) | wall vs {baseline} | execute vs {baseline} | load dev. | check |"
    );
    s.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    let ratio = |m: &Measurement, metric| {
        speedup(all, m, baseline, metric).map_or("-".into(), |r| format!("{r:.2}x"))
    };
    for m in all {
        let (lo, hi) = m.spread();
        let first = m
            .first_ms
            .map_or("-".into(), |(wall, _)| format!("{wall:.3}"));
        let dev = m
            .last
            .as_ref()
            .and_then(load_deviation)
            .map_or("-".into(), |d| format!("{d:.0}%"));
        let check = match &m.outcome {
            Ok(v) => v.to_string(),
            Err(e) => format!("ERROR: {}", e.replace('|', "/").replace('\n', " ")),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {first} | {:.3} | {:.3} | {:.3}-{:.3} | {} | {} | {dev} | {check} |",
            m.workload,
            m.size,
            m.tasks,
            m.label,
            m.median_wall(),
            m.median(),
            lo,
            hi,
            ratio(m, Metric::Wall),
            ratio(m, Metric::Execute),
        );
    }
    let _ = writeln!(
        s,
        "\n| backend | wall speedup over {baseline} (geometric mean) | execute speedup over \
         {baseline} (geometric mean) | workloads |\n| --- | --- | --- | --- |"
    );
    let wall = geomean_speedups(all, baseline, Metric::Wall);
    let execute = geomean_speedups(all, baseline, Metric::Execute);
    for ((label, w, n), (_, e, _)) in wall.into_iter().zip(execute) {
        let _ = writeln!(s, "| {label} | {w:.2}x | {e:.2}x | {n} |");
    }
    s.push_str(&phases_table(all));
    s
}

/// The results as CSV: one row per call, the first call (the warm-up) as repetition 0, with its
/// wall and execution time.
pub fn csv(all: &[Measurement]) -> String {
    let mut s = String::from("workload,size,tasks,backend,rep,wall_ms,execute_ms,check\n");
    for m in all {
        let check = match &m.outcome {
            Ok(v) if v.passed() => "pass",
            Ok(_) => "mismatch",
            Err(_) => "error",
        };
        let timed = m.wall_ms.iter().zip(&m.times_ms).map(|(&w, &e)| (w, e));
        for (rep, (wall, execute)) in m.first_ms.into_iter().chain(timed).enumerate() {
            let _ = writeln!(
                s,
                "{},\"{}\",{},{},{rep},{wall:.6},{execute:.6},{check}",
                m.workload, m.size, m.tasks, m.label
            );
        }
    }
    s
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} runs  {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A measurement whose wall times are each execution time plus one millisecond.
    fn m(workload: &'static str, label: &str, times: &[f64], ok: bool) -> Measurement {
        Measurement {
            workload,
            size: "s".into(),
            tasks: 10,
            label: label.into(),
            times_ms: times.to_vec(),
            wall_ms: times.iter().map(|t| t + 1.0).collect(),
            first_ms: Some((20.0, 5.0)),
            first_phases: None,
            outcome: if ok {
                Ok(Verdict::Exact)
            } else {
                Ok(Verdict::Mismatch("x".into()))
            },
            last: None,
        }
    }

    #[test]
    fn medians_and_geomeans() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        assert!((geomean(&[1.0, 4.0]) - 2.0).abs() < 1e-12);
    }

    #[test]
    fn speedups_compare_medians_of_the_same_workload_and_skip_failures() {
        let all = vec![
            m("A", "barrier", &[4.0, 4.0, 9.0], true),
            m("A", "persistent/grr", &[2.0, 1.0, 2.0], true),
            m("B", "barrier", &[1.0], true),
            m("B", "persistent/grr", &[2.0], true),
            m("C", "barrier", &[1.0], true),
            m("C", "persistent/grr", &[0.5], false),
        ];
        let exec = Metric::Execute;
        assert_eq!(speedup(&all, &all[1], "barrier", exec), Some(2.0));
        assert_eq!(speedup(&all, &all[3], "barrier", exec), Some(0.5));
        assert_eq!(speedup(&all, &all[5], "barrier", exec), None);
        // In wall time: 5 ms against 3 ms, and 2 ms against 3 ms.
        assert_eq!(
            speedup(&all, &all[1], "barrier", Metric::Wall),
            Some(5.0 / 3.0)
        );
        assert_eq!(
            speedup(&all, &all[3], "barrier", Metric::Wall),
            Some(2.0 / 3.0)
        );
        let g = geomean_speedups(&all, "barrier", exec);
        assert_eq!(g[0], ("barrier".into(), 1.0, 3));
        assert_eq!(g[1].0, "persistent/grr");
        assert!((g[1].1 - 1.0).abs() < 1e-12 && g[1].2 == 2);
        let table = markdown(&all, "barrier");
        assert!(
            table.contains(
                "| A | s | 10 | persistent/grr | 20.000 | 3.000 | 2.000 | 1.000-2.000 | 1.67x | 2.00x |"
            ),
            "{table}"
        );
        assert!(
            table.contains("| persistent/grr | 1.05x | 1.00x | 2 |"),
            "{table}"
        );
        assert!(table.contains("FAIL: x"));
        let csv = csv(&all);
        // Each measurement's first call, then its timed repetitions.
        assert_eq!(csv.lines().count(), 1 + 4 + 4 + 2 + 2 + 2 + 2);
        assert!(csv.contains("A,\"s\",10,barrier,0,20.000000,5.000000,pass"));
        assert!(csv.contains("C,\"s\",10,persistent/grr,1,1.500000,0.500000,mismatch"));
    }
}
