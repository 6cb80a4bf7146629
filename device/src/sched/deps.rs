//! Dependence resolution: a finished task releases its children.

use crate::atomic::{AtomicU32, Ordering::AcqRel, Scope::Gpu};

/// Decrements `child`'s count of unfinished parents; `true` when this was its last parent.
///
/// Release: the finished parent's results (published to this thread by the block barrier that
/// follows the body) happen before the decrement. Acquire: the last decrementer sees every other
/// parent's results, which it passes on through the queue push that follows.
#[inline(always)]
pub fn release(pending: &[AtomicU32], child: u32) -> bool {
    let Some(counter) = pending.get(child as usize) else {
        // Unreachable with tables built by inspection; never a silent out-of-bounds access.
        return false;
    };
    counter.fetch_sub(1, Gpu, AcqRel) == 1
}
