//! A region called once, streamed (`Region::stream(true)`: its tasks run while its body records
//! them) against inspected first and run after, on the CPU backend: the tiled Cholesky and LU of
//! the tile library, each checked against the sequential reference, and a wavefront and a chain of
//! one-element tasks with empty bodies (`taskweave_kernels::dags`, checked by their own checks),
//! where recording costs as much as running; the two calls' results are compared bit for bit. Every call inspects (the plan cache is off), as a region called once
//! does; the two kinds of call alternate, after one warm-up of each. Prints, per case, the median
//! wall time per call, the inspection (body, recording and edges) and the execute time, and the
//! ratio of the walls.
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
        "{:<16} {:>7} {:>10} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8} {:>6}",
        "case",
        "tasks",
        "insp wall",
        "inspect",
        "execute",
        "strm wall",
        "inspect",
        "execute",
        "strm/ins",
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
        let call = |stream: bool| -> Result<(Report, Vec<f64>), taskweave::Error> {
            let mut a = start.clone();
            let report = match which {
                "wavefront" | "chain" => {
                    let mut g = vec![0u32; cells];
                    let region = match which {
                        "wavefront" => dags::wavefront(&mut g, nb, 0),
                        _ => dags::chain(&mut g, 0),
                    };
                    let report = region.cache(false).stream(stream).run(&rt)?;
                    a = g.iter().map(|&v| f64::from(v)).collect();
                    report
                }
                _ => region(which, &mut a, nb, bs).stream(stream).run(&rt)?,
            };
            Ok((report, a))
        };
        let mut kinds: [Vec<Report>; 2] = [Vec::new(), Vec::new()];
        let mut results: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        for rep in 0..=cli.reps {
            for (k, stream) in [false, true].into_iter().enumerate() {
                let (report, a) = call(stream)?;
                assert_eq!(report.streamed, stream, "{case}: streamed as asked");
                if rep > 0 {
                    kinds[k].push(report);
                }
                results[k] = a;
            }
        }
        let check = match which {
            "cholesky" => host::check_cholesky(&start, &results[1], nb, bs).passed(),
            "lu" => host::check_lu(&start, &results[1], nb, bs).passed(),
            _ => {
                let g: Vec<u32> = results[1].iter().map(|&v| v as u32).collect();
                match which {
                    "wavefront" => dags::check_wavefront(&g, nb),
                    _ => dags::check_chain(&g),
                }
            }
        };
        let same = results[0] == results[1];
        let med = |k: usize, f: fn(&Report) -> Duration| median(kinds[k].iter().map(f).collect());
        let wall = |k| med(k, |r| r.wall_time);
        println!(
            "{:<16} {:>7} {:>10.2} {:>9.2} {:>9.2} {:>10.2} {:>9.2} {:>9.2} {:>8.2} {:>6}",
            case,
            kinds[0][0].tasks,
            ms(wall(0)),
            ms(med(0, |r| r.inspect_time)),
            ms(med(0, |r| r.execute_time)),
            ms(wall(1)),
            ms(med(1, |r| r.inspect_time)),
            ms(med(1, |r| r.execute_time)),
            wall(1).as_secs_f64() / wall(0).as_secs_f64(),
            if check && same { "PASS" } else { "FAIL" },
        );
        if !check || !same {
            eprintln!("{case}: streamed result checked {check}; bit for bit as inspected: {same}");
        }
    }
    println!(
        "inspect: the body, recording and edges (in a streamed call, while the workers run); execute: from the workers' start to their end (a streamed call's starts before its body does)."
    );
    Ok(())
}
