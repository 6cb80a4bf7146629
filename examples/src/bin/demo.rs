//! The main job: every example workload, the tile library's Cholesky, LU and GEMM, and the
//! scheduler's wavefront and chain, each verified against its sequential reference, on the GPU
//! when there is one and on the CPU backend otherwise, with each GPU backend side by side.

use std::time::Duration;

use clap::Parser;
use taskweave::{Backend, Policy, Region, Report, Runtime};
use taskweave_examples::{RunArgs, workloads};
use taskweave_kernels::matrix::host::{
    check_cholesky, check_gemm, check_lu, lu_friendly, random, spd,
};
use taskweave_kernels::{cholesky, dags, gemm, lu, lud};

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

/// One call's row: its wall time (the whole call: the demo calls each region once) first, then
/// the inspection and the execution.
fn row(name: &str, report: &Report, check: &str) {
    println!(
        "| {name} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} | {check} |",
        report.backend,
        report.policy.name(),
        report.tasks,
        report.edges,
        report.wall_time.as_secs_f64() * 1e3,
        report.inspect_time.as_secs_f64() * 1e3,
        report.execute_time.as_secs_f64() * 1e3
    );
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
        "| workload | backend | policy | tasks | edges | wall, one call (ms) | inspect (ms) | execute (ms) | check |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");

    let mut failures = 0;
    // Juggler's seven workloads and NW at the papers' sizes, each on every backend.
    for workload in workloads::all().iter_mut() {
        for &backend in &backends {
            let args = RunArgs {
                backend: Some(backend),
                policy: cli.policy.into(),
                workers: None,
                per_sm: None,
                sms: None,
                critical_sms: None,
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
    // The tile library's dense kernels: tiled Cholesky, LU without pivoting and a tiled GEMM in
    // f64 on 4 × 4 tiles of 64, each checked by its residual probe, with the regions' default
    // options (the shared memory the tile operations need comes with them); the Cholesky under
    // every policy too.
    let (nb, bs) = (4, 64);
    let mut cholesky_runs: Vec<(Backend, Policy)> =
        backends.iter().map(|&b| (b, cli.policy)).collect();
    cholesky_runs.extend(
        Policy::ALL
            .into_iter()
            .filter(|&p| p != cli.policy)
            .map(|p| (backends[0], p)),
    );
    for (backend, policy) in cholesky_runs {
        let input = spd::<f64>(nb, bs, 7);
        let mut a = input.clone();
        let region = cholesky::cholesky_f64(&mut a, nb, bs);
        let report = set(region, backend, policy).run(&runtime)?;
        let check = check_cholesky(&input, &a, nb, bs);
        failures += usize::from(!check.passed());
        row(
            "Cholesky f64 256x256, tiles of 64",
            &report,
            &check.to_string(),
        );
    }
    for &backend in &backends {
        let input = lu_friendly::<f64>(nb, bs, 7);
        let mut a = input.clone();
        let region = lu::lu_f64(&mut a, nb, bs);
        let report = set(region, backend, cli.policy).run(&runtime)?;
        let check = check_lu(&input, &a, nb, bs);
        failures += usize::from(!check.passed());
        row("LU f64 256x256, tiles of 64", &report, &check.to_string());
    }
    for &backend in &backends {
        let (a, b, c0) = (
            random::<f64>(nb, bs, 1),
            random::<f64>(nb, bs, 2),
            random::<f64>(nb, bs, 3),
        );
        let mut c = c0.clone();
        let region = gemm::gemm_f64(&mut c, &a, &b, nb, bs);
        let report = set(region, backend, cli.policy).run(&runtime)?;
        let check = check_gemm(&c0, &c, &a, &b, nb, bs);
        failures += usize::from(!check.passed());
        row("GEMM f64 256x256, tiles of 64", &report, &check.to_string());
    }
    // A resident array: three regions in a row on data that never leaves the device.
    let mut resident = runtime.upload(&vec![0u32; 4096])?;
    let mut last = None;
    for _ in 0..3 {
        last =
            Some(set(dags::bump_all(&mut resident), runtime.backend(), cli.policy).run(&runtime)?);
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
    if let Some(gpu) = runtime.gpu_device() {
        let loads = gpu.loads();
        let (cubins, compiled) = loads.iter().partition::<Vec<_>, _>(|l| !l.compiled);
        let total: Duration = loads.iter().map(|l| l.time).sum();
        println!(
            "\nkernels loaded on first use: {} cubins ({:.1} MB) and {} kernels compiled by the driver, {:.2} s in all",
            cubins.len(),
            cubins.iter().map(|l| l.bytes).sum::<usize>() as f64 / 1e6,
            compiled.len(),
            total.as_secs_f64()
        );
        if let Some(slowest) = loads.iter().max_by_key(|l| l.time) {
            println!(
                "the slowest load: region `{}`{}, {:.1} MB, {:.3} s",
                slowest.region,
                slowest
                    .kernel
                    .as_ref()
                    .map_or(String::new(), |k| format!(" kernel `{k}`")),
                slowest.bytes as f64 / 1e6,
                slowest.time.as_secs_f64()
            );
        }
    }
    if failures > 0 {
        return Err(format!("{failures} runs gave wrong results").into());
    }
    println!("\nall results match their sequential references");
    Ok(())
}
