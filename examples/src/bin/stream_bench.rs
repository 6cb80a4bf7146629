//! A region called once, streamed (`Region::stream(true)`: its tasks run while its body records
//! them) against inspected first and run after, on the CPU backend: the tiled Cholesky and LU of
//! the tile library, each checked against the sequential reference, and a wavefront and a chain of
//! one-element tasks with empty bodies (`taskweave_kernels::dags`, checked by their own checks),
//! where recording costs as much as running; the calls' results are compared bit for bit.
//!
//! Four kinds of call: inspected and streamed on the runtime's `W` workers, then on `W − 1`, which
//! leaves a core to the thread that records (a streamed call's body runs beside its workers). Every call inspects (the plan cache is off), as a region called once
//! does; the kinds of call alternate, after one warm-up of each. Prints, per case, the median
//! wall time per call and the inspected calls' inspection (body, recording and edges), the
//! streamed wall over the inspected one on as many workers, and the kind with the least wall.
//!
//! `cargo run --release --bin stream_bench -- --reps 7 --workers 16`

use std::time::Duration;

use clap::Parser;
use taskweave::{Region, Report, Runtime};
use taskweave_kernels::matrix::host;
use taskweave_kernels::{cholesky, dags, lu};

#[derive(Parser, Debug)]
#[command(about = "A region called once: streamed against inspected, on the CPU backend")]
struct Cli {
    /// Timed calls of each kind per case, after one warm-up of each.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Worker threads (default: the cores).
    #[arg(long)]
    workers: Option<u32>,
    /// Cases: `cholesky:NB:BS` or `lu:NB:BS` (tiles per side, tile side), `wavefront:T` (a
    /// `T × T` grid), `chain:N`.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cholesky:24:16,cholesky:40:16,lu:24:16,wavefront:300,chain:50000"
    )]
    cases: Vec<String>,
}

/// Median of `v`.
fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    let workers = cli
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get() as u32));
    let rt = Runtime::cpu_with(workers);
    println!(
        "taskweave stream_bench: {workers} CPU workers, {} calls of each kind per case after one warm-up; medians in ms",
        cli.reps
    );
    println!(
        "{:<16} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
        "case",
        "tasks",
        "W ins",
        "inspect",
        "W strm",
        "ratio",
        "W-1 ins",
        "inspect",
        "W-1 strm",
        "ratio",
        "best",
        "check"
    );
    for case in &cli.cases {
        let parts: Vec<&str> = case.split(':').collect();
        let num = |i: usize| -> Result<usize, Box<dyn std::error::Error>> {
            let part = parts
                .get(i)
                .ok_or(format!("case `{case}`: too few numbers"))?;
            Ok(part.parse()?)
        };
        let which = parts[0];
        let (nb, bs) = match which {
            "cholesky" | "lu" => (num(1)?, num(2)?),
            "wavefront" | "chain" => (num(1)?, 1),
            _ => return Err(format!("case `{case}`: no region `{which}`").into()),
        };
        let start: Vec<f64> = match which {
            "cholesky" => host::spd(nb, bs, 7),
            "lu" => host::lu_friendly(nb, bs, 7),
            _ => Vec::new(),
        };
        let cells = match which {
            "wavefront" => nb * nb,
            _ => nb,
        };
        fn region<'a>(which: &str, a: &'a mut [f64], nb: usize, bs: usize) -> Region<'a> {
            let region = match which {
                "cholesky" => {
                    cholesky::cholesky_f64(a, nb, bs).shared_bytes(cholesky::SHARED_BYTES)
                }
                _ => lu::lu_f64(a, nb, bs).shared_bytes(lu::SHARED_BYTES),
            };
            region.cache(false)
        }
        let call = |stream: bool, fewer: bool| -> Result<(Report, Vec<f64>), taskweave::Error> {
            // The streamed call leaves a core to the recording thread by itself.
            fn set(region: Region<'_>, fewer: Option<u32>) -> Region<'_> {
                match fewer {
                    Some(workers) => region.workers(workers),
                    None => region,
                }
            }
            let fewer = fewer.then_some(workers.saturating_sub(1).max(1));
            let mut a = start.clone();
            let report = match which {
                "wavefront" | "chain" => {
                    let mut g = vec![0u32; cells];
                    let region = match which {
                        "wavefront" => dags::wavefront(&mut g, nb, 0),
                        _ => dags::chain(&mut g, 0),
                    };
                    let report = set(region.cache(false).stream(stream), fewer).run(&rt)?;
                    a = g.iter().map(|&v| f64::from(v)).collect();
                    report
                }
                _ => set(region(which, &mut a, nb, bs).stream(stream), fewer).run(&rt)?,
            };
            Ok((report, a))
        };
        let mut kinds: [Vec<Report>; 4] = Default::default();
        let mut results: [Vec<f64>; 4] = Default::default();
        for rep in 0..=cli.reps {
            for (k, (stream, fewer)) in [(false, false), (true, false), (false, true), (true, true)]
                .into_iter()
                .enumerate()
            {
                let (report, a) = call(stream, fewer)?;
                assert_eq!(report.streamed, stream, "{case}: streamed as asked");
                let want = if fewer {
                    workers.saturating_sub(1).max(1)
                } else {
                    workers
                };
                assert_eq!(report.workers, want, "{case}: the workers asked for");
                if rep > 0 {
                    kinds[k].push(report);
                }
                results[k] = a;
            }
        }
        let check = match which {
            "cholesky" => host::check_cholesky(&start, &results[2], nb, bs).passed(),
            "lu" => host::check_lu(&start, &results[2], nb, bs).passed(),
            _ => {
                let g: Vec<u32> = results[2].iter().map(|&v| v as u32).collect();
                match which {
                    "wavefront" => dags::check_wavefront(&g, nb),
                    _ => dags::check_chain(&g),
                }
            }
        };
        let same = results.iter().all(|r| *r == results[0]);
        let med = |k: usize, f: fn(&Report) -> Duration| median(kinds[k].iter().map(f).collect());
        let wall = |k| med(k, |r| r.wall_time);
        let ratio = |k: usize| wall(k + 1).as_secs_f64() / wall(k).as_secs_f64();
        let best = (0..4).min_by_key(|&k| wall(k)).unwrap_or(0);
        println!(
            "{:<16} {:>7} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8} {:>6}",
            case,
            kinds[0][0].tasks,
            ms(wall(0)),
            ms(med(0, |r| r.inspect_time)),
            ms(wall(1)),
            ratio(0),
            ms(wall(2)),
            ms(med(2, |r| r.inspect_time)),
            ms(wall(3)),
            ratio(2),
            ["W ins", "W strm", "W-1 ins", "W-1 strm"][best],
            if check && same { "PASS" } else { "FAIL" },
        );
        if !check || !same {
            eprintln!("{case}: streamed result checked {check}; bit for bit as inspected: {same}");
        }
    }
    println!(
        "W ins, W strm: the median wall of inspected and streamed calls on the runtime's W workers; W-1: on one fewer; inspect: the inspected calls' inspection (body, recording, edges); ratio: streamed wall over inspected; best: the kind with the least wall."
    );
    Ok(())
}
