//! Tiled Cholesky factorization on the tile library, checked by its residual (and, with
//! `--reference`, against the sequential factorization).
//!
//! `cargo run --release --bin cholesky -- --nb 32 --bs 128 --prec f64 --resident` factors an
//! SPD matrix of order 4096 in 128-tiles and prints the execution time, the rate and the check.

use clap::Parser;
use taskweave_examples::RunArgs;
use taskweave_examples::factor::{self, FactorArgs, Which};

#[derive(Parser, Debug)]
#[command(about = "Tiled Cholesky factorization with the tile library")]
struct Cli {
    #[command(flatten)]
    factor: FactorArgs,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(|| {
        let cli = Cli::parse();
        factor::run(Which::Cholesky, &cli.factor, &cli.run)
    })
}
