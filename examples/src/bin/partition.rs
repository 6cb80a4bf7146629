//! SM partitioning (after the SM-centric paper): two workloads run at once, each confined to its
//! own set of SMs (`Region::sms`), against running them one after the other on the whole GPU and
//! against running them at once unconfined. A simple search picks the split: a coarse grid of
//! splits, then the neighbours of the best one.
//!
//! Every run of every case is verified against the workloads' sequential references.
//!
//! Besides Juggler's workloads, `--a` and `--b` take `WAVE-T` (e.g. `WAVE-64`): a `T × T`
//! wavefront of tasks that spin `--spin` cycles each on a `T²`-word array. Its kernel dominates
//! its wall time, and it cannot fill the GPU (at most `T` tasks are ready at once), which is the
//! case partitioning is for; the Table 1 workloads spend most of their wall time staging and
//! copying their arrays.
//!
//! `cargo run --release --bin partition -- --a LU-D --b DT-WARP --out bench/results/partition`
//! `cargo run --release --bin partition -- --a WAVE-64 --b WAVE-64 --spin 20000`

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use taskweave::Runtime;
use taskweave_examples::RunArgs;
use taskweave_examples::bench::median;
use taskweave_examples::workloads::{self, Verdict, Workload};
use taskweave_kernels::dags;

#[derive(Parser, Debug)]
#[command(about = "Two workloads on disjoint SM sets at once, against one after the other")]
struct Cli {
    /// The first workload (its Table 1 name, e.g. LU-D).
    #[arg(long, default_value = "LU-D")]
    a: String,
    /// The second workload.
    #[arg(long, default_value = "DT-WARP")]
    b: String,
    /// Repetitions of each case (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Points of the coarse grid of splits (the first workload gets `k` SMs of `sms`).
    #[arg(long, default_value_t = 5)]
    grid: u32,
    /// Spin cycles of each task of a `WAVE-T` workload (2000 is about 1 us on the H100).
    #[arg(long, default_value_t = 20_000)]
    spin: u64,
    /// Write `partition.md` here.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn find(name: &str, spin: u64) -> Result<Box<dyn Workload>, String> {
    if let Some(t) = name.to_ascii_uppercase().strip_prefix("WAVE-") {
        let t = t
            .parse()
            .ok()
            .filter(|&t| t > 0)
            .ok_or_else(|| format!("`{name}`: WAVE-T takes a side T > 0"))?;
        return Ok(Box::new(Wave {
            t,
            spin,
            g: Vec::new(),
        }));
    }
    workloads::all()
        .into_iter()
        .find(|w| w.name().eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("no workload `{name}`"))
}

/// A `t × t` wavefront of tasks that spin `spin` cycles each (`dags::wavefront`).
struct Wave {
    t: usize,
    spin: u64,
    g: Vec<u32>,
}

impl Workload for Wave {
    fn name(&self) -> &'static str {
        "WAVE"
    }

    fn size(&self) -> String {
        format!("{0}x{0} tasks of {1} spin cycles", self.t, self.spin)
    }

    fn tasks(&self) -> usize {
        self.t * self.t
    }

    fn fresh(&mut self) -> taskweave::Region<'_> {
        self.g = vec![0; self.t * self.t];
        dags::wavefront(&mut self.g, self.t, self.spin)
    }

    fn verify(&self) -> Verdict {
        if dags::check_wavefront(&self.g, self.t) {
            Verdict::Exact
        } else {
            Verdict::Mismatch("a cell is not one more than the larger of its inputs".to_owned())
        }
    }
}

/// How the two workloads run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Case {
    /// One after the other, each on the whole GPU.
    Sequential,
    /// Submitted together, no SM sets.
    Together,
    /// Submitted together, the first on SMs `0..k`, the second on `k..sms`.
    Split(u32),
}

impl std::fmt::Display for Case {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Case::Sequential => f.write_str("one after the other"),
            Case::Together => f.write_str("together, unconfined"),
            Case::Split(k) => write!(f, "together, SMs 0..{k} and {k}.."),
        }
    }
}

struct Pair<'c> {
    a: Box<dyn Workload>,
    b: Box<dyn Workload>,
    rt: &'c Runtime,
    args: &'c RunArgs,
    sms: u32,
}

impl Pair<'_> {
    /// Runs `case` once and returns its wall time in seconds, after verifying both outputs.
    fn once(&mut self, case: Case) -> Result<f64, Box<dyn std::error::Error>> {
        let (rt, args, sms) = (self.rt, self.args, self.sms);
        let start = Instant::now();
        match case {
            Case::Sequential => {
                self.a.run(rt, args)?;
                self.b.run(rt, args)?;
            }
            Case::Together | Case::Split(_) => {
                let (mut ra, mut rb) = (args.apply(self.a.fresh()), args.apply(self.b.fresh()));
                if let Case::Split(k) = case {
                    ra = ra.sms(0..k);
                    rb = rb.sms(k..sms);
                }
                let (pa, pb) = (ra.submit(rt)?, rb.submit(rt)?);
                pa.wait()?;
                pb.wait()?;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        for w in [&self.a, &self.b] {
            let verdict = w.verify();
            if !verdict.passed() {
                return Err(format!("{} ({case}): {verdict}", w.name()).into());
            }
        }
        Ok(seconds)
    }

    /// The median of `reps` runs of `case`.
    fn time(&mut self, case: Case, reps: usize) -> Result<f64, Box<dyn std::error::Error>> {
        let times = (0..reps)
            .map(|_| self.once(case))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(median(&times))
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let rt = cli.run.runtime()?;
    // On the CPU backend each worker thread counts as an SM.
    let sms = rt.gpu_device().map_or_else(
        || std::thread::available_parallelism().map_or(2, |n| n.get() as u32),
        |g| g.sm_count(),
    );
    let mut pair = Pair {
        a: find(&cli.a, cli.spin)?,
        b: find(&cli.b, cli.spin)?,
        rt: &rt,
        args: &cli.run,
        sms,
    };
    println!(
        "partition: {} ({}) and {} ({}) on {}",
        pair.a.name(),
        pair.a.size(),
        pair.b.name(),
        pair.b.size(),
        rt.describe()
    );
    // Warm-up: modules loaded, inputs made.
    pair.once(Case::Sequential)?;
    let mut results: Vec<(Case, f64)> = Vec::new();
    let mut measure =
        |pair: &mut Pair<'_>, case: Case| -> Result<f64, Box<dyn std::error::Error>> {
            if let Some(&(_, t)) = results.iter().find(|(c, _)| *c == case) {
                return Ok(t);
            }
            let t = pair.time(case, cli.reps)?;
            println!("{case:<28} {:>10.3} ms", t * 1e3);
            results.push((case, t));
            Ok(t)
        };
    let sequential = measure(&mut pair, Case::Sequential)?;
    measure(&mut pair, Case::Together)?;
    // The search: a coarse grid, then the neighbours of the best split halfway to the next points.
    // At least one SM a side: with fewer SMs than grid points the grid is every split.
    let step = (sms / (cli.grid + 1)).max(1);
    let mut best = (Case::Split(step), f64::INFINITY);
    for k in (1..=cli.grid).map(|i| i * step).take_while(|&k| k < sms) {
        let case = Case::Split(k);
        let t = measure(&mut pair, case)?;
        if t < best.1 {
            best = (case, t);
        }
    }
    if let Case::Split(k) = best.0 {
        for k in [k - step / 2, k + step / 2] {
            if k > 0 && k < sms {
                let t = measure(&mut pair, Case::Split(k))?;
                if t < best.1 {
                    best = (Case::Split(k), t);
                }
            }
        }
    }
    let mut md = format!(
        "{} ({}, {} tasks) and {} ({}, {} tasks) on {}; median of {} runs each, every run verified.\n\n\
         | case | ms | speedup over one after the other |\n| --- | --- | --- |\n",
        pair.a.name(),
        pair.a.size(),
        pair.a.tasks(),
        pair.b.name(),
        pair.b.size(),
        pair.b.tasks(),
        rt.describe(),
        cli.reps
    );
    results.sort_by_key(|(c, _)| match c {
        Case::Sequential => 0,
        Case::Together => 1,
        Case::Split(k) => 2 + *k,
    });
    for (case, t) in &results {
        let mark = if *case == best.0 { " (best split)" } else { "" };
        let _ = writeln!(
            md,
            "| {case}{mark} | {:.3} | {:.2}x |",
            t * 1e3,
            sequential / t
        );
    }
    println!("\n{md}");
    if let Some(dir) = &cli.out {
        std::fs::create_dir_all(dir)?;
        let file = dir.join(format!(
            "partition-{}-{}.md",
            pair.a.name().to_lowercase(),
            pair.b.name().to_lowercase()
        ));
        std::fs::write(&file, &md)?;
        println!("wrote {}", file.display());
    }
    Ok(())
}
