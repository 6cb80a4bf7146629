//! Per-worker task queues: intrusive multi-producer queues over one shared link array.
//!
//! Each task is ready exactly once, so at any moment it sits in at most one queue. The queues
//! therefore share one link array `next` of `n_tasks + n_workers` words (one per task, plus one
//! *stub* node per worker): memory is O(tasks + workers) and no queue can overflow, where Juggler
//! sized every queue for all tasks. The algorithm is a Michael–Scott style list whose consumed node
//! becomes the next dummy (as in Vyukov's intrusive MPSC queue, minus its stub re-insertion, which
//! tasks that are never freed or pushed twice do not need); see the protocol in `README.md`
//! beside this file.

use crate::atomic::{AtomicU32, Ordering::*, Scope::Gpu};

/// The null link.
pub const NIL: u32 = u32::MAX;

/// Set in a queue link (never in a cursor or a tail) by a pusher whose task has other parents: its
/// consumer must acquire the task's dependence counter before it runs it (`deps::acquire`), since
/// the link carries only what the pusher saw before its fence. Roots and sole-parent children come
/// without it and cost their consumer no load. Task indices stay below it (inspection's
/// `MAX_TASKS`), so a flagged link is never [`NIL`].
pub const COUNTED: u32 = 1 << 31;

/// The queues of all workers, over the region's `next`, `head`, `tail` and `lock` tables.
pub struct Queues<'a> {
    next: &'a [AtomicU32],
    head: &'a [AtomicU32],
    tail: &'a [AtomicU32],
    lock: &'a [AtomicU32],
}

impl<'a> Queues<'a> {
    /// Queues over the given tables; `next.len() == n_tasks + workers`, the others `== workers`.
    pub fn new(
        next: &'a [AtomicU32],
        head: &'a [AtomicU32],
        tail: &'a [AtomicU32],
        lock: &'a [AtomicU32],
        n_tasks: u32,
    ) -> Self {
        debug_assert_eq!(next.len(), n_tasks as usize + head.len());
        Self {
            next,
            head,
            tail,
            lock,
        }
    }

    /// The number of worker queues.
    pub fn workers(&self) -> u32 {
        self.head.len() as u32
    }

    /// Appends `node` to `worker`'s queue, publishing everything this thread has seen (a release).
    /// Any thread may push; `node` must be a task that was never in a queue.
    #[inline(always)]
    pub fn push(&self, worker: u32, node: u32) {
        // Relaxed: the swap only picks the predecessor. `node`'s own link is the NIL the host wrote
        // before the run (a task is pushed once), and only the producer that swaps a node out of
        // the tail ever writes that node's link.
        let prev = self.tail[worker as usize].swap(node, Gpu, Relaxed);
        // Publishes `node` and everything this thread saw (the task's parents' results) to the
        // consumer's acquire load of this link.
        self.next[prev as usize].store(node, Gpu, Release);
    }

    /// [`Queues::push`] after the caller's `fence(Scope::Gpu)`: the worker loop's push, one fence
    /// per finished task. The caller's fence must follow the writes the consumer has to see through
    /// the link; it makes the relaxed link store below a release (PTX's fence-release pattern).
    /// `link` is the task, with [`COUNTED`] where the consumer must also acquire its counter.
    #[inline(always)]
    pub fn push_fenced(&self, worker: u32, link: u32) {
        let node = link & !COUNTED;
        // Relaxed, as in `push`.
        let prev = self.tail[worker as usize].swap(node, Gpu, Relaxed);
        // Relaxed, made a release by the caller's fence.
        self.next[prev as usize].store(link, Gpu, Relaxed);
    }

    /// Takes the oldest task of `worker`'s queue, if one is linked, as its link: the task, with
    /// [`COUNTED`] if its pusher set it. Only one thread may consume a queue at a time: its owner,
    /// or a thief holding the queue's lock.
    #[inline(always)]
    pub fn pop(&self, worker: u32) -> Option<u32> {
        // The consumer's own cursor: relaxed, ordered by consumer exclusivity (owner or lock).
        let mut head = self.head[worker as usize].load(Gpu, Relaxed);
        let task = self.pop_from(&mut head);
        self.head[worker as usize].store(head, Gpu, Relaxed);
        task
    }

    /// The queue's consumer cursor as the tables hold it, for an owner that keeps it locally.
    #[inline(always)]
    pub fn head(&self, worker: u32) -> u32 {
        self.head[worker as usize].load(Gpu, Relaxed)
    }

    /// [`Queues::pop`] with the consumer cursor kept by the caller (in a register) rather than in the
    /// table: for owners whose queue nobody steals from.
    ///
    /// The cursor is the queue's *dummy*: the node before the oldest task (the stub at first, then
    /// the task taken last). Taking a task makes it the new dummy, so the queue never has to put
    /// its stub back, as Vyukov's queue does: nodes are never freed or pushed twice, so a consumed
    /// task can keep serving as the list's head.
    #[inline(always)]
    pub fn pop_from(&self, cursor: &mut u32) -> Option<u32> {
        // Acquires the producer's link store, and with it the task's inputs. NIL: empty, or a
        // producer is between its tail swap and its link store; either way, come back later.
        let next = self.next[*cursor as usize].load(Gpu, Acquire);
        if next == NIL {
            return None;
        }
        *cursor = next & !COUNTED;
        Some(next)
    }

    /// `true` when nothing is linked after `cursor` (a consumer's [`pop_from`](Queues::pop_from)
    /// cursor) right now: a hint for placement, which a concurrent push may falsify at once.
    #[inline(always)]
    pub fn looks_empty(&self, cursor: u32) -> bool {
        // Relaxed: nothing is read through the answer.
        self.next[cursor as usize].load(Gpu, Relaxed) == NIL
    }

    /// The link after `task` in the static policy's plan, which the host linked before the run
    /// and nobody changes during it ([`NIL`] at the end of a worker's list).
    #[inline(always)]
    pub fn planned_after(&self, task: u32) -> u32 {
        // Relaxed: the host wrote every link before the launch, and no worker writes one.
        self.next[task as usize].load(Gpu, Relaxed)
    }

    /// Where [`Queues::planned_after`] reads `task`'s link: for a leader that copies it while the
    /// task runs, with a plain (weak) load, which is enough since nobody writes it during the run.
    #[cfg(not(loom))]
    #[inline(always)]
    pub fn planned_link(&self, task: u32) -> *const u32 {
        core::ptr::from_ref(&self.next[task as usize]).cast()
    }

    /// Publishes an owner's register cursor in `head[worker]`, for [`Queues::looks_drained`].
    #[inline(always)]
    pub fn publish_head(&self, worker: u32, cursor: u32) {
        // Relaxed: a hint for other workers' placement; nothing is read through it.
        self.head[worker as usize].store(cursor, Gpu, Relaxed);
    }

    /// `true` when `worker`'s published cursor has caught up with its tail: its queue holds
    /// nothing right now, as far as another worker can tell. A hint for placement (the owner
    /// publishes its cursor after each pop, and a concurrent push may falsify the answer at once),
    /// valid only for queues whose owner publishes ([`Queues::publish_head`]) or that are popped
    /// through [`Queues::pop`].
    #[inline(always)]
    pub fn looks_drained(&self, worker: u32) -> bool {
        // Relaxed: nothing is read through the answer.
        self.tail[worker as usize].load(Gpu, Relaxed)
            == self.head[worker as usize].load(Gpu, Relaxed)
    }

    /// Takes the consumer lock of `worker`'s queue; `false` if another consumer holds it.
    #[inline(always)]
    pub fn try_lock(&self, worker: u32) -> bool {
        // Acquire: the previous holder's head update happens before our reads of it.
        self.lock[worker as usize].compare_swap(0, 1, Gpu, Acquire) == 0
    }

    /// Releases the consumer lock of `worker`'s queue.
    #[inline(always)]
    pub fn unlock(&self, worker: u32) {
        // Release: our head update happens before the next holder's reads.
        self.lock[worker as usize].store(0, Gpu, Release);
    }

    /// Pops from `worker`'s queue under its consumer lock (work stealing, or an owner that may be
    /// stolen from).
    #[inline(always)]
    pub fn pop_locked(&self, worker: u32) -> Option<u32> {
        if !self.try_lock(worker) {
            return None;
        }
        let task = self.pop(worker);
        self.unlock(worker);
        task
    }
}

/// Links the initial ready lists into fresh queue tables, on the host, before any worker starts.
///
/// `lists[w]` holds worker `w`'s initial tasks in order, as queue links: a task, flagged
/// [`COUNTED`] where its consumer must acquire its counter first (under the static policy, a task
/// with parents on other workers). `next`, `head` and `tail` are the plain `u32` tables the runtime
/// will view as atomics.
pub fn link_initial(
    next: &mut [u32],
    head: &mut [u32],
    tail: &mut [u32],
    n_tasks: u32,
    lists: &[&[u32]],
) {
    next.fill(NIL);
    for (w, list) in lists.iter().enumerate() {
        let stub = n_tasks + w as u32;
        head[w] = stub;
        let mut last = stub;
        for &link in list.iter() {
            next[last as usize] = link;
            last = link & !COUNTED;
        }
        tail[w] = last;
    }
}
