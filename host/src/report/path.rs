//! [`TracePath`]: the chain of tasks that set a traced run's span, and what held each one.

use std::collections::BTreeMap;
use std::fmt;

use taskweave_device::abi::TraceRecord;

/// No parent: the task was ready when the run began.
pub(crate) const NO_PARENT: u32 = u32::MAX;

/// What a task on a [`TracePath`] waited for before it started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// Nothing: the path's first task.
    Nothing,
    /// Its parent that finished last (a dependence).
    Parent,
    /// The task its worker ran before it: the task was ready earlier, but its worker was busy.
    Worker,
}

/// One task of a [`TracePath`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathStep {
    /// The task (spawn order).
    pub task: usize,
    /// Its kind (task function).
    pub kind: &'static str,
    /// What it waited for: the previous step of the path.
    pub held: Held,
    /// Nanoseconds from the end of what held it (the previous step) to its start; for the first
    /// step, from the run's first task's start.
    pub gap_ns: u64,
    /// Nanoseconds it ran: to its recorded end, or to the next step's start if the records show
    /// that first.
    pub run_ns: u64,
}

/// The tasks that set a traced run's span, first to last: from the task that ended last, each
/// step back goes to whichever ended later of the task's last parent and the task its worker ran
/// before it, the one it waited for. The span is then the path's run time plus its gaps, and the
/// gaps are the hops between workers and the scheduler's own time (the first, the time from the
/// run's first task to the path's).
///
/// A step held by its [`Worker`](Held::Worker) is a task that was ready while its worker still
/// ran another; the static policy's plan, or a worker that took a less urgent task first, put it
/// there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TracePath {
    /// The steps, in the order they ran.
    pub steps: Vec<PathStep>,
    /// Nanoseconds from the first task's start to the last task's end.
    pub span_ns: u64,
}

/// One kind's share of a path: tasks and the nanoseconds they ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KindShare {
    /// The kind.
    pub kind: &'static str,
    /// Its tasks on the path.
    pub tasks: usize,
    /// Nanoseconds they ran, in all.
    pub run_ns: u64,
}

impl TracePath {
    /// The path through `trace`, where `last_parent[t]` is the parent of task `t` that finished
    /// last ([`NO_PARENT`] for none) and `kind(t)` names its kind; `None` for an empty trace.
    pub(crate) fn new(
        trace: &[TraceRecord],
        last_parent: &[u32],
        kind: impl Fn(usize) -> &'static str,
    ) -> Option<Self> {
        let last = (0..trace.len()).max_by_key(|&t| (trace[t].end, std::cmp::Reverse(t)))?;
        // The task each worker ran before each task: order every worker's tasks by start.
        let mut order: Vec<usize> = (0..trace.len()).collect();
        order.sort_by_key(|&t| (trace[t].worker, trace[t].start, t));
        let mut before = vec![usize::MAX; trace.len()];
        for pair in order.windows(2) {
            if trace[pair[0]].worker == trace[pair[1]].worker {
                before[pair[1]] = pair[0];
            }
        }
        let origin = trace.iter().map(|r| r.start).min().unwrap_or(0);
        let mut steps = Vec::new();
        // A run whose records break their dependences (clocks that disagree) could lead back to
        // a task already on the path; the walk stops there instead of going round.
        let mut seen = vec![false; trace.len()];
        let mut t = last;
        loop {
            seen[t] = true;
            let parent = last_parent.get(t).copied().unwrap_or(NO_PARENT);
            let parent = (parent != NO_PARENT).then_some(parent as usize);
            let prior = (before[t] != usize::MAX).then_some(before[t]);
            // What ended later held the task; a parent wins a tie (it is the dependence).
            let held = match (parent, prior) {
                (Some(p), Some(w)) if trace[w].end > trace[p].end => Some((Held::Worker, w)),
                (Some(p), _) => Some((Held::Parent, p)),
                (None, Some(w)) => Some((Held::Worker, w)),
                (None, None) => None,
            }
            .filter(|&(_, from)| !seen[from]);
            let r = &trace[t];
            let run_ns = r.end.saturating_sub(r.start);
            match held {
                Some((how, from)) => {
                    steps.push(PathStep {
                        task: t,
                        kind: kind(t),
                        held: how,
                        gap_ns: r.start.saturating_sub(trace[from].end),
                        run_ns,
                    });
                    t = from;
                }
                None => {
                    steps.push(PathStep {
                        task: t,
                        kind: kind(t),
                        held: Held::Nothing,
                        gap_ns: r.start.saturating_sub(origin),
                        run_ns,
                    });
                    break;
                }
            }
        }
        steps.reverse();
        // A task's end is recorded at its body's end, before it releases its children; clocks
        // that disagree (or a timer coarser than a hop) could still show a child starting
        // before it. Such an overlap counts once: the parent's run ends where the next starts.
        for i in 1..steps.len() {
            let (a, next) = (&trace[steps[i - 1].task], trace[steps[i].task].start);
            steps[i - 1].run_ns = a.end.min(next).saturating_sub(a.start);
        }
        Some(Self {
            steps,
            span_ns: trace[last].end.saturating_sub(origin),
        })
    }

    /// Nanoseconds the path's tasks ran.
    pub fn run_ns(&self) -> u64 {
        self.steps.iter().map(|s| s.run_ns).sum()
    }

    /// Nanoseconds between the path's tasks: each from the end of what held a task to its start.
    pub fn gap_ns(&self) -> u64 {
        self.steps.iter().map(|s| s.gap_ns).sum()
    }

    /// Steps held by their worker rather than by a parent.
    pub fn held_by_worker(&self) -> usize {
        self.steps.iter().filter(|s| s.held == Held::Worker).count()
    }

    /// The path's tasks by kind, in the order kinds first appear on it.
    pub fn by_kind(&self) -> Vec<KindShare> {
        let mut shares: Vec<KindShare> = Vec::new();
        let mut index = BTreeMap::new();
        for s in &self.steps {
            let i = *index.entry(s.kind).or_insert_with(|| {
                shares.push(KindShare {
                    kind: s.kind,
                    tasks: 0,
                    run_ns: 0,
                });
                shares.len() - 1
            });
            shares[i].tasks += 1;
            shares[i].run_ns += s.run_ns;
        }
        shares
    }
}

/// Milliseconds, from nanoseconds.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl fmt::Display for TracePath {
    /// One line: `path: 20.130 ms span = 18.9 ms running (potrf 64 × 148.2 µs, …) + 1.2 ms
    /// between tasks (median gap 3.1 µs); 3 tasks waited for their worker`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "path: {:.3} ms span = {:.3} ms running {} tasks (",
            ms(self.span_ns),
            ms(self.run_ns()),
            self.steps.len()
        )?;
        for (i, share) in self.by_kind().iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(
                f,
                "{sep}{} {} x {:.1} us",
                share.kind,
                share.tasks,
                share.run_ns as f64 / share.tasks as f64 / 1e3
            )?;
        }
        let mut gaps: Vec<u64> = self.steps.iter().skip(1).map(|s| s.gap_ns).collect();
        gaps.sort_unstable();
        let median = gaps.get(gaps.len() / 2).copied().unwrap_or(0);
        write!(
            f,
            ") + {:.3} ms between them (median gap {:.1} us); {} waited for their worker",
            ms(self.gap_ns()),
            median as f64 / 1e3,
            self.held_by_worker()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(start: u64, end: u64, worker: u32) -> TraceRecord {
        TraceRecord {
            start,
            end,
            worker,
            sm: 0,
        }
    }

    const KINDS: [&str; 3] = ["a", "b", "c"];

    /// A chain 0 → 1 → 2 on two workers, with an unrelated task 3 on worker 1 that delays 2: the
    /// path runs 0, 1, then 3 (which held 2's worker), then 2.
    #[test]
    fn the_path_follows_parents_and_busy_workers() {
        let trace = [
            record(0, 10, 0),
            record(13, 20, 0),
            record(40, 50, 1),
            record(5, 35, 1),
        ];
        let last_parent = [NO_PARENT, 0, 1, NO_PARENT];
        let path = TracePath::new(&trace, &last_parent, |t| KINDS[t % 3]).unwrap();
        let tasks: Vec<usize> = path.steps.iter().map(|s| s.task).collect();
        // Task 2's parent (1) ended at 20, its worker's previous task (3) at 35: the worker held
        // it, and task 3 had nothing before it.
        assert_eq!(tasks, [3, 2]);
        assert_eq!(path.steps[1].held, Held::Worker);
        assert_eq!(path.steps[1].gap_ns, 5);
        assert_eq!(path.span_ns, 50);
        assert_eq!(path.held_by_worker(), 1);
        assert_eq!(
            (path.steps[0].gap_ns, path.run_ns(), path.gap_ns()),
            (5, 40, 10)
        );
        assert_eq!(path.run_ns() + path.gap_ns(), path.span_ns);

        // Without task 3 in the way the path is the chain, held by parents.
        let trace = [record(0, 10, 0), record(13, 20, 0), record(24, 30, 1)];
        let path = TracePath::new(&trace, &last_parent[..3], |t| KINDS[t]).unwrap();
        let steps: Vec<(usize, Held, u64)> = path
            .steps
            .iter()
            .map(|s| (s.task, s.held, s.gap_ns))
            .collect();
        assert_eq!(
            steps,
            [
                (0, Held::Nothing, 0),
                (1, Held::Parent, 3),
                (2, Held::Parent, 4)
            ]
        );
        assert_eq!(path.run_ns() + path.gap_ns(), path.span_ns);
        let shares = path.by_kind();
        assert_eq!(shares.len(), 3);
        assert_eq!(
            (shares[1].kind, shares[1].tasks, shares[1].run_ns),
            ("b", 1, 7)
        );
        let line = path.to_string();
        assert!(line.starts_with("path: 0.000 ms span"), "{line}");
        assert!(line.contains("0 waited for their worker"), "{line}");
    }

    /// A child recorded as starting before its parent's end counts the overlap once: the span is
    /// still the path's run time plus its gaps.
    #[test]
    fn a_child_starting_before_its_parents_recorded_end_is_counted_once() {
        let trace = [record(0, 10, 0), record(8, 20, 1), record(19, 30, 0)];
        let path = TracePath::new(&trace, &[NO_PARENT, 0, 1], |_| "k").unwrap();
        let steps: Vec<(usize, u64, u64)> = (path.steps.iter())
            .map(|s| (s.task, s.gap_ns, s.run_ns))
            .collect();
        assert_eq!(steps, [(0, 0, 8), (1, 0, 11), (2, 0, 11)]);
        assert_eq!(path.run_ns() + path.gap_ns(), path.span_ns);
        assert_eq!(path.span_ns, 30);
    }

    #[test]
    fn a_parent_wins_a_tie_with_the_worker() {
        let trace = [record(0, 10, 0), record(0, 10, 1), record(12, 20, 1)];
        let path = TracePath::new(&trace, &[NO_PARENT, NO_PARENT, 0], |_| "k").unwrap();
        assert_eq!(path.steps.last().unwrap().held, Held::Parent);
        assert_eq!(path.steps[0].task, 0);
    }

    /// A parent recorded as starting after its child (on the child's worker) would lead the
    /// walk from the child to the parent and back by the worker; it stops instead.
    #[test]
    fn records_that_contradict_their_dependences_end_the_walk() {
        let trace = [record(0, 10, 0), record(20, 30, 0)];
        let path = TracePath::new(&trace, &[NO_PARENT, 0], |_| "k").unwrap();
        assert_eq!(path.steps.len(), 2);
        // Task 1 (the parent) ended last; its worker's previous task is 0, whose parent is 1.
        let swapped = [record(20, 30, 0), record(0, 10, 0)];
        let path = TracePath::new(&swapped, &[1, NO_PARENT], |_| "k").unwrap();
        assert!(path.steps.len() <= 2, "{path:?}");
        let path = TracePath::new(&swapped, &[NO_PARENT, 0], |_| "k").unwrap();
        assert!(path.steps.len() <= 2, "{path:?}");
    }

    #[test]
    fn an_empty_trace_has_no_path() {
        assert!(TracePath::new(&[], &[], |_| "k").is_none());
    }
}
