//! Tiled LU decomposition without pivoting on the tile library, checked by its residual (and,
//! with `--reference`, against the sequential factorization).
//!
//! `cargo run --release --bin lu -- --nb 32 --bs 128 --prec f64 --resident` factors a matrix of
//! order 4096 in 128-tiles. Juggler's LU-D, with scalar bodies, is `workload lu-d`.

use clap::Parser;
use taskweave_examples::RunArgs;
use taskweave_examples::factor::{self, FactorArgs, Which};

#[derive(Parser, Debug)]
#[command(about = "Tiled LU decomposition without pivoting with the tile library")]
struct Cli {
    #[command(flatten)]
    factor: FactorArgs,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(|| {
        let cli = Cli::parse();
        factor::run(Which::Lu, &cli.factor, &cli.run)
    })
}
