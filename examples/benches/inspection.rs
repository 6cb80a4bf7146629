//! Inspection of the real workload regions: each example workload at its default size, and the
//! tile library's f64 LU (`taskweave_kernels::lu`) at N = 4096 in 64 × 64 tiles (89,440 tasks)
//! and at 144 × 144 tiles of 16 (1,005,720 tasks), and Cholesky (`taskweave_kernels::cholesky`)
//! at N = 4096 in 64 × 64 tiles (45,760 tasks) and at N = 2048 in 32 × 32 (5,984), and an
//! irregular region: 20,000 tasks, each reading a random range of one of two arrays of 2^20
//! elements and writing a random range of the other (1 to 4,096 elements, so that both arrays
//! leave the tile path at once).
//!
//! Each region is inspected through [`Region::inspect`](taskweave::Region::inspect): running its
//! body, recording the ranges, tracking the dependences and building the CSR, as a run does. Two
//! times, making the region's inputs left out of both: the inspection's wall time
//! ([`Inspection::time`]) and the CPU time of the thread that inspects (`CLOCK_THREAD_CPUTIME_ID`),
//! which on a busy machine leaves out the time it waited for a core.
//! Every region is inspected in two fresh child processes (this binary, re-run with `--child`):
//! one with inspection on one thread (`TASKWEAVE_INSPECT_THREADS=1`), one allowed every core
//! (`TASKWEAVE_INSPECT_THREADS` = the cores): what inspection does by itself on an idle machine,
//! where it uses one thread per 32768 ranges (so small regions stay on one thread); on a busy one
//! it leaves the busy cores alone. With every core allowed, a region past 2,048 tasks tracks its
//! dependences on a thread of its own beside the body: `all trk` is the time that thread spent
//! tracking ([`Inspection::tracker_time`], best of the runs), which bounds the inspection when it
//! comes close to it. The static policy's plan ([`list_schedule`] on 528 workers, an H100's
//! resident persistent workers at 4 per SM) is timed apart.
//!
//! `cargo bench -p taskweave-examples --bench inspection [-- --reps N] [-- --only NAME]`

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use taskweave::inspect::Inspection;
use taskweave::{Error, task, task_region};
use taskweave_host::graph::{THREADS_VAR, list_schedule};
use taskweave_kernels::{cholesky, lu};

/// Reads `src[r0..r1]`, writes `dst[w0..w1]` (inspected only, never run).
#[task(reads = src[r0..r1], writes = dst[w0..w1])]
fn shuffle(dst: &mut [f32], src: &[f32], r0: usize, r1: usize, w0: usize, w1: usize) {
    let _ = (dst, src, r0, r1, w0, w1);
}

task_region! {
    /// `tasks` tasks between `a` and `b`, each reading a random range of one and writing a random
    /// range of the other, from the generator seeded with `seed`.
    fn random_ranges(a: &mut [f32], b: &mut [f32], tasks: usize, seed: u64) {
        let mut state = seed;
        let mut next = |below: usize| {
            // SplitMix64: deterministic, and no dependency for a benchmark's input.
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % below as u64) as usize
        };
        let n = a.len();
        for _ in 0..tasks {
            let (r0, w0) = (next(n - 4096), next(n - 4096));
            let (r1, w1) = (r0 + 1 + next(4096), w0 + 1 + next(4096));
            if next(2) == 0 {
                spawn!(shuffle(b, a, r0, r1, w0, w1));
            } else {
                spawn!(shuffle(a, b, r0, r1, w0, w1));
            }
        }
    }
}

/// Workers of the static plan.
const PLAN_WORKERS: u32 = 528;

/// A region to inspect: its name and a function that inspects it once, returning the inspection
/// and the CPU time the calling thread spent in it (making the inputs left out).
struct Case {
    name: String,
    inspect: Box<dyn FnMut() -> Result<(Inspection, Duration), Error>>,
}

/// The CPU time this thread has run (`CLOCK_THREAD_CPUTIME_ID`; `None` where there is none).
/// Unlike wall time, it does not count the time the thread waited for a core, which on a busy
/// machine is most of it.
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// `region.inspect()`, with the CPU time this thread spent in it (its wall time where there is no
/// CPU clock).
fn timed(region: taskweave::Region<'_>) -> Result<(Inspection, Duration), Error> {
    let before = thread_cpu();
    let ins = region.inspect()?;
    let cpu = match (before, thread_cpu()) {
        (Some(before), Some(after)) => after - before,
        _ => ins.time,
    };
    Ok((ins, cpu))
}

fn cases() -> Vec<Case> {
    let mut cases: Vec<Case> = taskweave_examples::workloads::all()
        .into_iter()
        .map(|mut w| Case {
            name: w.name().to_owned(),
            inspect: Box::new(move || timed(w.fresh())),
        })
        .collect();
    // The matrices are made on first use, in the child that inspects them.
    for (nb, bs) in [(64, 64), (144, 16)] {
        let mut a = Vec::new();
        cases.push(Case {
            name: format!("LU {nb}x{nb} tiles"),
            inspect: Box::new(move || {
                a.resize(nb * nb * bs * bs, 0f64);
                timed(lu::lu_f64(&mut a, nb, bs))
            }),
        });
    }
    let (mut x, mut y) = (Vec::new(), Vec::new());
    cases.push(Case {
        name: "random ranges".to_owned(),
        inspect: Box::new(move || {
            x.resize(1 << 20, 0f32);
            y.resize(1 << 20, 0f32);
            timed(random_ranges(&mut x, &mut y, 20_000, 7))
        }),
    });
    // N = 4096 and 2048 on 64-tiles: the second shows what an inspection costs beyond its tasks.
    for (nb, bs) in [(64, 64), (32, 64)] {
        let mut a = Vec::new();
        cases.push(Case {
            name: format!("Cholesky {nb}x{nb} tiles"),
            inspect: Box::new(move || {
                a.resize(nb * nb * bs * bs, 0f64);
                timed(cholesky::cholesky_f64(&mut a, nb, bs))
            }),
        });
    }
    cases
}

/// What a child process measured for one region: the inspection's wall time (best and median),
/// its CPU time on the calling thread (best), the plan's CPU time (best), and the time the
/// tracker's thread spent tracking (best; zero when it had no thread).
struct Measured {
    tasks: usize,
    edges: usize,
    best: Duration,
    median: Duration,
    cpu: Duration,
    plan: Duration,
    tracker: Duration,
}

/// Inspects `case` `reps` times (after one warm-up) and times the plan of the last DAG.
fn measure(case: &mut Case, reps: usize) -> Measured {
    let mut times = Vec::with_capacity(reps + 1);
    let mut cpu = Duration::MAX;
    let mut tracker = None::<Duration>;
    let mut last = None;
    for rep in 0..=reps {
        let (ins, spent) = (case.inspect)().expect("the region inspects");
        // The first inspection grows the allocator's heap: a warm-up.
        if rep > 0 {
            times.push(ins.time);
            cpu = cpu.min(spent);
            if let Some(t) = ins.tracker_time {
                tracker = Some(tracker.map_or(t, |best| best.min(t)));
            }
        }
        last = Some(ins);
    }
    times.sort();
    let ins = last.expect("at least one inspection");
    let mut plan = Duration::MAX;
    for _ in 0..reps.clamp(1, 3) {
        let (start, wall) = (thread_cpu(), Instant::now());
        black_box(list_schedule(&ins.dag, PLAN_WORKERS));
        let spent = match (start, thread_cpu()) {
            (Some(start), Some(end)) => end - start,
            _ => wall.elapsed(),
        };
        plan = plan.min(spent);
    }
    Measured {
        tasks: ins.task_count(),
        edges: ins.dag.edge_count(),
        best: times[0],
        median: times[times.len() / 2],
        cpu,
        plan,
        tracker: tracker.unwrap_or_default(),
    }
}

/// Runs this binary as a child that measures `name` with inspection allowed `threads` threads,
/// and parses its one line.
fn child(name: &str, reps: usize, threads: usize) -> Measured {
    let exe = std::env::current_exe().expect("this binary");
    let mut command = Command::new(exe);
    command.args(["--child", name, "--reps", &reps.to_string()]);
    command.env(THREADS_VAR, threads.to_string());
    let out = command.output().expect("the child runs");
    assert!(
        out.status.success(),
        "child `{name}` failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let fields: Vec<u128> = text
        .split_whitespace()
        .map(|f| f.parse().expect("a number"))
        .collect();
    let ns = |i: usize| Duration::from_nanos(fields[i] as u64);
    Measured {
        tasks: fields[0] as usize,
        edges: fields[1] as usize,
        best: ns(2),
        median: ns(3),
        cpu: ns(4),
        plan: ns(5),
        tracker: ns(6),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us_per_task(d: Duration, tasks: usize) -> f64 {
    d.as_secs_f64() * 1e6 / tasks.max(1) as f64
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .map(|i| args[i + 1].clone())
    };
    let reps: usize = value("--reps").map_or(5, |r| r.parse().expect("--reps N"));
    if let Some(name) = value("--child") {
        let mut case = cases()
            .into_iter()
            .find(|c| c.name == name)
            .expect("a known region");
        let m = measure(&mut case, reps);
        println!(
            "{} {} {} {} {} {} {}",
            m.tasks,
            m.edges,
            m.best.as_nanos(),
            m.median.as_nanos(),
            m.cpu.as_nanos(),
            m.plan.as_nanos(),
            m.tracker.as_nanos()
        );
        return;
    }
    let only = value("--only");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "taskweave inspection of the workload regions: {reps} runs after a warm-up, on one thread (1t) \
         and allowed all {threads} cores (all); wall: best and median; cpu: the inspecting thread's \
         CPU time, best"
    );
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "region",
        "tasks",
        "edges",
        "1t cpu ms",
        "1t us/t",
        "1t wall",
        "1t med",
        "all wall",
        "all med",
        "all us/t",
        "all trk",
        "plan cpu",
        "plan us/t"
    );
    for case in cases() {
        if only
            .as_ref()
            .is_some_and(|o| !case.name.contains(o.as_str()))
        {
            continue;
        }
        let one = child(&case.name, reps, 1);
        let all = child(&case.name, reps, threads);
        println!(
            "{:<22} {:>9} {:>9} {:>9.2} {:>9.3} {:>9.2} {:>8.2} {:>9.2} {:>9.2} {:>9.3} {:>9.2} {:>9.2} {:>9.3}",
            case.name,
            one.tasks,
            one.edges,
            ms(one.cpu),
            us_per_task(one.cpu, one.tasks),
            ms(one.best),
            ms(one.median),
            ms(all.best),
            ms(all.median),
            us_per_task(all.best, all.tasks),
            ms(all.tracker),
            ms(one.plan),
            us_per_task(one.plan, one.tasks),
        );
    }
}
