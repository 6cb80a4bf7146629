//! Work stealing: freed children stay in the worker's own queue (one runs next); an idle worker steals from the others.
//!
//! The host starts it as every dynamic policy: the ready tasks dealt to the workers in spawn
//! order. What it does with freed children is the device's half (`sched::policy::steal`).

use super::{Row, in_spawn_order};

/// The row of [`Policy::Steal`].
pub(crate) const ROW: Row = Row {
    start: in_spawn_order,
    needs_ranges: false,
    records_ran_by: false,
    plans: false,
};
