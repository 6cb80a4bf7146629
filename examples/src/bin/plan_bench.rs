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

/// Runs `call` `reps` times after 3 warm-up calls; the medians of what it reports.
fn measure(
    reps: usize,
    mut call: impl FnMut() -> Result<Report, taskweave::Error>,
) -> Result<Row, taskweave::Error> {
    for _ in 0..3 {
        call()?;
    }
    let mut rows = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        let report = call()?;
        rows.push((start.elapsed(), report));
    }
    let pick = |f: &dyn Fn(&(Duration, Report)) -> Duration| {
        median(rows.iter().map(|r| us(f(r))).collect())
    };
    Ok(Row {
        wall: pick(&|r| r.0),
        execute: pick(&|r| r.1.execute_time),
        inspect: pick(&|r| r.1.inspect_time),
        host: pick(&|r| r.1.host_time),
    })
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
         element of a resident u32 array; host = Report::host_time",
        cli.reps
    );
    println!();
    println!("| tasks | call | wall | execute | inspect | host | wall - execute |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for &tasks in &cli.tasks {
        let mut x = rt.upload(&vec![0u32; tasks])?;
        let fresh = measure(cli.reps, || cli.run.apply(bump_resident(&mut x)).run(&rt))?;
        let mut plan = cli
            .run
            .apply(bump_resident(&mut x))
            .plan(&rt)?
            .verify(false);
        let planned = measure(cli.reps, || plan.run(bump_resident(&mut x), &rt))?;
        // Every call added one to every element.
        let calls = 2 * (cli.reps + 3) as u32;
        let out = x.download()?;
        if let Some(i) = out.iter().position(|&v| v != calls) {
            return Err(format!("{tasks} tasks: element {i} is {}, not {calls}", out[i]).into());
        }
        for (name, row) in [("region.run", fresh), ("plan.run", planned)] {
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
