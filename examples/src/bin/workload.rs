//! Runs one of the example workloads with taskweave and checks it against its sequential
//! reference; exits non-zero on a mismatch.
//!
//! `workload sm-w` runs SM-W at Juggler's size (5184 tasks); `workload sm-w --n 9216 --tile 64`
//! runs a larger one; `workload list` prints every workload's default size and DAG shape.

use clap::{Args, Parser, Subcommand};
use taskweave_examples::RunArgs;
use taskweave_examples::calls::Calls;
use taskweave_examples::workloads::{self, *};

#[derive(Parser, Debug)]
#[command(about = "Runs one example workload with taskweave and checks it against its reference")]
struct Cli {
    #[command(subcommand)]
    workload: Which,
}

/// A workload's size options plus the options every run takes.
#[derive(Args, Debug)]
struct Opts<P: Args> {
    #[command(flatten)]
    size: P,
    /// Repetitions, each from fresh input; the last one is verified.
    #[arg(long, default_value_t = 1)]
    reps: usize,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// DT-WARP: dynamic time warping of two series, a wavefront of DP tiles.
    #[command(alias = "dtw")]
    DtWarp(Opts<DtwParams>),
    /// HEAT-SIM: Gauss-Seidel heat diffusion, a wavefront per time step.
    #[command(alias = "heat")]
    HeatSim(Opts<HeatParams>),
    /// INT-HIST: integral histogram of an image, a wavefront of tiles.
    #[command(alias = "hist")]
    IntHist(Opts<IntHistParams>),
    /// JACOBI: five-point Jacobi sweeps, copy and compute tasks per tile and step.
    Jacobi(Opts<JacobiParams>),
    /// LU-D: tiled LU decomposition without pivoting.
    #[command(alias = "lu")]
    LuD(Opts<LudParams>),
    /// SA-TABLE: summed-area table of an image, a wavefront of tiles.
    #[command(alias = "sat")]
    SaTable(Opts<SatParams>),
    /// SM-W: Smith-Waterman local alignment, a wavefront of DP tiles.
    #[command(alias = "smw")]
    SmW(Opts<SmwParams>),
    /// NW: Needleman-Wunsch global alignment, a wavefront of DP tiles.
    Nw(Opts<NwParams>),
    /// Lists every workload at its default size: tasks and DAG shape (inspection only).
    List,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    match Cli::parse().workload {
        Which::DtWarp(o) => execute(Dtw::new(&o.size)?, o.reps, &o.run),
        Which::HeatSim(o) => execute(Heat::new(&o.size)?, o.reps, &o.run),
        Which::IntHist(o) => execute(IntHist::new(&o.size)?, o.reps, &o.run),
        Which::Jacobi(o) => execute(Jacobi::new(&o.size)?, o.reps, &o.run),
        Which::LuD(o) => execute(Lud::new(&o.size)?, o.reps, &o.run),
        Which::SaTable(o) => execute(Sat::new(&o.size)?, o.reps, &o.run),
        Which::SmW(o) => execute(SmithWaterman::new(&o.size)?, o.reps, &o.run),
        Which::Nw(o) => execute(Nw::new(&o.size)?, o.reps, &o.run),
        Which::List => {
            for mut w in workloads::all() {
                let shape = Shape::of(&w.inspect()?);
                println!(
                    "{:<9} {:>6} tasks  {}  ({})",
                    w.name(),
                    w.tasks(),
                    shape,
                    w.size()
                );
            }
            Ok(())
        }
    }
}

/// Runs `w` `reps` times with `args`, prints each report, the wall time per call (first, steady)
/// beside the execution time, and the verdict on the last run.
fn execute(
    mut w: impl Workload,
    reps: usize,
    args: &RunArgs,
) -> Result<(), Box<dyn std::error::Error>> {
    let runtime = args.runtime()?;
    println!("{}", runtime.describe());
    println!("{}: {}, {} tasks", w.name(), w.size(), w.tasks());
    let mut calls = Calls::default();
    for _ in 0..reps.max(1) {
        let report = w.run(&runtime, args)?;
        println!("{report}");
        calls.push(&report);
        if args.per_sm.is_some() {
            let (sms, fewest, most) = report.sm_spread();
            println!("SMs: {sms} with workers, {fewest} to {most} workers on each");
        }
        args.write_trace(&report)?;
    }
    println!("{calls}");
    let verdict = w.verify();
    println!("check: {verdict}");
    if verdict.passed() {
        Ok(())
    } else {
        Err(format!("{} differs from its sequential reference", w.name()).into())
    }
}
