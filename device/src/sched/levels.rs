//! Level-by-level execution: the global-barrier baselines the persistent scheduler is measured
//! against (Juggler's "global barriers" version).
//!
//! 1. [`run_listed`]: one block per task of one level; the host launches once per level, and the
//!    kernel boundary is the global barrier.
//! 2. [`run_levels`]: one persistent launch; blocks stride over each level's tasks, then meet at a
//!    software grid barrier ([`GridBarrier`]) before the next level.
//!
//! Both run the same task bodies through the region's [`Dispatch`] table.

use super::{Dispatch, Runtime, Tables};
use crate::abi::{FLAG_CHECKED, RegionDesc};
use crate::arch;
use crate::atomic::{AtomicU32, Ordering::*, Scope::Gpu};
use crate::block::Block;

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

    /// Waits until all `blocks` blocks arrive. Every thread of every block calls it.
    pub fn wait(&self, blocks: u32) {
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
                while self.generation.load(Gpu, Acquire) == generation {
                    arch::nanosleep(32);
                }
            }
        }
        arch::sync_threads();
    }
}

fn run_one<D: Dispatch>(
    rt: &Runtime<'_>,
    task: u32,
    scratch: *mut u8,
    scratch_bytes: usize,
    dispatch: &D,
) {
    let (kind, args) = rt.task(task);
    // SAFETY: the scratch is this block's own, as the callers guarantee.
    let block = unsafe { Block::new(task, arch::block_idx(), scratch, scratch_bytes) };
    dispatch.run(
        &block,
        kind,
        args,
        rt.arrays(),
        rt.flags() & FLAG_CHECKED != 0,
    );
}

/// Runs task `list[block]` in block `block`.
///
/// # Safety
/// As for [`gpu_entry`](super::gpu_entry); `list` holds `grid_dim()` valid task indices.
pub unsafe fn run_listed<D: Dispatch>(
    desc: &RegionDesc,
    list: *const u32,
    scratch: *mut u8,
    scratch_bytes: usize,
    dispatch: &D,
) {
    // SAFETY: guaranteed by the caller.
    let rt = unsafe { Runtime::from_desc(desc) };
    // SAFETY: one entry per block.
    let task = unsafe { *list.add(arch::block_idx() as usize) };
    run_one(&rt, task, scratch, scratch_bytes, dispatch);
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
    let rt = unsafe { Runtime::from_desc(desc) };
    let barrier = GridBarrier::new(barrier);
    let (block, blocks) = (arch::block_idx(), arch::grid_dim());
    for level in 0..levels as usize {
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
        barrier.wait(blocks);
    }
}
