//! C and D, the release: the finished task's children are released, the freed ones placed by the
//! policy (one kept as the leader's continuation, the others pushed). One fence per releasing
//! thread, before its first decrement (or, with only `SOLE_PARENT` children, before its first
//! push): see `deps` for why no second fence is needed before the pushes.

use super::leader::{Leader, row, running};
use super::queue::COUNTED;
use super::stream;
use super::tables::Tables;
use super::{at, deps, policy};
use crate::arch;
use crate::atomic::{AtomicU32, Scope::Gpu, fence};
use crate::words;
use crate::words::command;

/// Tasks with at most this many children have them released by the leader alone, which saves two
/// block barriers per task; wider fan-outs are released by all threads in parallel.
pub(super) const LEADER_FANOUT: usize = 8;

/// C, for a task with 1 to `LEADER_FANOUT` children: the leader alone releases them (the first
/// two entries of the row prefetched in `row0` and `row1`), pushes the ones it does not keep, and
/// returns the one it keeps as its continuation (`NONE`: none). Inlined into the loop, as the
/// scheduler's other steps are: only the body is out of line (see `run_body`).
#[inline(always)]
pub(super) fn release_narrow<'a>(
    rt: &impl Tables<'a>,
    me: Leader,
    n: u32,
    row0: u32,
    row1: u32,
    queued: bool,
) -> u32 {
    let n = n as usize;
    // Read before the fence, which the decrements wait for anyway.
    let pending = rt.pending();
    if policy::planned(rt.policy()) {
        return release_planned(rt, me, n, row0, row1, pending);
    }
    // Entry `i < n` of the row: prefetched, or read now.
    let entry = |i: usize| match i {
        0 => row0,
        1 => row1,
        // SAFETY: callers pass `i < n`, the row's length.
        _ => unsafe { *at(row(rt, me.words), i) },
    };
    let counted = (0..n).any(|i| deps::counted(entry(i)));
    if counted {
        fence(Gpu);
    }
    // The prefetched entries' decrements are issued together, so that their round trips overlap.
    let before = deps::decrement_pair(pending, row0, (n > 1).then_some(row1));
    let mut freed = [0u32; LEADER_FANOUT];
    // Bit `k`: `freed[k]` has other parents, whose results it must acquire to run here.
    let mut counted_freed = 0u32;
    let mut count = 0;
    for i in 0..n {
        let e = entry(i);
        let was = match i {
            0 => before.0,
            1 => before.1,
            _ => deps::decrement(pending, e),
        };
        if deps::frees(was) {
            // SAFETY: `count` < `n` <= `LEADER_FANOUT`.
            unsafe { *freed.get_unchecked_mut(count) = deps::child(e) };
            counted_freed |= u32::from(deps::counted(e)) << count;
            count += 1;
        }
    }
    let task = running(me.words);
    let child = |i: usize| {
        // SAFETY: `place` asks only for `i < count <= LEADER_FANOUT`.
        unsafe { *freed.get_unchecked(i) }
    };
    let (keep, base) = rt.place(task, count, child, queued, &me);
    if !counted && count > usize::from(keep != command::NONE) {
        // Only sole-parent children, some pushed: the fence that releases the body through their
        // queue links.
        fence(Gpu);
    }
    let mut kept = command::NONE;
    let mut pushed = 0;
    for (i, &child) in freed[..count].iter().enumerate() {
        let counted = counted_freed & (1 << i) != 0;
        if i as u32 == keep {
            if counted {
                deps::acquire(rt.pending(), child);
            }
            kept = child;
        } else {
            let link = child | if counted { COUNTED } else { 0 };
            let to = rt.target(base, pushed, child, task, me.worker());
            rt.queues().push_fenced(to, link);
            pushed += 1;
        }
    }
    kept
}

/// C under a planned policy, for a task with 1 to `LEADER_FANOUT` children: every child is in
/// some worker's list already, so nothing is freed or placed; the counted children (on other
/// workers) are released, behind one fence, by reductions whose results nobody waits for, and the
/// others (this worker's) by the barrier that ended the body. Apart from [`release_narrow`], whose
/// freed list the leader would otherwise fill instruction by instruction for nothing: the leader
/// runs the hop alone, one dependent instruction after another, so the hop's length is its
/// instruction count (`bench/results/hop-stamps-h200/`).
#[inline(always)]
fn release_planned<'a>(
    rt: &impl Tables<'a>,
    me: Leader,
    n: usize,
    row0: u32,
    row1: u32,
    pending: &[AtomicU32],
) -> u32 {
    let first = [row0, row1];
    let mut fenced = false;
    for i in 0..n {
        let e = match first.get(i) {
            Some(&e) => e,
            // SAFETY: `i < n`, the row's length.
            None => unsafe { *at(row(rt, me.words), i) },
        };
        if deps::counted(e) {
            if !core::mem::replace(&mut fenced, true) {
                fence(Gpu);
            }
            deps::release_only(pending, e);
        }
    }
    command::NONE
}

/// C and D, for a task with more than `LEADER_FANOUT` children: every thread of the block
/// releases and pushes its share. Returns, in the leader, the child it keeps as its continuation
/// (`NONE`: none).
#[inline(always)]
pub(super) fn release_wide<'a>(rt: &impl Tables<'a>, me: Leader, queued: bool) -> u32 {
    let words = me.words;
    let (tid, threads) = (arch::thread_idx() as usize, arch::block_dim() as usize);
    let planned = policy::planned(rt.policy());
    let task = running(words);
    // One child per thread, coalesced over the CSR row. A thread with any entry fences once before
    // its first decrement; that fence also covers its later pushes, overflow or listed (D).
    let mut fenced = false;
    let children = row(rt, words);
    let mut e = tid;
    while e < children.len() {
        // SAFETY: `e < children.len()`.
        let entry = unsafe { *at(children, e) };
        if !core::mem::replace(&mut fenced, true) {
            fence(Gpu);
        }
        if let Some(child) = deps::release(rt.pending(), entry).filter(|_| !planned) {
            // The list holds queue links: the child, flagged if it has other parents.
            let link = child | if deps::counted(entry) { COUNTED } else { 0 };
            let slot = words.fetch_add(words::FREED, 1) as usize;
            if slot < words::LIST_CAP {
                words.store(words::LIST + slot, link);
            } else {
                push_unlisted(rt, me, slot as u32, link);
            }
        }
        e += threads;
    }
    arch::sync_threads();
    let freed = (words.load(words::FREED) as usize).min(words::LIST_CAP);
    if freed == 0 {
        return command::NONE;
    }
    let kept = if tid == 0 {
        place_listed(rt, me, freed as u32, queued)
    } else {
        command::NONE
    };
    // D: every thread pushes its share of the rest. A thread that fenced in C (after the body's
    // barrier) is covered; another fences once first, so that a `SOLE_PARENT` child's link
    // releases the body. Counted children's other parents reach the consumer through its acquire
    // of the counter, not through this thread.
    arch::sync_threads();
    let keep = words.load(words::KEEP) as usize;
    let base = words.load(words::BASE);
    let mut i = tid;
    while i < freed {
        if i != keep {
            if !core::mem::replace(&mut fenced, true) {
                fence(Gpu);
            }
            let rank = (i - usize::from(keep < i)) as u32;
            let link = words.load(words::LIST + i);
            let to = rt.target(base, rank, link & !COUNTED, task, me.worker());
            rt.queues().push_fenced(to, link);
        }
        i += threads;
    }
    kept
}

/// C and D for a streamed region's cross edges ([`stream`]), by the leader, after the CSR row's
/// release: closes the finished task's list, releases every child on it (all counted), and pushes
/// the freed ones where the policy sends a pushed child. Out of line: a region that does not
/// stream never calls it.
#[inline(never)]
pub(super) fn release_streamed<'a>(rt: &impl Tables<'a>, me: Leader) {
    let Some(stream) = rt.stream() else {
        return;
    };
    let stream = &stream;
    let task = running(me.words);
    // The body's release (the row's release may not have fenced: no counted child, no push).
    fence(Gpu);
    let mut e = stream.close(task);
    if e != stream::OPEN {
        // The close acquired the host's writes of the children's batches: this fence makes the
        // pushes below release them too, for a worker that pops a child reads its record before
        // it acquires the child's counter (`Pick::take`).
        fence(Gpu);
    }
    // The freed children go out as a row's pushes do (`place`): the `i`-th to `target(base, i)`.
    // Their count is known only at the list's end: the base takes one push, and the rest are
    // counted after (grr's and lrr's cursors). Asking a base per child with index 0 put every
    // child of a local-first worker on its own queue, one after the other.
    let mut base = None;
    let mut pushed = 0;
    while e != stream::OPEN {
        let next = stream.next(e);
        if let Some(child) = stream::release(stream, rt.pending(), e) {
            let base =
                *base.get_or_insert_with(|| policy::base(rt.policy(), rt, 1, &me) % rt.workers());
            let to = rt.target(base, pushed, child, task, me.worker());
            rt.queues().push_fenced(to, child | COUNTED);
            pushed += 1;
        }
        e = next;
    }
    if pushed > 1 {
        let _ = policy::base(rt.policy(), rt, pushed - 1, &me);
    }
}

/// The wide fan-out's placement, by the leader: which of the `freed` children in the list it
/// keeps (`KEEP`, and the child itself, returned, acquired if it has other parents) and where the
/// others go (`BASE`).
#[inline(always)]
fn place_listed<'a>(rt: &impl Tables<'a>, me: Leader, freed: u32, queued: bool) -> u32 {
    let words = me.words;
    let child = |i: usize| words.load(words::LIST + i) & !COUNTED;
    let (keep, base) = rt.place(running(words), freed as usize, child, queued, &me);
    let mut kept = command::NONE;
    if keep != command::NONE {
        let link = words.load(words::LIST + keep as usize);
        kept = link & !COUNTED;
        if link & COUNTED != 0 {
            deps::acquire(rt.pending(), kept);
        }
    }
    words.store(words::KEEP, keep);
    words.store(words::BASE, base);
    kept
}

/// A freed child beyond the list's capacity, pushed by the thread that freed it (after its fence),
/// as push number `slot` from this worker.
#[cold]
#[inline(never)]
fn push_unlisted<'a>(rt: &impl Tables<'a>, me: Leader, slot: u32, link: u32) {
    let worker = me.worker();
    let to = rt.target(worker, slot, link & !COUNTED, running(me.words), worker);
    rt.queues().push_fenced(to, link);
}

/// The placement steps, over any way of reaching the tables (see [`Tables`]): the policy's hooks
/// (`policy`), through its table.
pub(super) trait Place<'a>: Tables<'a> {
    /// Which of `freed` children (read through `child`) of `task` the leader keeps as its
    /// continuation (`NONE` for none), and the first target worker of the others. `queued`: whether
    /// the worker's own queue looked non-empty (read before the body, so that its load is off the
    /// hop's critical path; a task pushed meanwhile waits for one continuation more).
    #[inline(always)]
    fn place(
        &self,
        task: u32,
        freed: usize,
        child: impl Fn(usize) -> u32,
        queued: bool,
        me: &Leader,
    ) -> (u32, u32) {
        let p = self.policy();
        let keep = match freed {
            0 => command::NONE,
            _ => policy::keep(p, self, task, freed, child, queued, me),
        };
        let pushes = freed as u32 - u32::from(keep != command::NONE);
        let base = match pushes {
            0 => 0,
            _ => policy::base(p, self, pushes, me),
        };
        (keep, base % self.workers())
    }

    /// The queue of `child`, the `i`-th pushed child of `task`, counting from `base`.
    #[inline(always)]
    fn target(&self, base: u32, i: u32, child: u32, task: u32, worker: u32) -> u32 {
        policy::target(self.policy(), self, (base, i), child, task, worker)
    }
}

impl<'a, T: Tables<'a>> Place<'a> for T {}
