//! Juggler's local first: a worker's first freed child goes to its own queue, the next ones to its neighbours'.
//!
//! The host starts it as every dynamic policy: the ready tasks dealt to the workers in spawn
//! order. What it does with freed children is the device's half (`sched::policy::lf`).

use super::{Row, in_spawn_order};

/// The row of [`Policy::Lf`].
pub(crate) const ROW: Row = Row {
    start: in_spawn_order,
    needs_ranges: false,
    records_ran_by: false,
    plans: false,
};
