//! Mutation checks: does a verification notice a missing dependence, a task run out of order, or a
//! task not run at all?
//!
//! 1. Inspect the region once to get its DAG, and list the mutations to try ([`Mutation::every`]
//!    at test size, [`Mutation::sample`] at a benchmark-like size).
//! 2. For each mutation, [`Mutation::order`] gives the order the mutated region runs its tasks in,
//!    one after another: an order that every remaining dependence allows but the mutation breaks.
//! 3. [`check`] builds the region afresh, rewrites its inspection through the host's test seam
//!    ([`Region::edit_inspection`]) into a chain of the tasks in that order ([`run_in_order`]),
//!    runs it on the CPU backend and asks the verification. A chain admits one schedule only, so
//!    the run is the same on every machine and at every worker count: a test cannot pass by luck.
//!
//! A dropped edge whose order another path of the DAG still enforces changes nothing, and neither,
//! as a rule, does swapping two tasks of one function over the same ranges: [`Mutation::order`]
//! returns `None` for these, and the check counts them as unchanged rather than caught.
//!
//! ```no_run
//! use taskweave::Runtime;
//! use taskweave_examples::mutation::{self, Mutation};
//! use taskweave_examples::workloads::{Lud, LudParams, Workload};
//!
//! let mut lu = Lud::new(&LudParams { nb: 4, tile: 8 }).unwrap();
//! let dag = lu.inspect().unwrap().dag;
//! let report = mutation::check(&mut lu, &Mutation::every(&dag), &Runtime::cpu_with(1));
//! assert!(report.escaped.is_empty() && report.failed.is_empty(), "{report}");
//! ```

use taskweave::graph::{Dag, EdgeKind};
use taskweave::inspect::Inspection;
use taskweave::{Policy, Region, Runtime};
use taskweave_device::abi::TaskRecord;

use crate::workloads::Workload;

/// One change to a region's DAG that a verification must notice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mutation {
    /// Drops the dependence `parent → child`: `child` runs before `parent`, after the ancestors
    /// it still has.
    DropEdge {
        /// The earlier task of the dropped edge.
        parent: u32,
        /// The later task.
        child: u32,
    },
    /// Swaps two dependent tasks: each runs in the other's place in spawn order.
    Swap {
        /// The earlier task.
        parent: u32,
        /// A child of `parent`.
        child: u32,
    },
    /// Never runs `task`.
    Skip(u32),
}

impl std::fmt::Display for Mutation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DropEdge { parent, child } => write!(f, "drop the edge {parent} -> {child}"),
            Self::Swap { parent, child } => write!(f, "swap tasks {parent} and {child}"),
            Self::Skip(task) => write!(f, "skip task {task}"),
        }
    }
}

impl Mutation {
    /// Every mutation of `dag`: each edge dropped, each pair of dependent tasks swapped, each task
    /// skipped.
    pub fn every(dag: &Dag) -> Vec<Mutation> {
        let edges = edges(dag);
        let mut all: Vec<Mutation> = edges
            .iter()
            .map(|&(parent, child)| Self::DropEdge { parent, child })
            .collect();
        all.extend(
            edges
                .iter()
                .map(|&(parent, child)| Self::Swap { parent, child }),
        );
        all.extend((0..dag.task_count() as u32).map(Self::Skip));
        all
    }

    /// A sample of `dag`'s mutations for a size at which all of them would take too long,
    /// weighted towards those hardest to notice: for each task kind (`kinds[t]` is task `t`'s),
    /// its last task is skipped and each dependence into that task that no other path enforces
    /// is dropped, since a late task's mistake has the fewest later tasks to spread through;
    /// then `spread` more edges dropped and `spread` pairs swapped, evenly spaced over the edge
    /// list.
    pub fn sample(dag: &Dag, kinds: &[u32], spread: usize) -> Vec<Mutation> {
        let mut picked = Vec::new();
        let mut last_of_kind: Vec<u32> = Vec::new();
        for (t, &kind) in kinds.iter().enumerate() {
            let kind = kind as usize;
            if last_of_kind.len() <= kind {
                last_of_kind.resize(kind + 1, u32::MAX);
            }
            last_of_kind[kind] = t as u32;
        }
        let parents = dag.parents();
        for &task in last_of_kind.iter().filter(|&&t| t != u32::MAX) {
            picked.push(Self::Skip(task));
            for &parent in parents.parents_of(task) {
                if !implied(dag, parent, task) {
                    picked.push(Self::DropEdge {
                        parent,
                        child: task,
                    });
                }
            }
        }
        let edges = edges(dag);
        for k in 0..spread.min(edges.len()) {
            let (parent, child) = edges[k * edges.len() / spread];
            picked.push(Self::DropEdge { parent, child });
            let (parent, child) = edges[(k * edges.len() + edges.len() / 2) / spread];
            picked.push(Self::Swap { parent, child });
        }
        picked.sort();
        picked.dedup();
        picked
    }

    /// The order in which the mutated region of inspection `ins` runs its tasks, one after
    /// another, or `None` when the mutation changes nothing to check: a dropped edge whose order
    /// another path of the DAG enforces, or a swap of two tasks of one function over the same
    /// ranges (`ins` must carry its ranges: inspect under `Policy::Affinity`). Those are
    /// usually one operation at two times (HEAT-SIM's steps `t` and `t + 2` of a tile read and
    /// write the same buffers), and swapping them runs the same steps in the same order; the
    /// edge between them is still dropped on its own.
    ///
    /// - [`Mutation::DropEdge`]: spawn order, except that `child` and those of its ancestors that
    ///   come after `parent` move, in their order, to just before `parent`. Every other
    ///   dependence still holds (an ancestor of `child` that `parent` reached would be another
    ///   path), and nothing else moves.
    /// - [`Mutation::Swap`]: spawn order with `parent` and `child` exchanged.
    /// - [`Mutation::Skip`]: spawn order without the task.
    pub fn order(&self, ins: &Inspection) -> Option<Vec<u32>> {
        let dag = &ins.dag;
        let n = dag.task_count() as u32;
        match *self {
            Self::DropEdge { parent, child } => {
                if implied(dag, parent, child) {
                    return None;
                }
                let moved = ancestors_after(dag, parent, child);
                let mut order: Vec<u32> = (0..parent).collect();
                order.extend((parent..=child).filter(|t| moved[(t - parent) as usize]));
                order.extend((parent..n).filter(|&t| t > child || !moved[(t - parent) as usize]));
                Some(order)
            }
            Self::Swap { parent, child } => {
                let ranges = ins
                    .ranges
                    .as_ref()
                    .expect("inspect under the affinity policy to keep the ranges");
                if ins.tasks[parent as usize].kind == ins.tasks[child as usize].kind
                    && ranges.of(parent).eq(ranges.of(child))
                {
                    return None;
                }
                let mut order: Vec<u32> = (0..n).collect();
                order.swap(parent as usize, child as usize);
                Some(order)
            }
            Self::Skip(task) => Some((0..n).filter(|&t| t != task).collect()),
        }
    }
}

/// Every edge of `dag` as `(parent, child)`, by parent then child.
fn edges(dag: &Dag) -> Vec<(u32, u32)> {
    (0..dag.task_count() as u32)
        .flat_map(|p| dag.children_of(p).iter().map(move |&c| (p, c)))
        .collect()
}

/// Whether a path other than the edge `parent → child` leads from `parent` to `child`. Task ids
/// are a topological order, so the search never looks past `child`.
fn implied(dag: &Dag, parent: u32, child: u32) -> bool {
    let span = (child - parent) as usize;
    let mut seen = vec![false; span + 1];
    let mut stack: Vec<u32> = dag
        .children_of(parent)
        .iter()
        .copied()
        .filter(|&c| c < child)
        .collect();
    while let Some(t) = stack.pop() {
        let slot = &mut seen[(t - parent) as usize];
        if *slot {
            continue;
        }
        *slot = true;
        for &c in dag.children_of(t) {
            if c == child {
                return true;
            }
            if c < child && !seen[(c - parent) as usize] {
                stack.push(c);
            }
        }
    }
    false
}

/// `moved[t - parent]`: whether task `t` (`parent <= t <= child`) is `child` or one of its
/// ancestors, not counting the edge `parent → child`.
fn ancestors_after(dag: &Dag, parent: u32, child: u32) -> Vec<bool> {
    let parents = dag.parents();
    let mut moved = vec![false; (child - parent) as usize + 1];
    moved[(child - parent) as usize] = true;
    let mut stack = vec![child];
    while let Some(t) = stack.pop() {
        for &p in parents.parents_of(t) {
            if p > parent && !moved[(p - parent) as usize] {
                moved[(p - parent) as usize] = true;
                stack.push(p);
            }
        }
    }
    moved
}

/// Rewrites `ins` so that it runs exactly the tasks of `order`, one after another: the tasks are
/// renumbered in that order (records, argument words, spawn locations) and the DAG becomes the
/// chain `0 → 1 → …`. Tasks left out of `order` do not run.
pub fn run_in_order(ins: &mut Inspection, order: &[u32]) {
    let mut tasks = Vec::with_capacity(order.len() + 1);
    let mut args = Vec::with_capacity(ins.args.len());
    let mut locations = Vec::with_capacity(order.len());
    for &t in order {
        let (from, to) = (
            ins.tasks[t as usize].args as usize,
            ins.tasks[t as usize + 1].args as usize,
        );
        tasks.push(TaskRecord {
            kind: ins.tasks[t as usize].kind,
            args: args.len() as u32,
        });
        args.extend_from_slice(&ins.args[from..to]);
        locations.push(ins.locations[t as usize]);
    }
    tasks.push(TaskRecord {
        kind: u32::MAX,
        args: args.len() as u32,
    });
    let n = order.len() as u32;
    let in_offsets: Vec<u32> = (0..=n).map(|t| t.saturating_sub(1)).collect();
    let parents: Vec<u32> = (0..n.saturating_sub(1)).collect();
    let kinds = vec![EdgeKind::Raw; parents.len()];
    ins.dag = Dag::from_parent_lists(&in_offsets, &parents, &kinds);
    ins.tasks = tasks;
    ins.args = args;
    ins.locations = locations;
    // The ranges of the affinity policy follow the old numbering; the chain runs without them.
    ins.ranges = None;
}

/// What a mutation check runs: a region to mutate and the verification that must notice.
pub trait Subject {
    /// What the reports call it.
    fn label(&self) -> String;
    /// The region on fresh inputs, not yet run.
    fn region(&mut self) -> Region<'_>;
    /// Whether the output of the last run is right, and if not what differs.
    fn verify(&self) -> Result<(), String>;
}

impl<W: Workload + ?Sized> Subject for W {
    fn label(&self) -> String {
        format!("{} ({})", self.name(), self.size())
    }
    fn region(&mut self) -> Region<'_> {
        self.fresh()
    }
    fn verify(&self) -> Result<(), String> {
        let verdict = Workload::verify(self);
        if verdict.passed() {
            Ok(())
        } else {
            Err(verdict.to_string())
        }
    }
}

/// What [`check`] found.
#[derive(Debug, Default)]
pub struct Report {
    /// The subject, as [`Subject::label`] names it.
    pub subject: String,
    /// Mutations the verification caught.
    pub caught: usize,
    /// Mutations that change nothing ([`Mutation::order`] is `None`): dropped edges that another
    /// path enforces, swaps of identical tasks.
    pub unchanged: usize,
    /// Mutations the verification passed.
    pub escaped: Vec<Mutation>,
    /// Mutated regions that failed to run, with the error: a reordered or skipped task is still a
    /// valid task, so this says the seam or the region is broken, not that the mutation was
    /// caught.
    pub failed: Vec<(Mutation, String)>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} caught, {} change nothing, {} escaped, {} failed to run",
            self.subject,
            self.caught,
            self.unchanged,
            self.escaped.len(),
            self.failed.len()
        )?;
        for m in self.escaped.iter().take(10) {
            write!(f, "\n  escaped: {m}")?;
        }
        for (m, why) in self.failed.iter().take(10) {
            write!(f, "\n  failed: {m}: {why}")?;
        }
        Ok(())
    }
}

/// How a run in a given order went.
#[derive(Debug)]
pub enum Outcome {
    /// The verification passed.
    Passed,
    /// The verification failed, saying why.
    Failed(String),
    /// The region did not run: the error.
    NotRun(taskweave::Error),
}

/// Runs `subject` in `order` on `runtime` through the inspection seam, one worker, and verifies
/// it.
pub fn run_ordered<S: Subject + ?Sized>(
    subject: &mut S,
    order: Vec<u32>,
    runtime: &Runtime,
) -> Outcome {
    let run = subject
        .region()
        .edit_inspection(move |ins| run_in_order(ins, &order))
        .workers(1)
        .run(runtime);
    match run {
        Err(e) => Outcome::NotRun(e),
        Ok(_) => match subject.verify() {
            Ok(()) => Outcome::Passed,
            Err(why) => Outcome::Failed(why),
        },
    }
}

/// Runs `subject` once per mutation, each time in the mutation's order (see the module docs), on
/// `runtime` (give it the CPU backend), and reports which the verification caught.
///
/// # Panics
/// If the unmutated region, run one task at a time in spawn order, fails its verification: the
/// mutated runs would then prove nothing.
pub fn check<S: Subject + ?Sized>(
    subject: &mut S,
    mutations: &[Mutation],
    runtime: &Runtime,
) -> Report {
    let ins = subject
        .region()
        .policy(Policy::Affinity)
        .inspect()
        .unwrap_or_else(|e| panic!("{}: inspection failed: {e}", subject.label()));
    let spawn_order = (0..ins.task_count() as u32).collect();
    match run_ordered(subject, spawn_order, runtime) {
        Outcome::Passed => {}
        other => panic!("{}: unmutated, in spawn order: {other:?}", subject.label()),
    }
    let mut report = Report {
        subject: subject.label(),
        ..Report::default()
    };
    for &m in mutations {
        let Some(order) = m.order(&ins) else {
            report.unchanged += 1;
            continue;
        };
        match run_ordered(subject, order, runtime) {
            Outcome::Failed(_) => report.caught += 1,
            Outcome::Passed => report.escaped.push(m),
            Outcome::NotRun(e) => report.failed.push((m, e.to_string())),
        }
    }
    report
}
