//! Work stealing: freed children stay in the worker's own queue (one runs next), which the worker
//! pops under its lock; an idle worker steals from others' queues.

use super::Hooks;
use crate::sched::leader::{Leader, STEALS};
use crate::sched::tables::Tables;

/// Victims an idle worker tries per round.
const STEAL_TRIES: u32 = 2;

/// Work stealing.
pub(super) struct Steal;

impl Hooks for Steal {
    #[inline(always)]
    fn keep<'a>(
        _rt: &(impl Tables<'a> + ?Sized),
        _task: u32,
        _freed: usize,
        _child: impl Fn(usize) -> u32,
        _queued: bool,
        _me: &Leader,
    ) -> u32 {
        0
    }

    #[inline(always)]
    fn base<'a>(_rt: &(impl Tables<'a> + ?Sized), _pushes: u32, me: &Leader) -> u32 {
        me.worker()
    }

    #[inline(always)]
    fn target<'a>(
        _rt: &(impl Tables<'a> + ?Sized),
        base: u32,
        _i: u32,
        _child: u32,
        _task: u32,
        _worker: u32,
    ) -> u32 {
        base
    }

    #[inline(always)]
    fn pop_own<'a>(rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
        rt.queues().pop_locked(me.worker())
    }

    #[inline(always)]
    fn steal<'a>(rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
        let queues = rt.queues();
        let workers = queues.workers();
        for _ in 0..STEAL_TRIES.min(workers - 1) {
            let victim = (me.worker() + 1 + me.random() % (workers - 1)) % workers;
            if let Some(link) = queues.pop_locked(victim) {
                me.add(STEALS, 1);
                return Some(link);
            }
        }
        None
    }
}
