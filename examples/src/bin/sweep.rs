//! Every workload, and the scheduler benchmark's wavefront and chain, at a small size on every
//! backend (and on the persistent and CPU backends under each chosen policy), each run verified
//! against its sequential reference: what `scripts/gpu-evidence.sh` runs under compute-sanitizer.
//! One process covers every backend, so the sanitizer instruments the module once; a run that
//! fails is reported and the sweep goes on.
//!
//! `sweep` (every GPU backend on a GPU, the CPU backend otherwise), `sweep --backends barrier`,
//! `sweep --policies grr,static,affinity`.

use std::time::Duration;

use clap::Parser;
use taskweave::{Backend, Policy, Region, Runtime};
use taskweave_examples::backend_parser;
use taskweave_examples::workloads::*;
use taskweave_kernels::dags;

/// Every workload, the wavefront and the chain at a small size on every backend, each verified.
#[derive(Parser, Debug)]
#[command(name = "sweep")]
struct Cli {
    /// Backends (default: every GPU backend on a GPU, the CPU backend without one).
    #[arg(long, value_delimiter = ',', value_parser = backend_parser())]
    backends: Vec<Backend>,
    /// Policies of the persistent and CPU backends (the others ignore the policy).
    #[arg(long, value_delimiter = ',', default_value = "grr,static")]
    policies: Vec<Policy>,
    /// Workers of the persistent and CPU backends: few, so that the sanitizers stay fast.
    #[arg(long, default_value_t = 16)]
    workers: u32,
    /// Index checks off (`checked(false)`, the kernels without the checks).
    #[arg(long)]
    unchecked: bool,
}

/// The workloads at the sizes of the first sanitizer runs
/// (`git show b958dab:bench/results/sanitizers-h100.md`):
/// each tile kernel on a few dozen tiles.
fn small() -> Vec<Box<dyn Workload>> {
    vec![
        Box::new(Dtw::new(&DtwParams { n: 256, tile: 32 }).expect("a valid size")),
        Box::new(
            Heat::new(&HeatParams {
                n: 256,
                tile: 32,
                steps: 2,
            })
            .expect("a valid size"),
        ),
        Box::new(
            IntHist::new(&IntHistParams {
                n: 128,
                tile: 16,
                bins: 4,
            })
            .expect("a valid size"),
        ),
        Box::new(
            Jacobi::new(&JacobiParams {
                n: 256,
                tile: 32,
                steps: 2,
            })
            .expect("a valid size"),
        ),
        Box::new(Lud::new(&LudParams { nb: 4, tile: 16 }).expect("a valid size")),
        Box::new(Sat::new(&SatParams { n: 256, tile: 32 }).expect("a valid size")),
        Box::new(SmithWaterman::new(&SmwParams { n: 256, tile: 32 }).expect("a valid size")),
        Box::new(Nw::new(&NwParams { n: 256, tile: 32 }).expect("a valid size")),
    ]
}

/// One run's settings.
#[derive(Clone, Copy)]
struct Setting {
    backend: Backend,
    policy: Policy,
}

impl Setting {
    fn apply<'a>(self, region: Region<'a>, cli: &Cli) -> Region<'a> {
        let region = region
            .backend(self.backend)
            .policy(self.policy)
            .checked(!cli.unchecked)
            .watchdog(Duration::from_secs(120));
        if matches!(self.backend, Backend::Persistent | Backend::Cpu) {
            region.workers(cli.workers)
        } else {
            region
        }
    }

    fn name(self) -> String {
        if matches!(self.backend, Backend::Persistent | Backend::Cpu) {
            format!("{}/{}", self.backend.name(), self.policy.name())
        } else {
            self.backend.name().to_owned()
        }
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let runtime = Runtime::new();
    let gpu = runtime.gpu_device().is_some();
    let backends: Vec<Backend> = if cli.backends.is_empty() {
        if gpu {
            vec![
                Backend::Persistent,
                Backend::Barrier,
                Backend::GridBarrier,
                Backend::Graph,
                Backend::Streams,
            ]
        } else {
            vec![Backend::Cpu]
        }
    } else {
        cli.backends.clone()
    };
    if let Some(b) = backends.iter().find(|b| b.needs_gpu() && !gpu) {
        return Err(format!(
            "{} needs a GPU; this is the {}",
            b.name(),
            runtime.describe()
        )
        .into());
    }
    let mut settings = Vec::new();
    for &backend in &backends {
        if matches!(backend, Backend::Persistent | Backend::Cpu) {
            settings.extend(
                cli.policies
                    .iter()
                    .map(|&policy| Setting { backend, policy }),
            );
        } else {
            settings.push(Setting {
                backend,
                policy: Policy::Grr,
            });
        }
    }
    println!(
        "sweep on {}: {} settings, {} workers on the persistent and CPU backends, index checks {}",
        runtime.describe(),
        settings.len(),
        cli.workers,
        if cli.unchecked { "off" } else { "on" }
    );
    let (mut ran, mut failed) = (0usize, 0usize);
    let mut report = |what: &str, setting: Setting, outcome: Result<String, String>| {
        ran += 1;
        match outcome {
            Ok(check) => println!("PASS {what} on {}: {check}", setting.name()),
            Err(why) => {
                failed += 1;
                println!("FAIL {what} on {}: {why}", setting.name());
            }
        }
    };
    for mut w in small() {
        for &setting in &settings {
            let what = format!("{} ({})", w.name(), w.size());
            let outcome = match setting.apply(w.fresh(), &cli).run(&runtime) {
                Err(e) => Err(e.to_string()),
                Ok(_) => {
                    let verdict = w.verify();
                    if verdict.passed() {
                        Ok(verdict.to_string())
                    } else {
                        Err(verdict.to_string())
                    }
                }
            };
            report(&what, setting, outcome);
        }
    }
    const T: usize = 24;
    for &setting in &settings {
        let mut g = vec![0u32; T * T];
        let outcome = match setting
            .apply(dags::wavefront(&mut g, T, 0), &cli)
            .run(&runtime)
        {
            Err(e) => Err(e.to_string()),
            Ok(_) if dags::check_wavefront(&g, T) => Ok("PASS".to_owned()),
            Ok(_) => Err("wrong result".to_owned()),
        };
        report("wavefront 24x24", setting, outcome);
        let mut c = vec![0u32; 200];
        let outcome = match setting.apply(dags::chain(&mut c, 0), &cli).run(&runtime) {
            Err(e) => Err(e.to_string()),
            Ok(_) if dags::check_chain(&c) => Ok("PASS".to_owned()),
            Ok(_) => Err("wrong result".to_owned()),
        };
        report("chain of 200", setting, outcome);
    }
    println!("{} of {ran} runs passed, {failed} failed", ran - failed);
    if failed > 0 {
        return Err(format!("{failed} runs failed").into());
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}
