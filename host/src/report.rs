//! What a region run reports: sizes, times, per-worker statistics and an optional per-task trace.

use std::fmt;
use std::time::Duration;

use taskweave_device::abi::{TraceRecord, WorkerStats};

use crate::call::Call;
use crate::costs::TaskCosts;
use crate::options::{Backend, Policy};

mod path;

pub use path::{Held, KindShare, PathStep, TracePath};

/// The outcome of a successful region run.
#[derive(Clone, Debug)]
pub struct Report {
    /// The region's name.
    pub region: &'static str,
    /// The backend that ran it.
    pub backend: Backend,
    /// The scheduling policy.
    pub policy: Policy,
    /// Tasks run.
    pub tasks: usize,
    /// Dependence edges.
    pub edges: usize,
    /// Tasks on the longest dependence chain.
    pub critical_path: u32,
    /// Workers (GPU blocks or CPU threads).
    pub workers: u32,
    /// Threads per task block (lanes on the CPU).
    pub threads: u32,
    /// The call's wall time, what the caller waited: from [`Region::run`](crate::Region::run)
    /// (or [`Region::submit`](crate::Region::submit), or [`Plan::run`](crate::Plan::run)) to the
    /// report (or [`Pending::wait`](crate::Pending::wait)'s return), everything included:
    /// inspection, waiting for earlier regions, transfers, set-up, execution and copies back.
    /// Compare it with `execute_time` to see what a call costs beyond its kernel.
    pub wall_time: Duration,
    /// Inspection: running the body, dependence tracking, CSR (zero for a run of a
    /// [`Plan`](crate::Plan) that did not inspect again).
    pub inspect_time: Duration,
    /// Copies between host and device (zero on the CPU).
    pub transfer_time: Duration,
    /// Backend set-up before the run, on the host: building the scheduler's tables (the static
    /// policy's plan among them) on the GPU backends, zero when a plan's kept tables were put
    /// back instead; and building and instantiating the CUDA graph (graph backend, zero when the
    /// graph was cached). Zero on the CPU backend.
    pub setup_time: Duration,
    /// Running the DAG: the kernel, or the worker pool.
    pub execute_time: Duration,
    /// What the call cost the host beyond inspection, transfers, set-up and execution: staging
    /// the tables (or resetting a plan's), launching, waiting for the GPU to report the end, and
    /// reading the statistics back. A plan run again on resident arrays costs this much more than
    /// its kernel.
    pub host_time: Duration,
    /// Where the call's host time went, phase by phase (see [`Phases`]).
    pub phases: Phases,
    /// Whether the call ran a plan inspected by an earlier call: a [`Plan::run`](crate::Plan::run),
    /// or a [`Region::run`](crate::Region::run) that found its plan in the runtime's cache (see
    /// [`Runtime::cache_plans`](crate::Runtime::cache_plans)). Such a call inspects nothing
    /// unless the plan verifies ([`Plan::verify`](crate::Plan::verify)).
    pub reused: bool,
    /// Whether the call streamed: its tasks ran while its body still recorded them
    /// ([`Region::stream`](crate::Region::stream)).
    pub streamed: bool,
    /// Of a streamed call's tasks, those fed to the running workers while the body still
    /// recorded; the rest went in one batch when it returned. Batches go while every array the
    /// region writes keeps to the tile path: a region that leaves it early feeds few, and
    /// [`Inspection::off_tile_path`](crate::inspect::Inspection::off_tile_path) says which task's
    /// range took it off. Zero for a call that did not stream.
    pub fed_while_recording: usize,
    /// One record per worker.
    pub worker_stats: Vec<WorkerStats>,
    /// One record per task, when tracing was on.
    pub trace: Option<Vec<TraceRecord>>,
    /// The region's task kinds (task functions), by kind index.
    pub kinds: &'static [&'static str],
    /// Each task's kind index, when tracing was on (to colour traces and timelines by kind).
    pub task_kinds: Option<Vec<u32>>,
    /// Each task's parent that finished last in the trace (`u32::MAX` for a task without
    /// parents), when tracing was on: what the task waited for, unless its worker was busy.
    pub last_parent: Option<Vec<u32>>,
}

/// Where a call's time went on the host, phase by phase, finer than [`Report`]'s inspect,
/// set-up, transfer and host times. A phase a backend does not have, or a call skips, is zero:
/// a run of a [`Plan`](crate::Plan) inspects nothing (unless it verifies) and, on the persistent
/// backend, puts its kept tables back instead of building them.
///
/// A streamed call on the GPU loads its kernel, sets its tables, uploads its host arrays and
/// launches on a thread of its own while the body records, and that thread then copies the
/// batches to the device: `load`, `tables`, `launch` and `upload` (with the batches' copies) count
/// only what the call waited for them after the body (what they took in all is in
/// [`Report::setup_time`] and [`Report::transfer_time`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    /// Running the region's body: recording its tasks, their arguments and ranges (on the tile
    /// path, their edges too).
    pub record: Duration,
    /// Tracking the dependences of the ranges left to the general path and building the CSR.
    pub edges: Duration,
    /// Choosing the kernel and loading its module, with the occupancy queries that size the
    /// launch (persistent backend; the module loads on a region's first call in a process, on
    /// a thread of its own while the body is inspected: what the call waited for it after the
    /// inspection counts here).
    pub load: Duration,
    /// The policy's share of the scheduler's tables: the static plan, priorities, placements.
    pub plan: Duration,
    /// Laying out the rest of the scheduler's tables, in the form the device reads.
    pub tables: Duration,
    /// Copying the arrays and the tables to the device.
    pub upload: Duration,
    /// Launching: from the staged tables to the kernel (or graph) queued, after the runs it
    /// follows (persistent backend).
    pub launch: Duration,
    /// Waiting for the kernel to end, from its launch (persistent backend): its execution, and
    /// the host's polling, beyond it.
    pub wait: Duration,
    /// Checking the error record and copying the written arrays and statistics back.
    pub download: Duration,
}

impl Phases {
    /// Every phase with its name, in order.
    pub fn named(&self) -> [(&'static str, Duration); 9] {
        [
            ("record", self.record),
            ("edges", self.edges),
            ("load", self.load),
            ("plan", self.plan),
            ("tables", self.tables),
            ("upload", self.upload),
            ("launch", self.launch),
            ("wait", self.wait),
            ("download", self.download),
        ]
    }
}

impl fmt::Display for Phases {
    /// `record 1.234 ms, edges 0.456 ms, ...`, every phase in milliseconds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, time)) in self.named().into_iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{name} {:.3} ms", time.as_secs_f64() * 1e3)?;
        }
        Ok(())
    }
}

impl Report {
    /// The report of a finished `call` on `backend`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        call: &Call<'_, '_>,
        backend: Backend,
        workers: u32,
        threads: u32,
        transfer_time: Duration,
        execute_time: Duration,
        worker_stats: Vec<WorkerStats>,
        trace: Option<Vec<TraceRecord>>,
    ) -> Self {
        let work = call.work;
        let ins = &work.inspection;
        Self {
            region: work.meta.name,
            backend,
            policy: work.options().run_policy(),
            tasks: ins.task_count(),
            edges: ins.dag.edge_count(),
            critical_path: work.critical_path(),
            workers,
            threads,
            wall_time: Duration::ZERO,
            inspect_time: call.inspect_time,
            transfer_time,
            setup_time: Duration::ZERO,
            execute_time,
            host_time: Duration::ZERO,
            phases: Phases {
                record: call.inspect_time.saturating_sub(call.edges_time),
                edges: call.edges_time,
                ..Phases::default()
            },
            reused: call.reused,
            streamed: false,
            fed_while_recording: 0,
            task_kinds: trace.is_some().then(|| {
                ins.tasks[..ins.task_count()]
                    .iter()
                    .map(|t| t.kind)
                    .collect()
            }),
            last_parent: trace
                .as_deref()
                .filter(|t| t.len() == ins.task_count())
                .map(|trace| {
                    let parents = ins.dag.parents();
                    (0..ins.task_count() as u32)
                        .map(|t| {
                            let latest = parents
                                .parents_of(t)
                                .iter()
                                .max_by_key(|&&p| (trace[p as usize].end, std::cmp::Reverse(p)));
                            latest.copied().unwrap_or(path::NO_PARENT)
                        })
                        .collect()
                }),
            worker_stats,
            trace,
            kinds: ins.kinds,
        }
    }

    /// The tasks that set the traced run's span, and what held each ([`TracePath`]); `None`
    /// when tracing was off or no task ran. Its one-line `Display` says how much of the span
    /// the path's tasks ran, by kind, and how much went between them.
    pub fn trace_path(&self) -> Option<TracePath> {
        let trace = self.trace.as_deref()?;
        let last_parent = self.last_parent.as_deref()?;
        TracePath::new(trace, last_parent, |t| self.kind_of(t))
    }

    /// This report with its [`Report::wall_time`] counted from `start`, when the caller's call
    /// began.
    pub(crate) fn since(self, start: std::time::Instant) -> Self {
        Self {
            wall_time: start.elapsed(),
            ..self
        }
    }

    /// The difference between the most and the fewest tasks any worker ran (Juggler's figure 5).
    pub fn load_spread(&self) -> u32 {
        let tasks = self.worker_stats.iter().map(|s| s.tasks);
        tasks.clone().max().unwrap_or(0) - tasks.min().unwrap_or(0)
    }

    /// The trace as Chrome trace-event JSON (`chrome://tracing`, Perfetto): one complete event per
    /// task, on a track per worker, named by task kind; `None` when tracing was off.
    ///
    /// Times are microseconds from the first task's start. Each event's arguments give the task
    /// index, on the GPU the SM it ran on, `after`: the task's parent that finished last (`null`
    /// for a task without parents), and `path`: whether the task is on the
    /// [`trace_path`](Report::trace_path).
    pub fn chrome_trace(&self) -> Option<serde_json::Value> {
        let trace = self.trace.as_ref()?;
        let origin = trace.iter().map(|r| r.start).min().unwrap_or(0);
        let mut on_path = vec![false; trace.len()];
        for step in self.trace_path().iter().flat_map(|p| &p.steps) {
            on_path[step.task] = true;
        }
        let mut events: Vec<serde_json::Value> = trace
            .iter()
            .enumerate()
            .map(|(task, r)| {
                let kind = self.kind_of(task);
                serde_json::json!({
                    "name": kind,
                    "cat": kind,
                    "ph": "X",
                    "pid": 0,
                    "tid": r.worker,
                    "ts": (r.start - origin) as f64 / 1e3,
                    "dur": r.end.saturating_sub(r.start) as f64 / 1e3,
                    "args": {
                        "task": task,
                        "sm": r.sm,
                        "after": self.after(task),
                        "path": on_path[task],
                    },
                })
            })
            .collect();
        events.push(serde_json::json!({
            "name": "process_name", "ph": "M", "pid": 0,
            "args": { "name": format!("region `{}` on {}", self.region, self.backend) },
        }));
        Some(serde_json::json!({ "traceEvents": events, "displayTimeUnit": "ns" }))
    }

    /// The parent of `task` that finished last, when tracing was on and it has one.
    fn after(&self, task: usize) -> Option<u32> {
        let parent = *self.last_parent.as_ref()?.get(task)?;
        (parent != path::NO_PARENT).then_some(parent)
    }

    /// What each task kind cost in this run, when tracing was on: the median time of its tasks'
    /// bodies (a kind with no task in the run gets the median of all tasks), and the default hop.
    /// For [`Region::task_costs`](crate::Region::task_costs): a traced call of a region gives the
    /// costs that later calls plan with.
    pub fn task_costs(&self) -> Option<TaskCosts> {
        let (trace, kinds) = (self.trace.as_ref()?, self.task_kinds.as_ref()?);
        let median = |mut v: Vec<u64>| {
            v.sort_unstable();
            v.get(v.len() / 2).copied()
        };
        let took = |r: &TraceRecord| r.end.saturating_sub(r.start);
        let all = median(trace.iter().map(took).collect()).unwrap_or(0);
        // One pass over the tasks, each time to its kind's list.
        let mut per_kind = vec![Vec::new(); self.kinds.len()];
        for (r, &kind) in trace.iter().zip(kinds) {
            if let Some(times) = per_kind.get_mut(kind as usize) {
                times.push(took(r));
            }
        }
        let costs =
            self.kinds
                .iter()
                .zip(per_kind)
                .fold(TaskCosts::new(), |costs, (name, times)| {
                    costs.kind(*name, Duration::from_nanos(median(times).unwrap_or(all)))
                });
        Some(costs)
    }

    /// The kind name of task `task`, when tracing recorded kinds.
    pub fn kind_of(&self, task: usize) -> &'static str {
        self.task_kinds
            .as_ref()
            .and_then(|k| k.get(task))
            .and_then(|&k| self.kinds.get(k as usize))
            .copied()
            .unwrap_or("task")
    }

    /// Where the workers ran: how many SMs (cores on the CPU) held at least one, and the fewest and
    /// most workers on one of those. With `workers_per_sm(n)` on the GPU every SM of the set holds
    /// `n`; a worker whose slot no block claimed never writes its statistics, which stay zero and
    /// so count on SM 0.
    pub fn sm_spread(&self) -> (usize, u32, u32) {
        let mut per_sm = std::collections::BTreeMap::new();
        for s in &self.worker_stats {
            *per_sm.entry(s.sm).or_insert(0u32) += 1;
        }
        let counts = per_sm.values().copied();
        (
            per_sm.len(),
            counts.clone().min().unwrap_or(0),
            counts.max().unwrap_or(0),
        )
    }

    /// Nanoseconds of execution per task.
    pub fn ns_per_task(&self) -> f64 {
        self.execute_time.as_nanos() as f64 / self.tasks.max(1) as f64
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let continuations: u64 = self
            .worker_stats
            .iter()
            .map(|s| u64::from(s.continuations))
            .sum();
        let steals: u64 = self.worker_stats.iter().map(|s| u64::from(s.steals)).sum();
        write!(
            f,
            "region `{}` on {} ({} policy): {} tasks, {} edges, critical path {}; {} workers x {} threads; \
             wall {:.3} ms: inspect {:.3} ms, set-up {:.3} ms, transfer {:.3} ms, execute {:.3} ms ({:.1} ns/task); load spread {}, {} continuations, {} steals{}",
            self.region,
            self.backend,
            self.policy.name(),
            self.tasks,
            self.edges,
            self.critical_path,
            self.workers,
            self.threads,
            self.wall_time.as_secs_f64() * 1e3,
            self.inspect_time.as_secs_f64() * 1e3,
            self.setup_time.as_secs_f64() * 1e3,
            self.transfer_time.as_secs_f64() * 1e3,
            self.execute_time.as_secs_f64() * 1e3,
            self.ns_per_task(),
            self.load_spread(),
            continuations,
            steals,
            if self.reused { "; plan reused" } else { "" },
        )?;
        if self.streamed {
            write!(
                f,
                "; streamed, {} of {} tasks fed while the body recorded",
                self.fed_while_recording, self.tasks
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A traced report of tasks that took `took[t]` ns, of kind `kinds[t]` of `["a", "b", "c"]`.
    fn traced(took: &[u64], kinds: &[u32]) -> Report {
        let trace = took
            .iter()
            .map(|&t| TraceRecord {
                start: 100,
                end: 100 + t,
                worker: 0,
                sm: 0,
            })
            .collect();
        Report {
            region: "r",
            backend: Backend::Cpu,
            policy: Policy::Static,
            tasks: took.len(),
            edges: 0,
            critical_path: 1,
            workers: 1,
            threads: 1,
            wall_time: Duration::ZERO,
            inspect_time: Duration::ZERO,
            transfer_time: Duration::ZERO,
            setup_time: Duration::ZERO,
            execute_time: Duration::ZERO,
            host_time: Duration::ZERO,
            phases: Phases::default(),
            reused: false,
            streamed: false,
            fed_while_recording: 0,
            worker_stats: Vec::new(),
            trace: Some(trace),
            kinds: &["a", "b", "c"],
            task_kinds: Some(kinds.to_vec()),
            last_parent: None,
        }
    }

    #[test]
    fn task_costs_are_each_kinds_median_and_the_overall_one_for_a_kind_not_run() {
        // Kind a ran 10, 30, 20 and 40 (the upper middle: 30), kind b 1000 and 3000 (3000);
        // kind c ran nothing and gets the median of all six tasks (10, 20, 30, 40, 1000, 3000:
        // 40).
        let report = traced(&[10, 1000, 30, 3000, 20, 40], &[0, 1, 0, 1, 0, 0]);
        let costs = report.task_costs().expect("traced");
        let got: Vec<(&str, u128)> = costs.iter().map(|(k, c)| (k, c.as_nanos())).collect();
        assert_eq!(got, [("a", 30), ("b", 3000), ("c", 40)]);
        let untraced = Report {
            trace: None,
            ..report
        };
        assert!(untraced.task_costs().is_none());
    }
}
