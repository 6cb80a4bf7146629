//! SM-aware workers: the filling-retreating scheme of the SM-centric transformation (Wu et al.,
//! ICS'15), on top of the persistent workers.
//!
//! 1. The host launches as many blocks as can be resident at once (SMs × occupancy): the block
//!    scheduler puts a block wherever one still fits, so every SM gets its full share (*filling*).
//! 2. At kernel entry thread 0 of each block reads `%smid` and takes the next rank on that SM with
//!    one atomic add on the SM's slot counter ([`claim`]).
//! 3. A block on an SM outside the region's set, or whose rank is `per_sm` or more, returns before
//!    touching any queue (*retreating*), once every worker of the set is claimed: until then it
//!    holds its place, so that the grid's later blocks can only land on the set's SMs. The others become worker
//!    `(sm - first) * per_sm + rank`: worker ids are dense in `0..len * per_sm`, exactly the
//!    `n_workers` the queues are sized for, and worker `w` runs on SM `first + w / per_sm`.
//!
//! The scheme relies on the GPU being free: an SM held by another kernel may get no block (or
//! fewer than `per_sm`), and then the workers of its empty slots never run. Their queues are not
//! drained, the completed count stops, and the host's watchdog reports a stall instead of a hang.
//! Filling must also end before the first block retreats (the paper never saw otherwise; the
//! blocks here retreat only after copying the array table, which gives the block scheduler a
//! head start). Two SM-aware launches filling at once could break that, so the host lets one
//! SM-aware launch fill at a time (it watches the slot counters). `%smid` is taken once: taskweave kernels request no preemption, which is what
//! could move a block.

use crate::atomic::{AtomicU32, Ordering::Relaxed, Scope::Gpu};

/// The worker id a block on SM `sm` takes, or `None` when it retreats: the SM is outside
/// `first..first + len`, outside `slots` (one counter per SM), or already has `per_sm` workers.
#[inline(always)]
pub fn claim(slots: &[AtomicU32], sm: u32, first: u32, len: u32, per_sm: u32) -> Option<u32> {
    let index = sm.wrapping_sub(first);
    if index >= len {
        return None;
    }
    // Relaxed: the counter only hands out distinct ranks; nothing is published through it.
    let rank = slots.get(sm as usize)?.fetch_add(1, Gpu, Relaxed);
    (rank < per_sm).then_some(index * per_sm + rank)
}

/// The calling block's worker id: its block index by default, otherwise the one it [`claim`]s on
/// its SM, or `None` when it must retreat. Every thread of the block calls it and gets the same
/// answer; it ends with a block barrier when the region uses SM-aware workers.
///
/// # Safety
/// `desc` must be the launch's descriptor, with `sm_slots` valid for `sm_count` words when
/// `per_sm` is set; `words` must be the block's runtime words, before the worker loop starts.
#[cfg(target_arch = "nvptx64")]
pub unsafe fn worker_of_block(desc: &crate::abi::RegionDesc, words: &[AtomicU32]) -> Option<u32> {
    use crate::arch;
    use crate::atomic::Scope::Block;
    /// Where thread 0 hands the claim to the block: a word the leader writes only after the loop's
    /// first barrier, which every thread passes after reading the claim.
    const CLAIMED: usize = crate::words::BASE;
    const RETREAT: u32 = u32::MAX;
    if desc.per_sm == 0 {
        return Some(arch::block_idx());
    }
    if arch::thread_idx() == 0 {
        // SAFETY: the caller vouches for `sm_slots`: `sm_count` counters and, after them, the
        // count of workers claimed so far; all only accessed atomically.
        let (slots, claimed) = unsafe {
            let table = desc.sm_slots as *const AtomicU32;
            (
                core::slice::from_raw_parts(table, desc.sm_count as usize),
                &*table.add(desc.sm_count as usize),
            )
        };
        let worker = claim(
            slots,
            arch::sm_id(),
            desc.sm_first,
            desc.sm_len,
            desc.per_sm,
        );
        match worker {
            Some(_) => {
                claimed.fetch_add(1, Gpu, Relaxed);
            }
            None => {
                // Linger until every worker is claimed: a block that left at once would free its
                // SM for the next block of the grid, which the block scheduler may send there
                // again, so that the grid could run out with slots of the set still empty. Held
                // here, the grid's later blocks can only go to the set's SMs. The abort flag ends
                // the wait if the set can never fill.
                let workers = desc.sm_len * desc.per_sm;
                // SAFETY: `abort` is the launch's flag, live for the kernel (see `RegionDesc`).
                let abort = (desc.abort != 0)
                    .then(|| unsafe { AtomicU32::from_ptr(desc.abort as *mut u32) });
                while claimed.load(Gpu, Relaxed) < workers
                    && !abort.is_some_and(|a| a.load(crate::atomic::Scope::System, Relaxed) != 0)
                {
                    arch::nanosleep(1000);
                }
            }
        }
        words[CLAIMED].store(worker.unwrap_or(RETREAT), Block, Relaxed);
    }
    arch::sync_threads();
    let worker = words[CLAIMED].load(Block, Relaxed);
    (worker != RETREAT).then_some(worker)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn blocks_fill_every_sm_of_the_set_and_the_rest_retreat() {
        // Four SMs, the set 1..3, two workers per SM, three blocks arriving on each SM.
        let slots: Vec<AtomicU32> = (0..4).map(|_| AtomicU32::new(0)).collect();
        let mut workers = Vec::new();
        for _ in 0..3 {
            for sm in 0..4 {
                if let Some(w) = claim(&slots, sm, 1, 2, 2) {
                    assert_eq!(w / 2 + 1, sm, "worker {w} runs on SM {sm}");
                    workers.push(w);
                }
            }
        }
        workers.sort_unstable();
        assert_eq!(workers, [0, 1, 2, 3]);
        // Blocks outside the set never take a rank.
        assert_eq!(slots[0].load(Gpu, Relaxed), 0);
        assert_eq!(slots[3].load(Gpu, Relaxed), 0);
        // An SM id past the table retreats too.
        assert_eq!(claim(&slots, 9, 0, 10, 1), None);
    }
}
