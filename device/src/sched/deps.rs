//! Dependence resolution: a finished task releases its children.

use crate::atomic::{
    AtomicU32,
    Ordering::{AcqRel, Relaxed},
    Scope::Gpu,
    fence,
};

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

/// What [`release_row`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// Children freed, written to the front of the caller's list.
    pub count: usize,
    /// `true` when a GPU-scope fence followed every write of the finished task and every result
    /// of the freed children's other parents: pushes may go without another.
    pub fenced: bool,
}

/// Releases a finished task's CSR row `row` from one thread (the leader, for a narrow fan-out),
/// writing the freed children to `freed` (at least `row.len()` long). `claim` runs between the
/// release fence and the decrements, so that its atomic overlaps them; its result is returned.
///
/// One fence before the decrements, when any child has other parents, releases this task's results
/// (every thread's, through the block barrier before) to whichever parent frees the child; the
/// decrements themselves are relaxed, so they are all in flight at once, where acquire-release
/// decrements wait for each other. A second fence after them, only when a freed child has other
/// parents, acquires those parents' results (their fence precedes their decrement, which ours
/// read) and releases them on to the consumer through the pushes that follow, or to this block
/// for a continuation.
#[inline(always)]
pub fn release_row<C>(
    pending: &[AtomicU32],
    row: &[u32],
    freed: &mut [u32],
    claim: impl FnOnce() -> C,
) -> (Released, C) {
    let shared = row.iter().any(|&e| e & SOLE_PARENT == 0);
    if shared {
        fence(Gpu);
    }
    let claimed = claim();
    let mut count = 0;
    let mut acquire = false;
    for &entry in row {
        let child = entry & !SOLE_PARENT;
        let free = if entry & SOLE_PARENT != 0 {
            true
        } else {
            // Out of range is unreachable with tables built by inspection; never a silent access.
            let Some(counter) = pending.get(child as usize) else {
                continue;
            };
            // Relaxed: ordered by the fences around the loop (see above).
            let last = counter.fetch_sub(1, Gpu, Relaxed) == 1;
            acquire |= last;
            last
        };
        if free && let Some(slot) = freed.get_mut(count) {
            *slot = child;
            count += 1;
        }
    }
    if acquire {
        fence(Gpu);
    }
    (
        Released {
            count,
            fenced: shared,
        },
        claimed,
    )
}
