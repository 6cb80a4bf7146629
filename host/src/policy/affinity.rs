//! Data affinity: a freed child goes to the worker that ran its affine parent (the parent it shares
//! the most data with), which runs it next when that is itself, unless that worker has work
//! queued; the other children go out by global round robin.
//!
//! The host records each task's ranges at inspection (the affine parents are found from them:
//! [`Inspection::affine_parents`](crate::inspect::Inspection::affine_parents)) and gives the
//! workers a table of who ran each task; it starts the run as every dynamic policy.

use super::{Row, in_spawn_order};

/// The row of [`Policy::Affinity`].
pub(crate) const ROW: Row = Row {
    start: in_spawn_order,
    needs_ranges: true,
    records_ran_by: true,
    plans: false,
};
