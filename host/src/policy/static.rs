//! The static list schedule: every task placed on a worker before the run (critical path first,
//! a task next to its parents where that costs no time, the critical path alone on SMs set apart
//! for it, by the task costs a region gives), each worker running its list in order.
//!
//! The host builds the whole plan: every task linked into its worker's queue in plan order,
//! flagged [`queue::COUNTED`] when it waits for parents on other workers; each counter counts
//! those parents only, and an edge between tasks of one worker is released without its counter
//! ([`SOLE_PARENT`]): the worker runs the child after the parent, past the block barrier that ends
//! the parent's body. Nothing is pushed at run time (`sched::policy::r#static`).

use taskweave_device::sched::deps::SOLE_PARENT;
use taskweave_device::sched::queue;

use super::{Row, Start, StartOf};
use crate::graph::{Costs, Dag, Reserve, list_schedule_wide};

/// The row of [`Policy::Static`].
pub(crate) const ROW: Row = Row {
    start: planned,
    needs_ranges: false,
    records_ran_by: false,
    plans: true,
};

/// The environment variable that makes the plan cost a wide task by its width (`1`,
/// [`list_schedule_wide`]); by default every task is costed as one block. Read once per process.
///
/// Off by default, as measured on the H200 (`bench/results/gangs-barrier-h200/`): with 32 gangs
/// the two plans run as fast (three interleaved rounds), and with 132 gangs of 4 the widths' plan
/// is 1.3x slower. It lists four gangs on each of 33 posters, and only a gang's poster can post
/// its next one, where the unit plan gives every worker one gang and any idle worker posts a
/// parked one: at most 30 gangs ran at once against 42 (the runs' traces).
pub(crate) const PLAN_WIDTHS_VAR: &str = "TASKWEAVE_PLAN_WIDTHS";

/// The tasks' widths for the plan: [`Inspection::task_widths`](crate::inspect::Inspection::task_widths)
/// when [`PLAN_WIDTHS_VAR`] is `1`, else none.
pub(crate) fn widths(ins: &crate::inspect::Inspection) -> Vec<u32> {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var(PLAN_WIDTHS_VAR).as_deref() == Ok("1")) {
        ins.task_widths()
    } else {
        Vec::new()
    }
}

/// The plan ([`list_schedule_wide`], with the critical path's reserve, the tasks' costs and the
/// wide tasks' widths) as queues, counters and CSR entries.
fn planned(of: &StartOf<'_>) -> Start {
    let costs = of.costs.and_then(|c| c.per_task(of.ins));
    let widths = widths(of.ins);
    planned_dag(&of.ins.dag, of.workers, of.reserve, costs.as_ref(), &widths)
}

/// The plan of `dag` for `workers` workers, `reserve`, the tasks' `costs` and `widths` (empty:
/// one block each), as queues, counters and CSR entries.
pub(crate) fn planned_dag(
    dag: &Dag,
    workers: u32,
    reserve: &Reserve,
    costs: Option<&Costs>,
    widths: &[u32],
) -> Start {
    let plan = list_schedule_wide(dag, workers, reserve, costs, widths);
    let n = dag.task_count();
    let mut pending = vec![0u32; n];
    let mut children = Vec::with_capacity(dag.children.len());
    for parent in 0..n as u32 {
        let on = plan.worker[parent as usize];
        for &c in dag.children_of(parent) {
            if plan.worker[c as usize] == on {
                children.push(c | SOLE_PARENT);
            } else {
                pending[c as usize] += 1;
                children.push(c);
            }
        }
    }
    let lists = plan
        .lists
        .into_iter()
        .map(|list| {
            list.into_iter()
                .map(|t| {
                    if pending[t as usize] > 0 {
                        t | queue::COUNTED
                    } else {
                        t
                    }
                })
                .collect()
        })
        .collect();
    Start {
        lists,
        pending,
        children,
    }
}
