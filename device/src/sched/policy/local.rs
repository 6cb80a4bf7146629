//! Local continuation: a worker runs one freed child next, without a queue round trip, unless work
//! is queued for it (which would otherwise wait behind its continuations, however long their
//! chain); the rest go out by global round robin.

use super::Hooks;
use crate::sched::leader::Leader;
use crate::sched::tables::Tables;
use crate::words::command;

/// Local continuation.
pub(super) struct Local;

impl Hooks for Local {
    const LOOKS_AT_QUEUE: bool = true;

    #[inline(always)]
    fn keep<'a>(
        _rt: &(impl Tables<'a> + ?Sized),
        _task: u32,
        _freed: usize,
        _child: impl Fn(usize) -> u32,
        queued: bool,
        _me: &Leader,
    ) -> u32 {
        if queued { command::NONE } else { 0 }
    }
}
