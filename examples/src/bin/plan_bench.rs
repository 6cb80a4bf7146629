//! What a call costs the host, inspected every call against a plan run again: for regions of
//! growing task counts on a resident array (one task per element), the median per call of the
//! wall time, the execute time, the inspection and the host's own time (`Report::host_time`:
//! staging or resetting the tables, launching, waiting for the end to be reported, reading the
//! statistics). Every run is verified.
//!
//! `cargo run --release --bin plan_bench -- --tasks 1000,10000,100000 --reps 200` runs on the GPU
//! when there is one (else on the CPU backend; `--backend cpu` forces it).

use std::time::{Duration, Instant};

use clap::Parser;
use taskweave::{Report, Runtime};
use taskweave_examples::RunArgs;
use taskweave_kernels::dags::bump_resident;

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

/// The medians of what `rows` (wall time, report) say.
fn medians(rows: &[(Duration, Report)]) -> Row {
    let pick = |f: &dyn Fn(&(Duration, Report)) -> Duration| {
        median(rows.iter().map(|r| us(f(r))).collect())
    };
    Row {
        wall: pick(&|r| r.0),
        execute: pick(&|r| r.1.execute_time),
        inspect: pick(&|r| r.1.inspect_time),
        host: pick(&|r| r.1.host_time),
    }
}

/// Calls `call(k)` for each of `variants` in turn, `reps` rounds after 3 warm-up rounds (so that
/// the variants meet the same machine state); the medians of each variant's reports.
fn measure(
    reps: usize,
    variants: usize,
    mut call: impl FnMut(usize) -> Result<Report, taskweave::Error>,
) -> Result<Vec<Row>, taskweave::Error> {
    let mut rows: Vec<Vec<(Duration, Report)>> = (0..variants).map(|_| Vec::new()).collect();
    for round in 0..reps + 3 {
        for (k, rows) in rows.iter_mut().enumerate() {
            let start = Instant::now();
            let report = call(k)?;
            if round >= 3 {
                rows.push((start.elapsed(), report));
            }
        }
    }
    Ok(rows.iter().map(|r| medians(r)).collect())
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
         element of a resident u32 array; host = Report::host_time; the two plan.run rows \
         interleaved",
        cli.reps
    );
    println!();
    println!("| tasks | call | wall | execute | inspect | host | wall - execute |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for &tasks in &cli.tasks {
        let mut x = rt.upload(&vec![0u32; tasks])?;
        let fresh = measure(cli.reps, 1, |_| {
            cli.run.apply(bump_resident(&mut x)).run(&rt)
        })?;
        // A plan replayed as CUDA graphs (the default) and one issuing its calls' operations one
        // by one, interleaved.
        let mut plans = Vec::new();
        for replay in [true, false] {
            let plan = cli.run.apply(bump_resident(&mut x)).plan(&rt)?;
            plans.push(plan.verify(false).replay(replay));
        }
        let planned = measure(cli.reps, plans.len(), |k| {
            plans[k].run(bump_resident(&mut x), &rt)
        })?;
        // Every call added one to every element.
        let calls = 3 * (cli.reps + 3) as u32;
        let out = x.download()?;
        if let Some(i) = out.iter().position(|&v| v != calls) {
            return Err(format!("{tasks} tasks: element {i} is {}, not {calls}", out[i]).into());
        }
        let names = ["region.run", "plan.run", "plan.run, replay off"];
        for (name, row) in names.into_iter().zip(fresh.into_iter().chain(planned)) {
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
