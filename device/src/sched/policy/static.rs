//! The static list schedule: the host placed every task on a worker before the run and linked each
//! worker's list in plan order. Nothing is pushed at run time: each worker runs its list, its next
//! task prefetched during the body, and waits on a task's counter only for parents on other
//! workers; a worker whose list is empty is done.

use super::Hooks;

/// The static list schedule.
pub(super) struct Static;

impl Hooks for Static {
    const PLANNED: bool = true;
}
