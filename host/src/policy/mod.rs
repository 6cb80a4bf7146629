//! The scheduling policies: where the children a finished task frees go. One module per policy,
//! one row per policy in the table ([`Policy::row`]), as the backends have theirs; the device's
//! half of each policy is `taskweave_device::sched::policy`, under the same names.
//!
//! 1. The policies are the rows of the device ABI's table (`taskweave_device::with_policies!`):
//!    its docs, name and ABI number make [`Policy`], and each row's module here holds its [`Row`].
//! 2. A region picks one with [`Region::policy`](crate::Region::policy), or leaves the choice to
//!    the runtime ([`Options::run_policy`](crate::Options::run_policy)).
//! 3. Its [`Row`] says what the host does for it: how the run starts (the tasks each worker's
//!    queue holds, and the counters and CSR entries the workers release them by: [`Row::start`]),
//!    and what else it needs (recorded ranges, a record of who ran each task, a plan that takes
//!    task costs and critical-path SMs).
//! 4. Adding a policy: a row in the ABI's table, its module here and its module in the device's
//!    `sched::policy`; the tests below check every row.

use taskweave_device::sched::deps::SOLE_PARENT;

use crate::costs::TaskCosts;
use crate::graph::{Dag, Reserve};
use crate::inspect::Inspection;

/// What a run starts with: each worker's queue, in order (task ids, flagged
/// [`queue::COUNTED`](taskweave_device::sched::queue::COUNTED) when the task waits on its
/// counter), each task's counter, and the CSR's child entries (flagged [`SOLE_PARENT`] when the
/// edge is released without the counter).
pub(crate) struct Start {
    pub lists: Vec<Vec<u32>>,
    pub pending: Vec<u32>,
    pub children: Vec<u32>,
}

/// What [`Row::start`] is given.
pub(crate) struct StartOf<'a> {
    pub ins: &'a Inspection,
    pub workers: u32,
    /// SMs set apart for the critical path ([`Region::critical_path_sms`](crate::Region::critical_path_sms)).
    pub reserve: &'a Reserve,
    pub costs: Option<&'a TaskCosts>,
}

/// One policy's row: what the host does for it.
pub(crate) struct Row {
    /// The queues, counters and CSR entries a run starts with.
    pub start: fn(&StartOf<'_>) -> Start,
    /// Whether inspection records each task's ranges (for the affine parents).
    pub needs_ranges: bool,
    /// Whether the tables keep a record of the worker that ran each task.
    pub records_ran_by: bool,
    /// Whether the policy places every task before the run: the only kind that takes task costs
    /// and SMs set apart for the critical path.
    pub plans: bool,
}

/// The policies of the ABI's table, their modules here and what the host knows of each.
macro_rules! policies {
    ($($(#[doc = $doc:literal])* $name:ident = $abi:literal, $lower:literal, $module:ident, $constant:ident;)*) => {
        $(mod $module;)*

        /// Where freed tasks go: the scheduling policies.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Policy {
            $(
                $(#[doc = $doc])*
                $name,
            )*
        }

        impl Policy {
            /// Every policy, in ABI order.
            pub const ALL: [Policy; taskweave_device::abi::policy::COUNT as usize] =
                [$(Self::$name),*];

            /// The policy's row: one arm per policy, from the table.
            pub(crate) fn row(self) -> &'static Row {
                match self {
                    $(Self::$name => &$module::ROW,)*
                }
            }

            /// The policy's number in the device ABI.
            pub fn abi(self) -> u32 {
                match self {
                    $(Self::$name => $abi,)*
                }
            }

            /// The policy's lowercase name.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$name => $lower,)*
                }
            }
        }
    };
}

taskweave_device::with_policies!(policies);

pub(crate) use r#static::{planned_dag, widths as plan_widths};

impl Default for Policy {
    /// Juggler's global round robin.
    fn default() -> Self {
        Self::Grr
    }
}

impl std::fmt::Display for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown policy `{s}`: expected one of {}",
                    Self::ALL.map(Self::name).join(", ")
                )
            })
    }
}

/// How a dynamic policy starts: the ready tasks, in `order`, dealt to the workers in turn; every
/// counter counts all of its task's parents, except that a sole parent's child is released
/// without its counter and acquired by its consumer through it (`deps::acquire`): zero from the
/// start, like a root's.
pub(crate) fn dealt(dag: &Dag, workers: u32, order: &[u32]) -> Start {
    let w = workers as usize;
    let lists = (0..w)
        .map(|k| order.iter().skip(k).step_by(w).copied().collect())
        .collect();
    let in_degree = &dag.in_degree;
    let pending = in_degree
        .iter()
        .map(|&d| if d == 1 { 0 } else { d })
        .collect();
    let children = dag
        .children
        .iter()
        .map(|&c| {
            if in_degree[c as usize] == 1 {
                c | SOLE_PARENT
            } else {
                c
            }
        })
        .collect();
    Start {
        lists,
        pending,
        children,
    }
}

/// [`dealt`] in the DAG's own order of ready tasks: the start of every dynamic policy that does
/// not order them.
pub(crate) fn in_spawn_order(of: &StartOf<'_>) -> Start {
    let dag = &of.ins.dag;
    dealt(dag, of.workers, &dag.ready)
}

#[cfg(test)]
mod tests {
    use taskweave_device::sched::queue::COUNTED;

    use std::panic::Location;

    use super::*;
    use crate::inspect::{Access, ArrayInfo, Recorder};

    /// A diamond beside a chain: roots 0 and 4; 1 and 2 after 0, 3 after both; 5 after 4.
    fn inspection() -> Inspection {
        let array = |name| ArrayInfo {
            name,
            len: 8,
            writable: true,
            elem_bytes: 4,
            output: false,
        };
        let mut recorder = Recorder::new("policy", &["t"], vec![array("x"), array("y")]);
        let access = |slot: u32, i: usize, write: bool| Access {
            slot,
            range: i..i + 1,
            write,
            param: "x",
        };
        let tasks: [&[Access]; 6] = [
            &[access(0, 0, true)],
            &[access(0, 0, false), access(0, 1, true)],
            &[access(0, 0, false), access(0, 2, true)],
            &[access(0, 1, false), access(0, 2, false), access(0, 3, true)],
            &[access(1, 0, true)],
            &[access(1, 0, false), access(1, 1, true)],
        ];
        for (t, accesses) in tasks.iter().enumerate() {
            recorder
                .spawn(0, Location::caller(), &[t as u64], accesses)
                .expect("in bounds");
        }
        recorder
            .finish(std::time::Instant::now())
            .expect("the test DAG is within the limits")
    }

    /// Every row: its name parses back to it, and the run it starts holds every task once (the planned policy) or
    /// every ready task once (the others), with counters that free each task exactly when its
    /// parents are released.
    #[test]
    fn every_row_is_whole_and_starts_a_valid_run() {
        let ins = inspection();
        let dag = &ins.dag;
        for p in Policy::ALL {
            let row = p.row();
            let name = p.name();
            assert_eq!(name.parse::<Policy>(), Ok(p), "{name}");
            let start = (row.start)(&StartOf {
                ins: &ins,
                workers: 3,
                reserve: &Reserve::default(),
                costs: None,
            });
            assert_eq!(start.lists.len(), 3, "{}", name);
            let queued: Vec<u32> = start
                .lists
                .iter()
                .flatten()
                .map(|&t| t & !COUNTED)
                .collect();
            let mut sorted = queued.clone();
            sorted.sort_unstable();
            if row.plans {
                assert_eq!(
                    sorted,
                    (0..6).collect::<Vec<_>>(),
                    "{}: every task once",
                    name
                );
            } else {
                let mut ready = dag.ready.clone();
                ready.sort_unstable();
                assert_eq!(sorted, ready, "{}: the ready tasks once", name);
                // A counter per task, freed by its counted parents.
                for t in 0..6u32 {
                    let counted = dag.parents().parents_of(t).len();
                    let want = if counted == 1 { 0 } else { counted as u32 };
                    assert_eq!(start.pending[t as usize], want, "{}: task {t}", name);
                }
            }
            assert_eq!(start.children.len(), dag.children.len(), "{}", name);
            // What a row asks of the host, which the other layers read from it alone.
            assert_eq!(row.needs_ranges, p == Policy::Affinity, "{}", name);
            assert_eq!(row.records_ran_by, p == Policy::Affinity, "{}", name);
            assert_eq!(row.plans, p == Policy::Static, "{}", name);
        }
        let error = "fifo".parse::<Policy>().unwrap_err();
        assert!(error.contains("lrr, grr, lf, local, steal, priority, affinity, static"));
    }

    /// The priority policy deals the ready tasks highest rank first; the others in spawn order.
    #[test]
    fn priority_deals_the_longest_paths_first() {
        let ins = inspection();
        let of = StartOf {
            ins: &ins,
            workers: 1,
            reserve: &Reserve::default(),
            costs: None,
        };
        // Root 0 heads a path of three tasks, root 4 one of two.
        assert_eq!((Policy::Priority.row().start)(&of).lists[0], [0, 4]);
        let grr = (Policy::Grr.row().start)(&of).lists[0].clone();
        assert_eq!(grr, ins.dag.ready);
    }
}
