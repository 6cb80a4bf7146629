//! Dependence tracking over declared array ranges, and the task DAG it produces.
//!
//! How to use this module:
//!
//! 1. Create a [`DepTracker`] with the element count of every array slot the region touches:
//!    `DepTracker::new(&[len_a, len_b])`.
//! 2. Call [`DepTracker::add_task`] once per task, in spawn order, with all of that task's
//!    accesses as `(array slot, lo..hi, Access)` triples. It records them and returns the task id
//!    (0, 1, 2, ...), or [`LimitExceeded`] when the program outgrows the tracker's `u32` indices.
//! 3. Call [`DepTracker::finish`] to find the edges from earlier tasks whose accesses conflict
//!    with later ones (on several threads for a big region, see [`Split`]) and get the [`Dag`] in
//!    CSR form: children, edge kinds, in-degrees, the initially ready tasks and each task's rank
//!    (bottom level).
//! 4. Optionally inspect it ([`Dag::levels`], [`Dag::critical_path`], [`Dag::parents`]) or
//!    export it with [`Dag::to_dot`] / [`Dag::to_json`].
//! 5. To check a DAG against the exact semantics, [`oracle`] holds brute-force reference
//!    implementations (per-element simulation and the O(n²) conflict relation).
//! 6. For the affinity placement policy, record each task's ranges in a [`TaskRanges`] and call
//!    [`affine_parents`]: per task, the parent it shares the most bytes with.
//! 7. For the static policy, [`list_schedule`] places every task on a worker ahead of the run.
//!
//! ```
//! use taskweave_host::graph::{Access, DepTracker, EdgeKind};
//!
//! let mut tracker = DepTracker::new(&[100]);
//! let producer = tracker.add_task(&[(0, 0..50, Access::Write)])?;
//! let consumer = tracker.add_task(&[(0, 25..75, Access::Read)])?;
//! let dag = tracker.finish()?;
//! assert_eq!(dag.children_of(producer), &[consumer]);
//! assert_eq!(dag.kinds, vec![EdgeKind::Raw]);
//! assert_eq!(dag.ready, vec![producer]);
//! # Ok::<(), taskweave_host::graph::LimitExceeded>(())
//! ```
//!
//! # Semantics
//!
//! Every array is an interval map whose maximal segments hold the last writer of that segment
//! and the readers since that write. A read of `lo..hi` gets a [`EdgeKind::Raw`] edge from the
//! last writer of every overlapping segment and joins the readers of exactly the overlapped part.
//! A write gets [`EdgeKind::Waw`] from the last writer and [`EdgeKind::War`] from every reader of
//! the overlapped segments, then becomes the only writer of `lo..hi`, with no readers.
//! [`Access::ReadWrite`] is both: `Raw` from the writer, `War` from the readers.
//!
//! All accesses of one task are evaluated against the state before that task, so a task never
//! depends on itself. There is at most one edge per (parent, child) pair; when several kinds
//! apply, the kept kind is the first of `Raw`, `Waw`, `War` that applies (see
//! [`EdgeKind::priority`]). Edges always go from a lower task id to a higher one.
//!
//! # Cost
//!
//! Tracking works on the ranks of the distinct range ends of each array, not on element indices:
//! all ranges are recorded first, then each array's ends are numbered through a hash table and
//! the distinct ones sorted (a radix sort), so that the interval map is flat arrays indexed by
//! rank. An array's runs of equal state are a bit set of run starts plus one state per start.
//! Every rank starts as a run of its own, so an access costs `O(k)` for the `k` runs it covers:
//! two bit tests and one state for an exact tile, the common case, plus a search of the bit set's
//! summary when a range cuts a run. Reader sets are persistent linked lists in one arena, so
//! cutting a run copies no reader list. An array no task writes gives no edge and is never
//! tracked.
//!
//! Recording costs a few words per range; tracking `O(ranges + d)` for `d` distinct ends, plus
//! one step per run a range covers. Memory is `O(tasks + ranges + d + edges + reader entries)`; a
//! write over more than eight runs merges them into one. Reader entries are one per (read,
//! overlapped run), so a pathological program that reads many finely split runs again and again
//! uses memory proportional to that work; tiled patterns use one per read.

mod affinity;
mod bitset;
mod buffer;
mod compress;
mod dag;
mod export;
mod interval;
mod job;
mod log;
pub mod oracle;
mod pipe;
#[cfg(test)]
mod proptests;
mod schedule;
mod sink;
mod spare;
mod split;
mod tiles;
mod tracker;

pub use affinity::{NO_AFFINE_PARENT, TaskRanges, affine_parents};
pub use dag::{Dag, ParentCsr};
pub(crate) use pipe::{Piping, Tracking, Wait};
pub use schedule::{
    Costs, Reserve, Schedule, list_schedule, list_schedule_costed, list_schedule_reserving,
    list_schedule_wide,
};
pub(crate) use spare::{MAX_SPARE_BYTES, Spare};
pub use split::{RANGES_PER_THREAD, Split, THREADS_VAR};
pub(crate) use tiles::ArraySizes;
pub use tiles::TILE_PATH_VAR;
pub use tracker::{DepTracker, MAX_EDGES, PathBreak};

/// A task that would take the tracker (or a [`TaskRanges`]) past one of the limits of its `u32`
/// indices: more tasks, dependence edges, reader-list entries or access ranges than it can
/// address. The task is not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("more than {limit} {what}")]
pub struct LimitExceeded {
    /// What would overflow, such as `"dependence edges"`.
    pub what: &'static str,
    /// The most there may be.
    pub limit: u64,
}

/// How a task accesses a range of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// The task only reads the range.
    Read,
    /// The task only writes the range (it does not depend on the previous contents).
    Write,
    /// The task reads and then writes the range.
    ReadWrite,
}

impl Access {
    /// Whether the access reads the previous contents.
    pub fn reads(self) -> bool {
        matches!(self, Access::Read | Access::ReadWrite)
    }

    /// Whether the access writes the range.
    pub fn writes(self) -> bool {
        matches!(self, Access::Write | Access::ReadWrite)
    }
}

/// Why one task must run before another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EdgeKind {
    /// Read after write: the child reads what the parent wrote (a true dependence).
    Raw,
    /// Write after read: the child overwrites what the parent reads (an anti-dependence).
    War,
    /// Write after write: the child overwrites what the parent wrote (an output dependence).
    Waw,
}

impl EdgeKind {
    /// Preference when several kinds apply to one (parent, child) pair: the higher value is
    /// kept. `Raw` (2) beats `Waw` (1), which beats `War` (0).
    pub fn priority(self) -> u8 {
        match self {
            EdgeKind::Raw => 2,
            EdgeKind::Waw => 1,
            EdgeKind::War => 0,
        }
    }

    /// Lower-case short name: `"raw"`, `"war"` or `"waw"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Raw => "raw",
            EdgeKind::War => "war",
            EdgeKind::Waw => "waw",
        }
    }
}
