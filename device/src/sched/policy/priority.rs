//! Critical-path priority: a worker runs next the freed child with the longest path to the end of
//! the DAG (the highest rank), unless work is queued for it; the rest go out by global round
//! robin.

use super::Hooks;
use crate::sched::at;
use crate::sched::leader::Leader;
use crate::sched::tables::Tables;
use crate::words::command;

/// Critical-path priority.
pub(super) struct Priority;

impl Hooks for Priority {
    const LOOKS_AT_QUEUE: bool = true;

    #[inline(always)]
    fn keep<'a>(
        rt: &(impl Tables<'a> + ?Sized),
        _task: u32,
        freed: usize,
        child: impl Fn(usize) -> u32,
        queued: bool,
        _me: &Leader,
    ) -> u32 {
        if queued {
            return command::NONE;
        }
        let mut best = 0;
        let mut best_rank = 0;
        for i in 0..freed {
            // SAFETY: a child index from the CSR is below `n_tasks`, `rank`'s length.
            let rank = unsafe { *at(rt.rank(), child(i) as usize) };
            if rank > best_rank {
                best = i;
                best_rank = rank;
            }
        }
        best as u32
    }
}
