//! Level-by-level execution: the global-barrier baselines the persistent scheduler is measured
//! against (Juggler's "global barriers" version).
//!
//! 1. [`run_listed`]: one block per task of one level; the host launches once per level, and the
//!    kernel boundary is the global barrier.
//! 2. [`run_levels`]: one persistent launch; blocks stride over each level's tasks, then meet at a
//!    software grid barrier ([`GridBarrier`]) before the next level.
//!
//! Both run the same task bodies through the region's [`Dispatch`] table.

use super::{Dispatch, Tables, WorkerView};
use crate::abi::{FLAG_CHECKED, ListedTask, RegionDesc, TASK_DONE, TASK_RUNNING};
use crate::arch;
use crate::atomic::{AtomicU32, Ordering::*, Scope};
use crate::block::{Block, GangWords};
use crate::gang;
use Scope::{Gpu, System};

/// A sense-reversing grid barrier over two words: an arrival count and a generation.
pub struct GridBarrier<'a> {
    count: &'a AtomicU32,
    generation: &'a AtomicU32,
}

impl<'a> GridBarrier<'a> {
    /// A barrier over `words[0]` (count) and `words[1]` (generation), both initially zero.
    pub fn new(words: &'a [AtomicU32]) -> Self {
        Self {
            count: &words[0],
            generation: &words[1],
        }
    }

    /// Waits until all `blocks` blocks arrive, or until `abort` is raised: a task that failed may
    /// have ended its block's thread 0, whose arrival would then never come. Every thread of every
    /// block calls it.
    pub fn wait(&self, blocks: u32, abort: Option<&AtomicU32>) {
        arch::sync_threads();
        if arch::thread_idx() == 0 {
            let generation = self.generation.load(Gpu, Relaxed);
            // Release: this block's work (ordered by the block barrier above) happens before the
            // last arriver's acquire. Acquire: the last arriver sees every block's work.
            if self.count.fetch_add(1, Gpu, AcqRel) == blocks - 1 {
                self.count.store(0, Gpu, Relaxed);
                // Release: publishes every block's work (acquired above) and the count reset.
                self.generation
                    .store(generation.wrapping_add(1), Gpu, Release);
            } else {
                // Acquire: pairs with the last arriver's release.
                while self.generation.load(Gpu, Acquire) == generation && !aborted(abort) {
                    arch::nanosleep(32);
                }
            }
        }
        arch::sync_threads();
    }
}

/// Whether the region's abort flag is raised (by a failed task, or the host).
fn aborted(abort: Option<&AtomicU32>) -> bool {
    // The host writes the flag from outside the GPU: system scope.
    abort.is_some_and(|a| a.load(System, Relaxed) != 0)
}

fn run_one<D: Dispatch>(
    rt: &WorkerView<'_>,
    task: u32,
    scratch: *mut u8,
    scratch_bytes: usize,
    dispatch: &D,
) {
    run_decoded(rt, task, 0, rt.task(task), scratch, scratch_bytes, dispatch);
}

/// Runs `task`, whose kind and arguments `rt.task(task)` gave as `decoded`, as rank `rank` of its
/// gang (0 for a one-block task). The blocks of a wide task's gang are one launch's, all resident
/// at once (the host sizes the launch to fit); rank 0 alone marks and counts the task for the
/// watchdog.
pub(super) fn run_decoded<D: Dispatch>(
    rt: &WorkerView<'_>,
    task: u32,
    rank: u32,
    (kind, args): (u32, &[u64]),
    scratch: *mut u8,
    scratch_bytes: usize,
    dispatch: &D,
) {
    // The task a failure names: the panic handler and the error record read the block's
    // current-task word, as under the persistent scheduler.
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the runtime words are this block's shared memory, valid for the kernel; the word is
    // only accessed atomically.
    unsafe { AtomicU32::from_ptr(crate::shared::runtime_words().add(crate::words::CURRENT)) }
        .store(task, Scope::Block, Relaxed);
    // SAFETY: the scratch is this block's own, as the callers guarantee.
    let mut block = unsafe { Block::new(task, arch::block_idx(), scratch, scratch_bytes) };
    // Where the gang's barrier tells this block's threads that the region was aborted: the block's
    // runtime words on the GPU, a word of this thread's on the host (one thread per block there).
    #[cfg(not(target_arch = "nvptx64"))]
    let host_words = AtomicU32::new(0);
    if dispatch.gangs() && dispatch.width(kind) > 1 {
        // Found here, not for every task: `runtime_words` is an out-of-line call.
        #[cfg(target_arch = "nvptx64")]
        let words = crate::shared::runtime_words()
            .cast_const()
            .cast::<AtomicU32>();
        #[cfg(not(target_arch = "nvptx64"))]
        let words = &raw const host_words;
        let gang = GangWords {
            rank,
            width: dispatch.width(kind),
            arrivals: &rt.gangs()[2 * task as usize + gang::ARRIVALS],
            abort: rt.abort().map_or(core::ptr::null(), core::ptr::from_ref),
            words,
        };
        // SAFETY: the task's gang words and the region's flag live for the launch, the words for
        // the body.
        block = unsafe { block.with_gang(gang) };
    }
    let state = rt
        .pending()
        .get(task as usize)
        .filter(|_| arch::thread_idx() == 0 && rank == 0);
    // Relaxed: read by the host watchdog alone, which names the tasks still running when the
    // completed count stops moving.
    if let Some(state) = state {
        state.store(TASK_RUNNING, Gpu, Relaxed);
    }
    dispatch.run(
        &block,
        kind,
        args,
        rt.arrays(),
        rt.flags() & FLAG_CHECKED != 0,
    );
    if let Some(state) = state {
        state.store(TASK_DONE, Gpu, Relaxed);
        // Relaxed: a progress count for the watchdog; nothing is published through it.
        rt.completed().fetch_add(1, Gpu, Relaxed);
    }
}

/// The kind and arguments of a listed task, read from its list entry rather than its record.
///
/// The words are found from `desc.args` and the entry alone: the argument table's slice in
/// [`WorkerView`] takes its length from the records' sentinel, a load the block would wait for
/// before its first argument.
///
/// # Safety
/// `entry` must be one the host built from the records of the region `desc` describes:
/// `entry.args..entry.end` lies in its argument table.
#[inline(always)]
pub(super) unsafe fn listed_task(desc: &RegionDesc, entry: ListedTask) -> (u32, &[u64]) {
    let len = entry.end.wrapping_sub(entry.args) as usize;
    // SAFETY: guaranteed by the caller. A table with words is never null; an empty one may be, and
    // its (empty) slice then starts at a dangling pointer. The choice depends on the descriptor
    // alone, so the table's address is loaded while the entry is.
    let args = unsafe {
        let table = desc.args as *const u64;
        let start = if table.is_null() {
            core::ptr::NonNull::dangling().as_ptr()
        } else {
            table.add(entry.args as usize)
        };
        core::slice::from_raw_parts(start, len)
    };
    (entry.kind(), args)
}

/// Runs task `list[block]` in block `block`.
///
/// # Safety
/// As for [`gpu_entry`](super::gpu_entry); `list` holds `grid_dim()` entries built from the
/// region's records.
pub unsafe fn run_listed<D: Dispatch>(
    desc: &RegionDesc,
    list: *const ListedTask,
    scratch: *mut u8,
    scratch_bytes: usize,
    dispatch: &D,
) {
    // SAFETY: guaranteed by the caller.
    let rt = unsafe { WorkerView::from_desc(desc) };
    // SAFETY: one entry per block, built from the region's records.
    let (entry, decoded) = unsafe {
        let entry = *list.add(arch::block_idx() as usize);
        (entry, listed_task(desc, entry))
    };
    run_decoded(
        &rt,
        entry.task,
        entry.rank(),
        decoded,
        scratch,
        scratch_bytes,
        dispatch,
    );
}

/// Runs every level in one launch: `tasks[offsets[l]..offsets[l + 1]]` is level `l`.
///
/// # Safety
/// As for [`gpu_entry`](super::gpu_entry); `offsets` has `levels + 1` entries indexing `tasks`,
/// `barrier` two zeroed words, and every block of the grid is resident.
#[allow(clippy::too_many_arguments)]
pub unsafe fn run_levels<D: Dispatch>(
    desc: &RegionDesc,
    offsets: *const u32,
    tasks: *const u32,
    levels: u32,
    barrier: &[AtomicU32],
    scratch: *mut u8,
    scratch_bytes: usize,
    dispatch: &D,
) {
    // SAFETY: guaranteed by the caller.
    let rt = unsafe { WorkerView::from_desc(desc) };
    let barrier = GridBarrier::new(barrier);
    let (block, blocks) = (arch::block_idx(), arch::grid_dim());
    for level in 0..levels as usize {
        // After a failure the remaining levels do not run. Threads may see the flag at different
        // levels; one that leaves ends, and the barriers of the others count it as arrived.
        if aborted(rt.abort()) {
            return;
        }
        // SAFETY: `offsets` has `levels + 1` entries.
        let (start, end) = unsafe { (*offsets.add(level), *offsets.add(level + 1)) };
        let mut k = start + block;
        while k < end {
            // SAFETY: `k < offsets[levels]`, within `tasks`.
            run_one(
                &rt,
                unsafe { *tasks.add(k as usize) },
                scratch,
                scratch_bytes,
                dispatch,
            );
            arch::sync_threads();
            k += blocks;
        }
        barrier.wait(blocks, rt.abort());
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    //! Both level-by-level entry points on host threads, one per block, small enough for Miri:
    //! every task reads what the tasks of earlier levels wrote with plain loads, so a grid barrier
    //! (or a level boundary) that did not order them would be a data race Miri reports.

    use std::vec::Vec;

    use super::{run_levels, run_listed};
    use crate::abi::{ArrayDesc, Counters, ListedTask, RegionDesc, TaskRecord};
    use crate::arch::host::{Lane, enter_lane};
    use crate::atomic::AtomicU32;
    use crate::block::Block;
    use crate::sched::Dispatch;

    /// Task `args[0]` writes `1 + Σ out[p]` over its parents `args[1..]` into `out[args[0]]`.
    struct Sum;

    impl Dispatch for Sum {
        fn run(&self, block: &Block, _: u32, args: &[u64], arrays: &[ArrayDesc], _: bool) {
            let out = arrays[0].ptr as *mut u64;
            if block.thread() == 0 {
                // SAFETY: every index is a task of the region, below `arrays[0].len`; a task's
                // parents ran in earlier levels, and it alone writes its own element.
                unsafe {
                    let sum: u64 = args[1..].iter().map(|&p| *out.add(p as usize)).sum();
                    *out.add(args[0] as usize) = 1 + sum;
                }
            }
        }
    }

    /// Levels `[0, 1] [2, 3] [4]`: 2 and 3 read both roots, 4 reads 2 and 3.
    const PARENTS: [&[u64]; 5] = [&[], &[], &[0, 1], &[0, 1], &[2, 3]];
    const LEVELS: [u32; 4] = [0, 2, 4, 5];
    /// What `out` holds once every level ran.
    const EXPECTED: [u64; 5] = [1, 1, 3, 3, 7];

    /// The tables `run_levels` and `run_listed` read through a [`RegionDesc`], kept alive by the
    /// caller for as long as the descriptor is used.
    struct Tables {
        tasks: Vec<TaskRecord>,
        args: Vec<u64>,
        arrays: Vec<ArrayDesc>,
        words: Vec<u32>,
        /// Each task's state, which the kernels mark for the host watchdog.
        pending: Vec<u32>,
        counters: Counters,
    }

    impl Tables {
        fn new(out: &mut [u64]) -> Self {
            let mut tasks = Vec::new();
            let mut args = Vec::new();
            for (t, parents) in PARENTS.iter().enumerate() {
                tasks.push(TaskRecord {
                    kind: 0,
                    args: args.len() as u32,
                });
                args.push(t as u64);
                args.extend_from_slice(parents);
            }
            tasks.push(TaskRecord {
                kind: u32::MAX,
                args: args.len() as u32,
            });
            let arrays = std::vec![ArrayDesc {
                ptr: out.as_mut_ptr() as u64,
                len: out.len() as u64,
            }];
            // Zeroed scheduler tables: CSR offsets (no children), rank, queue links, heads,
            // tails, locks and current tasks; more than any of them needs.
            let words = std::vec![0u32; 64];
            Self {
                tasks,
                args,
                arrays,
                words,
                pending: std::vec![0u32; PARENTS.len()],
                counters: Counters::default(),
            }
        }

        /// Task `t`'s entry in a one-task kernel's list, as the host builds it.
        fn listed(&self, t: u32) -> ListedTask {
            let (record, next) = (self.tasks[t as usize], self.tasks[t as usize + 1]);
            ListedTask {
                task: t,
                kind: record.kind,
                args: record.args,
                end: next.args,
            }
        }

        fn desc(&mut self, blocks: u32) -> RegionDesc {
            let words = self.words.as_mut_ptr() as u64;
            RegionDesc {
                n_tasks: PARENTS.len() as u32,
                n_workers: blocks,
                n_arrays: 1,
                tasks: self.tasks.as_ptr() as u64,
                args: self.args.as_ptr() as u64,
                arrays: self.arrays.as_ptr() as u64,
                offsets: words,
                pending: self.pending.as_mut_ptr() as u64,
                rank: words,
                next: words,
                head: words,
                tail: words,
                lock: words,
                current: words,
                counters: &raw mut self.counters as u64,
                ..RegionDesc::default()
            }
        }
    }

    fn lane(block: u32, blocks: u32) -> Lane {
        Lane {
            thread: 0,
            block_dim: 1,
            block,
            grid_dim: blocks,
            sm: block,
            group: None,
            gpu_threads: 0,
        }
    }

    #[test]
    fn one_launch_with_a_grid_barrier_runs_the_levels_in_order() {
        const BLOCKS: u32 = 2;
        let mut out = [0u64; 5];
        let mut tables = Tables::new(&mut out);
        let desc = tables.desc(BLOCKS);
        let tasks: Vec<u32> = (0..5).collect();
        let barrier = [AtomicU32::new(0), AtomicU32::new(0)];
        std::thread::scope(|s| {
            for block in 0..BLOCKS {
                let (desc, tasks, barrier) = (&desc, &tasks, &barrier);
                s.spawn(move || {
                    enter_lane(lane(block, BLOCKS));
                    let mut scratch = [0u128; 1];
                    // SAFETY: `desc` points to live tables, `LEVELS` has `levels + 1` entries
                    // indexing `tasks`, the barrier words are zero, every block runs at once, and
                    // the scratch is this block's own.
                    unsafe {
                        run_levels(
                            desc,
                            LEVELS.as_ptr(),
                            tasks.as_ptr(),
                            3,
                            barrier,
                            scratch.as_mut_ptr().cast(),
                            16,
                            &Sum,
                        )
                    };
                });
            }
        });
        assert_done(&tables);
        drop(tables);
        assert_eq!(out, EXPECTED);
    }

    /// Every task was marked done and counted, for the host watchdog.
    fn assert_done(tables: &Tables) {
        assert_eq!(tables.pending, [super::TASK_DONE; PARENTS.len()]);
        assert_eq!(tables.counters.completed, PARENTS.len() as u32);
    }

    /// One listed launch: a host thread per entry of `list`, all at once, each running
    /// `run_listed` as its block; returns when every block has.
    fn launch_listed<D: Dispatch + Sync>(desc: &RegionDesc, list: &[ListedTask], dispatch: &D) {
        let blocks = list.len() as u32;
        std::thread::scope(|s| {
            for block in 0..blocks {
                s.spawn(move || {
                    enter_lane(lane(block, blocks));
                    let mut scratch = [0u128; 1];
                    // SAFETY: `desc` points to live tables, `list` has one entry per block built
                    // from them, and the scratch is this block's own.
                    unsafe {
                        run_listed(
                            desc,
                            list.as_ptr(),
                            scratch.as_mut_ptr().cast(),
                            16,
                            dispatch,
                        )
                    };
                });
            }
        });
    }

    /// A wide task's gang of blocks in one listed launch: each rank writes its element, meets
    /// the others at the gang barrier, then reads theirs.
    struct Ranks;

    /// The gang's width.
    const GANG: u32 = 4;

    impl Dispatch for Ranks {
        fn gangs(&self) -> bool {
            true
        }

        fn width(&self, _: u32) -> u32 {
            GANG
        }

        fn run(&self, block: &Block, _: u32, _: &[u64], arrays: &[ArrayDesc], _: bool) {
            let out = arrays[0].ptr as *mut u64;
            let gang = block.gang();
            let rank = gang.rank() as usize;
            // SAFETY: rank `r` alone writes `out[r]` before the barrier and `out[GANG + r]`
            // after it; every rank reads the first `GANG` only after the barrier.
            unsafe {
                *out.add(rank) = rank as u64 + 1;
                gang.sync();
                let sum: u64 = (0..GANG as usize).map(|r| *out.add(r)).sum();
                *out.add(GANG as usize + rank) = sum;
            }
        }
    }

    #[test]
    fn one_listed_launch_runs_a_wide_task_on_its_gang() {
        let mut out = [0u64; 2 * GANG as usize];
        let mut tables = Tables::new(&mut out);
        // One task, its dependence counter and its two gang words.
        tables.pending = std::vec![0u32; 3];
        let mut desc = tables.desc(GANG);
        desc.n_tasks = 1;
        desc.flags |= crate::abi::FLAG_GANGS;
        let list: Vec<ListedTask> = (0..GANG)
            .map(|rank| ListedTask {
                kind: rank << crate::abi::LISTED_RANK_SHIFT,
                ..tables.listed(0)
            })
            .collect();
        assert_eq!(list[3].rank(), 3);
        assert_eq!(list[3].kind(), 0);
        // The gang's blocks all run at once, as one launch's resident blocks do.
        launch_listed(&desc, &list, &Ranks);
        // Rank 0 alone marks and counts the task; the gang's arrivals are its barrier's.
        assert_eq!(tables.pending, [super::TASK_DONE, 0, GANG]);
        assert_eq!(tables.counters.completed, 1);
        drop(tables);
        assert_eq!(out, [1, 2, 3, 4, 10, 10, 10, 10]);
    }

    #[test]
    fn one_launch_per_level_runs_one_task_per_block() {
        let mut out = [0u64; 5];
        let mut tables = Tables::new(&mut out);
        for level in LEVELS.windows(2) {
            let list: Vec<ListedTask> = (level[0]..level[1]).map(|t| tables.listed(t)).collect();
            let blocks = list.len() as u32;
            let desc = tables.desc(blocks);
            // The launch's end is the level boundary: the next level starts after every block.
            launch_listed(&desc, &list, &Sum);
        }
        assert_done(&tables);
        drop(tables);
        assert_eq!(out, EXPECTED);
    }
}
