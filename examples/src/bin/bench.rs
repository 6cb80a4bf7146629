//! The benchmark harness: every workload × backend × policy, `--reps` timed repetitions each,
//! verified; a markdown table of wall time per call (first call, steady state) and execute time
//! with speedups over the global-barrier backend in both, a CSV of every call, and SVG plots
//! (speedup per workload in wall and in execute time, per-worker load deviation, one timeline per
//! workload).
//!
//! `cargo run --release --bin bench -- --out bench/results/workloads` runs the paper sizes on the
//! GPU (or on the CPU backend when there is none, with the CPU policies only).

use std::path::PathBuf;

use clap::Parser;
use taskweave::{Backend, Runtime};
use taskweave_examples::bench::{self, Metric};
use taskweave_examples::{PolicyChoice, RunArgs, backend_parser, plots, workloads};

#[derive(Parser, Debug)]
#[command(about = "Runs every workload on every backend and policy, and tabulates and plots it")]
struct Cli {
    /// Timed repetitions per case, after one warm-up.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Only the workloads whose name contains one of these (comma-separated, e.g. `LU-D,SM-W`).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Backends to compare (default: every GPU backend, or the CPU backend without a GPU).
    #[arg(long, value_delimiter = ',', value_parser = backend_parser())]
    backends: Vec<Backend>,
    /// Policies of the persistent (or CPU) scheduler.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "auto,grr,local,priority,static"
    )]
    policies: Vec<PolicyChoice>,
    /// Worker count for the persistent scheduler (default: from occupancy).
    #[arg(long)]
    workers: Option<u32>,
    /// SM-aware workers: each of these counts of active workers per SM is a case of its own for
    /// the persistent (or CPU) scheduler under every policy, e.g. `--per-sm 1,2,3,4` (not with
    /// --workers).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    per_sm: Vec<u32>,
    /// Threads per task block.
    #[arg(long, default_value_t = 128)]
    threads: u32,
    /// Keep the index checks against declared ranges on (they are off here by default: the
    /// comparison is between schedules, and the checks cost the same on every backend).
    #[arg(long)]
    checked: bool,
    /// Run on the CPU backend even with a GPU.
    #[arg(long)]
    cpu: bool,
    /// Write table.md, results.csv and the plots here.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let runtime = if cli.cpu {
        Runtime::cpu()
    } else {
        Runtime::new()
    };
    if let Some(reason) = runtime.fallback_reason() {
        eprintln!("note: no GPU, running on the CPU backend ({reason})");
    }
    let gpu = runtime.backend() != Backend::Cpu;
    let backends = if !cli.backends.is_empty() {
        cli.backends.clone()
    } else if gpu {
        Backend::ALL.into_iter().filter(|b| b.needs_gpu()).collect()
    } else {
        vec![Backend::Cpu]
    };
    let base = RunArgs {
        backend: None,
        policy: PolicyChoice(None),
        workers: cli.workers,
        per_sm: None,
        sms: None,
        critical_sms: None,
        threads: cli.threads,
        cpu_lanes: 1,
        unchecked: !cli.checked,
        trace: None,
    };
    let mut cases = Vec::new();
    for &backend in &backends {
        if matches!(backend, Backend::Persistent | Backend::Cpu) {
            // Without --per-sm, one case per policy with the default workers.
            let per_sm: Vec<Option<u32>> = if cli.per_sm.is_empty() {
                vec![None]
            } else {
                cli.per_sm.iter().copied().map(Some).collect()
            };
            for &policy in &cli.policies {
                for &per_sm in &per_sm {
                    cases.push(RunArgs {
                        backend: Some(backend),
                        policy,
                        per_sm,
                        ..base.clone()
                    });
                }
            }
        } else {
            cases.push(RunArgs {
                backend: Some(backend),
                ..base.clone()
            });
        }
    }
    let mut all = workloads::all();
    if !cli.only.is_empty() {
        all.retain(|w| cli.only.iter().any(|o| w.name().contains(o.as_str())));
    }
    if all.is_empty() {
        return Err("no workload matches --only".into());
    }

    println!("# taskweave workload benchmark on {}", runtime.describe());
    println!(
        "# {} reps after one warm-up (the first call); {} threads per task; index checks {}; \
         wall time per call and execute time (see bench.rs)",
        cli.reps,
        cli.threads,
        if cli.checked { "on" } else { "off" }
    );
    let progress = bench::progress_bar();
    let results = bench::run_matrix(&mut all, &cases, cli.reps, &runtime, &progress);
    let baseline = if gpu {
        "barrier".to_owned()
    } else {
        bench::label("cpu", &cases[0])
    };
    let table = bench::markdown(&results, &baseline);
    println!("\n{table}");

    if let Some(dir) = &cli.out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("table.md"), &table)?;
        std::fs::write(dir.join("results.csv"), bench::csv(&results))?;
        plots::speedup(
            &results,
            &baseline,
            Metric::Wall,
            &dir.join("speedup-wall.svg"),
        )?;
        plots::speedup(
            &results,
            &baseline,
            Metric::Execute,
            &dir.join("speedup.svg"),
        )?;
        plots::load(&results, &dir.join("load.svg"))?;
        // One traced run per workload on the first persistent (or CPU) case, for its timeline
        // (`workload --trace FILE` writes the Chrome trace of any run).
        let traced = RunArgs {
            trace: Some(dir.join("unused.json")),
            ..cases[0].clone()
        };
        for workload in all.iter_mut() {
            let report = workload.run(&runtime, &traced)?;
            let stem = workload.name().to_lowercase();
            plots::timeline(&report, &dir.join(format!("timeline-{stem}.svg")))?;
        }
        println!("wrote {}", dir.display());
    }
    let failed = results.iter().filter(|m| !m.passed()).count();
    if failed > 0 {
        return Err(format!("{failed} case(s) failed or did not match the reference").into());
    }
    Ok(())
}
