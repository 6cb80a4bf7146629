//! Juggler's local first: a worker's first freed child goes to its own queue, the next ones to its
//! neighbours' in turn.

use super::Hooks;
use crate::sched::leader::Leader;
use crate::sched::tables::Tables;

/// Local first.
pub(super) struct Lf;

impl Hooks for Lf {
    #[inline(always)]
    fn base<'a>(_rt: &(impl Tables<'a> + ?Sized), _pushes: u32, me: &Leader) -> u32 {
        me.worker()
    }
}
