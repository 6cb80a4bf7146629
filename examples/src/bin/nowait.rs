//! The OpenMP hidden-helper-thread micro-benchmarks B1–B4, with taskweave regions as the target
//! regions: each benchmark runs once with every region run to completion before the next
//! (`Region::run`, OpenMP without `nowait`) and once submitted without waiting
//! (`Region::submit`, `nowait`), side by side in one process, and reports the speedup.
//!
//! - B1: one thread submits `T` independent regions, then waits for all.
//! - B2: every host thread submits its share of the `T` regions, then waits for them.
//! - B3: one thread submits the `T` regions while the other host threads spin until it is done.
//! - B4: one thread submits `T` diamonds of four regions on the shared `x` and `y`: 1 (in x, inout
//!   y), 2 (inout x) and 3 (inout y) after 1, 4 (in x, inout y) after 2 and 3. The dependences
//!   come from the regions' declared accesses.
//!
//! Each region is [`tri`](taskweave_kernels::nowait::tri) or
//! [`tri_self`](taskweave_kernels::nowait::tri_self) over vectors of length `N` resident on the
//! device (mapped once, outside the timed part, as in the paper). After every run, synchronous or
//! submitted, `x` and every `y` are downloaded and compared with a sequential reference computed
//! without the regions ([`reference`]), at every N.
//!
//! `cargo run --release --bin nowait -- --out bench/results/nowait`

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Parser;
use taskweave::{DeviceArray, Region, Runtime};
use taskweave_examples::RunArgs;
use taskweave_examples::bench::median;
use taskweave_kernels::nowait::{tri, tri_reference, tri_self};

#[derive(Parser, Debug)]
#[command(about = "OpenMP nowait micro-benchmarks B1-B4: synchronous vs submitted regions")]
struct Cli {
    /// Vector lengths N.
    #[arg(long, value_delimiter = ',', default_values_t = [16usize, 255, 1024, 4095, 16384, 65536])]
    n: Vec<usize>,
    /// Regions per benchmark T (B4: diamonds of four).
    #[arg(long, value_delimiter = ',', default_values_t = [16usize, 64, 256])]
    t: Vec<usize>,
    /// Benchmarks to run.
    #[arg(long, value_delimiter = ',', default_values_t = ["b1".to_owned(), "b2".to_owned(), "b3".to_owned(), "b4".to_owned()])]
    only: Vec<String>,
    /// Repetitions of each measurement (the median is reported).
    #[arg(long, default_value_t = 3)]
    reps: usize,
    /// Host threads for B2 and B3 (default: the machine's).
    #[arg(long)]
    host_threads: Option<usize>,
    /// Write `nowait.md` and `nowait.csv` here.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
}

/// The multiplier of the daxpy.
const A: f64 = 1e-3;

fn main() -> std::process::ExitCode {
    taskweave_examples::run_main(run)
}

/// One benchmark's vectors: `x`, and one `y` per region (B1–B3) or one shared `y` (B4).
struct Vectors {
    x: DeviceArray<f64>,
    ys: Vec<DeviceArray<f64>>,
}

fn x0(n: usize) -> Vec<f64> {
    (0..n).map(|i| 1.0 + (i % 7) as f64 * 0.25).collect()
}

fn y0(n: usize) -> Vec<f64> {
    (0..n).map(|i| (i % 5) as f64 * 0.5).collect()
}

struct Bench<'c> {
    cli: &'c Cli,
    rt: &'c Runtime,
    host_threads: usize,
}

impl Bench<'_> {
    /// A region with the run options, one worker per task (small regions then fit side by side).
    fn shaped<'a>(&self, region: Region<'a>, n: usize) -> Region<'a> {
        let tasks = n.div_ceil(rows(n)) as u32;
        self.cli.run.apply(region).workers(tasks)
    }

    fn vectors(&self, n: usize, ys: usize) -> Result<Vectors, taskweave::Error> {
        Ok(Vectors {
            x: self.rt.upload(&x0(n))?,
            ys: (0..ys)
                .map(|_| self.rt.upload(&y0(n)))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Issues the regions of benchmark `name` for `t`, `n`, waiting for each (`nowait == false`)
    /// or submitting them all; returns the seconds from the first issue to the last completion.
    fn issue(&self, name: &str, t: usize, n: usize, v: &mut Vectors, nowait: bool) -> f64 {
        let go = |region: Region<'static>| -> Option<taskweave::Pending<'static>> {
            if nowait {
                Some(region.submit(self.rt).expect("submitting a region"))
            } else {
                region.run(self.rt).expect("running a region");
                None
            }
        };
        let finish = |pending: Vec<Option<taskweave::Pending<'static>>>| {
            for p in pending.into_iter().flatten() {
                p.wait().expect("a submitted region");
            }
        };
        let rows = rows(n);
        let start = Instant::now();
        match name {
            "b1" => {
                let pending: Vec<_> =
                    v.ys.iter_mut()
                        .map(|y| go(self.shaped(tri(&v.x, y, A, rows), n)))
                        .collect();
                finish(pending);
            }
            "b2" => {
                let x = &v.x;
                let share = t.div_ceil(self.host_threads);
                std::thread::scope(|s| {
                    for ys in v.ys.chunks_mut(share) {
                        s.spawn(|| {
                            let pending: Vec<_> = ys
                                .iter_mut()
                                .map(|y| go(self.shaped(tri(x, y, A, rows), n)))
                                .collect();
                            finish(pending);
                        });
                    }
                });
            }
            "b3" => {
                let done = AtomicBool::new(false);
                std::thread::scope(|s| {
                    for _ in 1..self.host_threads {
                        s.spawn(|| {
                            while !done.load(Ordering::Acquire) {
                                std::hint::spin_loop();
                            }
                        });
                    }
                    let pending: Vec<_> =
                        v.ys.iter_mut()
                            .map(|y| go(self.shaped(tri(&v.x, y, A, rows), n)))
                            .collect();
                    finish(pending);
                    done.store(true, Ordering::Release);
                });
            }
            "b4" => {
                let (x, y) = (&mut v.x, &mut v.ys[0]);
                let mut pending = Vec::with_capacity(4 * t);
                for _ in 0..t {
                    pending.push(go(self.shaped(tri(&mut *x, &mut *y, A, rows), n)));
                    pending.push(go(self.shaped(tri_self(&mut *x, A, rows), n)));
                    pending.push(go(self.shaped(tri_self(&mut *y, A, rows), n)));
                    pending.push(go(self.shaped(tri(&mut *x, &mut *y, A, rows), n)));
                }
                finish(pending);
            }
            other => panic!("unknown benchmark `{other}`"),
        }
        start.elapsed().as_secs_f64()
    }
}

/// `x` and `y` after one issue of benchmark `name` (for B1–B3 every `y` is this `y`), computed
/// sequentially without the regions: `tri` as a running prefix sum ([`tri_reference`]) and
/// `tri_self` in closed form. `tri_self` steps `v[i] ← v[i]·(1 − a) + a` `i + 1` times, which
/// is `1 + (v[i] − 1)·(1 − a)^(i+1)`: `O(N)` per region, where the loop is `O(N²)`, so that every
/// N is checked (B4 at N = 65536, T = 256 would step 1.1·10¹² times).
fn reference(name: &str, t: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let decay: Vec<f64> = (0..n).map(|i| (1.0 - A).powi(i as i32 + 1)).collect();
    let tri_self = |v: &mut [f64]| {
        for (v, d) in v.iter_mut().zip(&decay) {
            *v = 1.0 + (*v - 1.0) * d;
        }
    };
    let (mut x, mut y) = (x0(n), y0(n));
    if name == "b4" {
        for _ in 0..t {
            tri_reference(&x, &mut y, A);
            tri_self(&mut x);
            tri_self(&mut y);
            tri_reference(&x, &mut y, A);
        }
    } else {
        tri_reference(&x, &mut y, A);
    }
    (x, y)
}

/// How far a vector may be from the reference: the regions and [`tri_reference`] add in the same
/// order, and the closed form of `tri_self` differs from its loop by rounding only, which the
/// loop's contraction toward 1 keeps near `1e-13`.
const TOLERANCE: f64 = 1e-9;

/// `Err` naming the first element of `got` further than [`TOLERANCE`] from `want`, relative to
/// `max(|want|, 1)` (a NaN is always too far).
fn compare(what: &str, got: &[f64], want: &[f64]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    match got.iter().zip(want).position(|(g, w)| {
        let d = (g - w).abs();
        d.is_nan() || d > TOLERANCE * w.abs().max(1.0)
    }) {
        None => Ok(()),
        Some(i) => Err(format!("{what}[{i}] is {}, expected {}", got[i], want[i])),
    }
}

/// Downloads `x` and every `y` of `v` and compares each with `want`, the [`reference`].
fn check(v: &Vectors, want: &(Vec<f64>, Vec<f64>)) -> Result<(), String> {
    compare("x", &v.x.download().map_err(|e| e.to_string())?, &want.0)?;
    for (k, y) in v.ys.iter().enumerate() {
        compare(
            &format!("y{k}"),
            &y.download().map_err(|e| e.to_string())?,
            &want.1,
        )?;
    }
    Ok(())
}

/// Rows per task: at most 64 tasks per region, at least 128 rows each.
fn rows(n: usize) -> usize {
    n.div_ceil(64).max(128)
}

struct Row {
    bench: String,
    t: usize,
    n: usize,
    sync_s: f64,
    nowait_s: f64,
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let rt = cli.run.runtime()?;
    let host_threads = cli
        .host_threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(4, |n| n.get()))
        .max(2);
    println!(
        "nowait benchmarks on {}; {} helper threads; {host_threads} host threads for B2/B3",
        rt.describe(),
        taskweave::HELPERS
    );
    let bench = Bench {
        cli: &cli,
        rt: &rt,
        host_threads,
    };
    // Warm-up: the module loads (and the driver compiles its PTX) before anything is timed.
    {
        let mut v = bench.vectors(16, 1)?;
        bench.issue("b1", 1, 16, &mut v, false);
        bench.issue("b1", 1, 16, &mut v, true);
    }
    let mut rows_out = Vec::new();
    for name in &cli.only {
        for &t in &cli.t {
            for &n in &cli.n {
                let ys = if name == "b4" { 1 } else { t };
                let want = reference(name, t, n);
                let (mut sync_s, mut nowait_s) = (Vec::new(), Vec::new());
                // Interleaved: each repetition runs both ways on fresh vectors.
                for _ in 0..cli.reps {
                    for nowait in [false, true] {
                        let mut v = bench.vectors(n, ys)?;
                        let s = bench.issue(name, t, n, &mut v, nowait);
                        if nowait {
                            nowait_s.push(s);
                        } else {
                            sync_s.push(s);
                        }
                        let mode = if nowait { "submitted" } else { "synchronous" };
                        check(&v, &want).map_err(|e| format!("{name} T={t} N={n}, {mode}: {e}"))?;
                    }
                }
                let row = Row {
                    bench: name.clone(),
                    t,
                    n,
                    sync_s: median(&sync_s),
                    nowait_s: median(&nowait_s),
                };
                println!(
                    "{} T={:<5} N={:<6} sync {:>10.3} ms  nowait {:>10.3} ms  speedup {:>5.2}x",
                    row.bench,
                    t,
                    n,
                    row.sync_s * 1e3,
                    row.nowait_s * 1e3,
                    row.sync_s / row.nowait_s
                );
                rows_out.push(row);
            }
        }
    }
    let (md, csv) = tables(&rows_out, &cli);
    println!("\n{md}");
    if let Some(dir) = &cli.out {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("nowait.md"), &md)?;
        std::fs::write(dir.join("nowait.csv"), csv)?;
        println!("wrote {}", dir.display());
    }
    Ok(())
}

/// A markdown table per benchmark (speedup of nowait over sync, rows N, columns T) and a CSV.
fn tables(rows: &[Row], cli: &Cli) -> (String, String) {
    let mut md = String::new();
    let mut csv = String::from("bench,t,n,sync_ms,nowait_ms,speedup\n");
    for row in rows {
        let _ = writeln!(
            csv,
            "{},{},{},{:.4},{:.4},{:.3}",
            row.bench,
            row.t,
            row.n,
            row.sync_s * 1e3,
            row.nowait_s * 1e3,
            row.sync_s / row.nowait_s
        );
    }
    for name in &cli.only {
        let _ = writeln!(
            md,
            "### {} — speedup of submitted over synchronous regions (sync ms / nowait ms)\n",
            name.to_uppercase()
        );
        let _ = write!(md, "| N |");
        for t in &cli.t {
            let _ = write!(md, " T={t} |");
        }
        let _ = write!(md, "\n| --- |");
        for _ in &cli.t {
            let _ = write!(md, " --- |");
        }
        md.push('\n');
        for &n in &cli.n {
            let _ = write!(md, "| {n} |");
            for &t in &cli.t {
                match rows
                    .iter()
                    .find(|r| &r.bench == name && r.t == t && r.n == n)
                {
                    Some(r) => {
                        let _ = write!(
                            md,
                            " **{:.2}x** ({:.2} / {:.2}) |",
                            r.sync_s / r.nowait_s,
                            r.sync_s * 1e3,
                            r.nowait_s * 1e3
                        );
                    }
                    None => md.push_str(" — |"),
                }
            }
            md.push('\n');
        }
        md.push('\n');
    }
    (md, csv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskweave_kernels::nowait::tri_self_reference;

    /// The closed form of `tri_self` against its loop, over B4's whole sequence.
    #[test]
    fn the_reference_matches_the_loop_it_replaces() {
        for (t, n) in [(1, 1), (3, 17), (5, 300)] {
            let (mut x, mut y) = (x0(n), y0(n));
            for _ in 0..t {
                tri_reference(&x, &mut y, A);
                tri_self_reference(&mut x, A);
                tri_self_reference(&mut y, A);
                tri_reference(&x, &mut y, A);
            }
            let want = reference("b4", t, n);
            compare("x", &x, &want.0).unwrap();
            compare("y", &y, &want.1).unwrap();
        }
    }

    #[test]
    fn a_wrong_element_is_named() {
        let want = reference("b1", 1, 8).1;
        let mut got = want.clone();
        got[5] += 1e-6;
        assert_eq!(
            compare("y3", &got, &want).unwrap_err(),
            format!("y3[5] is {}, expected {}", got[5], want[5])
        );
        got[5] = f64::NAN;
        assert!(compare("y3", &got, &want).is_err());
        assert!(compare("y3", &got[1..], &want).is_err());
    }
}
