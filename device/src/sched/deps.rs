//! Dependence resolution: a finished task releases its children.

use crate::atomic::{AtomicU32, Ordering::AcqRel, Scope::Gpu};

/// Marks a CSR child entry whose task has no other parent: it is ready as soon as this parent
/// finishes, with no counter to decrement. The host sets it in the device's copy of the CSR.
pub const SOLE_PARENT: u32 = 1 << 31;

/// Releases one child of a finished task (a CSR entry); `Some(child)` when it is now ready.
///
/// A child with other parents has its counter decremented. Release: the finished parent's results
/// (published to this thread by the block barrier that follows the body) happen before the
/// decrement. Acquire: the last decrementer sees every other parent's results, which it passes on
/// through the queue push that follows. A child with no other parent needs no atomic at all: the
/// push (or, for a continuation, the block barrier) publishes its one parent's results.
#[inline(always)]
pub fn release(pending: &[AtomicU32], entry: u32) -> Option<u32> {
    let child = entry & !SOLE_PARENT;
    if entry & SOLE_PARENT != 0 {
        return Some(child);
    }
    // Out of range is unreachable with tables built by inspection; never a silent access.
    let counter = pending.get(child as usize)?;
    (counter.fetch_sub(1, Gpu, AcqRel) == 1).then_some(child)
}
