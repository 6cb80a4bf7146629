//! Traces on the CPU backend: one record per task, named by kind, in dependence order, and their
//! Chrome trace-event export.

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
