//! The scheduler benchmark: the same DAGs on every backend, side by side in one run.
//!
//! DAGs: 1,000,000 independent empty tasks; a T=1024 wavefront of empty tasks; a chain of 10,000
//! empty tasks (dependence-hop latency); T×T wavefronts of ~1 µs and ~10 µs spin tasks against their
//! lower bound max(critical path, work / workers). Backends: the persistent scheduler (several
//! policies), one launch per level (for a wavefront, per diagonal), and one launch with a grid
//! barrier per level. Times are kernel times from CUDA events, medians of `--reps` runs after a
//! warm-up; every run's result is checked.

use std::time::Duration;

use clap::Parser;
use taskweave::{Backend, Policy, Region, Report, Runtime};
use taskweave_kernels::dags;

#[derive(Parser, Debug)]
#[command(about = "Scheduler benchmark: persistent scheduler vs level-by-level execution")]
struct Cli {
    /// Timed repetitions per case (after one warm-up).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Threads per task block.
    #[arg(long, default_value_t = 64)]
    threads: u32,
    /// Spin cycles of a "~1 µs" task.
    #[arg(long, default_value_t = 2000)]
    short: u64,
    /// Only the quick cases (small sizes), e.g. on the CPU backend.
    #[arg(long)]
    quick: bool,
    /// Run on the CPU backend instead of the GPU.
    #[arg(long)]
    cpu: bool,
    /// A fixed worker count for the persistent scheduler (default: from occupancy).
    #[arg(long)]
    workers: Option<u32>,
    /// Only the DAGs whose name contains this (e.g. `chain`).
    #[arg(long)]
    only: Option<String>,
    /// The largest DAG the graph and streams backends run (they build per task on the host).
    #[arg(long, default_value_t = 300_000)]
    host_built_limit: usize,
    /// Only these backends (comma-separated names, e.g. `persistent,barrier`); default all.
    #[arg(long, value_delimiter = ',')]
    backends: Vec<String>,
}

#[derive(Clone, Copy)]
enum Dag {
    Independent(usize),
    Wavefront(usize),
    Chain(usize),
}

impl Dag {
    fn name(self) -> String {
        match self {
            Self::Independent(n) => format!("independent n={n}"),
            Self::Wavefront(t) => format!("wavefront T={t}"),
            Self::Chain(n) => format!("chain n={n}"),
        }
    }

    fn len(self) -> usize {
        match self {
            Self::Independent(n) | Self::Chain(n) => n,
            Self::Wavefront(t) => t * t,
        }
    }

    /// Runs once and checks the result.
    fn run(
        self,
        rt: &Runtime,
        cycles: u64,
        set: &Settings,
    ) -> Result<Report, Box<dyn std::error::Error>> {
        let mut data = vec![0u32; self.len()];
        let (report, ok) = match self {
            Self::Independent(_) => (
                set.apply(dags::independent(&mut data, cycles)).run(rt)?,
                dags::check_independent(&data),
            ),
            Self::Wavefront(t) => (
                set.apply(dags::wavefront(&mut data, t, cycles)).run(rt)?,
                dags::check_wavefront(&data, t),
            ),
            Self::Chain(_) => (
                set.apply(dags::chain(&mut data, cycles)).run(rt)?,
                dags::check_chain(&data),
            ),
        };
        if !ok {
            return Err(format!("{} on {}: wrong result", self.name(), report.backend).into());
        }
        Ok(report)
    }
}

/// Region options of one run.
struct Settings {
    threads: u32,
    workers: Option<u32>,
    variant: Variant,
    trace: bool,
}

impl Settings {
    fn apply<'a>(&self, region: Region<'a>) -> Region<'a> {
        let region = match self.workers {
            Some(w) => region.workers(w),
            None => region,
        };
        region
            .threads(self.threads)
            .policy(self.variant.policy)
            .backend(self.variant.backend)
            .trace(self.trace)
            .watchdog(Duration::from_secs(60))
    }
}

#[derive(Clone, Copy, PartialEq)]
struct Variant {
    backend: Backend,
    policy: Policy,
}

impl Variant {
    fn label(self) -> String {
        match self.backend {
            Backend::Persistent | Backend::Cpu => {
                format!("{} {}", self.backend.name(), self.policy.name())
            }
            other => other.name().to_owned(),
        }
    }
}

/// A wavefront's dependence hops, from a traced run: for every cell with two parents, the gap from
/// the end of the parent that finished last to the cell's start, split by whether that parent ran
/// on the cell's worker (the hop stays on one worker: a continuation, or the next task of a static
/// list) or on another (through a queue, or through the counter a static worker waits on).
/// Medians, and how many cells each side has.
fn wavefront_hops(
    rt: &Runtime,
    t: usize,
    cycles: u64,
    threads: u32,
    variant: Variant,
) -> Result<(), Box<dyn std::error::Error>> {
    let set = Settings {
        threads,
        workers: None,
        variant,
        trace: true,
    };
    let report = Dag::Wavefront(t).run(rt, cycles, &set)?;
    let Some(trace) = report.trace.as_deref() else {
        return Ok(());
    };
    let (mut local, mut remote) = (Vec::new(), Vec::new());
    for i in 1..t {
        for j in 1..t {
            let cell = &trace[i * t + j];
            let last = [&trace[(i - 1) * t + j], &trace[i * t + j - 1]]
                .into_iter()
                .max_by_key(|r| r.end)
                .expect("two parents");
            let gap = cell.start.saturating_sub(last.end);
            if last.worker == cell.worker {
                local.push(gap);
            } else {
                remote.push(gap);
            }
        }
    }
    let mid = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v.get(v.len() / 2)
            .map_or_else(|| "-".to_owned(), |g| format!("{g} ns"))
    };
    println!(
        "wavefront T={t} hops, {}: last parent on the same worker {} ({} cells), on another {} ({} cells)",
        variant.label(),
        mid(&mut local),
        local.len(),
        mid(&mut remote),
        remote.len(),
    );
    Ok(())
}

/// Where a chain's hop goes, from a traced run: each record spans one task from just after the
/// barrier that hands it to the block to just after the barrier that ends its body (the leader's
/// `%globaltimer`); the gap
/// from one task's end to the next one's start is the scheduler's part of the hop (releasing the
/// child, placing it, taking it back or popping it, reading its record). Medians over the chain.
fn hop_breakdown(
    rt: &Runtime,
    dag: Dag,
    cycles: u64,
    threads: u32,
    variant: Variant,
) -> Result<(), Box<dyn std::error::Error>> {
    let set = Settings {
        threads,
        workers: None,
        variant,
        trace: true,
    };
    let report = dag.run(rt, cycles, &set)?;
    let Some(trace) = report.trace.as_deref().filter(|t| t.len() > 1) else {
        return Ok(());
    };
    let mid = |mut v: Vec<u64>| {
        v.sort_unstable();
        v[v.len() / 2]
    };
    if std::env::var_os("TASKWEAVE_HOP_STAMPS").is_some() {
        // A stamps build: each record holds the leader's cycles between the loop's steps.
        let steps = [
            "pick",
            "hand-over barrier",
            "start_task",
            "body call",
            "settle, row and hints",
            "end barrier",
            "release",
            "end_task",
            "run_body to the body",
            "the body itself",
            "its prefetches",
            "its watchdog store",
        ];
        let field = |t: &taskweave_device::abi::TraceRecord, i: usize| match i {
            0..3 => (t.start >> (16 * i)) & 0xFFFF,
            3..7 => (t.end >> (16 * (i - 3))) & 0xFFFF,
            7 => u64::from(t.worker) & 0xFFFF,
            8 | 9 => u64::from(t.sm >> (16 * (i - 8))) & 0xFFFF,
            10 => (t.start >> 48) & 0xFFFF,
            _ => u64::from(t.worker >> 16),
        };
        let medians: Vec<u64> = (0..steps.len())
            .map(|i| mid(trace.iter().skip(1).map(|t| field(t, i)).collect()))
            .collect();
        let parts: Vec<String> = (steps.iter().zip(&medians))
            .map(|(s, m)| format!("{s} {m}"))
            .collect();
        println!(
            "{} hop, {}, leader cycles (medians): {} = {} in all; of the body call: {}; of start_task: {}",
            dag.name(),
            variant.label(),
            parts[..8].join(", "),
            medians[..8].iter().sum::<u64>(),
            parts[8..10].join(", "),
            parts[10..].join(", ")
        );
        return Ok(());
    }
    // A chain's task k runs after task k - 1: records in task order are in time order.
    let task = mid(trace.iter().map(|t| t.end - t.start).collect());
    let gap = mid(trace
        .windows(2)
        .map(|w| w[1].start.saturating_sub(w[0].end))
        .collect());
    println!(
        "{} hop, {}: {} ns from one task's start to the next one's: {} ns in the task (body and \
         the barrier after it), {} ns between tasks (release, place, pick, record, hand-over \
         barrier)",
        dag.name(),
        variant.label(),
        task + gap,
        task,
        gap
    );
    Ok(())
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let rt = if cli.cpu {
        Runtime::cpu()
    } else {
        Runtime::gpu(0)?
    };
    println!("# scheduler benchmark on {}", rt.describe());
    println!(
        "# {} threads per task block, {} reps (median), kernel time from CUDA events",
        cli.threads, cli.reps
    );
    let persistent = |policy| Variant {
        backend: if cli.cpu {
            Backend::Cpu
        } else {
            Backend::Persistent
        },
        policy,
    };
    let mut variants = vec![
        persistent(Policy::Grr),
        persistent(Policy::Local),
        persistent(Policy::Priority),
        persistent(Policy::Static),
    ];
    if !cli.cpu {
        variants.push(Variant {
            backend: Backend::Barrier,
            policy: Policy::Grr,
        });
        for backend in [Backend::GridBarrier, Backend::Graph, Backend::Streams] {
            variants.push(Variant {
                backend,
                policy: Policy::Grr,
            });
        }
    }
    if !cli.backends.is_empty() {
        variants.retain(|v| cli.backends.iter().any(|b| b == v.backend.name()));
    }
    if variants.is_empty() {
        return Err(format!("no variant left after --backends {:?}", cli.backends).into());
    }
    let cases: Vec<(Dag, u64, &str)> = if cli.quick {
        vec![
            (Dag::Independent(20_000), 0, "empty"),
            (Dag::Wavefront(64), 0, "empty"),
            (Dag::Chain(1000), 0, "empty"),
            (Dag::Wavefront(32), cli.short, "~1 us"),
        ]
    } else {
        vec![
            (Dag::Independent(1_000_000), 0, "empty"),
            (Dag::Wavefront(1024), 0, "empty"),
            (Dag::Chain(10_000), 0, "empty"),
            (Dag::Wavefront(128), cli.short, "~1 us"),
            (Dag::Wavefront(512), cli.short, "~1 us"),
            (Dag::Wavefront(512), cli.short * 10, "~10 us"),
        ]
    };

    println!();
    println!(
        "| DAG | tasks | task | variant | workers | time (us) | wall first (ms) | wall steady (ms) | ns/task | us/hop | vs persistent grr | % of LB | set-up (ms) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    // Whether `--only` keeps a DAG.
    let selected = |dag: &Dag| {
        cli.only
            .as_ref()
            .is_none_or(|only| dag.name().contains(only.as_str()))
    };
    for &(dag, cycles, task) in &cases {
        if !selected(&dag) {
            continue;
        }
        // The task's own duration, from a traced run: the lower bound's unit.
        let traced = dag.run(
            &rt,
            cycles,
            &Settings {
                threads: cli.threads,
                workers: cli.workers,
                variant: variants[0],
                trace: true,
            },
        )?;
        let mut spans: Vec<u64> = traced
            .trace
            .as_deref()
            .unwrap_or(&[])
            .iter()
            .map(|t| t.end - t.start)
            .collect();
        spans.sort_unstable();
        let task_ns = if cycles == 0 {
            0.0
        } else {
            spans.get(spans.len() / 2).copied().unwrap_or(0) as f64
        };
        let mut base = None;
        for &variant in &variants {
            // The host-built backends pay per task on the host: a stream launch and event per task,
            // and for the graph a node per task. On the H100 a 1,000,000-node graph did not finish
            // building and instantiating in four minutes (bench/results/graph-1m-h100.md), so
            // they run on DAGs of at most 300,000 tasks.
            if matches!(variant.backend, Backend::Graph | Backend::Streams)
                && dag.len() > cli.host_built_limit
            {
                continue;
            }
            let set = Settings {
                threads: cli.threads,
                workers: cli.workers,
                variant,
                trace: false,
            };
            // The warm-up run also builds (and caches) the CUDA graph; its set-up time is reported.
            let warm = dag.run(&rt, cycles, &set)?;
            let mut times = Vec::new();
            let mut walls = Vec::new();
            for _ in 0..cli.reps {
                let report = dag.run(&rt, cycles, &set)?;
                times.push(report.execute_time);
                walls.push(report.wall_time);
            }
            let time = median(times);
            let wall_ms = |d: Duration| d.as_secs_f64() * 1e3;
            let us = time.as_secs_f64() * 1e6;
            let base_us = *base.get_or_insert(us);
            // The bound is the DAG's on this machine: the persistent scheduler's resident workers.
            let lb_ns = (f64::from(warm.critical_path) * task_ns)
                .max(dag.len() as f64 * task_ns / f64::from(traced.workers));
            println!(
                "| {} | {} | {} | {} | {} | {:.1} | {:.3} | {:.3} | {:.2} | {:.3} | {:.2}x | {} | {:.1} |",
                dag.name(),
                dag.len(),
                task,
                variant.label(),
                warm.workers,
                us,
                wall_ms(warm.wall_time),
                wall_ms(median(walls)),
                us * 1e3 / dag.len() as f64,
                us / f64::from(warm.critical_path),
                base_us / us,
                if lb_ns > 0.0 {
                    format!("{:.0}%", lb_ns / 1e3 / us * 100.0)
                } else {
                    "-".to_owned()
                },
                warm.setup_time.as_secs_f64() * 1e3,
            );
        }
    }
    // The traced hop breakdowns, for the scheduler's variants: a chain's, and that of the first
    // wavefront of spin tasks.
    let schedulers: Vec<Variant> = variants
        .iter()
        .copied()
        .filter(|v| matches!(v.backend, Backend::Persistent | Backend::Cpu))
        .collect();
    let chain = cases.iter().find(|(dag, ..)| matches!(dag, Dag::Chain(_)));
    if let Some(&(dag, cycles, _)) = chain.filter(|(dag, ..)| selected(dag)) {
        println!();
        for &variant in &schedulers {
            hop_breakdown(&rt, dag, cycles, cli.threads, variant)?;
        }
    }
    let wavefront = cases
        .iter()
        .find(|(dag, cycles, _)| matches!(dag, Dag::Wavefront(_)) && *cycles > 0);
    if let Some(&(Dag::Wavefront(t), cycles, _)) = wavefront.filter(|(dag, ..)| selected(dag)) {
        println!();
        for &variant in &schedulers {
            wavefront_hops(&rt, t, cycles, cli.threads, variant)?;
        }
    }
    println!();
    println!(
        "vs persistent grr: >1 means faster than the persistent scheduler with the grr policy."
    );
    println!(
        "wall: the whole call (inspection, tables, launch, copies); first = the warm-up, steady = median of the reps."
    );
    println!(
        "LB = max(critical path x task time, tasks x task time / W), W = the persistent scheduler's resident workers; task time = median traced body time."
    );
    println!(
        "graph: the time is the replay of the cached, instantiated graph; set-up is its build and instantiation."
    );
    println!(
        "streams: the time is host wall time from the first launch to the end (host scheduling included)."
    );
    Ok(())
}
