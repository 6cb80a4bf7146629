//! The main job: every example workload, verified against its sequential reference, on the GPU when
//! there is one and on the CPU backend otherwise, with each GPU backend side by side.

use std::time::Duration;

use clap::Parser;
use taskweave::{Backend, Policy, Region, Report, Runtime};
use taskweave_examples::{BackendArg, RunArgs, workloads};
use taskweave_kernels::{dags, lud};

#[derive(Parser, Debug)]
#[command(about = "Runs and verifies the taskweave examples on the GPU, or on the CPU backend")]
struct Cli {
    /// Force the CPU backend.
    #[arg(long)]
    cpu: bool,
    /// Scheduling policy of the persistent (or CPU) scheduler.
    #[arg(long, default_value = "grr")]
    policy: Policy,
    /// Write the LU region's DAG as Graphviz DOT to this file.
    #[arg(long)]
    dot: Option<std::path::PathBuf>,
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn row(name: &str, report: &Report, check: &str) {
    println!(
        "| {name} | {} | {} | {} | {} | {:.3} | {:.3} | {check} |",
        report.backend,
        report.policy.name(),
        report.tasks,
        report.edges,
        report.inspect_time.as_secs_f64() * 1e3,
        report.execute_time.as_secs_f64() * 1e3
    );
}

/// The example options' name for `backend`.
fn backend_arg(backend: Backend) -> BackendArg {
    match backend {
        Backend::Persistent => BackendArg::Persistent,
        Backend::Barrier => BackendArg::Barrier,
        Backend::GridBarrier => BackendArg::GridBarrier,
        Backend::Graph => BackendArg::Graph,
        Backend::Streams => BackendArg::Streams,
        Backend::Cpu => BackendArg::Cpu,
    }
}

fn set(region: Region<'_>, backend: Backend, policy: Policy) -> Region<'_> {
    region
        .backend(backend)
        .policy(policy)
        .watchdog(Duration::from_secs(30))
}

fn run() -> Result<()> {
    let cli = Cli::parse();
    let runtime = if cli.cpu {
        Runtime::cpu()
    } else {
        Runtime::new()
    };
    if let Some(reason) = runtime.fallback_reason() {
        println!("note: no GPU, running on the CPU backend ({reason})");
    }
    println!("taskweave demo on {}", runtime.describe());
    let backends: Vec<Backend> = match runtime.backend() {
        Backend::Cpu => vec![Backend::Cpu],
        _ => vec![
            Backend::Persistent,
            Backend::Barrier,
            Backend::GridBarrier,
            Backend::Graph,
            Backend::Streams,
        ],
    };
    println!();
    println!(
        "| workload | backend | policy | tasks | edges | inspect (ms) | execute (ms) | check |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");

    let mut failures = 0;
    // Juggler's seven workloads and NW at the papers' sizes, each on every backend.
    for workload in workloads::all().iter_mut() {
        for &backend in &backends {
            let args = RunArgs {
                backend: backend_arg(backend),
                policy: cli.policy,
                workers: None,
                per_sm: None,
                sms: None,
                threads: 128,
                cpu_lanes: 1,
                unchecked: false,
                trace: None,
            };
            let report = workload.run(&runtime, &args)?;
            let verdict = workload.verify();
            failures += usize::from(!verdict.passed());
            row(
                &format!("{} {}", workload.name(), workload.size()),
                &report,
                &verdict.to_string(),
            );
        }
    }
    let t = 64;
    for &backend in &backends {
        let mut g = vec![0u32; t * t];
        let report = set(dags::wavefront(&mut g, t, 2000), backend, cli.policy).run(&runtime)?;
        let ok = dags::check_wavefront(&g, t);
        failures += usize::from(!ok);
        row("wavefront 64x64", &report, if ok { "PASS" } else { "FAIL" });
    }
    for &backend in &backends {
        let mut c = vec![0u32; 1000];
        let report = set(dags::chain(&mut c, 0), backend, cli.policy).run(&runtime)?;
        let ok = dags::check_chain(&c);
        failures += usize::from(!ok);
        row("chain of 1000", &report, if ok { "PASS" } else { "FAIL" });
    }
    // A resident array: three regions in a row on data that never leaves the device.
    let mut resident = runtime.upload(&vec![0u32; 4096])?;
    let mut last = None;
    for _ in 0..3 {
        last = Some(
            set(
                dags::bump_resident(&mut resident),
                runtime.backend(),
                cli.policy,
            )
            .run(&runtime)?,
        );
    }
    let ok = resident.download()?.iter().all(|&v| v == 3);
    failures += usize::from(!ok);
    if let Some(report) = &last {
        row(
            "3 regions on a resident array",
            report,
            if ok { "PASS" } else { "FAIL" },
        );
    }
    if let Some(path) = &cli.dot {
        let mut a = lud::reference::matrix(4, 2, 7);
        std::fs::write(path, lud::lu(&mut a, 4, 2).inspect()?.to_dot())?;
        println!("\nwrote the DAG of a 4x4-tile LU to {}", path.display());
    }
    if failures > 0 {
        return Err(format!("{failures} runs gave wrong results").into());
    }
    println!("\nall results match their sequential references");
    Ok(())
}
