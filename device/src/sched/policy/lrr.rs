//! Juggler's local round robin: a worker sends the children it frees to the queues after the last
//! it sent to, by a cursor of its own (starting at its own queue).

use super::Hooks;
use crate::sched::leader::Leader;
use crate::sched::tables::Tables;
use crate::words;

/// Local round robin.
pub(super) struct Lrr;

impl Hooks for Lrr {
    #[inline(always)]
    fn base<'a>(_rt: &(impl Tables<'a> + ?Sized), pushes: u32, me: &Leader) -> u32 {
        let base = me.get(words::LRR);
        me.set(words::LRR, base.wrapping_add(pushes));
        base
    }
}
