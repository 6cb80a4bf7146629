//! A soak: many regions back to back on one runtime, each verified, with the device's free memory
//! sampled along the way. It fails on a wrong result, an error, or free device memory that ends
//! lower than it started by more than `--slack-mib` (a leak per region shows as a steady fall).
//!
//! `cargo run --release --bin soak -- --regions 10000` (on the CPU backend the memory check is off).

use clap::Parser;
use taskweave_examples::RunArgs;
use taskweave_kernels::{dags, lud};

#[derive(Parser, Debug)]
#[command(about = "Runs many regions back to back and checks results and device memory")]
struct Cli {
    /// Regions to run.
    #[arg(long, default_value_t = 10_000)]
    regions: usize,
    /// Allowed fall of free device memory from the first sample to the last, in MiB.
    #[arg(long, default_value_t = 8)]
    slack_mib: u64,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let runtime = cli.run.runtime()?;
    println!("soak of {} regions on {}", cli.regions, runtime.describe());
    let free = || -> Result<Option<u64>, taskweave::Error> {
        runtime.gpu_device().map(|g| g.free_memory()).transpose()
    };
    let input = lud::reference::matrix(4, 8, 3);
    let reference = lud::reference::lu(&input, 4, 8);
    let mut samples = Vec::new();
    let start = std::time::Instant::now();
    for i in 0..cli.regions {
        // Alternate two region shapes, so that both a cached and a fresh set of tables recur.
        if i % 2 == 0 {
            let mut a = input.clone();
            cli.run.apply(lud::lu(&mut a, 4, 8)).run(&runtime)?;
            let error = taskweave_examples::workloads::factor_error(&a, &reference, 4, 8);
            if error.is_nan() || error > taskweave_examples::workloads::LUD_BOUND {
                return Err(format!("region {i} (LU): factor error {error:.2e}").into());
            }
        } else {
            let t = 8 + i % 9;
            let mut g = vec![0u32; t * t];
            cli.run.apply(dags::wavefront(&mut g, t, 0)).run(&runtime)?;
            if !dags::check_wavefront(&g, t) {
                return Err(format!("region {i} (wavefront {t}x{t}): wrong result").into());
            }
        }
        if i % (cli.regions / 10).max(1) == 0 || i + 1 == cli.regions {
            let sample = free()?;
            if let Some(bytes) = sample {
                println!(
                    "after region {:>6}: {:>12} bytes of device memory free, {:>8.3} s",
                    i + 1,
                    bytes,
                    start.elapsed().as_secs_f64()
                );
                samples.push(bytes);
            }
        }
    }
    let elapsed = start.elapsed();
    println!(
        "{} regions in {:.2} s ({:.0} us per region), every result checked",
        cli.regions,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / cli.regions.max(1) as f64
    );
    if let (Some(first), Some(last)) = (samples.first(), samples.last()) {
        let fall = first.saturating_sub(*last);
        println!("free device memory: first {first}, last {last}, fall {fall} bytes");
        if fall > cli.slack_mib << 20 {
            return Err(format!(
                "free device memory fell by {fall} bytes over the soak (slack {} MiB)",
                cli.slack_mib
            )
            .into());
        }
    }
    println!("soak: PASS");
    Ok(())
}
