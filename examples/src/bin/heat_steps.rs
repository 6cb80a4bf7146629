//! A time-stepping loop on resident arrays, the case plans are for: HEAT-SIM's Gauss-Seidel steps
//! over an `n × n` plate, one region call per step, ping-ponging between the two halves of a
//! resident buffer. The loop runs three times, each time from the same plate and verified
//! against the sequential `f64` reference:
//!
//! 1. `region.run, cache off`: every step inspects its region again (`.cache(false)`);
//! 2. `region.run`: the runtime keeps each parity's plan from its first step and runs it again
//!    for the later steps (its plan cache, on by default);
//! 3. `plan.run`: one plan per parity, made on the first two steps, run for all the others.
//!
//! Each step prints its wall time (measured around the call), its execute time and its host time
//! (`Report::host_time`), then each loop its first step and the medians of the rest.
//!
//! `cargo run --release --bin heat_steps -- --n 2880 --steps 100` (Juggler's HEAT-SIM plate; the
//! default is smaller, for the CPU backend).

use std::time::{Duration, Instant};

use clap::Parser;
use taskweave::{Plan, Region, Report};
use taskweave_examples::RunArgs;
use taskweave_examples::workloads::{ALPHA, STENCIL_BOUND as BOUND};
use taskweave_kernels::grid::host::{relative_error, to_row_major, to_tile_major};
use taskweave_kernels::heat;

#[derive(Parser, Debug)]
#[command(
    about = "HEAT-SIM time steps on resident arrays: inspected every step, cached, then planned"
)]
struct Cli {
    /// Plate side in cells, a multiple of --tile.
    #[arg(long, default_value_t = 512)]
    n: usize,
    /// Tile side in cells (at most 64).
    #[arg(long, default_value_t = 32)]
    tile: usize,
    /// Time steps.
    #[arg(long, default_value_t = 100)]
    steps: usize,
    /// Print every step, not only the summary.
    #[arg(long)]
    per_step: bool,
    #[command(flatten)]
    run: RunArgs,
}

/// One step's wall, execute, host and inspection times.
struct Step {
    wall: Duration,
    report: Report,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n => v[n / 2],
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let (n, bs) = (cli.n, cli.tile);
    if bs == 0 || bs > heat::MAX_TILE || n % bs != 0 {
        return Err(format!("--n {n} must be a multiple of --tile {bs} (1..=64)").into());
    }
    let nb = n / bs;
    let rt = cli.run.runtime()?;
    println!(
        "# heat_steps on {}: {n}x{n} plate, tiles of {bs} ({} tasks a step), {} steps",
        rt.describe(),
        nb * nb,
        cli.steps
    );
    let input = to_tile_major(&heat::reference::plate(n, 31), nb, bs, 1);
    let mut u0 = vec![0.0f32; 2 * n * n];
    u0[..n * n].copy_from_slice(&input);
    let mut cols0 = vec![0.0f32; 2 * 2 * nb * n];
    heat::reference::edges(&input, &mut cols0, nb, bs);
    let want = heat::reference::heat(&to_row_major(&input, nb, bs, 1), n, cli.steps, ALPHA);

    let mut summary = Vec::new();
    for name in ["region.run, cache off", "region.run", "plan.run"] {
        let planned = name == "plan.run";
        rt.clear_plans();
        let mut u = rt.upload(&u0)?;
        let mut cols = rt.upload(&cols0)?;
        let region = |u: &mut _, cols: &mut _, parity| -> Region<'static> {
            cli.run
                .apply(heat::heat_step(u, cols, nb, bs, parity, ALPHA))
                .shared_bytes(heat::SHARED_BYTES)
        };
        let mut plans: [Option<Plan>; 2] = [None, None];
        let mut steps = Vec::with_capacity(cli.steps);
        for t in 0..cli.steps {
            let parity = t % 2;
            let start = Instant::now();
            let report = if planned {
                let plan = match &mut plans[parity] {
                    Some(plan) => plan,
                    slot @ None => slot.insert(region(&mut u, &mut cols, parity).plan(&rt)?),
                };
                plan.run(region(&mut u, &mut cols, parity), &rt)?
            } else {
                let cache = name == "region.run";
                region(&mut u, &mut cols, parity).cache(cache).run(&rt)?
            };
            let wall = start.elapsed();
            if cli.per_step {
                println!(
                    "{name} step {t:>4}: wall {:>9.1} us, execute {:>9.1} us, host {:>7.1} us, \
                     inspect {:>8.1} us",
                    us(wall),
                    us(report.execute_time),
                    us(report.host_time),
                    us(report.inspect_time)
                );
            }
            steps.push(Step { wall, report });
        }
        let out = u.download()?;
        let at = (cli.steps % 2) * n * n;
        let error = relative_error(&to_row_major(&out[at..at + n * n], nb, bs, 1), &want);
        if error.is_nan() || error > BOUND {
            return Err(format!(
                "{name}: relative error {error:.2e} against the sequential reference (bound {BOUND:.0e})"
            )
            .into());
        }
        summary.push((name, steps, error));
    }

    println!();
    println!(
        "| loop | first step wall (us) | wall (us) | execute (us) | host (us) | inspect (us) | \
         wall - execute (us) | error |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (name, steps, error) in summary {
        let Some((first, rest)) = steps.split_first() else {
            continue;
        };
        // The planned and cached loops meet their second parity on the second step, and the
        // cached one stages each parity's tables on its second call: the steady state follows.
        let steady = if name == "region.run" && rest.len() > 3 {
            &rest[3..]
        } else if name == "plan.run" && rest.len() > 1 {
            &rest[1..]
        } else {
            rest
        };
        let pick =
            |f: &dyn Fn(&Step) -> Duration| median(steady.iter().map(|s| us(f(s))).collect());
        let (wall, execute) = (pick(&|s| s.wall), pick(&|s| s.report.execute_time));
        println!(
            "| {name} | {:.1} | {wall:.1} | {execute:.1} | {:.1} | {:.1} | {:.1} | {error:.1e} |",
            us(first.wall),
            pick(&|s| s.report.host_time),
            pick(&|s| s.report.inspect_time),
            wall - execute
        );
    }
    println!();
    println!("every loop matches the sequential reference (bound {BOUND:.0e})");
    Ok(())
}
