//! Tiled LU decomposition in the DSL, checked against a sequential `f64` LU.
//!
//! `cargo run --release --bin lu -- --nb 15 --bs 32` runs Juggler's LU-D size (1240 tasks).

use clap::Parser;
use taskweave_examples::RunArgs;
use taskweave_kernels::lu;

#[derive(Parser, Debug)]
#[command(about = "Tiled LU decomposition with taskweave")]
struct Cli {
    /// Tiles per side (15 gives Juggler's 1240 tasks).
    #[arg(long, default_value_t = 15)]
    nb: usize,
    /// Tile side in elements.
    #[arg(long, default_value_t = 32)]
    bs: usize,
    /// Repetitions (fresh matrix each time; the last is verified).
    #[arg(long, default_value_t = 1)]
    reps: usize,
    /// Bound for the check: the factors' error against an f64 reference, each part at its own
    /// scale (see `workloads::factor_error`).
    #[arg(long, default_value_t = taskweave_examples::workloads::LUD_BOUND)]
    tolerance: f64,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let runtime = cli.run.runtime()?;
    println!("{}", runtime.describe());
    let input = lu::reference::matrix(cli.nb, cli.bs, 42);
    let mut a = input.clone();
    for _ in 0..cli.reps {
        a.copy_from_slice(&input);
        let report = cli
            .run
            .apply(lu::lu(&mut a, cli.nb, cli.bs))
            .run(&runtime)?;
        println!("{report}");
        cli.run.write_trace(&report)?;
    }
    let reference = lu::reference::lu(&input, cli.nb, cli.bs);
    let error = taskweave_examples::workloads::factor_error(&a, &reference, cli.nb, cli.bs);
    println!(
        "check: factor error {error:.3e} (bound {:.0e})",
        cli.tolerance
    );
    if error.is_nan() || error > cli.tolerance {
        return Err(format!("LU result differs from the sequential reference: {error:.3e}").into());
    }
    println!("check: PASS");
    Ok(())
}
