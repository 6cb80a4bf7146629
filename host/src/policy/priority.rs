//! Critical-path priority: a worker runs next the freed child with the longest path to the end of
//! the DAG (its rank), and sends the rest out by global round robin.
//!
//! The host deals the ready tasks highest rank first, so that the run starts on the longest paths
//! too. The choice among freed children is the device's half (`sched::policy::priority`).

use super::{Row, Start, StartOf, dealt};

/// The row of [`Policy::Priority`].
pub(crate) const ROW: Row = Row {
    start: highest_rank_first,
    needs_ranges: false,
    records_ran_by: false,
    plans: false,
};

/// The ready tasks dealt highest rank first (a stable sort: ties in spawn order).
fn highest_rank_first(of: &StartOf<'_>) -> Start {
    let dag = &of.ins.dag;
    let mut ready = dag.ready.clone();
    ready.sort_by_key(|&t| std::cmp::Reverse(dag.rank[t as usize]));
    dealt(dag, of.workers, &ready)
}
