//! The scheduler core, written once for the GPU, the CPU backend and `loom`.
//!
//! 1. The host inspects a region, builds its DAG and links the initial ready tasks into the worker
//!    queues ([`queue::link_initial`]).
//! 2. It describes the region in one [`RegionDesc`](crate::abi::RegionDesc) and starts the workers:
//!    persistent blocks on the GPU (the region's kernel calls [`gpu_entry`]), OS threads on the CPU
//!    (each calls [`run_worker`]).
//! 3. Each worker loops: take a task ([`queue`]), run its body through the region's [`Dispatch`],
//!    release its children ([`deps`]), place the freed ones by the region's policy, count it done.
//! 4. Workers stop when the completed count reaches the task count, or when the abort flag is up.
//!
//! The protocol and the reason for each memory ordering are in `README.md` beside this file.

pub mod affinity;
pub mod deps;
pub mod finish;
#[cfg(not(loom))]
mod leader;
#[cfg(not(loom))]
pub mod levels;
#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(not(loom))]
mod pick;
#[cfg(not(loom))]
mod policy;
pub mod queue;
#[cfg(not(loom))]
mod release;
pub mod sm;
pub mod stream;
#[cfg(not(loom))]
mod tables;
#[cfg(not(loom))]
mod worker;

#[cfg(target_arch = "nvptx64")]
pub use crate::words::current_task;
/// The block's runtime words and the sentinel tasks, which the error path reads too: they live
/// below the scheduler, in [`crate::words`].
pub use crate::words::{self, command};
#[cfg(target_arch = "nvptx64")]
pub use tables::BlockTables;
#[cfg(not(loom))]
pub use tables::{Table, Tables, WorkerView};
#[cfg(not(loom))]
pub use worker::{Dispatch, run_worker};

/// Element `i` of a scheduler table, unchecked in release builds.
///
/// A failed bounds check on the GPU is a call into the panic machinery at every indexing site,
/// which costs registers in the hot loop; the tables are consistent by construction instead.
///
/// # Safety
/// `i < table.len()`. Debug builds (every host test) still check it.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) unsafe fn at<T>(table: &[T], i: usize) -> &T {
    debug_assert!(
        i < table.len(),
        "scheduler table index {i} out of {}",
        table.len()
    );
    // SAFETY: guaranteed by the caller.
    unsafe { table.get_unchecked(i) }
}

/// Binds the block to the launch's error record and abort flag (see [`crate::error::bind`]).
///
/// # Safety
/// `desc` must point to a valid descriptor whose `error` and `abort` are live for the launch.
#[cfg(target_arch = "nvptx64")]
unsafe fn bind_faults(desc: *const crate::abi::RegionDesc) {
    // SAFETY: forwarded from the caller.
    unsafe {
        crate::error::bind(
            (*desc).error as *mut crate::error::ErrorRecord,
            (*desc).abort as *mut u32,
        )
    };
}

/// The body of every region kernel: one worker per block (or, with SM-aware workers, the blocks
/// that [claim](sm::claim) a worker on their SM; the others return at once).
///
/// # Safety
/// `desc` must point to a valid [`RegionDesc`](crate::abi::RegionDesc) in device memory whose
/// tables match the DAG and arrays of the region that `dispatch` belongs to, and every block of the
/// grid must be resident at once (the host sizes the grid from occupancy).
#[cfg(target_arch = "nvptx64")]
pub unsafe fn gpu_entry<D: Dispatch>(desc: *const crate::abi::RegionDesc, dispatch: &D) {
    // SAFETY: guaranteed by the caller.
    unsafe { bind_faults(desc) };
    if crate::arch::thread_idx() == 0 {
        // SAFETY: guaranteed by the caller.
        unsafe { BlockTables::publish(&*desc) };
    }
    // Orders the header (and the array copy) before every thread's reads.
    crate::arch::sync_threads();
    // SAFETY: published above, for the launch.
    let tables = unsafe { BlockTables::published() };
    let words = crate::shared::runtime_words();
    // SAFETY: the runtime words are this block's shared memory; `RUNTIME_WORDS` long.
    let words = unsafe {
        core::slice::from_raw_parts(
            words.cast::<crate::atomic::AtomicU32>(),
            crate::shared::RUNTIME_WORDS,
        )
    };
    // SAFETY: guaranteed by the caller; the loop has not started.
    let Some(worker) = (unsafe { sm::worker_of_block(&*desc, words) }) else {
        // SM-aware workers: this block is surplus on its SM, or its SM is not the region's.
        return;
    };
    let (scratch, bytes) = crate::shared::dynamic();
    // SAFETY: the dynamic shared memory is this block's, 16-aligned, used only by its tasks.
    unsafe { run_worker(&tables, worker, words, scratch, bytes, dispatch) };
    // SAFETY: guaranteed by the caller; every worker of the launch gets here once its loop ends.
    unsafe { finish::finish_run(&*desc, worker, words) };
}

/// The body of every region's one-launch-per-level kernel: block `b` runs task `list[b]`.
///
/// # Safety
/// As for [`gpu_entry`]; `list` holds one entry per block, built from the region's records.
#[cfg(target_arch = "nvptx64")]
pub unsafe fn gpu_listed<D: Dispatch>(
    desc: *const crate::abi::RegionDesc,
    list: *const crate::abi::ListedTask,
    dispatch: &D,
) {
    let (scratch, bytes) = crate::shared::dynamic();
    // SAFETY: guaranteed by the caller: the descriptor is valid, `list` has one entry per block,
    // built from its records.
    let (rt, entry) = unsafe {
        (
            WorkerView::from_desc(&*desc),
            *list.add(crate::arch::block_idx() as usize),
        )
    };
    // A checked kernel finds its arguments through the task's record, as the persistent workers
    // do: with the entry's copy of the record, its bodies (which hold more live values) took 6
    // registers more on the NW tile (80 -> 86), a block per SM fewer. An unchecked one reads the
    // record from the entry, one dependent load fewer before its first argument.
    let (kind, args) = if dispatch.may_check() {
        rt.task(entry.task)
    } else {
        // SAFETY: the host built the entry from the region's records.
        unsafe { levels::listed_task(&*desc, entry) }
    };
    // The block finds its task before it binds its fault record, whose load by one thread and
    // barrier then overlap that chain instead of coming first. Nothing before the binding can fail
    // with a report: a fault on a bad table would stop the kernel whatever came first.
    // SAFETY: forwarded from the caller.
    unsafe { bind_faults(desc) };
    levels::run_decoded(
        &rt,
        entry.task,
        entry.rank(),
        (kind, args),
        scratch,
        bytes,
        dispatch,
    );
}

/// The body of every region's one-launch, grid-barrier-per-level kernel.
///
/// # Safety
/// As for [`levels::run_levels`].
#[cfg(target_arch = "nvptx64")]
pub unsafe fn gpu_levels<D: Dispatch>(
    desc: *const crate::abi::RegionDesc,
    offsets: *const u32,
    tasks: *const u32,
    levels: u32,
    barrier: *mut u32,
    dispatch: &D,
) {
    let (scratch, bytes) = crate::shared::dynamic();
    // SAFETY: `barrier` is two words accessed only atomically; the rest is forwarded.
    unsafe {
        bind_faults(desc);
        let barrier = core::slice::from_raw_parts(barrier.cast::<crate::atomic::AtomicU32>(), 2);
        levels::run_levels(
            &*desc, offsets, tasks, levels, barrier, scratch, bytes, dispatch,
        )
    };
}
