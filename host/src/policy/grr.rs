//! Juggler's global round robin: freed children go to the queues in turn, by one cursor all workers share (the default for a call that inspects).
//!
//! The host starts it as every dynamic policy: the ready tasks dealt to the workers in spawn
//! order. What it does with freed children is the device's half (`sched::policy::grr`).

use super::{Row, in_spawn_order};

/// The row of [`Policy::Grr`].
pub(crate) const ROW: Row = Row {
    start: in_spawn_order,
    needs_ranges: false,
    records_ran_by: false,
    plans: false,
};
