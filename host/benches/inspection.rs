//! Inspection benchmark: builds 1,000,000-task regions in three shapes and times
//! [`DepTracker::add_task`] (dependence tracking) and [`DepTracker::finish`] (CSR and ranks), and
//! apart from them the static policy's plan ([`list_schedule`] on [`PLAN_WORKERS`] workers).
//!
//! Run with `cargo bench -p taskweave-host --bench inspection`. Single-threaded; every shape is
//! run `REPEATS` times and the fastest run is reported (plus the median total). Peak memory is
//! `VmHWM` from `/proc/self/status` of a fresh child process (this binary, re-run with
//! `--child <shape>`) that runs the shape once, so it is the whole process's peak, unaffected by
//! the other shapes' freed heap.

use std::hint::black_box;
use std::ops::Range;
use std::time::{Duration, Instant};

use taskweave_host::graph::{Access, DepTracker, list_schedule};

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

/// One measured run.
struct Run {
    tasks: u32,
    edges: usize,
    segments: usize,
    reader_entries: usize,
    critical_path: u32,
    add: Duration,
    finish: Duration,
    plan: Duration,
}

impl Run {
    fn total(&self) -> Duration {
        self.add + self.finish
    }
}

fn run(shape: &Shape) -> Run {
    let start = Instant::now();
    let mut tracker = DepTracker::new(&shape.lens);
    (shape.generate)(&mut |accesses| {
        black_box(
            tracker
                .add_task(black_box(accesses))
                .expect("within the limits"),
        );
    });
    let add = start.elapsed();
    let (tasks, edges) = (tracker.task_count(), tracker.edge_count());
    let (segments, reader_entries) = (tracker.segment_count(), tracker.reader_entry_count());
    let start = Instant::now();
    let dag = black_box(tracker.finish());
    let finish = start.elapsed();
    let critical_path = dag.critical_path();
    let start = Instant::now();
    black_box(list_schedule(&dag, PLAN_WORKERS));
    let plan = start.elapsed();
    drop(dag);
    Run {
        tasks,
        edges,
        segments,
        reader_entries,
        critical_path,
        add,
        finish,
        plan,
    }
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
        black_box(run(&shapes[index]));
        println!("peak_mib {}", status_mib("VmHWM:").unwrap_or(f64::NAN));
        return;
    }
    println!("taskweave-host inspection benchmark: best of {REPEATS} runs per shape, one thread");
    println!(
        "{:<20} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9} {:>10} {:>9} {:>10} {:>8} {:>9} {:>8}",
        "shape",
        "tasks",
        "edges",
        "segments",
        "readers",
        "crit",
        "add ms",
        "finish ms",
        "total ms",
        "median ms",
        "ns/task",
        "peak MiB",
        "plan ms"
    );
    for (index, shape) in shapes.iter().enumerate() {
        let mut runs: Vec<Run> = (0..REPEATS).map(|_| run(shape)).collect();
        runs.sort_by_key(Run::total);
        let median = ms(runs[REPEATS / 2].total());
        let best = &runs[0];
        println!(
            "{:<20} {:>9} {:>9} {:>9} {:>9} {:>6} {:>9.1} {:>10.1} {:>9.1} {:>10.1} {:>8.1} {:>9} {:>8.1}",
            shape.name,
            best.tasks,
            best.edges,
            best.segments,
            best.reader_entries,
            best.critical_path,
            ms(best.add),
            ms(best.finish),
            ms(best.total()),
            median,
            best.total().as_secs_f64() * 1e9 / f64::from(best.tasks),
            mib(child_peak(index)),
            ms(best.plan),
        );
    }
}
