//! Data affinity: a freed child goes home, to the worker that ran its affine parent, which keeps it
//! as its continuation when that is itself, unless the home has work queued; the other children
//! go out by global round robin. The bookkeeping (who ran each task, and a child's home) is
//! `sched::affinity`, whose docs give the protocol.

use super::Hooks;
use crate::sched::affinity as bookkeeping;
use crate::sched::deps;
use crate::sched::leader::Leader;
use crate::sched::tables::Tables;
use crate::words::command;

/// Data affinity.
pub(super) struct Affinity;

/// `child`'s home (see [`bookkeeping::home`]), `NONE` for none. Out of line, like [`Affinity`]'s
/// `started`, so that the loop of the other policies does not carry the affinity tables in
/// registers.
#[inline(never)]
fn home<'a>(rt: &(impl Tables<'a> + ?Sized), child: u32, task: u32, worker: u32) -> u32 {
    // The other parents' `ran_by` records come with their results.
    deps::acquire(rt.pending(), child);
    bookkeeping::home(rt.affine(), rt.ran_by(), child, task, worker).unwrap_or(command::NONE)
}

impl Hooks for Affinity {
    const LOOKS_AT_QUEUE: bool = true;

    /// The first child whose affine parent ran here.
    #[inline(always)]
    fn keep<'a>(
        rt: &(impl Tables<'a> + ?Sized),
        task: u32,
        freed: usize,
        child: impl Fn(usize) -> u32,
        queued: bool,
        me: &Leader,
    ) -> u32 {
        if queued {
            return command::NONE;
        }
        let worker = me.worker();
        (0..freed)
            .position(|i| home(rt, child(i), task, worker) == worker)
            .map_or(command::NONE, |i| i as u32)
    }

    /// Home when the home's queue looks drained; otherwise, like a child with no home, by round
    /// robin from `base` (slots of the children that went home stay unused). Without the guard
    /// every task would follow its affine parent, and each tree of affine parents would run on one
    /// worker: a wavefront, serially.
    #[inline(always)]
    fn target<'a>(
        rt: &(impl Tables<'a> + ?Sized),
        base: u32,
        i: u32,
        child: u32,
        task: u32,
        worker: u32,
    ) -> u32 {
        match home(rt, child, task, worker) {
            home if home != command::NONE && rt.queues().looks_drained(home) => home,
            _ => (base + i) % rt.workers(),
        }
    }

    /// Records that `worker` runs `task`, before the barrier after the body, so that every
    /// release of a child follows it.
    #[inline(never)]
    fn started<'a>(rt: &(impl Tables<'a> + ?Sized), task: u32, worker: u32) {
        bookkeeping::record(rt.ran_by(), task, worker);
    }

    /// The own queue, and its head published for the pushers' `looks_drained`: whether a child
    /// sent here would wait.
    #[inline(always)]
    fn pop_own<'a>(rt: &(impl Tables<'a> + ?Sized), me: &mut Leader) -> Option<u32> {
        let queues = rt.queues();
        let link = queues.pop_from(&mut me.head)?;
        queues.publish_head(me.worker(), me.head);
        Some(link)
    }
}
