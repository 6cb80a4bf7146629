//! Streamed regions: tasks that reach the workers in batches while they run.
//!
//! A streamed region's tables are sized to a capacity, and the host fills them a batch at a time,
//! in task order, while the workers run the batches before. A batch's tasks and their edges from
//! one another come as usual: task records, argument words, CSR rows (written before the batch is
//! published; the rows of earlier tasks never change). An edge from a task of an earlier batch, a
//! *cross edge*, cannot go into its parent's row, which the workers may be reading or may have
//! read already; it goes into the parent's *list* instead:
//!
//! * Each task has a list head, [`OPEN`] until the task finishes. A cross edge is linked into its
//!   parent's list by [`Stream::link`]: a compare-and-swap of the head from what it read to the
//!   edge, whose `next` word holds what it read. When the head reads [`CLOSED`], the parent has
//!   finished, and the caller counts the edge off itself.
//! * A finishing task closes its list ([`Stream::close`], a swap of the head to [`CLOSED`]) after
//!   its release fence, and releases every child on the list as it would a counted CSR child.
//! * A task with cross edges, or with no parent in its own batch, starts with one more count than
//!   it has parents: a *guard*, which [`open`] takes away once every cross edge of the task is
//!   linked, with the counts of the parents that were closed already. Whoever takes the counter to
//!   zero (a parent's release or [`open`]) places the task, as a freed child is placed.
//!
//! The host does not link: a GPU's host cannot make the device's atomics. It writes a *link* per
//! task with a guard (the task and the range of its cross edges, in task order) and publishes
//! them with the batch, a `Release` store of the links' count ([`Stream::publish`]). An idle
//! worker's leader claims published links ([`Stream::claim`], a CAS of the claimed count), at
//! least [`LINK_CLAIM`] and one per thread of its block, and every thread of the block links its
//! share of them ([`link_share`]), pushing each task that frees: a *link round*. (A leader alone,
//! 16 at a time, left a streamed Cholesky's kernel 1.2x and LU's 1.5x an inspected one's with
//! every task fed before the launch: each link is a few dependent round trips to L2.)
//!
//! The region ends when the completed count reaches the *total*, a word that stays `u32::MAX`
//! until the host has published the last batch and stores the number of tasks.
//!
//! The orderings, against the dependence protocol of [`deps`](super::deps):
//!
//! * [`Stream::close`] is an `AcqRel` swap after the finishing task's fence: the swap reads every
//!   edge whose link it ends (their `next` and `child` words were written before each linker's
//!   `Release` CAS, and the CASes on a head form one release sequence), and its write of
//!   [`CLOSED`] is a release of the parent's body, through the fence.
//! * [`Stream::link`] reads the head with `Acquire`: when it reads [`CLOSED`] it has the parent's
//!   body, which [`open`]'s fence then passes on through the counter, as a parent's fence does.
//!   A successful link is a `Release` CAS: the edge's words reach whoever closes the list.
//! * [`Stream::claim`] reads the published count with `Acquire`: the host's writes of the batch
//!   (records, rows, counters, edges and links) before its `Release` store reach the claimer.
//!   The claimed count is only a cursor, and its CAS is relaxed.
//! * [`open`] fences, then takes the guard and the closed parents' counts in one relaxed RMW: the
//!   counter's release sequence carries the closed parents' bodies to whoever runs the task
//!   (after its `Acquire` load of the counter, [`deps::acquire`](super::deps::acquire)).

use crate::atomic::{
    AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
    Scope::Gpu,
    fence,
};

/// A list head: the task has not finished, and no cross edge is linked to it yet.
pub const OPEN: u32 = u32::MAX;
/// A list head: the task has finished; a cross edge from it is counted off by its linker.
pub const CLOSED: u32 = u32::MAX - 1;
/// The total before the last batch is published: no completed count reaches it.
pub const UNKNOWN_TOTAL: u32 = u32::MAX;

/// Words per cross edge in [`Stream::edges`]: its parent, its child and its `next` link.
pub const EDGE_WORDS: usize = 3;
/// The parent's word of an edge.
pub const PARENT: usize = 0;
/// The child's word of an edge.
pub const CHILD: usize = 1;
/// The `next` word of an edge: the edge linked before it in its parent's list, or [`OPEN`].
pub const NEXT: usize = 2;

/// Words per link in [`Stream::links`]: the task, its first cross edge and how many it has.
pub const LINK_WORDS: usize = 3;
/// The task's word of a link.
pub const TASK: usize = 0;
/// The first cross edge's word of a link.
pub const FIRST: usize = 1;
/// The cross edges' count word of a link.
pub const COUNT: usize = 2;

/// The stream's own words ([`Stream::words`]): the total, the links published, the links claimed.
pub const WORDS: usize = 3;
/// The total's word of [`Stream::words`].
pub const TOTAL: usize = 0;
/// The published links' word of [`Stream::words`].
pub const PUBLISHED: usize = 1;
/// The claimed links' word of [`Stream::words`].
pub const CLAIMED: usize = 2;

/// The fewest links an idle worker claims at once (it claims one per thread of its block when
/// that is more): a batch's links are shared among the idle workers, and a claim's tasks are
/// pushed round robin, as roots are.
pub const LINK_CLAIM: u32 = 16;

/// A streamed region's cross-edge lists, its links and its words (see the module docs).
#[derive(Clone, Copy)]
pub struct Stream<'a> {
    /// One list head per task of the capacity.
    pub heads: &'a [AtomicU32],
    /// [`EDGE_WORDS`] words per cross edge of the capacity.
    pub edges: &'a [AtomicU32],
    /// [`LINK_WORDS`] words per link of the capacity.
    pub links: &'a [AtomicU32],
    /// [`WORDS`] words: the region's task count once known ([`UNKNOWN_TOTAL`] before), the links
    /// published and the links claimed.
    pub words: &'a [AtomicU32],
}

impl<'a> Stream<'a> {
    /// Word `word` of edge `e`.
    #[inline(always)]
    fn word(&self, e: u32, word: usize) -> &'a AtomicU32 {
        &self.edges[e as usize * EDGE_WORDS + word]
    }

    /// Links cross edge `e` (its parent and child words written, and published to this thread)
    /// into its parent's list. Returns `true` when the parent had finished already: the edge is
    /// then not linked, and the caller counts it off through [`open`].
    #[inline]
    pub fn link(&self, e: u32) -> bool {
        let parent = self.word(e, PARENT).load(Gpu, Relaxed);
        let head = &self.heads[parent as usize];
        // Acquire: a `CLOSED` read carries the parent's body to this thread.
        let mut seen = head.load(Gpu, Acquire);
        loop {
            if seen == CLOSED {
                return true;
            }
            // Relaxed: published by the CAS below.
            self.word(e, NEXT).store(seen, Gpu, Relaxed);
            match head.compare_swap(seen, e, Gpu, AcqRel) {
                now if now == seen => return false,
                now => seen = now,
            }
        }
    }

    /// Closes `task`'s list, after the fence that ends its body (see [`deps`](super::deps)): no
    /// edge is linked to it after this. Returns the first edge of the list ([`OPEN`]: none); walk
    /// it with [`Stream::child`] and [`Stream::next`], releasing each child as a counted CSR child.
    #[inline]
    pub fn close(&self, task: u32) -> u32 {
        self.heads[task as usize].swap(CLOSED, Gpu, AcqRel)
    }

    /// The child of edge `e`, an edge of a closed list.
    #[inline(always)]
    pub fn child(&self, e: u32) -> u32 {
        self.word(e, CHILD).load(Gpu, Relaxed)
    }

    /// The edge after `e` in its list ([`OPEN`]: none), an edge of a closed list.
    #[inline(always)]
    pub fn next(&self, e: u32) -> u32 {
        self.word(e, NEXT).load(Gpu, Relaxed)
    }

    /// The region's task count, or [`UNKNOWN_TOTAL`] while batches may still come. Relaxed, as the
    /// completed count it is compared with.
    #[inline(always)]
    pub fn total(&self) -> u32 {
        self.words[TOTAL].load(Gpu, Relaxed)
    }

    /// Publishes the region's task count, after its last batch's links.
    #[inline]
    pub fn end(&self, tasks: u32) {
        self.words[TOTAL].store(tasks, Gpu, Release);
    }

    /// Writes link `i`: `task` and its cross edges `edges`. The host's, before it publishes `i`.
    #[inline]
    pub fn set_link(&self, i: u32, task: u32, edges: core::ops::Range<u32>) {
        let at = i as usize * LINK_WORDS;
        self.links[at + TASK].store(task, Gpu, Relaxed);
        self.links[at + FIRST].store(edges.start, Gpu, Relaxed);
        self.links[at + COUNT].store(edges.end - edges.start, Gpu, Relaxed);
    }

    /// Publishes the links before `links`, and with them everything the host wrote before.
    #[inline]
    pub fn publish(&self, links: u32) {
        self.words[PUBLISHED].store(links, Gpu, Release);
    }

    /// Claims up to `most` published links that no worker has claimed: their range, or `None`
    /// when every published link is claimed.
    #[inline]
    pub fn claim(&self, most: u32) -> Option<core::ops::Range<u32>> {
        // Acquire: the batch the links belong to, written before the host's `publish`.
        let published = self.words[PUBLISHED].load(Gpu, Acquire);
        let claimed = &self.words[CLAIMED];
        let mut seen = claimed.load(Gpu, Relaxed);
        loop {
            if seen >= published {
                return None;
            }
            let end = published.min(seen + most);
            match claimed.compare_swap(seen, end, Gpu, Relaxed) {
                now if now == seen => return Some(seen..end),
                now => seen = now,
            }
        }
    }

    /// Link `i`'s task and cross edges, a claimed link.
    #[inline(always)]
    fn link_of(&self, i: u32) -> (u32, core::ops::Range<u32>) {
        let at = i as usize * LINK_WORDS;
        let word = |w: usize| self.links[at + w].load(Gpu, Relaxed);
        let first = word(FIRST);
        (word(TASK), first..first + word(COUNT))
    }
}

/// Takes `task`'s guard, and the counts of its `closed` cross parents that had finished when it
/// was linked ([`Stream::link`] returned `true`), after every cross edge of the task is linked.
/// Returns whether that freed the task: the caller then places it, as a queue link flagged
/// [`COUNTED`](super::queue::COUNTED).
#[inline]
pub fn open(pending: &[AtomicU32], task: u32, closed: u32) -> bool {
    // The closed parents' bodies, acquired by the links, go on through the counter.
    fence(Gpu);
    let take = closed + 1;
    pending[task as usize].fetch_sub(take, Gpu, Relaxed) == take
}

/// Releases the child of cross edge `e` of a closed list (after the finishing task's fence):
/// whether this freed it.
#[inline]
pub fn release(stream: &Stream<'_>, pending: &[AtomicU32], e: u32) -> Option<u32> {
    let child = stream.child(e);
    (pending[child as usize].fetch_sub(1, Gpu, Relaxed) == 1).then_some(child)
}

/// Links and opens ([`link_and_open`]) the tasks of the claimed links `claimed` that fall to
/// thread `thread` of `threads` (every `threads`-th from `claimed.start + thread`), handing each
/// task that frees to `push`: one thread's share of a link round.
#[inline]
pub fn link_share(
    stream: &Stream<'_>,
    pending: &[AtomicU32],
    claimed: core::ops::Range<u32>,
    (thread, threads): (u32, u32),
    mut push: impl FnMut(u32),
) {
    let mut i = claimed.start + thread;
    while i < claimed.end {
        let (task, edges) = stream.link_of(i);
        if link_and_open(stream, pending, task, edges) {
            push(task);
        }
        i += threads;
    }
}

/// Claims published links, at most [`LINK_CLAIM`], and links and opens each one's task
/// ([`link_share`] of a block of one thread), handing each task that frees to `push`. Whether it
/// claimed any.
#[inline]
pub fn link_claimed(stream: &Stream<'_>, pending: &[AtomicU32], push: impl FnMut(u32)) -> bool {
    let Some(claimed) = stream.claim(LINK_CLAIM) else {
        return false;
    };
    link_share(stream, pending, claimed, (0, 1), push);
    true
}

/// Links the cross edges `edges` of `task` and opens it ([`open`]): what a worker does for each
/// link it claims. Whether that freed the task.
pub fn link_and_open(
    stream: &Stream<'_>,
    pending: &[AtomicU32],
    task: u32,
    edges: core::ops::Range<u32>,
) -> bool {
    let closed = edges.filter(|&e| stream.link(e)).count() as u32;
    open(pending, task, closed)
}
