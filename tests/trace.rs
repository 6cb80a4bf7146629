//! Traces on the CPU backend: one record per task, named by kind, in dependence order, and their
//! Chrome trace-event export; and, read through a trace, that the static policy runs the plan.

use taskweave::{Block, Runtime, task, task_region};

/// `v[i] = i + 1` over `lo..hi`.
#[task(writes = v[lo..hi])]
fn produce(b: &Block, v: &mut [u32], lo: usize, hi: usize) {
    b.par_for(lo..hi, |i| v[i] = i as u32 + 1);
}

/// `out[0] = Σ v[lo..hi]`.
#[task(reads = v[lo..hi], writes = out[0..1])]
fn reduce(b: &Block, v: &[u32], out: &mut [u32], lo: usize, hi: usize) {
    if b.thread() == 0 {
        out[0] = (lo..hi).map(|i| v[i]).sum();
    }
}

task_region! {
    /// Four producers, then one reduction that reads what all of them wrote.
    fn produce_reduce(v: &mut [u32], out: &mut [u32]) {
        for k in 0..4 {
            spawn!(produce(v, 4 * k, 4 * k + 4));
        }
        spawn!(reduce(v, out, 0, 16));
    }
}

#[test]
fn trace_names_every_task_by_kind_in_dependence_order() {
    let (mut v, mut out) = (vec![0u32; 16], vec![0u32; 1]);
    let report = produce_reduce(&mut v, &mut out)
        .trace(true)
        .run(&Runtime::cpu_with(3))
        .expect("the region runs");
    assert_eq!(out[0], (1..=16).sum::<u32>());
    let trace = report.trace.as_ref().expect("tracing was on");
    assert_eq!(trace.len(), 5);
    assert_eq!(report.kinds, ["produce", "reduce"]);
    let kinds: Vec<&str> = (0..5).map(|t| report.kind_of(t)).collect();
    assert_eq!(
        kinds,
        ["produce", "produce", "produce", "produce", "reduce"]
    );
    // The reduction starts after every producer ended.
    for producer in &trace[..4] {
        assert!(producer.start <= producer.end);
        assert!(
            producer.end <= trace[4].start,
            "{producer:?} vs {:?}",
            trace[4]
        );
    }
    assert!(trace.iter().all(|r| r.worker < 3));

    let json = report.chrome_trace().expect("tracing was on");
    let events = json["traceEvents"].as_array().expect("an event list");
    let complete: Vec<_> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert_eq!(complete.len(), 5);
    assert_eq!(complete[4]["name"], "reduce");
    assert_eq!(complete[4]["args"]["task"], 4);
    assert!(
        complete
            .iter()
            .all(|e| e["dur"].as_f64().is_some_and(|d| d >= 0.0))
    );
    let first = complete.iter().map(|e| e["ts"].as_f64().unwrap());
    assert_eq!(first.fold(f64::INFINITY, f64::min), 0.0);
}

#[test]
fn no_trace_without_tracing() {
    let (mut v, mut out) = (vec![0u32; 16], vec![0u32; 1]);
    let report = produce_reduce(&mut v, &mut out)
        .run(&Runtime::cpu_with(2))
        .expect("the region runs");
    assert!(report.trace.is_none() && report.task_kinds.is_none());
    assert!(report.chrome_trace().is_none());
    assert_eq!(report.kind_of(0), "task");
}

/// Wavefront cell `(i, j)` of a `t × t` grid: one more than the larger of its upper and left
/// neighbours.
#[task(reads = [g[if i > 0 { (i - 1) * t + j } else { 0 }..if i > 0 { (i - 1) * t + j + 1 } else { 0 }],
                g[if j > 0 { i * t + j - 1 } else { 0 }..if j > 0 { i * t + j } else { 0 }]],
       writes = g[i * t + j..i * t + j + 1])]
fn cell(b: &Block, g: &mut [u32], i: usize, j: usize, t: usize) {
    if b.thread() == 0 {
        let up = if i > 0 { g[(i - 1) * t + j] } else { 0 };
        let left = if j > 0 { g[i * t + j - 1] } else { 0 };
        g[i * t + j] = up.max(left) + 1;
    }
}

task_region! {
    /// A `t × t` wavefront, row by row.
    fn wavefront(g: &mut [u32], t: usize) {
        for i in 0..t {
            for j in 0..t {
                spawn!(cell(g, i, j, t));
            }
        }
    }
}

/// Under the static policy every task runs on the worker the inspector's plan gave it, each
/// worker's tasks in plan order; for a wavefront no wider than the workers, a row per worker.
#[test]
fn the_static_policy_runs_the_inspectors_plan() {
    use taskweave::{Policy, graph::list_schedule};
    let (t, workers) = (6, 8);
    let mut g = vec![0u32; t * t];
    let plan = {
        let ins = wavefront(&mut g, t).inspect().expect("the region inspects");
        list_schedule(&ins.dag, workers)
    };
    let report = wavefront(&mut g, t)
        .policy(Policy::Static)
        .trace(true)
        .run(&Runtime::cpu_with(workers))
        .expect("the region runs");
    assert!(
        (0..t * t).all(|e| g[e] as usize == e / t + e % t + 1),
        "{g:?}"
    );
    let trace = report.trace.as_ref().expect("tracing was on");
    for (task, record) in trace.iter().enumerate() {
        assert_eq!(record.worker, plan.worker[task], "task {task}");
    }
    for list in &plan.lists {
        for pair in list.windows(2) {
            let (a, b) = (&trace[pair[0] as usize], &trace[pair[1] as usize]);
            assert!(a.end <= b.start, "{pair:?}: {a:?} then {b:?}");
        }
    }
    for i in 0..t {
        let row = &plan.worker[i * t..(i + 1) * t];
        assert!(row.iter().all(|&w| w == row[0]), "row {i}: {row:?}");
    }
}

/// The path of a traced wavefront: every step is held by a parent
/// or by its worker, it ends with the last cell, and its run time and gaps add up to the span.
/// On a wavefront as wide as the workers, the last cell's path runs through its parents, and the
/// trace's `after` argument names the parent each cell waited for.
#[test]
fn the_trace_path_accounts_for_the_span() {
    use taskweave::{Held, Policy};
    let t = 5;
    let mut g = vec![0u32; t * t];
    let report = wavefront(&mut g, t)
        .policy(Policy::Static)
        .trace(true)
        .run(&Runtime::cpu_with(t as u32))
        .expect("the region runs");
    let path = report.trace_path().expect("tracing was on");
    assert_eq!(path.run_ns() + path.gap_ns(), path.span_ns);
    assert_eq!(path.steps.last().map(|s| s.task), Some(t * t - 1));
    assert_eq!(path.steps[0].held, Held::Nothing);
    // Each step's task is a parent of the next, or ran just before it on the same worker.
    let trace = report.trace.as_ref().expect("tracing was on");
    for pair in path.steps.windows(2) {
        let (a, b) = (pair[0].task, pair[1].task);
        match pair[1].held {
            Held::Parent => assert!(b == a + 1 || b == a + t, "{a} then {b}"),
            Held::Worker => assert_eq!(trace[a].worker, trace[b].worker),
            Held::Nothing => panic!("only the first step is held by nothing"),
        }
        assert!(trace[a].end <= trace[b].start, "{a} then {b}");
    }
    let total: usize = path.by_kind().iter().map(|s| s.tasks).sum();
    assert_eq!(total, path.steps.len());
    assert!(path.to_string().contains("cell"), "{path}");

    let json = report.chrome_trace().expect("tracing was on");
    let events = json["traceEvents"].as_array().expect("an event list");
    let after = |task: usize| {
        events
            .iter()
            .find(|e| e["ph"] == "X" && e["args"]["task"] == task)
            .map(|e| e["args"]["after"].clone())
            .expect("an event per task")
    };
    assert!(after(0).is_null());
    let on_path = events.iter().filter(|e| e["args"]["path"] == true).count();
    assert_eq!(on_path, path.steps.len());
    // Cell (1, 1) waited for (0, 1) or (1, 0), whichever ended last.
    let waited = after(t + 1).as_u64().expect("a parent") as usize;
    assert!(waited == 1 || waited == t, "{waited}");
    let other = if waited == 1 { t } else { 1 };
    assert!(trace[waited].end >= trace[other].end);
}
