//! Local continuation: a worker runs one freed child next, without a queue round trip, unless work is queued for it; the rest go out by global round robin.
//!
//! The host starts it as every dynamic policy: the ready tasks dealt to the workers in spawn
//! order. What it does with freed children is the device's half (`sched::policy::local`).

use super::{Row, in_spawn_order};

/// The row of [`Policy::Local`].
pub(crate) const ROW: Row = Row {
    start: in_spawn_order,
    needs_ranges: false,
    records_ran_by: false,
    plans: false,
};
