//! Inspection benchmark: builds 1,000,000-task regions in three shapes and times
//! [`DepTracker::add_task`] (recording the ranges) and [`DepTracker::finish_with`] (dependence
//! tracking, CSR and ranks) on one thread ([`Split::SEQUENTIAL`]) and on every core
//! ([`Split::threads`]; [`DepTracker::finish`] would use fewer on a busy machine), and apart from
//! them the static policy's plan ([`list_schedule`] on [`PLAN_WORKERS`] workers).
//!
//! Run with `cargo bench -p taskweave-host --bench inspection`. Every shape is run `REPEATS` times
//! and the fastest run is reported (plus the median one-thread total). Peak memory is `VmHWM` from
//! `/proc/self/status` of a fresh child process (this binary, re-run with `--child <shape>`) that
//! runs the shape once on one thread (`--child <shape> --split`: on every core), so it is the
//! whole process's peak, unaffected by the other shapes' freed heap.

use std::hint::black_box;
use std::ops::Range;
use std::time::{Duration, Instant};

use taskweave_host::graph::{Access, DepTracker, Split, list_schedule};

/// Runs per shape.
const REPEATS: usize = 5;
/// Workers of the static plan: an H100's resident persistent workers at 4 blocks per SM.
const PLAN_WORKERS: u32 = 528;
/// Elements per tile (only affects the numbers in the ranges, not the work).
const TILE: usize = 64;

type Accesses = [(u32, Range<usize>, Access)];

/// Feeds every task of a shape, in spawn order, to the callback.
type Generator = fn(&mut dyn FnMut(&Accesses));

/// A region shape: its name, array lengths, and a generator that feeds every task to `add`.
struct Shape {
    name: &'static str,
    lens: Vec<usize>,
    generate: Generator,
}

/// Wavefront over 1000x1000 tiles: task (i, j) reads (i-1, j) and (i, j-1), writes (i, j).
fn wavefront(add: &mut dyn FnMut(&Accesses)) {
    const T: usize = 1000;
    let tile = |i: usize, j: usize| (i * T + j) * TILE..(i * T + j + 1) * TILE;
    for i in 0..T {
        for j in 0..T {
            let up = (0, tile(i.saturating_sub(1), j), Access::Read);
            let left = (0, tile(i, j.saturating_sub(1)), Access::Read);
            let own = (0, tile(i, j), Access::Write);
            match (i > 0, j > 0) {
                (true, true) => add(&[up, left, own]),
                (true, false) => add(&[up, own]),
                (false, true) => add(&[left, own]),
                (false, false) => add(&[own]),
            }
        }
    }
}

/// 1,000,000 independent tasks: task i reads tile i of array 0 and writes tile i of array 1.
fn independent(add: &mut dyn FnMut(&Accesses)) {
    for i in 0..1_000_000 {
        let r = i * TILE..(i + 1) * TILE;
        add(&[(0, r.clone(), Access::Read), (1, r, Access::Write)]);
    }
}

/// Tiles per side of the LU shape: sum over k of (T - k)^2 = 1,005,720 tasks for T = 144.
const LU_T: usize = 144;

/// Right-looking tiled LU over 144x144 tiles: getrf(k), trsm on row and column k, gemm updates.
fn lu(add: &mut dyn FnMut(&Accesses)) {
    const T: usize = LU_T;
    let tile = |i: usize, j: usize| (i * T + j) * TILE..(i * T + j + 1) * TILE;
    for k in 0..T {
        add(&[(0, tile(k, k), Access::ReadWrite)]);
        for j in k + 1..T {
            add(&[
                (0, tile(k, k), Access::Read),
                (0, tile(k, j), Access::ReadWrite),
            ]);
        }
        for i in k + 1..T {
            add(&[
                (0, tile(k, k), Access::Read),
                (0, tile(i, k), Access::ReadWrite),
            ]);
        }
        for i in k + 1..T {
            for j in k + 1..T {
                add(&[
                    (0, tile(i, k), Access::Read),
                    (0, tile(k, j), Access::Read),
                    (0, tile(i, j), Access::ReadWrite),
                ]);
            }
        }
    }
}

/// A `kB` field of `/proc/self/status`, in MiB.
fn status_mib(field: &str) -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// The CPU time this thread has run (`CLOCK_THREAD_CPUTIME_ID`), which unlike wall time leaves
/// out the time the thread waited for a core on a busy machine.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "a thread CPU clock");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// One measured run.
struct Run {
    tasks: u32,
    ranges: usize,
    edges: usize,
    critical_path: u32,
    /// CPU time of recording and the one-thread finish.
    cpu: Duration,
    add: Duration,
    /// `finish_with(Split::SEQUENTIAL)`.
    finish: Duration,
    /// `finish_with(split)`.
    finish_split: Duration,
    plan: Duration,
}

impl Run {
    fn total(&self) -> Duration {
        self.add + self.finish
    }

    fn total_split(&self) -> Duration {
        self.add + self.finish_split
    }
}

/// Records `shape` into a tracker.
fn record(shape: &Shape) -> (DepTracker, Duration) {
    let start = Instant::now();
    let mut tracker = DepTracker::new(&shape.lens);
    (shape.generate)(&mut |accesses| {
        black_box(
            tracker
                .add_task(black_box(accesses))
                .expect("within the limits"),
        );
    });
    (tracker, start.elapsed())
}

/// Runs `shape` on one thread, then again under `split` (unless it is one thread too).
fn run(shape: &Shape, split: Split) -> Run {
    let cpu = thread_cpu();
    let (tracker, add) = record(shape);
    let (tasks, ranges) = (tracker.task_count(), tracker.range_count());
    let start = Instant::now();
    let dag = black_box(
        tracker
            .finish_with(Split::SEQUENTIAL)
            .expect("within the limits"),
    );
    let finish = start.elapsed();
    let cpu = thread_cpu() - cpu;
    let finish_split = if split == Split::SEQUENTIAL {
        finish
    } else {
        let (tracker, _) = record(shape);
        let start = Instant::now();
        let again = black_box(tracker.finish_with(split).expect("within the limits"));
        let elapsed = start.elapsed();
        assert_eq!(again, dag, "every split gives the same DAG");
        elapsed
    };
    let critical_path = dag.critical_path();
    let start = Instant::now();
    black_box(list_schedule(&dag, PLAN_WORKERS));
    let plan = start.elapsed();
    Run {
        tasks,
        ranges,
        edges: dag.edge_count(),
        critical_path,
        cpu,
        add,
        finish,
        finish_split,
        plan,
    }
}

/// The cores this process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mib(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.1}"))
}

/// Peak memory of a fresh process that runs shape `index` once.
fn child_peak(index: usize) -> Option<f64> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new(exe)
        .args(["--child", &index.to_string()])
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    text.trim().strip_prefix("peak_mib ")?.parse().ok()
}

fn main() {
    let shapes = [
        Shape {
            name: "wavefront 1000x1000",
            lens: vec![1000 * 1000 * TILE],
            generate: wavefront,
        },
        Shape {
            name: "independent 1M",
            lens: vec![1_000_000 * TILE, 1_000_000 * TILE],
            generate: independent,
        },
        Shape {
            name: "lu 144x144 tiles",
            lens: vec![LU_T * LU_T * TILE],
            generate: lu,
        },
    ];
    let args: Vec<String> = std::env::args().collect();
    if let Some(pos) = args.iter().position(|a| a == "--child") {
        let index: usize = args[pos + 1].parse().expect("shape index");
        let (tracker, _) = record(&shapes[index]);
        let split = match args.iter().any(|a| a == "--split") {
            true => Split::threads(cores()),
            false => Split::SEQUENTIAL,
        };
        let dag = tracker.finish_with(split).expect("within the limits");
        black_box(list_schedule(&dag, PLAN_WORKERS));
        println!("peak_mib {}", status_mib("VmHWM:").unwrap_or(f64::NAN));
        return;
    }
    println!(
        "taskweave-host inspection benchmark: best of {REPEATS} runs per shape; finish on one thread \
         and split over all {} cores",
        cores()
    );
    println!(
        "{:<20} {:>9} {:>9} {:>9} {:>6} {:>9} {:>10} {:>9} {:>10} {:>8} {:>8} {:>8} {:>12} {:>10} {:>8} {:>9} {:>8}",
        "shape",
        "tasks",
        "ranges",
        "edges",
        "crit",
        "add ms",
        "finish ms",
        "total ms",
        "median ms",
        "ns/task",
        "cpu ms",
        "ns/task",
        "split",
        "split ms",
        "ns/task",
        "peak MiB",
        "plan ms"
    );
    for (index, shape) in shapes.iter().enumerate() {
        let split = Split::threads(cores());
        let mut runs: Vec<Run> = (0..REPEATS).map(|_| run(shape, split)).collect();
        runs.sort_by_key(Run::total);
        let median = ms(runs[REPEATS / 2].total());
        let best_split = runs.iter().map(Run::total_split).min().expect("runs");
        let best_plan = runs.iter().map(|r| r.plan).min().expect("runs");
        let best_cpu = runs.iter().map(|r| r.cpu).min().expect("runs");
        let best = &runs[0];
        let per_task = |d: Duration| d.as_secs_f64() * 1e9 / f64::from(best.tasks);
        println!(
            "{:<20} {:>9} {:>9} {:>9} {:>6} {:>9.1} {:>10.1} {:>9.1} {:>10.1} {:>8.1} {:>8.1} {:>8.1} {:>12} {:>10.1} {:>8.1} {:>9} {:>8.1}",
            shape.name,
            best.tasks,
            best.ranges,
            best.edges,
            best.critical_path,
            ms(best.add),
            ms(best.finish),
            ms(best.total()),
            median,
            per_task(best.total()),
            ms(best_cpu),
            per_task(best_cpu),
            format!("{}t/{}j", split.threads, split.jobs),
            ms(best_split),
            per_task(best_split),
            mib(child_peak(index)),
            ms(best_plan),
        );
    }
}
