//! The leader's state between rounds, and the task record it hands its block.

use super::tables::Tables;
use crate::abi::WorkerStats;
use crate::arch;
use crate::atomic::{AtomicU32, Ordering::Relaxed, Scope::Gpu};
use crate::words::command;
use crate::words::{self, Words};

/// A task's entry in the tables, as the leader hands it to its block through the runtime words.
#[derive(Clone, Copy, Default)]
pub(super) struct Record {
    pub kind: u32,
    pub args: u32,
    pub args_end: u32,
    pub row: u32,
    pub row_end: u32,
}

impl Record {
    /// Hands the record to the block (before the barrier that starts the task).
    #[inline(always)]
    pub fn store(self, words: Words) {
        words.store(words::KIND, self.kind);
        words.store(words::ARGS, self.args);
        words.store(words::ARGS_END, self.args_end);
        words.store(words::ROW, self.row);
        words.store(words::ROW_END, self.row_end);
    }
}

/// The leader's state between rounds. The queue cursor, which the hop needs at once, stays in a
/// register; the rest (its worker index, the completions not yet counted, the LRR cursor, the
/// victim generator, the statistics) lives in the block's runtime words, so that the loop holds
/// almost no register across the task body (see `docs/scheduler.md`, "The worker loop"). Only the leader thread
/// writes those words, and only it reads them but `WORKER`.
#[derive(Clone, Copy)]
pub(super) struct Leader<'w> {
    pub head: u32,
    pub words: Words<'w>,
}

/// Words of the statistics image at [`words::STATS`], in [`WorkerStats`]' layout.
pub(super) const TASKS: usize = words::STATS;
pub(super) const IDLE_POLLS: usize = words::STATS + 1;
pub(super) const STEALS: usize = words::STATS + 2;
pub(super) const CONTINUATIONS: usize = words::STATS + 3;
pub(super) const BUSY_LO: usize = words::STATS + 4;
pub(super) const BUSY_HI: usize = words::STATS + 5;
/// Where the clock stood when the running body started (its low 32 bits).
pub(super) const STARTED: usize = words::STATS + 6;

impl<'w> Leader<'w> {
    /// The leader of `worker`, its queue cursor at `head`; clears its words. The block must pass a
    /// barrier before another thread reads `WORKER`.
    pub fn new(worker: u32, head: u32, words: Words<'w>) -> Self {
        let me = Self { head, words };
        for w in words::DONE..words::STATS + 8 {
            me.set(w, 0);
        }
        me.set(words::WORKER, worker);
        me.set(words::AHEAD, command::NONE);
        me.set(words::PARKED, command::NONE);
        me.set(words::GANG, command::NONE);
        me.set(words::LRR, worker);
        me.set(words::RNG, worker.wrapping_mul(0x9E37_79B9) | 1);
        me
    }

    /// The worker this block is.
    #[inline(always)]
    pub fn worker(&self) -> u32 {
        self.get(words::WORKER)
    }

    #[inline(always)]
    pub fn get(&self, word: usize) -> u32 {
        // Only this thread writes the leader's words.
        self.words.load(word)
    }

    #[inline(always)]
    pub fn set(&self, word: usize, value: u32) {
        self.words.store(word, value);
    }

    #[inline(always)]
    pub fn add(&self, word: usize, value: u32) {
        self.set(word, self.get(word).wrapping_add(value));
    }

    /// The completions not yet counted, now taken.
    #[inline(always)]
    pub fn take_done(&self) -> u32 {
        let done = self.get(words::DONE);
        if done > 0 {
            self.set(words::DONE, 0);
        }
        done
    }

    /// Adds the locally counted completions to the global count.
    #[inline(always)]
    pub fn flush(&self, completed: &AtomicU32) {
        let done = self.take_done();
        if done > 0 {
            // Relaxed: the count only tells idle workers when to exit.
            completed.fetch_add(done, Gpu, Relaxed);
        }
    }

    /// Adds the body that ran from `STARTED` to `ended` (the clock's low 32 bits) to the time spent
    /// in bodies: a body of 2^32 cycles or more (two seconds) is counted modulo 2^32. The high
    /// word is read only when the low one carries: each word read here is a shared-memory round
    /// trip on the leader's path.
    #[inline(always)]
    pub fn add_busy(&self, ended: u32) {
        let ticks = ended.wrapping_sub(self.get(STARTED));
        let (lo, carry) = self.get(BUSY_LO).overflowing_add(ticks);
        self.set(BUSY_LO, lo);
        if carry {
            self.add(BUSY_HI, 1);
        }
    }

    /// Counts one finished task among those not yet added to the global count, and adds them to
    /// `completed` once there are `every`: the count is read once and kept in a register.
    #[inline(always)]
    pub fn count_done(&self, completed: &AtomicU32, every: u32) {
        let done = self.get(words::DONE) + 1;
        if done >= every {
            self.set(words::DONE, 0);
            // Relaxed: the count only tells idle workers when to exit.
            completed.fetch_add(done, Gpu, Relaxed);
        } else {
            self.set(words::DONE, done);
        }
    }

    /// The statistics so far.
    pub fn stats(&self) -> WorkerStats {
        WorkerStats {
            tasks: self.get(TASKS),
            idle_polls: self.get(IDLE_POLLS),
            steals: self.get(STEALS),
            continuations: self.get(CONTINUATIONS),
            busy_ticks: u64::from(self.get(BUSY_HI)) << 32 | u64::from(self.get(BUSY_LO)),
            sm: arch::sm_id(),
            reserved: 0,
        }
    }

    /// A xorshift step, for picking victims.
    pub fn random(&self) -> u32 {
        let mut rng = self.get(words::RNG);
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        self.set(words::RNG, rng);
        rng
    }
}

/// The length of the running task's CSR row, from the record the leader handed over.
#[inline(always)]
pub(super) fn row_len(words: Words) -> u32 {
    words.load(words::ROW_END) - words.load(words::ROW)
}

/// The running task's CSR row.
#[inline(always)]
pub(super) fn row<'a>(rt: &impl Tables<'a>, words: Words) -> &'a [u32] {
    let (row, end) = (
        words.load(words::ROW) as usize,
        words.load(words::ROW_END) as usize,
    );
    // SAFETY: the record's bounds come from `offsets`, whose entries index `children`; the row is
    // published with its task.
    unsafe { rt.children().range(row..end) }
}

/// The running task (after the barrier that starts it).
#[inline(always)]
pub(super) fn running(words: Words) -> u32 {
    words.load(words::CURRENT)
}
