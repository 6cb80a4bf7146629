//! A region called once, streamed (`Region::stream(true)`: its tasks run while its body records
//! them) against inspected first and run after, on the CPU backend: the tiled Cholesky and LU of
//! the tile library, each checked against the sequential reference, and a wavefront and a chain of
//! one-element tasks with empty bodies (`taskweave_kernels::dags`, checked by their own checks),
//! where recording costs as much as running; the calls' results are compared bit for bit. And the
//! example workloads at their default sizes (`workload:NAME`), each call's output checked against
//! the workload's sequential reference, and beside them the workload's planned calls (a plan made
//! once and run again), the wall a one-off call is measured against.
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
use taskweave_examples::workloads::{self, Workload};
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
    /// `T × T` grid), `chain:N`, `workload:NAME` (an example workload at its default size, by its
    /// name in `workload --help`: `HEAT-SIM`, `SA-TABLE`, …).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "cholesky:24:16,cholesky:40:16,lu:24:16,wavefront:300,chain:50000"
    )]
    cases: Vec<String>,
    /// On the GPU (the persistent backend, which must be there): inspected against streamed
    /// calls on its default workers, without the `W − 1` kinds.
    #[arg(long)]
    gpu: bool,
    /// After the timed calls, one traced inspected call and one traced streamed call per case:
    /// each prints its trace's summary, and writes the records to `DIR/CASE-KIND.csv` (task, its
    /// kind, start and end in ns from the first start, worker, SM, its parent that ended last).
    #[arg(long, value_name = "DIR")]
    trace: Option<std::path::PathBuf>,
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
    let rt = if cli.gpu {
        let rt = Runtime::new();
        if rt.gpu_device().is_none() {
            return Err(format!(
                "--gpu: no GPU ({})",
                rt.fallback_reason()
                    .unwrap_or("the runtime runs on the CPU")
            )
            .into());
        }
        rt
    } else {
        Runtime::cpu_with(workers)
    };
    match rt.gpu_device() {
        Some(gpu) => println!(
            "taskweave stream_bench: {} ({} SMs), persistent backend, {} calls of each kind per case after one warm-up; medians in ms",
            gpu.name(),
            gpu.sm_count(),
            cli.reps
        ),
        None => println!(
            "taskweave stream_bench: {workers} CPU workers, {} calls of each kind per case after one warm-up; medians in ms",
            cli.reps
        ),
    }
    // On the GPU only the runtime's own workers: the `W − 1` kinds leave a core to the recording
    // thread, which the GPU's workers do not share.
    let kinds_run: &[(bool, bool)] = if cli.gpu {
        &[(false, false), (true, false)]
    } else {
        &[(false, false), (true, false), (false, true), (true, true)]
    };
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
        let workload: Option<std::cell::RefCell<Box<dyn Workload>>> = match which {
            "workload" => {
                let name = parts
                    .get(1)
                    .ok_or(format!("case `{case}`: no workload named"))?;
                let found = (workloads::all().into_iter()).find(|w| w.name() == *name);
                Some(
                    found
                        .ok_or(format!("case `{case}`: no workload `{name}`"))?
                        .into(),
                )
            }
            _ => None,
        };
        let (nb, bs) = match which {
            "cholesky" | "lu" => (num(1)?, num(2)?),
            "wavefront" | "chain" => (num(1)?, 1),
            "workload" => (0, 0),
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
        let traced = |stream: bool,
                      fewer: bool,
                      trace: bool|
         -> Result<(Report, Vec<f64>), taskweave::Error> {
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
                "workload" => {
                    let mut w = workload.as_ref().expect("a workload case").borrow_mut();
                    let region = w.fresh().cache(false).stream(stream).trace(trace);
                    let report = set(region, fewer).run(&rt)?;
                    // The call's check, as the result: the workload keeps its own output.
                    a = vec![f64::from(u8::from(w.verify().passed()))];
                    report
                }
                "wavefront" | "chain" => {
                    let mut g = vec![0u32; cells];
                    let region = match which {
                        "wavefront" => dags::wavefront(&mut g, nb, 0),
                        _ => dags::chain(&mut g, 0),
                    };
                    let region = region.cache(false).stream(stream).trace(trace);
                    let report = set(region, fewer).run(&rt)?;
                    a = g.iter().map(|&v| f64::from(v)).collect();
                    report
                }
                _ => set(
                    region(which, &mut a, nb, bs).stream(stream).trace(trace),
                    fewer,
                )
                .run(&rt)?,
            };
            Ok((report, a))
        };
        let call = |stream: bool, fewer: bool| traced(stream, fewer, false);
        let mut kinds: [Vec<Report>; 4] = Default::default();
        let mut results: [Vec<f64>; 4] = Default::default();
        for rep in 0..=cli.reps {
            for (k, &(stream, fewer)) in kinds_run.iter().enumerate() {
                let (report, a) = call(stream, fewer)?;
                assert_eq!(report.streamed, stream, "{case}: streamed as asked");
                let want = if fewer {
                    workers.saturating_sub(1).max(1)
                } else {
                    workers
                };
                if !cli.gpu {
                    assert_eq!(report.workers, want, "{case}: the workers asked for");
                }
                if rep > 0 {
                    kinds[k].push(report);
                }
                results[k] = a;
            }
        }
        let ran = kinds_run.len();
        // The checked result: a streamed call's.
        let streamed = &results[1];
        let check = match which {
            // Every call's output was checked against the reference.
            "workload" => results[..ran].iter().all(|r| *r == [1.0]),
            "cholesky" => host::check_cholesky(&start, streamed, nb, bs).passed(),
            "lu" => host::check_lu(&start, streamed, nb, bs).passed(),
            _ => {
                let g: Vec<u32> = streamed.iter().map(|&v| v as u32).collect();
                match which {
                    "wavefront" => dags::check_wavefront(&g, nb),
                    _ => dags::check_chain(&g),
                }
            }
        };
        let same = results[..ran].iter().all(|r| *r == results[0]);
        let med = |k: usize, f: fn(&Report) -> Duration| median(kinds[k].iter().map(f).collect());
        let wall = |k| med(k, |r| r.wall_time);
        let ratio = |k: usize| wall(k + 1).as_secs_f64() / wall(k).as_secs_f64();
        let best = (0..ran).min_by_key(|&k| wall(k)).unwrap_or(0);
        let fewer = |k: usize, v: f64| match ran > k {
            true => format!("{v:.2}"),
            false => "-".to_owned(),
        };
        println!(
            "{:<16} {:>7} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6}",
            case,
            kinds[0][0].tasks,
            ms(wall(0)),
            ms(med(0, |r| r.inspect_time)),
            ms(wall(1)),
            ratio(0),
            fewer(2, ms(wall(2.min(ran - 1)))),
            fewer(2, ms(med(2.min(ran - 1), |r| r.inspect_time))),
            fewer(3, ms(wall(3.min(ran - 1)))),
            fewer(3, if ran > 3 { ratio(2) } else { 0.0 }),
            ["W ins", "W strm", "W-1 ins", "W-1 strm"][best],
            if check && same { "PASS" } else { "FAIL" },
        );
        if cli.gpu {
            // Where a call's time goes, in ms: the inspected call's and the streamed call's.
            for (k, what) in [(0, "inspected"), (1, "streamed")] {
                let r = &kinds[k][kinds[k].len() / 2];
                println!(
                    "  {what:<10} wall {:.3} execute {:.3} fed while recording {} of {} phases {}",
                    ms(r.wall_time),
                    ms(r.execute_time),
                    r.fed_while_recording,
                    r.tasks,
                    r.phases
                );
            }
        }
        if let Some(w) = &workload {
            // What the one-off calls are measured against: the same region's plan, made once and
            // run again as a caller with a plan does, its last output checked.
            let mut w = w.borrow_mut();
            let mut plan = w.fresh().cache(false).plan(&rt)?;
            let mut planned = Vec::new();
            for rep in 0..=cli.reps {
                let report = plan.run(w.fresh(), &rt)?;
                if rep > 0 {
                    planned.push(report);
                }
            }
            let passed = w.verify().passed();
            let pw = median(planned.iter().map(|r| r.wall_time).collect());
            let pe = median(planned.iter().map(|r| r.execute_time).collect());
            println!(
                "  planned    wall {:.3} execute {:.3} (a plan made once, median of {}): one-off inspected {:.2}x and streamed {:.2}x its wall; check {}",
                ms(pw),
                ms(pe),
                planned.len(),
                wall(0).as_secs_f64() / pw.as_secs_f64(),
                wall(1).as_secs_f64() / pw.as_secs_f64(),
                if passed { "PASS" } else { "FAIL" }
            );
            if !passed {
                eprintln!("{case}: the planned calls' output differs from the reference");
            }
        }
        if !check || !same {
            eprintln!("{case}: streamed result checked {check}; bit for bit as inspected: {same}");
        }
        if let Some(dir) = &cli.trace {
            for (stream, what) in [(false, "inspected"), (true, "streamed")] {
                let (report, _) = traced(stream, false, true)?;
                assert_eq!(report.streamed, stream, "{case}: streamed as asked, traced");
                let file = dir.join(format!("{}-{what}.csv", case.replace(':', "-")));
                print_trace(&report, what, &file)?;
            }
        }
    }
    if cli.gpu {
        failures(&rt)?;
    }
    println!(
        "W ins, W strm: the median wall of inspected and streamed calls on the runtime's W workers; W-1: on one fewer; inspect: the inspected calls' inspection (body, recording, edges); ratio: streamed wall over inspected; best: the kind with the least wall."
    );
    Ok(())
}

/// Prints a traced call's summary, and writes its records to `file` (see `--trace`): its span,
/// how busy its workers were, each task's wait from its last parent's end to its start (the
/// hop, and the time a freed task waited to be fed, linked or picked), and the path that set the
/// span.
fn print_trace(
    report: &Report,
    what: &str,
    file: &std::path::Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let (Some(trace), Some(kinds), Some(last)) = (
        report.trace.as_deref(),
        report.task_kinds.as_deref(),
        report.last_parent.as_deref(),
    ) else {
        return Err(format!("{what}: the call recorded no trace").into());
    };
    let origin = trace.iter().map(|r| r.start).min().unwrap_or(0);
    let end = trace.iter().map(|r| r.end).max().unwrap_or(0);
    let span = (end - origin) as f64;
    let busy: f64 = trace.iter().map(|r| (r.end - r.start) as f64).sum();
    let mut waits: Vec<u64> = (0..trace.len())
        .filter(|&t| last[t] != u32::MAX)
        .map(|t| trace[t].start.saturating_sub(trace[last[t] as usize].end))
        .collect();
    waits.sort_unstable();
    let at = |q: f64| {
        waits
            .get((waits.len() as f64 * q) as usize)
            .copied()
            .unwrap_or(0) as f64
            / 1e3
    };
    // Of those waits, the time the task's worker ran other tasks: the task queued behind them.
    // The rest its worker was idle: the task was not in its queue yet (not fed, not linked, or
    // pushed late).
    let mut runs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); report.workers as usize];
    for r in trace {
        if let Some(w) = runs.get_mut(r.worker as usize) {
            w.push((r.start, r.end));
        }
    }
    for w in &mut runs {
        w.sort_unstable();
    }
    let (mut waited, mut queued) = (0u64, 0u64);
    for (t, r) in trace.iter().enumerate() {
        if last[t] == u32::MAX {
            continue;
        }
        let ready = trace[last[t] as usize].end;
        if r.start <= ready {
            continue;
        }
        waited += r.start - ready;
        let Some(w) = runs.get(r.worker as usize) else {
            continue;
        };
        let from = w.partition_point(|&(_, e)| e <= ready);
        queued += (w[from..].iter())
            .take_while(|&&(s, _)| s < r.start)
            .map(|&(s, e)| e.min(r.start).saturating_sub(s.max(ready)))
            .sum::<u64>();
    }
    println!(
        "  traced {what:<9} execute {:.3} ms, span {:.3} ms, workers busy {:.1}% of {}, wait after the last parent: median {:.1} us, p90 {:.1}, p99 {:.1}; {:.1} ms in all, {:.1} of it behind other tasks on its worker",
        ms(report.execute_time),
        span / 1e6,
        100.0 * busy / (span * f64::from(report.workers)).max(1.0),
        report.workers,
        at(0.5),
        at(0.9),
        at(0.99),
        waited as f64 / 1e6,
        queued as f64 / 1e6,
    );
    if let Some(path) = report.trace_path() {
        println!("    {path}");
    }
    let mut out = String::from("task,kind,start_ns,end_ns,worker,sm,last_parent\n");
    for (t, r) in trace.iter().enumerate() {
        let parent = match last[t] {
            u32::MAX => String::new(),
            p => p.to_string(),
        };
        out.push_str(&format!(
            "{t},{},{},{},{},{},{parent}\n",
            report.kinds[kinds[t] as usize],
            r.start - origin,
            r.end - origin,
            r.worker,
            r.sm,
        ));
    }
    std::fs::create_dir_all(file.parent().unwrap_or(std::path::Path::new(".")))?;
    std::fs::write(file, out)?;
    Ok(())
}

/// A streamed call whose body fails mid-stream, on the GPU: a `T × T` wavefront over a grid one
/// row short, whose last row's first cell is out of its range. Its first rows have been fed, and
/// have run, when the body fails: the call must fail with the inspection's error and leave the
/// grid as it was, a host grid (never written) and a resident one (put back from its copy).
fn failures(rt: &Runtime) -> Result<(), Box<dyn std::error::Error>> {
    const T: usize = 300;
    let start: Vec<u32> = (0..T * (T - 1)).map(|i| 7 + i as u32 % 5).collect();
    let mut host = start.clone();
    let on_host = dags::wavefront(&mut host, T, 0)
        .cache(false)
        .stream(true)
        .run(rt);
    let mut resident = rt.upload(&start)?;
    let on_device = dags::wavefront(&mut resident, T, 0)
        .cache(false)
        .stream(true)
        .run(rt);
    let kept = resident.download()?;
    for (what, outcome, after) in [("host", on_host, &host), ("resident", on_device, &kept)] {
        let error = match outcome {
            Ok(_) => "none".to_owned(),
            Err(e) => e.to_string(),
        };
        let pass = error != "none" && *after == start;
        println!(
            "failure mid-stream, {what} grid: error `{error}`; grid as it was: {}; {}",
            *after == start,
            if pass { "PASS" } else { "FAIL" }
        );
    }
    Ok(())
}
