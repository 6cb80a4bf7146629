//! Dependence resolution: a finished task releases its children; a worker that takes a child from a
//! queue acquires its parents' results.
//!
//! The protocol costs one GPU-scope fence per finished task, however many children it has and
//! whether it pushes them or keeps one (`README.md` beside this file gives the whole argument):
//!
//! 1. The finished parent's block passes a barrier, then the releasing thread executes
//!    `fence(Gpu)` before its first decrement ([`decrement`]): the fence makes every later relaxed
//!    or acquire RMW of the counter a release of the body's results (a release fence followed by
//!    an atomic write, C++'s and PTX's fence-release pattern).
//! 2. Each decrement is a *relaxed* RMW, so that a task's decrements are issued back to back and
//!    their round trips overlap ([`decrement_pair`]). (`atom.acq_rel.gpu`, the earlier choice, is
//!    a membar plus the RMW in SASS: one membar per child.)
//! 3. Whoever runs a task that has other parents first loads its counter with acquire
//!    ([`acquire`]): the worker that pops it (its pusher flagged the link `queue::COUNTED`), or the
//!    parent that freed it and keeps it as its continuation. The load synchronizes with
//!    every parent's fence through the counter's release sequence (all the decrements are RMWs).
//!    So a pushed child needs no second fence: the queue link, whose store the same fence made a
//!    release, carries a `SOLE_PARENT` child's inputs (the host sets its counter to zero), and the
//!    counter carries a counted child's. A continuation with a sole parent needs no load at all:
//!    its inputs are the body the block just ran.

use crate::atomic::{AtomicU32, Ordering::Acquire, Ordering::Relaxed, Scope::Gpu};

/// Marks a CSR child entry whose task has no other parent: it is ready as soon as this parent
/// finishes, with no counter to decrement. The host sets it in the device's copy of the CSR, and
/// sets the child's counter to zero.
pub const SOLE_PARENT: u32 = 1 << 31;

/// Whether releasing CSR entry `entry` touches a dependence counter (the child has other parents),
/// so that the releasing thread must have fenced first.
#[inline(always)]
pub fn counted(entry: u32) -> bool {
    entry & SOLE_PARENT == 0
}

/// Releases one child of a finished task (a CSR entry) and returns the count of its parents that
/// were unfinished before: 1 means this release freed it (always, for a `SOLE_PARENT` entry). Use
/// [`frees`] and [`child`] on the result and the entry.
///
/// For a counted entry the caller must have executed `fence(Gpu)` after the parent's body (after
/// the block barrier that ends it) and before this call. The RMW itself is relaxed: a caller that
/// frees the child and then runs it, or reads anything its other parents wrote, must
/// [`acquire`] it first.
#[inline(always)]
pub fn decrement(pending: &[AtomicU32], entry: u32) -> u32 {
    decrement_pair(pending, entry, None).0
}

/// [`decrement`] of one or two entries, whose RMWs are issued back to back so that their round
/// trips overlap; 0 for an absent second entry.
#[inline(always)]
pub fn decrement_pair(pending: &[AtomicU32], first: u32, second: Option<u32>) -> (u32, u32) {
    // Out of range is unreachable with tables built by inspection; never a silent access.
    let counter = |e: u32| pending.get(child(e) as usize).filter(|_| counted(e));
    let (a, b) = AtomicU32::decrement_pair(counter(first), second.and_then(counter));
    let before = |e: Option<u32>, was: u32| match e {
        Some(e) if !counted(e) => 1,
        _ => was,
    };
    (before(Some(first), a), before(second, b))
}

/// [`decrement`] for a caller that does not look at the result: the static plan's, whose children
/// are in their workers' lists already. The same contract for a counted entry; nothing for a
/// `SOLE_PARENT` one.
#[inline(always)]
pub fn release_only(pending: &[AtomicU32], entry: u32) {
    if let Some(counter) = pending
        .get(child(entry) as usize)
        .filter(|_| counted(entry))
    {
        // Its result unused, the RMW waits for no round trip (`ATOM` to `RZ` in SASS).
        counter.fetch_sub(1, Gpu, Relaxed);
    }
}

/// Whether a [`decrement`] that returned `before` freed its child.
#[inline(always)]
pub fn frees(before: u32) -> bool {
    before == 1
}

/// The task of a CSR entry.
#[inline(always)]
pub fn child(entry: u32) -> u32 {
    entry & !SOLE_PARENT
}

/// [`decrement`] and [`frees`]: `Some(child)` when this release freed it. The same contract: a
/// fence after the body, before the first counted release, and an [`acquire`] before the child is
/// run.
#[inline(always)]
pub fn release(pending: &[AtomicU32], entry: u32) -> Option<u32> {
    frees(decrement(pending, entry)).then_some(child(entry))
}

/// Acquires the results of every parent of `task`, a task about to run (taken from a queue, or
/// freed by the caller): waits until its counter reads zero with an acquire load, which
/// synchronizes with each parent's fence (the counter's release sequence runs through all their
/// decrements). Roots and `SOLE_PARENT` children have a zero counter from the start, and their
/// inputs came through the queue link or the block itself.
///
/// The first load returns zero in practice: the parent that freed the task had its decrement's
/// result before it pushed it. The loop is there because nothing but that timing forces the value
/// for a consumer that popped it.
#[inline(always)]
pub fn acquire(pending: &[AtomicU32], task: u32) {
    while !ready(pending, task) {
        spin();
    }
}

/// One poll of [`acquire`]: whether `task`'s counter reads zero, with an acquire load that, when it
/// does, synchronizes with each parent's fence.
#[inline(always)]
pub fn ready(pending: &[AtomicU32], task: u32) -> bool {
    pending
        .get(task as usize)
        .is_none_or(|counter| counter.load(Gpu, Acquire) == 0)
}

#[inline(always)]
fn spin() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
