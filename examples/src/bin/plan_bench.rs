//! What a call costs the host, inspected every call against a plan run again: for regions of
//! growing task counts on a resident array (one task per element), the median per call of the
//! wall time, the execute time, the inspection and the host's own time (`Report::host_time`:
//! staging or resetting the tables, launching, waiting for the end to be reported, reading the
//! statistics). `region.run` is timed with the runtime's plan cache off for the region
//! (`.cache(false)`: inspected every call) and on (the default: the plan of the first call run
//! again), interleaved. Every run is verified.
//!
//! `cargo run --release --bin plan_bench -- --tasks 1000,10000,100000 --reps 200` runs on the GPU
//! when there is one (else on the CPU backend; `--backend cpu` forces it).

use std::time::{Duration, Instant};

use clap::Parser;
use taskweave::{Report, Runtime};
use taskweave_examples::RunArgs;
use taskweave_kernels::dags::bump_all;

#[derive(Parser, Debug)]
#[command(about = "Host time per call: fresh inspection against a plan run again")]
struct Cli {
    /// Task counts (one task per element of the resident array).
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    tasks: Vec<usize>,
    /// Timed calls per case, after a warm-up of 3.
    #[arg(long, default_value_t = 100)]
    reps: usize,
    #[command(flatten)]
    run: RunArgs,
}

/// One case's medians, in microseconds.
struct Row {
    wall: f64,
    execute: f64,
    inspect: f64,
    host: f64,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// What one call cost: its wall time, and its report's execute, inspection and host times.
type Sample = [Duration; 4];

/// The medians of `samples`.
fn medians(samples: &[Sample]) -> Row {
    let pick = |k: usize| median(samples.iter().map(|s| us(s[k])).collect());
    Row {
        wall: pick(0),
        execute: pick(1),
        inspect: pick(2),
        host: pick(3),
    }
}

/// Calls `call(k)` for each of `variants` in turn, `reps` rounds after 3 warm-up rounds (so that
/// the variants meet the same machine state); the medians of each variant's reports.
///
/// Each report is dropped once its times are taken, as a caller's loop would: keeping them all
/// (each holds a record per worker, 33 KB for 1,056 workers) made every call allocate fresh heap
/// pages for its statistics, and the page faults cost up to 20 us a call on the H100
/// (`bench/results/replay-h100/README.md`).
fn measure(
    reps: usize,
    variants: usize,
    mut call: impl FnMut(usize) -> Result<Report, taskweave::Error>,
) -> Result<Vec<Row>, taskweave::Error> {
    let mut samples: Vec<Vec<Sample>> = (0..variants).map(|_| Vec::with_capacity(reps)).collect();
    for round in 0..reps + 3 {
        for (k, samples) in samples.iter_mut().enumerate() {
            let start = Instant::now();
            let report = call(k)?;
            let wall = start.elapsed();
            if round >= 3 {
                samples.push([
                    wall,
                    report.execute_time,
                    report.inspect_time,
                    report.host_time,
                ]);
            }
        }
    }
    Ok(samples.iter().map(|s| medians(s)).collect())
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let rt: Runtime = cli.run.runtime()?;
    println!("# plan_bench on {}", rt.describe());
    println!(
        "# {} timed calls per case after 3 warm-up calls, medians in microseconds; one task per \
         element of a resident u32 array; host = Report::host_time; the two region.run rows \
         interleaved, and the three plan.run rows; then the first plan alone, back to back",
        cli.reps
    );
    println!();
    println!("| tasks | call | wall | execute | inspect | host | wall - execute |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for &tasks in &cli.tasks {
        let mut x = rt.upload(&vec![0u32; tasks])?;
        let fresh = measure(cli.reps, 2, |k| {
            cli.run.apply(bump_all(&mut x)).cache(k == 1).run(&rt)
        })?;
        // Interleaved: a plan replayed as CUDA graphs whose workers reset their tables (the
        // default); one whose host resets them and reads the record back, in the same graph; and
        // one issuing its calls' operations one by one.
        let mut plans = Vec::new();
        for (replay, on_device) in [(true, true), (true, false), (false, true)] {
            let plan = cli.run.apply(bump_all(&mut x)).plan(&rt)?;
            plans.push(plan.verify(false).replay(replay).reset_on_device(on_device));
        }
        let planned = measure(cli.reps, plans.len(), |k| {
            plans[k].run(bump_all(&mut x), &rt)
        })?;
        // The default plan again, its calls back to back: what a time-stepping loop does, with
        // no other plan's graph launched in between.
        let alone = measure(cli.reps, 1, |_| plans[0].run(bump_all(&mut x), &rt))?;
        // Every call added one to every element.
        let calls = (3 + plans.len() as u32) * (cli.reps + 3) as u32;
        let out = x.download()?;
        if let Some(i) = out.iter().position(|&v| v != calls) {
            return Err(format!("{tasks} tasks: element {i} is {}, not {calls}", out[i]).into());
        }
        let names = [
            "region.run, cache off",
            "region.run",
            "plan.run",
            "plan.run, reset on host",
            "plan.run, replay off",
            "plan.run, alone",
        ];
        let rows = fresh.into_iter().chain(planned).chain(alone);
        for (name, row) in names.into_iter().zip(rows) {
            println!(
                "| {tasks} | {name} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                row.wall,
                row.execute,
                row.inspect,
                row.host,
                row.wall - row.execute
            );
        }
    }
    Ok(())
}
