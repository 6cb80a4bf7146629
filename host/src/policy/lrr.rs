//! Juggler's local round robin: a worker sends the children it frees to the queues after the last it sent to, by a cursor of its own.
//!
//! The host starts it as every dynamic policy: the ready tasks dealt to the workers in spawn
//! order. What it does with freed children is the device's half (`sched::policy::lrr`).

use super::{Row, in_spawn_order};

/// The row of [`Policy::Lrr`].
pub(crate) const ROW: Row = Row {
    start: in_spawn_order,
    needs_ranges: false,
    records_ran_by: false,
    plans: false,
};
