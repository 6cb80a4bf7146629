//! Wide tasks: a task declared with `blocks = K` runs on a *gang* of `K` workers at once, each
//! running its body with its own rank, and the gang's members meet at a barrier of their own.
//!
//! The steps here are the protocol, one atomic step each, written once for the GPU, the CPU
//! backend and `loom` (`sched/loom_tests.rs` models them). The scheduler (`sched::pick`,
//! `sched::worker`) and the body's handle ([`Gang`](crate::block::Gang)) compose them; the design,
//! and why gangs form this way, is in `docs/scheduler.md` ("Wide tasks").
//!
//! * **Words.** One 128-byte line of *slots* for the whole region
//!   ([`Counters::gang`](crate::abi::Counters)): a mask of the slots that hold a forming gang, the
//!   number of slots the run may use, and the slots, each the wide task whose gang is forming
//!   there or [`EMPTY`]. Two words per task after the dependence counters
//!   (`pending[n_tasks + 2 * task]` and the next), [`JOINS`] and [`ARRIVALS`]: how many ranks have
//!   been handed out (the host starts it at 1: rank 0 is the poster's), and how many times the
//!   gang's members have arrived at its barrier.
//! * **Forming.** The worker that takes a wide task (it is ready: the worker acquired its parents
//!   as for any task) posts it into an empty slot ([`Slots::post`]) and runs it as rank 0. Any
//!   worker that looks for work first looks at the mask ([`Slots::join`]): it takes the next rank
//!   of a forming gang, and the one that takes the last rank empties its slot. A worker that takes
//!   a wide task while every slot is taken parks it and joins a forming gang instead.
//! * **Why it cannot deadlock.** At most `S` gangs form at once, and the host picks `S` so that
//!   `S × (K − 1)` is below the run's workers, `K` its widest gang ([`slots_for`]). The workers
//!   that wait in forming gangs are then never all of them: some worker runs a body (which ends),
//!   waits in a gang that has all its ranks (whose members all run, so it ends), or looks for
//!   work, and then joins a forming gang first. Every join brings a gang closer to full, so every
//!   gang fills. With more gangs forming at once they could each hold some workers while waiting
//!   for the rest.
//! * **Barrier.** A member arrives by one `fetch_add` on [`ARRIVALS`] and waits until the count
//!   reaches `width` times the barriers it has passed ([`passed`]). The count only grows: no
//!   generation word and no reset within a run.
//! * **End.** After its body every member arrives once more ([`arrive`]); the one whose arrival
//!   completes the count releases the task's children and counts it done, as a worker does for a
//!   one-block task. Its `AcqRel` arrival acquires every other member's body.

use crate::atomic::{
    AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
    Scope::Gpu,
};

/// A slot that holds no forming gang.
pub const EMPTY: u32 = u32::MAX;
/// A slot a poster has claimed and not yet filled (see [`Slots::post`]).
pub const RESERVED: u32 = u32::MAX - 1;
/// Offset of a task's join count in its pair of gang words.
pub const JOINS: usize = 0;
/// Offset of its arrival count.
pub const ARRIVALS: usize = 1;
/// The widest gang a task may declare (`blocks = K`): the runtime also checks `K` against the
/// workers of the run.
pub const MAX_WIDTH: u32 = 1024;
/// The initial value of a task's join count: rank 0 belongs to whoever posts it.
pub const JOINS_START: u32 = 1;

/// Words of the slot line: the mask, the slot count, then the slots.
pub const LINE_WORDS: usize = 32;
/// Index of the mask in the line.
pub const MASK: usize = 0;
/// Index of the number of slots the run may use (written by the host).
pub const COUNT: usize = 1;
/// Index of the first slot.
pub const FIRST: usize = 2;
/// The most slots a run may use.
pub const MAX_SLOTS: u32 = (LINE_WORDS - FIRST) as u32;

/// How many gangs may form at once in a run of `workers` workers whose widest gang has `widest`
/// blocks (`2..=workers`): the most `S`, up to [`MAX_SLOTS`], with `S × (widest − 1) < workers`,
/// so that the workers waiting in forming gangs are never all of them (see the module docs).
pub const fn slots_for(workers: u32, widest: u32) -> u32 {
    if widest < 2 || workers < widest {
        return 1;
    }
    let s = (workers - 1) / (widest - 1);
    if s > MAX_SLOTS { MAX_SLOTS } else { s }
}

/// The region's slot line.
#[derive(Clone, Copy)]
pub struct Slots<'a> {
    line: &'a [AtomicU32],
}

impl<'a> Slots<'a> {
    /// The slot line `line` ([`LINE_WORDS`] words).
    #[inline(always)]
    pub fn new(line: &'a [AtomicU32]) -> Self {
        debug_assert_eq!(line.len(), LINE_WORDS);
        Self { line }
    }

    /// Whether a gang may be forming (the mask is not empty): one `Acquire` load, which a worker
    /// that looks for work makes first.
    #[inline(always)]
    pub fn any(&self) -> bool {
        self.line[MASK].load(Gpu, Acquire) != 0
    }

    /// Posts the ready wide task `task` into an empty slot: `true` if it found one (the caller is
    /// rank 0), `false` if every slot holds a forming gang.
    ///
    /// Three steps: claim an empty slot (CAS to [`RESERVED`], whose acquire orders what follows
    /// after the `fetch_and` of the joiner that emptied it), set its bit in the mask, then store
    /// the task with `Release`. A joiner acquires the task from the slot, so it sees the bit set
    /// before it can take the last rank and clear it; and the store carries the task's inputs,
    /// which the poster acquired from the task's parents (release is cumulative). Setting the bit
    /// after the task is visible instead would let a joiner take the last rank and clear the bit
    /// first, leaving it set over an empty slot.
    #[inline(always)]
    pub fn post(&self, task: u32) -> bool {
        let count = self.line[COUNT].load(Gpu, Relaxed) as usize;
        for i in 0..count {
            let slot = &self.line[FIRST + i];
            if slot.compare_swap(EMPTY, RESERVED, Gpu, Acquire) == EMPTY {
                self.line[MASK].fetch_or(1 << i, Gpu, Relaxed);
                slot.store(task, Gpu, Release);
                return true;
            }
        }
        false
    }

    /// Takes a rank of a forming gang: `Some((task, slot index, rank))`, the rank taken through
    /// `join_one` (the task's join count and width). The taker of a gang's last rank empties its
    /// slot. `None`: no gang was forming, or the slots the mask showed were being emptied.
    #[inline(always)]
    pub fn join(&self, mut join_one: impl FnMut(u32) -> Option<(u32, bool)>) -> Option<(u32, u32)> {
        let mut mask = self.line[MASK].load(Gpu, Acquire);
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let task = self.line[FIRST + i].load(Gpu, Acquire);
            if task == EMPTY || task == RESERVED {
                continue;
            }
            if let Some((rank, last)) = join_one(task) {
                if last {
                    // Only this joiner took the last rank, and no one posts into the slot while it
                    // holds the task; the poster set the bit before the task was visible here.
                    // The bit goes first: a poster that finds the slot empty (its CAS acquires
                    // this `Release` store) sets the bit after it is cleared.
                    self.line[MASK].fetch_and(!(1 << i), Gpu, Relaxed);
                    self.line[FIRST + i].store(EMPTY, Gpu, Release);
                }
                return Some((task, rank));
            }
        }
        None
    }
}

/// Takes the next rank of a gang of `width` ranks whose join count is `joins`: `Some((rank,
/// last))`, `last` when it was the last rank; `None` when every rank was taken (the caller read
/// a slot about to be emptied: it changes nothing the gang reads).
#[inline(always)]
pub fn take_rank(joins: &AtomicU32, width: u32) -> Option<(u32, bool)> {
    let rank = joins.fetch_add(1, Gpu, Relaxed);
    (rank < width).then_some((rank, rank + 1 == width))
}

/// Arrives at the gang's counter `arrivals`: the count before this arrival. `AcqRel`: the
/// arrival publishes this member's body (after the block barrier that ends it) and acquires the
/// arrivals before it.
#[inline(always)]
pub fn arrive(arrivals: &AtomicU32) -> u32 {
    arrivals.fetch_add(1, Gpu, AcqRel)
}

/// Whether every member of a gang of `width` has arrived at barrier number `round` (1 for the
/// first): the count has reached `width * round`. `Acquire`, so that the caller sees what the
/// others wrote before arriving.
#[inline(always)]
pub fn passed(arrivals: &AtomicU32, width: u32, round: u32) -> bool {
    arrivals.load(Gpu, Acquire) >= width * round
}

/// Whether an arrival that found `before` on the counter was the last of the gang's end (its
/// members have each passed `rounds` barriers before it): that member releases the task.
#[inline(always)]
pub fn last_to_end(before: u32, width: u32, rounds: u32) -> bool {
    before + 1 == width * (rounds + 1)
}
