//! Wide tasks: a task declared with `blocks = K` runs on a *gang* of `K` workers at once, each
//! running its body with its own rank, and the gang's members meet at a barrier of their own.
//!
//! The steps here are the protocol, one atomic step each, written once for the GPU, the CPU
//! backend and `loom` (`sched/loom_tests.rs` models them). The scheduler (`sched::pick`,
//! `sched::worker`) and the body's handle ([`Gang`](crate::block::Gang)) compose them; the design,
//! and why gangs form this way, is in `docs/scheduler.md` ("Wide tasks").
//!
//! * **Words.** One *slot* for the whole region ([`Counters::gang`](crate::abi::Counters)): the
//!   wide task whose gang is forming, or [`EMPTY`]. Two words per task after the dependence
//!   counters (`pending[n_tasks + 2 * task]` and the next), [`JOINS`] and [`ARRIVALS`]: how many
//!   ranks have been handed out (the host starts it at 1: rank 0 is the poster's), and how many
//!   times the gang's members have arrived at its barrier.
//! * **Forming.** The worker that takes a wide task (it is ready: the worker acquired its parents
//!   as for any task) posts it into the empty slot ([`post`]) and runs it as rank 0. Any worker
//!   that looks for work first looks at the slot ([`join`]): it takes the next rank, and the one
//!   that takes the last rank empties the slot. A worker that takes a wide task while the slot is
//!   taken parks it and joins the forming gang instead.
//! * **Why it cannot deadlock.** One gang forms at a time. Its members wait only at its barrier;
//!   every other worker either runs a body (which ends), waits in a formed gang (whose members all
//!   run, so it ends), or looks for work, and then joins the forming gang first. So a gang of at
//!   most as many ranks as there are workers always fills. Two gangs forming at once could each
//!   hold half the workers, waiting for the other half.
//! * **Barrier.** A member arrives by one `fetch_add` on [`ARRIVALS`] and waits until the count
//!   reaches `width` times the barriers it has passed ([`passed`]). The count only grows: no
//!   generation word and no reset within a run.
//! * **End.** After its body every member arrives once more ([`arrive`]); the one whose arrival
//!   completes the count releases the task's children and counts it done, as a worker does for a
//!   one-block task. Its `AcqRel` arrival acquires every other member's body.

use crate::atomic::{
    AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed},
    Scope::Gpu,
};

/// The slot holds no forming gang.
pub const EMPTY: u32 = u32::MAX;
/// Offset of a task's join count in its pair of gang words.
pub const JOINS: usize = 0;
/// Offset of its arrival count.
pub const ARRIVALS: usize = 1;
/// The widest gang a task may declare (`blocks = K`): the runtime also checks `K` against the
/// workers of the run.
pub const MAX_WIDTH: u32 = 1024;

/// The initial value of a task's join count: rank 0 belongs to whoever posts it.
pub const JOINS_START: u32 = 1;

/// Posts the ready wide task `task` as the forming gang: `true` if the slot was empty and now holds
/// it (the caller is rank 0), `false` if another gang is forming.
///
/// `Release` (with the `Acquire` of [`join`]): a joiner runs the body on the task's inputs, which
/// the poster acquired from the task's parents; release is cumulative, so the inputs are visible
/// to whoever reads the slot.
#[inline(always)]
pub fn post(slot: &AtomicU32, task: u32) -> bool {
    slot.compare_swap(EMPTY, task, Gpu, AcqRel) == EMPTY
}

/// The forming gang, if any: `Some(task)` from the slot, read with `Acquire` (see [`post`]).
#[inline(always)]
pub fn forming(slot: &AtomicU32) -> Option<u32> {
    let task = slot.load(Gpu, Acquire);
    (task != EMPTY).then_some(task)
}

/// Takes a rank of the forming gang `task`, of `width` ranks, whose join count is `joins`:
/// `Some(rank)` when one was left. The taker of the last rank empties the slot, which then stays
/// empty until the next [`post`]. A `None` means the caller read a slot about to be emptied:
/// it takes no rank and changes nothing the gang reads.
#[inline(always)]
pub fn join(slot: &AtomicU32, joins: &AtomicU32, width: u32) -> Option<u32> {
    let rank = joins.fetch_add(1, Gpu, Relaxed);
    if rank >= width {
        return None;
    }
    if rank == width - 1 {
        // Only this joiner took the last rank, and no one posts while the slot holds the task.
        slot.store(EMPTY, Gpu, Relaxed);
    }
    Some(rank)
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
