//! The affinity policy's bookkeeping: which worker ran each task, and where a freed child goes.
//!
//! 1. The host uploads each task's *affine parent* (the parent it shares the most data with,
//!    computed from the declared ranges at inspection) as the `affine` table.
//! 2. Before running a task's body, its worker's leader [`record`]s itself in `ran_by`.
//! 3. Whoever frees a child asks for its [`home`]: the worker that ran its affine parent. The
//!    worker loop keeps the child as its continuation when that is itself, and otherwise pushes
//!    it there, to the SM whose caches the parent's data went through.
//! 4. Unless the home has work queued (its published cursor is behind its tail): then the child
//!    goes by global round robin, as one with no affine parent does. Without this, every task
//!    would run where its affine parent ran, so each tree of the affine-parent forest would run
//!    on one worker: a wavefront, where every tile has an affine parent, would run serially.
//!
//! `ran_by` needs no ordering of its own: the store comes before the block barrier that ends the
//! parent's body, so the parent's release of the child (the dependence counter's `AcqRel`
//! decrement, or the push of a sole-parent child by the same block) publishes it with the body's
//! results. See the protocol in `README.md` beside this file.

use crate::atomic::{AtomicU32, Ordering::Relaxed, Scope::Gpu};

/// An `affine` entry: the task has no affine parent.
pub const NO_PARENT: u32 = u32::MAX;
/// A `ran_by` entry before its task has run.
pub const NOT_RUN: u32 = u32::MAX;

/// Records that `worker` runs `task`; nothing when `ran_by` is empty (another policy). The leader
/// calls it before the body, so that the barrier after the body orders it before every thread's
/// release of the task's children.
#[inline(always)]
pub fn record(ran_by: &[AtomicU32], task: u32, worker: u32) {
    if let Some(slot) = ran_by.get(task as usize) {
        // Relaxed: the task's releases of its children, which follow, publish it.
        slot.store(worker, Gpu, Relaxed);
    }
}

/// The worker a freed `child` belongs to: the one that ran its affine parent, or `None` for a
/// child with no affine parent (or tables that are empty under another policy). `task` is the
/// finished task that freed it and `worker` the caller's worker: when the affine parent is that
/// task, the answer needs no load.
///
/// The caller must have freed `child` (or be ordered after the thread that did, by a block
/// barrier): then every parent's [`record`] happens before this load.
#[inline(always)]
pub fn home(
    affine: &[u32],
    ran_by: &[AtomicU32],
    child: u32,
    task: u32,
    worker: u32,
) -> Option<u32> {
    let parent = *affine.get(child as usize)?;
    if parent == task {
        return Some(worker);
    }
    // Relaxed: the parent's `record` happens before its release of `child`, and that release
    // before the decrement that freed `child` (the counter's release sequence), which the caller
    // acquired. `NO_PARENT` is past the end of the table.
    let ran = ran_by.get(parent as usize)?.load(Gpu, Relaxed);
    (ran != NOT_RUN).then_some(ran)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_child_goes_where_its_affine_parent_ran() {
        let affine = [NO_PARENT, 0, 1, 0];
        let ran_by: [AtomicU32; 4] = core::array::from_fn(|_| AtomicU32::new(NOT_RUN));
        record(&ran_by, 0, 5);
        record(&ran_by, 1, 2);
        // Freed by task 1 on worker 2: child 2's affine parent is task 1 itself.
        assert_eq!(home(&affine, &ran_by, 2, 1, 2), Some(2));
        assert_eq!(home(&affine, &ran_by, 3, 1, 2), Some(5));
        assert_eq!(home(&affine, &ran_by, 1, 0, 5), Some(5));
        assert_eq!(home(&affine, &ran_by, 0, 1, 2), None);
        // Under another policy both tables are empty.
        assert_eq!(home(&[], &[], 3, 1, 2), None);
        record(&[], 3, 1);
    }
}
