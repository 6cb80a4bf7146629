//! [`list_schedule`]: the static policy's schedule, every task placed on a worker before the run.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Dag;

/// A static schedule: which worker runs each task, and each worker's tasks in the order it runs
/// them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The worker of every task.
    pub worker: Vec<u32>,
    /// Worker `w`'s tasks, in the order it runs them.
    pub lists: Vec<Vec<u32>>,
}

/// Workers set apart for the critical path: the tasks on it (those whose top level plus rank is
/// the DAG's critical path, in the schedule's model where every task costs the same) go to the
/// `chain` workers only, and no task goes to the `idle` ones. Every other task goes to the other
/// workers. With SM-aware workers, a chain worker and the idle workers of its SM run the critical
/// path alone on that SM, where it would otherwise share the SM with whatever else runs there.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reserve {
    /// The workers that run the critical path.
    pub chain: Vec<u32>,
    /// The workers that run nothing.
    pub idle: Vec<u32>,
}

/// A task's cost in the schedule's model, in abstract units.
const TASK: u64 = 2;
/// What a dependence between tasks on different workers adds in the model: half a task, roughly a
/// hop's cost against a small tile's on the H100.
const HOP: u64 = 1;
/// How many of a task's parents' workers are tried, those of the parents that finish last first.
const PARENT_CANDIDATES: usize = 4;

/// A list schedule of `dag` on `workers` workers, after HEFT (Topcuoglu et al.) with every task
/// costing the same: tasks are taken by decreasing rank (bottom level), ties by spawn order, and
/// each goes to the worker where the model starts it earliest, among the workers of its parents
/// that finish last (ties by spawn order) and the worker that is free first; a parent's worker
/// wins ties, so a chain stays on one worker. A dependence between workers costs half a task in
/// the model.
///
/// Every worker's list is a subsequence of one topological order (a parent's rank exceeds its
/// child's), so workers that run their lists in order, each waiting for its next task's parents,
/// never deadlock: the first unfinished task of that order has all its parents finished and heads
/// its worker's remaining list. `O(tasks log workers + edges log parents)`: the order is a
/// counting sort by rank, and the start of a task on a worker is known in `O(1)` from its two
/// latest parents.
///
/// # Panics
/// If `workers` is zero.
pub fn list_schedule(dag: &Dag, workers: u32) -> Schedule {
    list_schedule_reserving(dag, workers, &Reserve::default())
}

/// [`list_schedule`] with workers set apart for the critical path ([`Reserve`]): a task on the
/// critical path goes to the chain worker where the model starts it earliest; any other task is
/// placed as by [`list_schedule`] among the workers neither chain nor idle.
///
/// # Panics
/// If `workers` is zero, or `reserve` names a worker past `workers`, has chain workers but
/// leaves no other worker, or idle workers but no chain worker.
pub fn list_schedule_reserving(dag: &Dag, workers: u32, reserve: &Reserve) -> Schedule {
    list_schedule_costed(dag, workers, reserve, None)
}

/// What the model charges when the tasks do not cost the same: each task's cost and a dependence
/// between workers, in one unit (nanoseconds, from [`TaskCosts`](crate::TaskCosts)). A cost of
/// zero counts as one, so that a parent always ranks above its children.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Costs {
    /// The cost of every task.
    pub task: Vec<u64>,
    /// What a dependence between tasks on different workers adds.
    pub hop: u64,
}

/// [`list_schedule_reserving`] in a model where task `t` costs `costs.task[t]` and a dependence
/// between workers `costs.hop` (`None`: every task the same, a hop half of one). The ranks are
/// the bottom levels in that model, and the critical path is its longest path: HEFT with the
/// tasks' costs. With costs the order is a comparison sort, `O(tasks log tasks)`.
///
/// # Panics
/// As [`list_schedule_reserving`]; also if `costs` does not give one cost per task.
pub fn list_schedule_costed(
    dag: &Dag,
    workers: u32,
    reserve: &Reserve,
    costs: Option<&Costs>,
) -> Schedule {
    list_schedule_wide(dag, workers, reserve, costs, &[])
}

/// [`list_schedule_costed`] where task `t` runs on `widths[t]` workers at once (a wide task,
/// `#[task(blocks = K)]`; `widths` empty: every task on one). The task is placed as any other, on
/// the worker that will post it; the model then also takes the `K − 1` other general workers that
/// are free first, starts the task when the last of them is free, and keeps all `K` busy until it
/// ends. At run time those are the workers that join the gang: the first to look for work once it
/// is posted. Without this a plan counts a gang of 16 as one busy worker, and places tasks on the
/// 15 others for the time they spend in the gang.
///
/// The static policy plans with the widths only when `TASKWEAVE_PLAN_WIDTHS=1`: on the H200 this
/// plan was no faster with 32 gangs and 1.3x slower with 132, since it leaves each gang's next
/// one to its poster alone (`bench/results/gangs-barrier-h200/`).
///
/// # Panics
/// As [`list_schedule_costed`]; also if `widths` is neither empty nor one width per task.
pub fn list_schedule_wide(
    dag: &Dag,
    workers: u32,
    reserve: &Reserve,
    costs: Option<&Costs>,
    widths: &[u32],
) -> Schedule {
    modelled(dag, workers, reserve, costs, widths).0
}

/// [`list_schedule_wide`], and every task's finish in the model.
fn modelled(
    dag: &Dag,
    workers: u32,
    reserve: &Reserve,
    costs: Option<&Costs>,
    widths: &[u32],
) -> (Schedule, Vec<u64>) {
    assert!(workers > 0, "a schedule needs a worker");
    let mut reserved = vec![false; workers as usize];
    for &w in reserve.chain.iter().chain(&reserve.idle) {
        assert!(w < workers, "reserved worker {w} of {workers}");
        reserved[w as usize] = true;
    }
    assert!(
        reserve.idle.is_empty() || !reserve.chain.is_empty(),
        "idle workers without a chain worker"
    );
    assert!(
        reserve.chain.is_empty() || reserved.contains(&false),
        "the reserve leaves no worker for the tasks off the critical path"
    );
    let n = dag.task_count();
    let parents = dag.parents();
    if let Some(c) = costs {
        assert_eq!(c.task.len(), n, "one cost per task");
    }
    assert!(
        widths.is_empty() || widths.len() == n,
        "one width per task, or none"
    );
    let cost = |t: u32| costs.map_or(TASK, |c| c.task[t as usize].max(1));
    let hop = costs.map_or(HOP, |c| c.hop);
    let weighted = costs.map(|_| dag.bottom_levels_by(cost));
    // On the critical path: the longest path through the task is the longest of all.
    let critical: Vec<bool> = match (&weighted, reserve.chain.is_empty()) {
        (_, true) => Vec::new(),
        (None, false) => {
            let top = dag.critical_path();
            let levels = dag.levels();
            (0..n).map(|t| levels[t] + dag.rank[t] == top).collect()
        }
        (Some(bottom), false) => {
            let top = dag.top_levels_by(cost);
            let longest = bottom.iter().copied().max().unwrap_or(0);
            (0..n).map(|t| top[t] + bottom[t] == longest).collect()
        }
    };
    let order = match &weighted {
        None => by_rank(dag),
        Some(bottom) => {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&t| (Reverse(bottom[t as usize]), t));
            order
        }
    };
    let mut worker = vec![0u32; n];
    let mut finish = vec![0u64; n];
    let mut free = vec![0u64; workers as usize];
    let mut lists = vec![Vec::new(); workers as usize];
    // Every general worker's free time, smallest first; an entry is stale once its worker took a
    // task.
    let mut idle: BinaryHeap<Reverse<(u64, u32)>> = (0..workers)
        .filter(|&w| !reserved[w as usize])
        .map(|w| Reverse((0, w)))
        .collect();
    let mut candidates = Vec::with_capacity(PARENT_CANDIDATES + 1);
    let mut members: Vec<u32> = Vec::new();
    // The parents' finish times and workers, latest first.
    let mut latest: Vec<(u64, u32)> = Vec::new();

    for t in order {
        latest.clear();
        let ps = parents.parents_of(t);
        latest.extend(ps.iter().map(|&p| (finish[p as usize], worker[p as usize])));
        // Stable: parents that finish together stay in spawn order.
        latest.sort_by_key(|&(at, _)| Reverse(at));
        // The earliest `t` can start on `w`: after each parent, plus a hop from another worker.
        // The latest parent finishes at `last` on `on`; parents on other workers finish by
        // `other`, so `w != on` waits for `last + HOP`, and `on` for `other + HOP` at worst.
        let (last, on) = latest.first().copied().unwrap_or((0, u32::MAX));
        let other = latest.iter().find(|&&(_, w)| w != on).map(|&(at, _)| at);
        let ready_on = |w: u32| match (latest.is_empty(), w == on, other) {
            (true, _, _) => 0,
            (false, true, Some(other)) => last.max(other + hop),
            (false, true, None) => last,
            (false, false, _) => last + hop,
        };
        candidates.clear();
        let on_chain = critical.get(t as usize).copied().unwrap_or(false);
        if on_chain {
            candidates.extend_from_slice(&reserve.chain);
        } else {
            for &(_, w) in &latest {
                if !reserved[w as usize] && !candidates.contains(&w) {
                    candidates.push(w);
                    if candidates.len() == PARENT_CANDIDATES {
                        break;
                    }
                }
            }
            while let Some(&Reverse((at, w))) = idle.peek() {
                if free[w as usize] == at {
                    break;
                }
                idle.pop();
            }
            let Reverse((_, first_free)) =
                *idle.peek().expect("one entry per general worker is live");
            candidates.push(first_free);
        }
        let (w, mut start) = candidates
            .iter()
            .map(|&w| (w, free[w as usize].max(ready_on(w))))
            .min_by_key(|&(_, start)| start)
            .expect("at least the first free worker");
        // A wide task's other members: the general workers free first, other than `w`.
        members.clear();
        let width = widths.get(t as usize).copied().unwrap_or(1);
        while members.len() + 1 < width as usize {
            let Some(Reverse((at, m))) = idle.pop() else {
                break;
            };
            if free[m as usize] == at && m != w && !members.contains(&m) {
                start = start.max(at);
                members.push(m);
            }
        }
        let end = start + cost(t);
        worker[t as usize] = w;
        finish[t as usize] = end;
        free[w as usize] = end;
        if !on_chain {
            idle.push(Reverse((end, w)));
        }
        for &m in &members {
            free[m as usize] = end;
            idle.push(Reverse((end, m)));
        }
        lists[w as usize].push(t);
    }
    (Schedule { worker, lists }, finish)
}

/// The tasks by decreasing rank, ties in spawn order: a counting sort, as ranks are at most the
/// task count.
fn by_rank(dag: &Dag) -> Vec<u32> {
    let top = dag.critical_path() as usize;
    // `start[k]`: where the tasks of rank `top - k` begin.
    let mut start = vec![0usize; top + 1];
    for &r in &dag.rank {
        start[top - r as usize] += 1;
    }
    let mut sum = 0;
    for s in &mut start {
        let count = *s;
        *s = sum;
        sum += count;
    }
    let mut order = vec![0u32; dag.task_count()];
    for (t, &r) in dag.rank.iter().enumerate() {
        let slot = &mut start[top - r as usize];
        order[*slot] = t as u32;
        *slot += 1;
    }
    order
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::graph::{Access, DepTracker};

    /// A T×T wavefront: tile (i, j) reads its upper and left neighbours and writes itself.
    fn wavefront(t: usize) -> Dag {
        let mut tracker = DepTracker::new(&[t * t]);
        for i in 0..t {
            for j in 0..t {
                let mut accesses = vec![(0, i * t + j..i * t + j + 1, Access::Write)];
                if i > 0 {
                    accesses.push((0, (i - 1) * t + j..(i - 1) * t + j + 1, Access::Read));
                }
                if j > 0 {
                    accesses.push((0, i * t + j - 1..i * t + j, Access::Read));
                }
                tracker.add_task(&accesses).unwrap();
            }
        }
        tracker.finish().unwrap()
    }

    fn chain(n: usize) -> Dag {
        let mut tracker = DepTracker::new(&[1]);
        for _ in 0..n {
            tracker.add_task(&[(0, 0..1, Access::ReadWrite)]).unwrap();
        }
        tracker.finish().unwrap()
    }

    /// Each list runs parents before children, and all lists together hold every task once.
    fn check(dag: &Dag, plan: &Schedule) {
        let n = dag.task_count();
        let mut position = vec![None; n];
        for (w, list) in plan.lists.iter().enumerate() {
            for (i, &t) in list.iter().enumerate() {
                assert!(position[t as usize].is_none(), "task {t} placed twice");
                assert_eq!(plan.worker[t as usize], w as u32);
                position[t as usize] = Some(i);
            }
        }
        assert!(
            position.iter().all(Option::is_some),
            "a task was not placed"
        );
        for p in 0..n as u32 {
            for &c in dag.children_of(p) {
                if plan.worker[p as usize] == plan.worker[c as usize] {
                    assert!(position[p as usize] < position[c as usize], "{p} after {c}");
                }
            }
        }
    }

    #[test]
    fn a_chain_stays_on_one_worker() {
        let dag = chain(50);
        let plan = list_schedule(&dag, 8);
        check(&dag, &plan);
        assert!(plan.worker.iter().all(|&w| w == plan.worker[0]));
    }

    #[test]
    fn independent_tasks_are_dealt_evenly() {
        let mut tracker = DepTracker::new(&[100]);
        for i in 0..100 {
            tracker.add_task(&[(0, i..i + 1, Access::Write)]).unwrap();
        }
        let dag = tracker.finish().unwrap();
        let plan = list_schedule(&dag, 8);
        check(&dag, &plan);
        let sizes: Vec<usize> = plan.lists.iter().map(Vec::len).collect();
        assert!(sizes.iter().all(|&s| s == 12 || s == 13), "{sizes:?}");
    }

    #[test]
    fn a_wavefront_narrower_than_the_workers_runs_a_row_per_worker() {
        let t = 16;
        let dag = wavefront(t);
        let plan = list_schedule(&dag, 20);
        check(&dag, &plan);
        for i in 0..t {
            let row = &plan.worker[i * t..(i + 1) * t];
            assert!(row.iter().all(|&w| w == row[0]), "row {i}: {row:?}");
        }
        let rows: std::collections::HashSet<u32> = (0..t).map(|i| plan.worker[i * t]).collect();
        assert_eq!(rows.len(), t, "two rows share a worker");
    }

    /// A wide task keeps its members busy in the model: the narrow tasks beside it wait for it to
    /// end, where without widths they run on the workers the gang takes.
    #[test]
    fn a_wide_task_occupies_its_width() {
        // Task 0 is wide; tasks 1..=3 are narrow and independent of it.
        let mut tracker = DepTracker::new(&[4]);
        for i in 0..4 {
            tracker.add_task(&[(0, i..i + 1, Access::Write)]).unwrap();
        }
        let dag = tracker.finish().unwrap();
        let costs = Costs {
            task: vec![100, 1, 1, 1],
            hop: 1,
        };
        let reserve = Reserve::default();
        let narrow = modelled(&dag, 4, &reserve, Some(&costs), &[]).1;
        assert_eq!(narrow, [100, 1, 1, 1]);
        let (plan, wide) = modelled(&dag, 4, &reserve, Some(&costs), &[4, 1, 1, 1]);
        check(&dag, &plan);
        assert_eq!(wide, [100, 101, 101, 101]);
        // Two gangs of 2 on 4 workers run side by side; a third waits for one of them.
        let mut tracker = DepTracker::new(&[3]);
        for i in 0..3 {
            tracker.add_task(&[(0, i..i + 1, Access::Write)]).unwrap();
        }
        let dag = tracker.finish().unwrap();
        let costs = Costs {
            task: vec![10, 10, 10],
            hop: 1,
        };
        let (_, gangs) = modelled(&dag, 4, &reserve, Some(&costs), &[2, 2, 2]);
        assert_eq!(gangs, [10, 10, 20]);
        // A width past the workers takes them all, and the plan still places every task.
        let (plan, all) = modelled(&dag, 2, &reserve, Some(&costs), &[4, 1, 1]);
        check(&dag, &plan);
        assert_eq!(all, [10, 20, 20]);
    }

    #[test]
    fn a_wavefront_wider_than_the_workers_uses_them_all() {
        let dag = wavefront(24);
        let plan = list_schedule(&dag, 6);
        check(&dag, &plan);
        assert!(plan.lists.iter().all(|l| !l.is_empty()));
    }

    /// The schedule as first written: a comparison sort of the order, and the start on every
    /// candidate worker from all the parents.
    pub(in crate::graph) fn reference(dag: &Dag, workers: u32) -> Schedule {
        let n = dag.task_count();
        let parents = dag.parents();
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_by_key(|&t| (Reverse(dag.rank[t as usize]), t));
        let mut worker = vec![0u32; n];
        let mut finish = vec![0u64; n];
        let mut free = vec![0u64; workers as usize];
        let mut lists = vec![Vec::new(); workers as usize];
        for &t in &order {
            let ps = parents.parents_of(t);
            let ready_on = |w: u32| {
                ps.iter()
                    .map(|&p| finish[p as usize] + if worker[p as usize] == w { 0 } else { HOP })
                    .max()
                    .unwrap_or(0)
            };
            let mut latest = ps.to_vec();
            latest.sort_by_key(|&p| Reverse(finish[p as usize]));
            let mut candidates = Vec::new();
            for &p in &latest {
                let w = worker[p as usize];
                if !candidates.contains(&w) && candidates.len() < PARENT_CANDIDATES {
                    candidates.push(w);
                }
            }
            let first_free = (0..workers).min_by_key(|&w| (free[w as usize], w)).unwrap();
            candidates.push(first_free);
            let (w, start) = candidates
                .iter()
                .map(|&w| (w, free[w as usize].max(ready_on(w))))
                .min_by_key(|&(_, start)| start)
                .unwrap();
            worker[t as usize] = w;
            finish[t as usize] = start + TASK;
            free[w as usize] = start + TASK;
            lists[w as usize].push(t);
        }
        Schedule { worker, lists }
    }

    #[test]
    fn the_plan_is_the_reference_one() {
        for (dag, workers) in [(wavefront(12), 5), (wavefront(7), 64), (chain(9), 3)] {
            assert_eq!(list_schedule(&dag, workers), reference(&dag, workers));
        }
        // A tiled LU's DAG: several parents per task, many ties.
        let t = 7;
        let tile = |i: usize, j: usize| i * t + j..i * t + j + 1;
        let mut tracker = DepTracker::new(&[t * t]);
        for k in 0..t {
            tracker
                .add_task(&[(0, tile(k, k), Access::ReadWrite)])
                .unwrap();
            for j in k + 1..t {
                tracker
                    .add_task(&[
                        (0, tile(k, k), Access::Read),
                        (0, tile(k, j), Access::ReadWrite),
                    ])
                    .unwrap();
                tracker
                    .add_task(&[
                        (0, tile(k, k), Access::Read),
                        (0, tile(j, k), Access::ReadWrite),
                    ])
                    .unwrap();
            }
            for i in k + 1..t {
                for j in k + 1..t {
                    tracker
                        .add_task(&[
                            (0, tile(i, k), Access::Read),
                            (0, tile(k, j), Access::Read),
                            (0, tile(i, j), Access::ReadWrite),
                        ])
                        .unwrap();
                }
            }
        }
        let dag = tracker.finish().unwrap();
        for workers in [1, 4, 16] {
            assert_eq!(list_schedule(&dag, workers), reference(&dag, workers));
        }
    }

    /// A tiled Cholesky's DAG on `t × t` tiles (lower triangle), and each task's name.
    fn cholesky(t: usize) -> (Dag, Vec<String>) {
        cholesky_fused(t, false)
    }

    /// [`cholesky`], where with `fused` the last update of each diagonal tile and its factor are
    /// one task (named `potrf k`), as the examples' regions spawn them.
    fn cholesky_fused(t: usize, fused: bool) -> (Dag, Vec<String>) {
        let tile = |i: usize, j: usize| i * t + j..i * t + j + 1;
        let mut tracker = DepTracker::new(&[t * t]);
        let mut names = Vec::new();
        for k in 0..t {
            if !fused || k == 0 {
                tracker
                    .add_task(&[(0, tile(k, k), Access::ReadWrite)])
                    .unwrap();
                names.push(format!("potrf {k}"));
            }
            for i in k + 1..t {
                tracker
                    .add_task(&[
                        (0, tile(k, k), Access::Read),
                        (0, tile(i, k), Access::ReadWrite),
                    ])
                    .unwrap();
                names.push(format!("trsm {i} {k}"));
            }
            for i in k + 1..t {
                for j in k + 1..=i {
                    let mut accesses = vec![(0, tile(i, k), Access::Read)];
                    if j != i {
                        accesses.push((0, tile(j, k), Access::Read));
                    }
                    accesses.push((0, tile(i, j), Access::ReadWrite));
                    tracker.add_task(&accesses).unwrap();
                    names.push(if fused && (i, j) == (k + 1, k + 1) {
                        format!("potrf {i}")
                    } else {
                        format!("update {i} {j} {k}")
                    });
                }
            }
        }
        (tracker.finish().unwrap(), names)
    }

    #[test]
    fn a_reserve_runs_the_critical_path_alone() {
        let t = 8;
        let (dag, names) = cholesky(t);
        let reserve = Reserve {
            chain: vec![0],
            idle: vec![1],
        };
        let plan = list_schedule_reserving(&dag, 12, &reserve);
        check(&dag, &plan);
        // The chain: each diagonal tile's factor, the solve below it and the update of the next
        // diagonal tile from that solve.
        let mut want: Vec<String> = (0..t).map(|k| format!("potrf {k}")).collect();
        for k in 0..t - 1 {
            want.push(format!("trsm {} {k}", k + 1));
            want.push(format!("update {0} {0} {k}", k + 1));
        }
        want.sort();
        let mut chain: Vec<String> = plan.lists[0]
            .iter()
            .map(|&task| names[task as usize].clone())
            .collect();
        chain.sort();
        assert_eq!(chain, want);
        assert!(plan.lists[1].is_empty());
        assert!(plan.lists[2..].iter().all(|l| !l.is_empty()));
        // Without the reserve the list schedule keeps the chain on one worker too (a parent's
        // worker wins ties), but worker 1, which would share its SM, runs other tasks.
        let free = list_schedule(&dag, 12);
        check(&dag, &free);
        assert!(!free.lists[1].is_empty());
    }

    #[test]
    fn parallel_branches_of_the_critical_path_share_the_chain_workers() {
        // Two chains of equal length: both critical, one chain worker each when there are two.
        let mut tracker = DepTracker::new(&[2]);
        for _ in 0..10 {
            tracker.add_task(&[(0, 0..1, Access::ReadWrite)]).unwrap();
            tracker.add_task(&[(0, 1..2, Access::ReadWrite)]).unwrap();
        }
        let dag = tracker.finish().unwrap();
        let reserve = Reserve {
            chain: vec![0, 2],
            idle: vec![1, 3],
        };
        let plan = list_schedule_reserving(&dag, 5, &reserve);
        check(&dag, &plan);
        assert_eq!((plan.lists[0].len(), plan.lists[2].len()), (10, 10));
        assert!(
            plan.lists[4].is_empty(),
            "every task is on the critical path"
        );
    }

    /// The model's costs of `names`' tasks: factors 40, solves 17, updates 11 (µs on the H200,
    /// roughly), a hop 1.
    fn factor_costs(names: &[String]) -> Costs {
        let task = names
            .iter()
            .map(|n| match n.split(' ').next() {
                Some("potrf") => 40,
                Some("trsm") => 17,
                _ => 11,
            })
            .collect();
        Costs { task, hop: 1 }
    }

    /// The names of the tasks on worker `w`'s list, sorted.
    fn names_on(plan: &Schedule, names: &[String], w: usize) -> Vec<String> {
        let mut on: Vec<String> = plan.lists[w]
            .iter()
            .map(|&t| names[t as usize].clone())
            .collect();
        on.sort();
        on
    }

    #[test]
    fn equal_costs_give_the_unit_plan() {
        let (dag, _) = cholesky(9);
        for dag in [dag, wavefront(10), chain(7)] {
            let unit = Costs {
                task: vec![TASK; dag.task_count()],
                hop: HOP,
            };
            for (workers, reserve) in [
                (6, Reserve::default()),
                (
                    6,
                    Reserve {
                        chain: vec![0],
                        idle: vec![1],
                    },
                ),
            ] {
                let costed = list_schedule_costed(&dag, workers, &reserve, Some(&unit));
                check(&dag, &costed);
                assert_eq!(costed, list_schedule_reserving(&dag, workers, &reserve));
            }
        }
    }

    #[test]
    fn costs_name_the_panel_as_the_critical_path_where_task_counts_tie() {
        // Fused, the panel (factor, the solve below it, the next factor) is as long in tasks as
        // paths through the trailing solves and updates: counted in tasks, those are critical too.
        let t = 6;
        let (dag, names) = cholesky_fused(t, true);
        let reserve = Reserve {
            chain: vec![0],
            idle: vec![1],
        };
        let mut want: Vec<String> = (0..t).map(|k| format!("potrf {k}")).collect();
        want.extend((0..t - 1).map(|k| format!("trsm {} {k}", k + 1)));
        want.sort();
        let unit = list_schedule_reserving(&dag, 8, &reserve);
        check(&dag, &unit);
        let on_chain = names_on(&unit, &names, 0);
        assert!(on_chain.len() > want.len(), "{on_chain:?}");
        let costs = factor_costs(&names);
        let costed = list_schedule_costed(&dag, 8, &reserve, Some(&costs));
        check(&dag, &costed);
        assert_eq!(names_on(&costed, &names, 0), want);
        assert!(costed.lists[1].is_empty());
    }

    #[test]
    fn a_heavy_task_goes_first_among_equals() {
        // A source, four light tasks and a heavy one after it, and a sink after them all: in
        // tasks every middle task ranks the same and the heavy one, spawned last, runs last on
        // its worker; with costs it runs first and the sink starts earlier.
        let mut tracker = DepTracker::new(&[7]);
        tracker.add_task(&[(0, 0..1, Access::Write)]).unwrap();
        for i in 1..6 {
            tracker
                .add_task(&[(0, 0..1, Access::Read), (0, i..i + 1, Access::Write)])
                .unwrap();
        }
        tracker
            .add_task(&[(0, 1..6, Access::Read), (0, 6..7, Access::Write)])
            .unwrap();
        let dag = tracker.finish().unwrap();
        let costs = Costs {
            task: vec![1, 1, 1, 1, 1, 10, 1],
            hop: 0,
        };
        let position = |plan: &Schedule, t: u32| {
            let list = &plan.lists[plan.worker[t as usize] as usize];
            list.iter().position(|&x| x == t).unwrap()
        };
        let unit = list_schedule(&dag, 2);
        check(&dag, &unit);
        let costed = list_schedule_costed(&dag, 2, &Reserve::default(), Some(&costs));
        check(&dag, &costed);
        assert!(position(&unit, 5) > 1, "{:?}", unit.lists);
        assert_eq!(position(&costed, 5), 1, "{:?}", costed.lists);
        // The heavy task alone on its worker after the source; the light ones on the other.
        let heavy = costed.worker[5] as usize;
        assert_eq!(costed.lists[heavy][..2], [0, 5]);
        assert!((1..5).all(|t| costed.worker[t] as usize != heavy));
    }

    #[test]
    #[should_panic(expected = "one cost per task")]
    fn costs_for_the_wrong_task_count_are_refused() {
        let costs = Costs {
            task: vec![1; 2],
            hop: 0,
        };
        list_schedule_costed(&chain(3), 2, &Reserve::default(), Some(&costs));
    }

    #[test]
    #[should_panic(expected = "leaves no worker")]
    fn a_reserve_of_every_worker_is_refused() {
        let reserve = Reserve {
            chain: vec![0],
            idle: vec![1],
        };
        list_schedule_reserving(&chain(3), 2, &reserve);
    }

    #[test]
    fn one_worker_runs_everything_in_rank_order() {
        let dag = wavefront(5);
        let plan = list_schedule(&dag, 1);
        check(&dag, &plan);
        assert_eq!(plan.lists[0].len(), 25);
    }
}
