//! `loom` models of the scheduler's queue and dependence protocol (`scripts/loom.sh` runs them).
//!
//! Each model builds a tiny region's tables as loom atomics, runs the very `queue` and `deps` code
//! the workers run, and checks it under every interleaving (up to `LOOM_MAX_PREEMPTIONS`, default
//! 3) and every value the C++ memory model lets a load return. Task payloads live in
//! `loom::cell::UnsafeCell`s: a consumer reading one that its producer's write does not
//! happen-before is reported as a data race, so a broken release/acquire chain fails the model.
//! Consumers read a task's payload as soon as `pop` returns it, as a worker runs the body: a later
//! pop could acquire the producer's history through the tail and hide a missing acquire on a link.
//!
//! The queue models run twice, once per way of pushing ([`Push`]): the plain `push` and the worker
//! loop's `fence` + `push_fenced`.
//!
//! loom has no scopes: it checks the orderings as if every operation were system-wide. What it
//! cannot check (PTX fence cumulativity across `bar.sync`) is written down in `README.md`.

use super::affinity::{self, NO_PARENT, NOT_RUN};
use super::deps::{self, SOLE_PARENT};
use super::queue::{self, COUNTED, NIL, Queues};
use super::stream;
use crate::atomic::{AtomicU32, Ordering::Relaxed, Scope::Gpu, fence};
use crate::gang;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;
use std::vec;
use std::vec::Vec;

/// Runs `f` under loom with the preemption bound from `LOOM_MAX_PREEMPTIONS`, 3 by default.
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_long(1_000, f);
}

/// [`model`] for models whose threads spin (a free worker polling until every gang has ended, a
/// gang barrier), whose executions take more than loom's default 1,000 branches.
fn model_long(max_branches: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.max_branches = max_branches;
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    // Counts explored executions, for judging how much a model covers (`--nocapture` shows it).
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = runs.clone();
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        f();
    });
    std::eprintln!(
        "{}: {} executions",
        std::thread::current().name().unwrap_or("model"),
        runs.load(std::sync::atomic::Ordering::Relaxed)
    );
}

/// How a producer pushes a task.
#[derive(Clone, Copy, Debug)]
enum Push {
    /// [`Queues::push`]: resets the link, `AcqRel` tail swap, `Release` link store.
    Plain,
    /// What the worker loop does: `fence(Gpu)` after everything the consumer must see, then
    /// [`Queues::push_fenced`] (`Acquire` tail swap, `Relaxed` link store).
    Fenced,
}

impl Push {
    /// Pushes `task` into `worker`'s queue. For [`Push::Fenced`] the fence comes first, as in the
    /// worker loop: after the body's writes and the counter's acquire, before the pushes.
    fn push(self, q: &Queues<'_>, worker: u32, task: u32) {
        match self {
            Push::Plain => q.push(worker, task),
            Push::Fenced => {
                fence(Gpu);
                q.push_fenced(worker, task);
            }
        }
    }
}

/// A task's payload: what its producer (or its parents) wrote before making it ready.
struct Payload(UnsafeCell<u32>);

// SAFETY: every access goes through loom's checked `with` / `with_mut`, which report any pair of
// accesses not ordered by happens-before; that is what the models test.
unsafe impl Sync for Payload {}

/// One region's scheduler tables, as the workers see them.
struct Tables {
    n_tasks: u32,
    next: Vec<AtomicU32>,
    head: Vec<AtomicU32>,
    tail: Vec<AtomicU32>,
    lock: Vec<AtomicU32>,
    pending: Vec<AtomicU32>,
    payload: Vec<Payload>,
}

impl Tables {
    /// Tables for `n_tasks` tasks and `lists.len()` workers, worker `w`'s queue holding `lists[w]`
    /// (linked by the host's [`queue::link_initial`]), task `t` waiting for `pending[t]` parents
    /// (0 where `pending` is short). Every payload starts at `0xFF00 + t`, written before any
    /// thread starts.
    fn new(n_tasks: u32, lists: &[&[u32]], pending: &[u32]) -> Arc<Self> {
        let workers = lists.len();
        let mut next = vec![0; n_tasks as usize + workers];
        let mut head = vec![0; workers];
        let mut tail = vec![0; workers];
        queue::link_initial(&mut next, &mut head, &mut tail, n_tasks, lists);
        let atomics = |v: &[u32]| v.iter().map(|&x| AtomicU32::new(x)).collect::<Vec<_>>();
        Arc::new(Self {
            n_tasks,
            next: atomics(&next),
            head: atomics(&head),
            tail: atomics(&tail),
            lock: atomics(&vec![0; workers]),
            pending: (0..n_tasks)
                .map(|t| AtomicU32::new(pending.get(t as usize).copied().unwrap_or(0)))
                .collect(),
            payload: (0..n_tasks)
                .map(|t| Payload(UnsafeCell::new(0xFF00 + t)))
                .collect(),
        })
    }

    fn queues(&self) -> Queues<'_> {
        Queues::new(&self.next, &self.head, &self.tail, &self.lock, self.n_tasks)
    }

    /// Writes task `task`'s payload (a plain, non-atomic write).
    fn write(&self, task: u32, value: u32) {
        // SAFETY: loom checks that no other access to the cell races with this one.
        self.payload[task as usize]
            .0
            .with_mut(|p| unsafe { *p = value });
    }

    /// Reads task `task`'s payload (a plain, non-atomic read).
    fn read(&self, task: u32) -> u32 {
        // SAFETY: loom checks that no write to the cell races with this read.
        self.payload[task as usize].0.with(|p| unsafe { *p })
    }

    /// Asserts that `worker`'s queue is empty: the consumer cursor (the dummy) is the tail, its
    /// link is still NIL, and `pop` finds nothing.
    fn assert_empty(&self, worker: u32, cursor: u32) {
        assert_eq!(
            self.tail[worker as usize].load(Gpu, Relaxed),
            cursor,
            "the dummy is not the tail"
        );
        assert_eq!(self.next[cursor as usize].load(Gpu, Relaxed), NIL);
        let mut cursor = cursor;
        assert_eq!(self.queues().pop_from(&mut cursor), None);
    }
}

/// The consumer's loop: pops `worker`'s queue (cursor in the table) until it has `want` tasks,
/// yielding while it finds none, and reads each task's payload as soon as it has it.
fn pop_until(t: &Tables, worker: u32, want: usize) -> Vec<(u32, u32)> {
    let q = t.queues();
    let mut got = Vec::new();
    while got.len() < want {
        match q.pop(worker) {
            Some(task) => got.push((task, t.read(task))),
            None => thread::yield_now(),
        }
    }
    got
}

/// The task of a popped link, its parents' results acquired through its counter
/// ([`deps::acquire`]) when the link is flagged [`COUNTED`], as a worker takes it.
fn take(t: &Tables, link: u32) -> u32 {
    let task = link & !COUNTED;
    if link & COUNTED != 0 {
        deps::acquire(&t.pending, task);
    }
    task
}

/// [`pop_until`] for dependence models: each popped link is taken ([`take`]) before the task's
/// payload is read, as a worker does.
fn pop_ready(t: &Tables, worker: u32, want: usize) -> Vec<(u32, u32)> {
    let q = t.queues();
    let mut got = Vec::new();
    while got.len() < want {
        match q.pop(worker) {
            Some(link) => {
                let task = take(t, link);
                got.push((task, t.read(task)));
            }
            None => thread::yield_now(),
        }
    }
    got
}

/// A finished parent's release of CSR entries `entries`, as the leader does it after the body's
/// barrier: one fence before the first decrement if any entry is counted, else one before the
/// pushes if there are any; then the (relaxed) decrements, the first two issued together. Returns
/// the freed children as queue links (flagged [`COUNTED`] where they have other parents), for the
/// caller to push with [`Queues::push_fenced`] (no second fence).
fn finish(t: &Tables, entries: &[u32]) -> Vec<u32> {
    let counted = entries.iter().any(|&e| deps::counted(e));
    if counted {
        fence(Gpu);
    }
    // The first two decrements together, as the leader issues them; the rest one by one.
    let mut before = Vec::new();
    if let [first, rest @ ..] = entries {
        let (a, b) = deps::decrement_pair(&t.pending, *first, rest.first().copied());
        before.push(a);
        if !rest.is_empty() {
            before.push(b);
        }
        before.extend(rest.iter().skip(1).map(|&e| deps::decrement(&t.pending, e)));
    }
    let freed: Vec<u32> = entries
        .iter()
        .zip(before)
        .filter(|&(_, was)| deps::frees(was))
        .map(|(&e, _)| deps::child(e) | if deps::counted(e) { COUNTED } else { 0 })
        .collect();
    if !counted && !freed.is_empty() {
        fence(Gpu);
    }
    freed
}

/// [`finish`], then the pushes of what it freed into worker 0's queue.
fn finish_and_push(t: &Tables, entries: &[u32]) {
    for link in finish(t, entries) {
        t.queues().push_fenced(0, link);
    }
}

fn sorted(mut v: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    v.sort_unstable();
    v
}

/// a. Two producers push into one empty queue while its consumer pops: each task comes out exactly
/// once, with the payload its producer wrote before pushing, and the queue ends empty (its dummy is
/// the tail). When the consumer takes the first task with the second already linked behind it,
/// the first task's payload reaches it only through the link.
fn mpsc_two_producers(how: Push) {
    model(move || {
        let t = Tables::new(2, &[&[]], &[]);
        let producers: Vec<_> = (0..2u32)
            .map(|task| {
                let t = t.clone();
                thread::spawn(move || {
                    t.write(task, 40 + task);
                    how.push(&t.queues(), 0, task);
                })
            })
            .collect();
        let got = pop_until(&t, 0, 2);
        assert_eq!(sorted(got), [(0, 40), (1, 41)]);
        for p in producers {
            p.join().unwrap();
        }
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

#[test]
fn loom_mpsc_two_producers() {
    mpsc_two_producers(Push::Plain);
}

#[test]
fn loom_mpsc_two_producers_fenced() {
    mpsc_two_producers(Push::Fenced);
}

/// a'. Two producers push behind a host-linked task while the consumer drains: three tasks, each
/// out exactly once with its payload, the host-linked one first.
fn mpsc_two_producers_nonempty(how: Push) {
    model(move || {
        let t = Tables::new(3, &[&[0]], &[]);
        let producers: Vec<_> = (1..3u32)
            .map(|task| {
                let t = t.clone();
                thread::spawn(move || {
                    t.write(task, 40 + task);
                    how.push(&t.queues(), 0, task);
                })
            })
            .collect();
        let got = pop_until(&t, 0, 3);
        assert_eq!(got[0], (0, 0xFF00));
        assert_eq!(sorted(got), [(0, 0xFF00), (1, 41), (2, 42)]);
        for p in producers {
            p.join().unwrap();
        }
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

#[test]
fn loom_mpsc_two_producers_nonempty() {
    mpsc_two_producers_nonempty(Push::Plain);
}

#[test]
fn loom_mpsc_two_producers_nonempty_fenced() {
    mpsc_two_producers_nonempty(Push::Fenced);
}

/// b. Publication through an empty queue: the payload the producer wrote before pushing is visible
/// to the consumer once `pop` returns the task.
fn publish_into_empty_queue(how: Push) {
    model(move || {
        let t = Tables::new(1, &[&[]], &[]);
        let producer = {
            let t = t.clone();
            thread::spawn(move || {
                t.write(0, 42);
                how.push(&t.queues(), 0, 0);
            })
        };
        assert_eq!(pop_until(&t, 0, 1), [(0, 42)]);
        producer.join().unwrap();
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

#[test]
fn loom_publish_into_empty_queue() {
    publish_into_empty_queue(Push::Plain);
}

#[test]
fn loom_publish_into_empty_queue_fenced() {
    publish_into_empty_queue(Push::Fenced);
}

/// b. Publication through a non-empty queue: a producer pushes tasks 1 and 2 behind the host-linked
/// task 0 while the consumer drains. Each payload is visible when its task comes out, whether the
/// consumer reaches the task as the last linked node or with its successor already linked.
fn publish_into_nonempty_queue(how: Push) {
    model(move || {
        let t = Tables::new(3, &[&[0]], &[]);
        let producer = {
            let t = t.clone();
            thread::spawn(move || {
                let q = t.queues();
                t.write(1, 41);
                how.push(&q, 0, 1);
                t.write(2, 42);
                how.push(&q, 0, 2);
            })
        };
        assert_eq!(pop_until(&t, 0, 3), [(0, 0xFF00), (1, 41), (2, 42)]);
        producer.join().unwrap();
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

#[test]
fn loom_publish_into_nonempty_queue() {
    publish_into_nonempty_queue(Push::Plain);
}

#[test]
fn loom_publish_into_nonempty_queue_fenced() {
    publish_into_nonempty_queue(Push::Fenced);
}

/// c1. Dependences: child 0 waits for two parents. Each parent thread writes its own result, then
/// releases the child (fence, relaxed decrement); the one whose decrement is the last pushes it,
/// with no second fence. The consumer that pops the child sees both results through its acquire of
/// the counter: the link carries only what preceded the pusher's fence, and the other parent's
/// result reached the pusher after it (through the decrement).
#[test]
fn loom_dependence_release() {
    model(|| {
        // Task 0 is the child; tasks 1 and 2 stand for the parents (their payload cells hold their
        // results; they are never queued).
        let t = Tables::new(3, &[&[]], &[2]);
        let parents: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|parent| {
                let t = t.clone();
                thread::spawn(move || {
                    t.write(parent, 100 + parent);
                    finish_and_push(&t, &[0]);
                })
            })
            .collect();
        assert_eq!(pop_ready(&t, 0, 1), [(0, 0xFF00)]);
        assert_eq!((t.read(1), t.read(2)), (101, 102));
        for p in parents {
            p.join().unwrap();
        }
        assert_eq!(t.pending[0].load(Gpu, Relaxed), 0);
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

/// c2. As `loom_dependence_release`, but as in a wide fan-out: parent 1's result is written by one
/// thread of its block, and the child is released and pushed by another after the block barrier.
/// The barrier is modelled by a join (a happens-before edge from every write before it to every
/// access after it, which is what `bar.sync` gives the block's threads). The chain must stay
/// transitive through it: the releasing thread passes on a write it did not make itself.
#[test]
fn loom_dependence_release_after_barrier() {
    model(|| {
        let t = Tables::new(3, &[&[]], &[2]);
        let block = {
            let t = t.clone();
            thread::spawn(move || {
                // Lane 1 runs (its part of) the body; lane 0, this thread, releases the child.
                let lane = {
                    let t = t.clone();
                    thread::spawn(move || t.write(1, 101))
                };
                lane.join().unwrap();
                finish_and_push(&t, &[0]);
            })
        };
        // The main thread is parent 2, and then the consumer.
        t.write(2, 102);
        finish_and_push(&t, &[0]);
        assert_eq!(pop_ready(&t, 0, 1), [(0, 0xFF00)]);
        assert_eq!((t.read(1), t.read(2)), (101, 102));
        block.join().unwrap();
        assert_eq!(t.pending[0].load(Gpu, Relaxed), 0);
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

/// c6. A continuation: child 0 waits for two parents, and the one that frees it runs it at once,
/// with no queue and no further fence. Its (relaxed) decrement followed by the acquire load of the
/// counter must make the other parent's result visible (without the load this model reports a data
/// race).
#[test]
fn loom_continuation_after_release() {
    model(|| {
        let t = Tables::new(3, &[&[]], &[2]);
        let parents: Vec<_> = [1u32, 2]
            .into_iter()
            .map(|parent| {
                let t = t.clone();
                thread::spawn(move || {
                    t.write(parent, 100 + parent);
                    fence(Gpu);
                    // The continuation's body reads both parents' results.
                    deps::release(&t.pending, 0).map(|child| {
                        deps::acquire(&t.pending, child);
                        (t.read(1), t.read(2))
                    })
                })
            })
            .collect();
        let ran: Vec<_> = parents.into_iter().map(|p| p.join().unwrap()).collect();
        assert!(
            ran == [Some((101, 102)), None] || ran == [None, Some((101, 102))],
            "{ran:?}"
        );
    });
}

/// c3. The wide fan-out's split between releasing and pushing threads, as the worker loop does
/// it: in parent 1's block, thread k fences, releases child 0 and lists it; after the block
/// barrier (a join) thread j, which had no entry of its own, fences and pushes it. The other
/// parent (task 2, on another worker) writes its result and releases concurrently. The consumer
/// acquires both results through the counter.
#[test]
fn loom_dependence_release_split_push_fenced() {
    model(|| {
        let t = Tables::new(3, &[&[]], &[2]);
        let other = {
            let t = t.clone();
            thread::spawn(move || {
                t.write(2, 102);
                finish_and_push(&t, &[0]);
            })
        };
        let block = {
            let t = t.clone();
            thread::spawn(move || {
                // Thread j's part of parent 1's body.
                t.write(1, 101);
                let lane_k = {
                    let t = t.clone();
                    thread::spawn(move || {
                        fence(Gpu);
                        // Listed as its link: the child has another parent.
                        deps::release(&t.pending, 0).map(|child| child | COUNTED)
                    })
                };
                if let Some(link) = lane_k.join().unwrap() {
                    fence(Gpu);
                    t.queues().push_fenced(0, link);
                }
            })
        };
        assert_eq!(pop_ready(&t, 0, 1), [(0, 0xFF00)]);
        assert_eq!((t.read(1), t.read(2)), (101, 102));
        other.join().unwrap();
        block.join().unwrap();
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

/// c4. One fence per finished task, as the leader does for a narrow fan-out: parent 2 (one thread)
/// has children 0 and 1; child 0's other parent is task 3, child 1's is task 4 (one thread each).
/// Every parent writes its result, fences once, releases its children and pushes those it freed.
/// A fourth thread consumes, and must see both parents' results of each child, though parent 2's
/// one fence precedes the decrements that acquired the other parents' results.
#[test]
fn loom_release_two_children_one_fence() {
    model(|| {
        let t = Tables::new(5, &[&[]], &[2, 2]);
        let parent = |parent: u32, children: &'static [u32]| {
            let t = t.clone();
            move || {
                t.write(parent, 100 + parent);
                finish_and_push(&t, children);
            }
        };
        let parents = [
            thread::spawn(parent(2, &[0, 1])),
            thread::spawn(parent(3, &[0])),
            thread::spawn(parent(4, &[1])),
        ];
        let q = t.queues();
        let mut got = 0;
        while got < 2 {
            match q.pop(0) {
                Some(link) => {
                    got += 1;
                    let child = take(&t, link);
                    assert_eq!((t.read(2), t.read(3 + child)), (102, 103 + child));
                }
                None => thread::yield_now(),
            }
        }
        for p in parents {
            p.join().unwrap();
        }
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

/// c5. A child whose only parent is the finished task (`SOLE_PARENT` in its CSR entry) is freed
/// without touching its counter, which the host set to zero; the parent block's result (written by
/// another of its threads, before the barrier) reaches the consumer through the fence and the push
/// alone (the consumer's acquire of the zero counter synchronizes with nothing).
#[test]
fn loom_sole_parent_push_fenced() {
    model(|| {
        // Task 0 is the child, task 1 the parent.
        let t = Tables::new(2, &[&[]], &[0]);
        let block = {
            let t = t.clone();
            thread::spawn(move || {
                let lane = {
                    let t = t.clone();
                    thread::spawn(move || t.write(1, 101))
                };
                lane.join().unwrap();
                let freed = finish(&t, &[SOLE_PARENT]);
                assert_eq!(
                    freed,
                    [0],
                    "a sole parent frees, and its link is not flagged"
                );
                t.queues().push_fenced(0, 0);
            })
        };
        assert_eq!(pop_ready(&t, 0, 1), [(0, 0xFF00)]);
        assert_eq!(t.read(1), 101);
        block.join().unwrap();
        assert_eq!(t.pending[0].load(Gpu, Relaxed), 0);
    });
}

/// A finished task's release under the static policy, as the leader does it (`release_planned`):
/// a fence before the first counted entry (a child on another worker), and for each counted entry
/// a decrement whose result nobody reads; nothing is pushed, since every child sits in its
/// worker's list already, and with only same-worker children (entries flagged `SOLE_PARENT`) no
/// fence at all.
fn finish_planned(t: &Tables, entries: &[u32]) {
    let mut fenced = false;
    for &e in entries {
        if deps::counted(e) {
            if !core::mem::replace(&mut fenced, true) {
                fence(Gpu);
            }
            deps::release_only(&t.pending, e);
        }
    }
}

/// c7. The static policy: worker 0's plan is task 1, then task 0; worker 1's is task 2. Task 0
/// reads both parents' results: task 1's (same worker, its edge uncounted, written by another lane
/// of the block before the barrier) and task 2's (another worker: task 0's counter starts at 1 and
/// its link is flagged). Worker 0 reads task 0's link ahead, during task 1's body, with a relaxed
/// load, as the device does; it must still see task 2's result, through the counter alone.
#[test]
fn loom_static_plan() {
    model(|| {
        let t = Tables::new(3, &[&[1, COUNTED], &[2]], &[1]);
        let remote = {
            let t = t.clone();
            thread::spawn(move || {
                let mut cursor = t.head[1].load(Gpu, Relaxed);
                assert_eq!(t.queues().pop_from(&mut cursor), Some(2));
                t.write(2, 102);
                finish_planned(&t, &[0]);
                assert_eq!(
                    t.queues().planned_after(2),
                    NIL,
                    "the end of worker 1's list"
                );
            })
        };
        let mut cursor = t.head[0].load(Gpu, Relaxed);
        assert_eq!(t.queues().pop_from(&mut cursor), Some(1));
        let ahead = t.queues().planned_after(1);
        assert_eq!(
            ahead, COUNTED,
            "task 0, flagged: it has a parent on another worker"
        );
        let lane = {
            let t = t.clone();
            thread::spawn(move || t.write(1, 101))
        };
        lane.join().unwrap();
        finish_planned(&t, &[SOLE_PARENT]);
        assert_eq!(take(&t, ahead), 0);
        assert_eq!((t.read(1), t.read(2)), (101, 102));
        remote.join().unwrap();
    });
}

/// d. Stealing: the owner and a thief both `pop_locked` one queue holding two host-linked tasks.
/// Each task is taken exactly once; none is lost. The consumer cursor (`head`) passes between them
/// through the lock's release/acquire, so a stale cursor would show as a task taken twice.
#[test]
fn loom_steal_two_consumers() {
    model(|| {
        let t = Tables::new(2, &[&[0, 1]], &[]);
        // `taken[i]`: how often task i was taken; `taken[2]`: tasks taken in all.
        let taken = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
        let consumer = |t: Arc<Tables>, taken: Arc<[AtomicU32; 3]>| {
            move || {
                let q = t.queues();
                while taken[2].load(Gpu, Relaxed) < 2 {
                    match q.pop_locked(0) {
                        Some(task) => {
                            assert_eq!(t.read(task), 0xFF00 + task);
                            taken[task as usize].fetch_add(1, Gpu, Relaxed);
                            taken[2].fetch_add(1, Gpu, Relaxed);
                        }
                        None => thread::yield_now(),
                    }
                }
            }
        };
        let thief = thread::spawn(consumer(t.clone(), taken.clone()));
        consumer(t.clone(), taken.clone())();
        thief.join().unwrap();
        assert_eq!(taken[0].load(Gpu, Relaxed), 1);
        assert_eq!(taken[1].load(Gpu, Relaxed), 1);
        assert_eq!(t.lock[0].load(Gpu, Relaxed), 0);
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

/// d'. Stealing while the owner pushes, as under the `STEAL` policy: the owner pushes a freed child
/// into its own queue (which holds one host-linked task) and then pops under the lock, while a
/// thief pops the same queue under the lock. Each task is taken exactly once; whoever takes the
/// pushed one sees its payload (through the link, not the lock).
fn steal_while_owner_pushes(how: Push) {
    model(move || {
        let t = Tables::new(2, &[&[0]], &[]);
        // `taken[i]`: how often task i was taken; `taken[2]`: tasks taken in all.
        let taken = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
        let consumer = move |t: Arc<Tables>, taken: Arc<[AtomicU32; 3]>, push: bool| {
            move || {
                let q = t.queues();
                if push {
                    t.write(1, 41);
                    how.push(&q, 0, 1);
                }
                while taken[2].load(Gpu, Relaxed) < 2 {
                    match q.pop_locked(0) {
                        Some(task) => {
                            assert_eq!(t.read(task), [0xFF00, 41][task as usize]);
                            taken[task as usize].fetch_add(1, Gpu, Relaxed);
                            taken[2].fetch_add(1, Gpu, Relaxed);
                        }
                        None => thread::yield_now(),
                    }
                }
            }
        };
        let thief = thread::spawn(consumer(t.clone(), taken.clone(), false));
        consumer(t.clone(), taken.clone(), true)();
        thief.join().unwrap();
        assert_eq!(taken[0].load(Gpu, Relaxed), 1);
        assert_eq!(taken[1].load(Gpu, Relaxed), 1);
        t.assert_empty(0, t.head[0].load(Gpu, Relaxed));
    });
}

#[test]
fn loom_steal_while_owner_pushes() {
    steal_while_owner_pushes(Push::Plain);
}

#[test]
fn loom_steal_while_owner_pushes_fenced() {
    steal_while_owner_pushes(Push::Fenced);
}

/// e. A push concurrent with the consumer draining to the last element: the queue holds task 0;
/// the consumer pops (its cursor in a register, as an owner whose queue is not stolen from) while
/// a producer pushes task 1. `pop_from` may take task 0 (which becomes the dummy) while the
/// producer is between its tail swap and its link store into task 0. Both tasks come out exactly
/// once, in order, task 1 with its payload, and the queue ends empty.
fn push_while_draining_last(how: Push) {
    model(move || {
        let t = Tables::new(2, &[&[0]], &[]);
        let producer = {
            let t = t.clone();
            thread::spawn(move || {
                t.write(1, 41);
                how.push(&t.queues(), 0, 1);
            })
        };
        let q = t.queues();
        let mut cursor = q.head(0);
        let mut got = Vec::new();
        while got.len() < 2 {
            match q.pop_from(&mut cursor) {
                Some(task) => got.push((task, t.read(task))),
                None => thread::yield_now(),
            }
        }
        // One producer: FIFO order holds.
        assert_eq!(got, [(0, 0xFF00), (1, 41)]);
        producer.join().unwrap();
        t.assert_empty(0, cursor);
    });
}

#[test]
fn loom_push_while_draining_last() {
    push_while_draining_last(Push::Plain);
}

#[test]
fn loom_push_while_draining_last_fenced() {
    push_while_draining_last(Push::Fenced);
}

/// The diamond `0 -> {1, 2} -> 3` on two workers, end to end, as the worker loop runs it: pop (the
/// own queue, and under `steal` the other worker's), run the body, count it in `completed`
/// (relaxed, and before the children are released, as a worker's periodic flush may), release the
/// children with one fence, then push (by global round robin through `grr`, or under `steal`
/// into the own queue); an idle worker exits once `completed` reaches the task count. Each body
/// reads its parents' results and writes its own, so every dependence hop, across workers or not,
/// must publish; every task runs once; both workers terminate.
fn diamond(steal: bool) {
    const CHILDREN: [&[u32]; 4] = [&[1, 2], &[3], &[3], &[]];
    const PARENTS: [&[u32]; 4] = [&[], &[0], &[0], &[1, 2]];
    const N: u32 = 4;
    fn worker(t: &Tables, completed: &AtomicU32, grr: &AtomicU32, w: u32, steal: bool) {
        let q = t.queues();
        // Without stealing the owner keeps its cursor in a register, as the worker loop does.
        let mut cursor = q.head(w);
        loop {
            let task = if steal {
                q.pop_locked(w).or_else(|| q.pop_locked(1 - w))
            } else {
                q.pop_from(&mut cursor)
            };
            let Some(link) = task else {
                if completed.load(Gpu, Relaxed) >= N {
                    return;
                }
                thread::yield_now();
                continue;
            };
            let task = take(t, link);
            // The body: 1 + the sum of the parents' results.
            let inputs: u32 = PARENTS[task as usize].iter().map(|&p| t.read(p)).sum();
            assert_eq!(t.read(task), 0xFF00 + task, "task {task} ran twice");
            t.write(task, 1 + inputs);
            completed.fetch_add(1, Gpu, Relaxed);
            // Task 0 is the sole parent of 1 and 2, as the host marks such CSR entries.
            let entries: Vec<u32> = CHILDREN[task as usize]
                .iter()
                .map(|&c| if task == 0 { c | SOLE_PARENT } else { c })
                .collect();
            for link in finish(t, &entries) {
                let target = if steal {
                    w
                } else {
                    grr.fetch_add(1, Gpu, Relaxed) % 2
                };
                q.push_fenced(target, link);
            }
        }
    }
    model(move || {
        // Tasks 1 and 2 have a sole parent: zero counters, as the host sets them.
        let t = Tables::new(N, &[&[0], &[]], &[0, 0, 0, 2]);
        let counters = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let other = {
            let (t, c) = (t.clone(), counters.clone());
            thread::spawn(move || worker(&t, &c[0], &c[1], 1, steal))
        };
        worker(&t, &counters[0], &counters[1], 0, steal);
        other.join().unwrap();
        // 0 -> 1; 1, 2 -> 2; 3 -> 1 + 2 + 2.
        assert_eq!([t.read(0), t.read(1), t.read(2), t.read(3)], [1, 2, 2, 5]);
        assert_eq!(counters[0].load(Gpu, Relaxed), N);
    });
}

/// f. The diamond under a pushing policy (global round robin).
#[test]
fn loom_two_workers_diamond() {
    diamond(false);
}

/// f'. The diamond under work stealing.
#[test]
fn loom_two_workers_diamond_steal() {
    diamond(true);
}

/// g. The affinity policy's `ran_by`: child 2 waits for parents 0 and 1, run by workers 0 and 1;
/// its affine parent is task 0. Each worker's leader records itself (a relaxed store) before the
/// body, and another thread of its block releases the child after the block barrier (a join), as
/// in the wide fan-out; the narrow fan-out, where the leader releases, is the same chain without
/// the join. Whichever worker frees the child must find where task 0 ran (and task 1 too), with no
/// ordering of `ran_by`'s own: the dependence counter's release sequence carries it.
#[test]
fn loom_ran_by_published_by_the_release() {
    model(|| {
        let t = Tables::new(3, &[&[], &[]], &[0, 0, 2]);
        let ran_by = Arc::new([
            AtomicU32::new(NOT_RUN),
            AtomicU32::new(NOT_RUN),
            AtomicU32::new(NOT_RUN),
        ]);
        let affine = [NO_PARENT, NO_PARENT, 0];
        let workers: Vec<_> = [0u32, 1]
            .into_iter()
            .map(|w| {
                let (t, ran_by) = (t.clone(), ran_by.clone());
                // Worker `w` runs task `w`.
                thread::spawn(move || {
                    let leader = {
                        let ran_by = ran_by.clone();
                        thread::spawn(move || affinity::record(&ran_by[..], w, w))
                    };
                    leader.join().unwrap();
                    fence(Gpu);
                    deps::release(&t.pending, 2).map(|child| {
                        // As the worker's `home` does.
                        deps::acquire(&t.pending, child);
                        assert_eq!(ran_by[1 - w as usize].load(Gpu, Relaxed), 1 - w);
                        affinity::home(&affine, &ran_by[..], child, w, w)
                    })
                })
            })
            .collect();
        let homes: Vec<_> = workers.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(
            homes == [Some(Some(0)), None] || homes == [None, Some(Some(0))],
            "{homes:?}"
        );
    });
}

/// The workers' own finish of a kept plan's run (`finish`), on two workers (three exceed loom's branch limit while one spins at the gate): during the run each
/// writes a word of the table the next one resets, and worker 0 the error record; each arrives;
/// the last copies the record out and opens the gate; each leaves (the last to leave zeroes the
/// gate) and resets its share of the table from the pristine value. A reset that does not follow
/// every run-time write of its cell, or a copy that does not follow the record's write, is a race
/// loom reports; after the run the table is pristine, the copy holds the record, the gate's words
/// are zero and exactly one worker was last at each step.
#[test]
fn loom_finish_resets_after_every_worker() {
    use super::finish::{Gate, share};
    struct Run {
        words: [AtomicU32; 2],
        table: [UnsafeCell<u32>; 2],
        record: UnsafeCell<u32>,
        copied: UnsafeCell<u32>,
    }
    fn worker(run: &Run, w: u32) -> (bool, bool) {
        let gate = Gate::new(&run.words, 2);
        // The run: a write into the cell the next worker resets.
        run.table[(w as usize + 1) % 2].with_mut(|c| unsafe { *c = 7 });
        if w == 0 {
            run.record.with_mut(|r| unsafe { *r = 42 });
        }
        let last_in = gate.arrive();
        if last_in {
            let record = run.record.with(|r| unsafe { *r });
            run.copied.with_mut(|c| unsafe { *c = record });
            gate.open();
        } else {
            assert!(gate.wait(|| false, thread::yield_now));
        }
        // The leader leaves as soon as it is past the gate; its block's copy follows.
        let last_out = gate.leave();
        for cell in &run.table[share(2, 2, w)] {
            cell.with_mut(|c| unsafe { *c = 0 });
        }
        (last_in, last_out)
    }
    model(|| {
        let run = Arc::new(Run {
            words: [AtomicU32::new(0), AtomicU32::new(0)],
            table: [UnsafeCell::new(0), UnsafeCell::new(0)],
            record: UnsafeCell::new(0),
            copied: UnsafeCell::new(0),
        });
        let other = {
            let run = run.clone();
            thread::spawn(move || worker(&run, 1))
        };
        let lasts = [worker(&run, 0), other.join().unwrap()];
        assert_eq!(lasts.iter().filter(|l| l.0).count(), 1);
        assert_eq!(lasts.iter().filter(|l| l.1).count(), 1);
        for cell in &run.table {
            assert_eq!(cell.with(|c| unsafe { *c }), 0);
        }
        assert_eq!(run.copied.with(|c| unsafe { *c }), 42);
        let words: Vec<u32> = run.words.iter().map(|w| w.load(Gpu, Relaxed)).collect();
        assert_eq!(words, [0, 0]);
    });
}

/// A worker that never arrives (its task faulted and raised the abort flag): the others leave the
/// gate when they see the flag instead of waiting forever, and none of them resets anything.
#[test]
fn loom_finish_gives_way_to_the_abort_flag() {
    use super::finish::Gate;
    model(|| {
        let words = Arc::new([AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)]);
        let faulting = {
            let words = words.clone();
            // Worker 1 faults: it raises the flag and never reaches the gate.
            thread::spawn(move || words[2].store(1, Gpu, Relaxed))
        };
        let gate_words = [AtomicU32::new(0), AtomicU32::new(0)];
        let gate = Gate::new(&gate_words, 2);
        let aborted = || words[2].load(Gpu, Relaxed) != 0;
        let open = !aborted() && !gate.arrive() && gate.wait(aborted, thread::yield_now);
        assert!(!open);
        faulting.join().unwrap();
    });
}

/// A region's gang words for the models of wide tasks (`crate::gang`): the slot line, and per task
/// its join count (rank 0 taken by the poster), its arrival count, and payload cells.
struct Gangs {
    line: Vec<AtomicU32>,
    joins: Vec<AtomicU32>,
    arrivals: Vec<AtomicU32>,
    /// Gangs ended, counted by the member whose end arrival was the last.
    ended: AtomicU32,
    /// The poster's input to the task (what it acquired from the task's parents).
    input: Vec<Payload>,
    /// Per task, what each rank wrote before the gang barrier, and after it.
    before: Vec<[Payload; 2]>,
    after: Vec<[Payload; 2]>,
    /// Whether the bodies meet at the gang barrier.
    barrier: bool,
}

impl Gangs {
    /// `tasks` two-block tasks, gangs forming in `slots` slots at once, their bodies meeting at the
    /// gang barrier or not.
    fn new(tasks: u32, slots: u32, barrier: bool) -> Arc<Self> {
        let cells = || [Payload(UnsafeCell::new(0)), Payload(UnsafeCell::new(0))];
        Arc::new(Self {
            line: (0..gang::LINE_WORDS)
                .map(|i| {
                    AtomicU32::new(match i {
                        gang::MASK => 0,
                        gang::COUNT => slots,
                        _ => gang::EMPTY,
                    })
                })
                .collect(),
            joins: (0..tasks)
                .map(|_| AtomicU32::new(gang::JOINS_START))
                .collect(),
            arrivals: (0..tasks).map(|_| AtomicU32::new(0)).collect(),
            ended: AtomicU32::new(0),
            input: (0..tasks).map(|_| Payload(UnsafeCell::new(0))).collect(),
            before: (0..tasks).map(|_| cells()).collect(),
            after: (0..tasks).map(|_| cells()).collect(),
            barrier,
        })
    }

    fn slots(&self) -> gang::Slots<'_> {
        gang::Slots::new(&self.line)
    }

    /// Rank `rank` of the two-block task `task`, as the worker loop and `Gang::sync` run it: reads
    /// the poster's input, writes its cell, meets the other rank at the barrier, reads the other's
    /// cell, writes its second cell, arrives at the end; the member whose arrival ends the gang
    /// reads both second cells (as it then releases the children, who read them) and counts the
    /// gang. Returns whether this member ended the gang.
    fn run(&self, task: u32, rank: u32) -> bool {
        let (t, r) = (task as usize, rank as usize);
        // SAFETY (every cell access): loom reports any access not ordered by happens-before.
        let input = self.input[t].0.with(|p| unsafe { *p });
        assert_eq!(
            input,
            10 + task,
            "rank {rank} of task {task} ran before its input"
        );
        let rounds = u32::from(self.barrier);
        if self.barrier {
            self.before[t][r].0.with_mut(|p| unsafe { *p = 100 + rank });
            gang::arrive(&self.arrivals[t]);
            while !gang::passed(&self.arrivals[t], 2, 1) {
                thread::yield_now();
            }
            let other = self.before[t][1 - r].0.with(|p| unsafe { *p });
            assert_eq!(
                other,
                100 + (1 - rank),
                "the barrier let rank {rank} through early"
            );
        }
        self.after[t][r].0.with_mut(|p| unsafe { *p = 200 + rank });
        let before = gang::arrive(&self.arrivals[t]);
        let last = gang::last_to_end(before, 2, rounds);
        if last {
            for (k, cell) in self.after[t].iter().enumerate() {
                assert_eq!(cell.0.with(|p| unsafe { *p }), 200 + k as u32);
            }
            self.ended.fetch_add(1, Gpu, Relaxed);
        }
        last
    }

    /// A worker as `pick_gang` runs it: join a forming gang first; else post the next wide task it
    /// holds (`held`, in order; it writes each one's input first, standing for what it acquired
    /// from the task's parents) and run rank 0; until `tasks` gangs have ended. Returns the ranks
    /// it ran.
    fn worker(&self, held: &[u32], tasks: u32) -> Vec<(u32, u32)> {
        let mut held = held.iter().copied();
        let mut next = held.next();
        if let Some(task) = next {
            self.input[task as usize]
                .0
                .with_mut(|p| unsafe { *p = 10 + task });
        }
        let mut ran = Vec::new();
        while self.ended.load(Gpu, Relaxed) < tasks {
            let joined = self
                .slots()
                .join(|g| gang::take_rank(&self.joins[g as usize], 2));
            if let Some((g, rank)) = joined {
                self.run(g, rank);
                ran.push((g, rank));
                continue;
            }
            if let Some(task) = next
                && self.slots().post(task)
            {
                next = held.next();
                if let Some(task) = next {
                    self.input[task as usize]
                        .0
                        .with_mut(|p| unsafe { *p = 10 + task });
                }
                self.run(task, 0);
                ran.push((task, 0));
                continue;
            }
            thread::yield_now();
        }
        assert_eq!(next, None);
        ran
    }

    /// Runs `held.len()` workers, worker `w` holding `held[w]`, to the end, and checks that every
    /// rank of the `tasks` gangs ran once and that the slots end empty.
    fn check(this: &Arc<Self>, held: &[&'static [u32]], tasks: u32) {
        let others: Vec<_> = held[1..]
            .iter()
            .map(|&held| {
                let g = this.clone();
                thread::spawn(move || g.worker(held, tasks))
            })
            .collect();
        let mut ran = this.worker(held[0], tasks);
        for other in others {
            ran.extend(other.join().unwrap());
        }
        ran.sort_unstable();
        let want: Vec<(u32, u32)> = (0..tasks).flat_map(|t| [(t, 0), (t, 1)]).collect();
        assert_eq!(ran, want);
        assert_eq!(this.ended.load(Gpu, Relaxed), tasks);
        assert_eq!(this.line[gang::MASK].load(Gpu, Relaxed), 0);
        for slot in &this.line[gang::FIRST..] {
            assert_eq!(slot.load(Gpu, Relaxed), gang::EMPTY);
        }
    }
}

/// i. One two-block task: the worker that holds it posts it and runs rank 0, the other joins as
/// rank 1 and reads the poster's input (the slot's release and acquire carry it); the gang
/// barrier orders each rank's write before the other's read; the end arrival that completes the
/// count sees both ranks' last writes; exactly one member ends the gang; the slot and the mask end
/// empty.
#[test]
fn loom_gang_forms_and_meets() {
    model(|| Gangs::check(&Gangs::new(1, 1, true), &[&[0], &[]], 1));
}

/// i′. Two two-block tasks held by the two workers, with one slot (`slots_for(2, 2)`): both try to
/// post, one gang forms at a time, and the worker whose post fails joins the forming gang before
/// it posts its own (had it waited for its own post instead, both would wait forever). Every rank
/// of both gangs runs once and both gangs end.
#[test]
fn loom_two_gangs_form_one_at_a_time() {
    assert_eq!(gang::slots_for(2, 2), 1);
    model_long(100_000, || {
        Gangs::check(&Gangs::new(2, 1, true), &[&[0], &[1]], 2)
    });
}

/// i″. One slot used twice: one worker holds two tasks whose bodies do not meet (no barrier),
/// and posts the second as soon as its rank of the first is done, racing the other worker, who
/// takes the first's last rank and empties the slot. The poster's CAS acquires the emptying
/// store, so its bit is set after the joiner clears the old one: the second gang is never left
/// with its bit clear (then nobody would join it, and the model would not end). Both gangs end.
#[test]
fn loom_a_slot_is_posted_into_again() {
    model_long(100_000, || {
        Gangs::check(&Gangs::new(2, 1, false), &[&[0, 1], &[]], 2)
    });
}

/// A streamed region's cross-edge lists and total, as loom atomics (see [`stream`]).
struct StreamWords {
    heads: Vec<AtomicU32>,
    edges: Vec<AtomicU32>,
    links: Vec<AtomicU32>,
    words: Vec<AtomicU32>,
}

impl StreamWords {
    /// Lists for `n_tasks` tasks, all open, and `edges` as `(parent, child)`, none linked; room
    /// for one link per task, none published.
    fn new(n_tasks: u32, edges: &[(u32, u32)]) -> Arc<Self> {
        Arc::new(Self {
            heads: (0..n_tasks).map(|_| AtomicU32::new(stream::OPEN)).collect(),
            edges: edges
                .iter()
                .flat_map(|&(p, c)| [p, c, stream::OPEN])
                .map(AtomicU32::new)
                .collect(),
            links: (0..n_tasks as usize * stream::LINK_WORDS)
                .map(|_| AtomicU32::new(0))
                .collect(),
            words: [stream::UNKNOWN_TOTAL, 0, 0].map(AtomicU32::new).into(),
        })
    }

    fn stream(&self) -> stream::Stream<'_> {
        stream::Stream {
            heads: &self.heads,
            edges: &self.edges,
            links: &self.links,
            words: &self.words,
        }
    }
}

/// A worker's end of a streamed task, as `release_streamed` does it after the body: the fence,
/// the close of the task's list, the release of each child on it, the push of the freed ones
/// into `to`'s queue (flagged counted: every streamed child is).
fn close_and_push(t: &Tables, s: &StreamWords, task: u32, to: u32) {
    fence(Gpu);
    let stream = s.stream();
    let mut e = stream.close(task);
    if e != stream::OPEN {
        fence(Gpu);
    }
    while e != stream::OPEN {
        let next = stream.next(e);
        if let Some(child) = stream::release(&stream, &t.pending, e) {
            t.queues().push_fenced(to, child | COUNTED);
        }
        e = next;
    }
}

/// Worker 0 of the stream models: it pops task 0, the one ready task, writes its result (100) and
/// ends it with [`close_and_push`], its freed children going to worker 1.
fn spawn_parent(t: &Arc<Tables>, s: &Arc<StreamWords>) -> thread::JoinHandle<()> {
    let (t, s) = (t.clone(), s.clone());
    thread::spawn(move || {
        assert_eq!(pop_ready(&t, 0, 1), [(0, 0xFF00)]);
        t.write(0, 100);
        close_and_push(&t, &s, 0, 1);
    })
}

/// j. A batch published while a worker runs the batch before: task 0 (published) runs on one
/// thread while the linker, another, writes task 1's record (its payload here), links its cross
/// edge from task 0 and takes its guard (`pending[1]` = one parent + the guard). Whichever of the
/// worker's close and the linker's link comes first, task 1 is pushed exactly once, and the
/// worker that pops it sees the record the linker wrote as soon as it has the link (the closing
/// worker fences again before it pushes: without that fence this model reports a data race), and
/// task 0's result after its acquire; the list ends closed, the counter at zero.
#[test]
fn loom_a_batch_is_published_while_its_parent_runs() {
    model(|| {
        let t = Tables::new(2, &[&[0], &[]], &[0, 2]);
        let s = StreamWords::new(2, &[(0, 1)]);
        let parent = spawn_parent(&t, &s);
        let linker = {
            let (t, s) = (t.clone(), s.clone());
            thread::spawn(move || {
                t.write(1, 201);
                if stream::link_and_open(&s.stream(), &t.pending, 1, 0..1) {
                    t.queues().push_fenced(1, 1 | COUNTED);
                }
                s.stream().end(2);
            })
        };
        // The consumer: worker 1 pops task 1 and, as `Pick::take` does, reads its record (the
        // payload the linker wrote) before it acquires the counter, then what the parent wrote.
        let link = loop {
            match t.queues().pop(1) {
                Some(link) => break link,
                None => thread::yield_now(),
            }
        };
        assert_eq!(t.read(1), 201);
        assert_eq!(take(&t, link), 1);
        assert_eq!(t.read(0), 100);
        parent.join().unwrap();
        linker.join().unwrap();
        assert_eq!(s.heads[0].load(Gpu, Relaxed), stream::CLOSED);
        assert_eq!(t.pending[1].load(Gpu, Relaxed), 0);
        assert_eq!(s.stream().total(), 2);
        t.assert_empty(1, t.head[1].load(Gpu, Relaxed));
    });
}

/// j′. Two cross parents of one task finish while it is linked: the linker's edges race both
/// closes; one parent may be closed before its link (counted off by `open`), the other linked and
/// released by its close. The task is pushed once and its runner sees both parents' results.
#[test]
fn loom_a_task_with_two_cross_parents_is_freed_once() {
    model(|| {
        let t = Tables::new(3, &[&[0, 1], &[]], &[0, 0, 3]);
        let s = StreamWords::new(3, &[(0, 2), (1, 2)]);
        let parents = {
            let (t, s) = (t.clone(), s.clone());
            thread::spawn(move || {
                for (task, _) in pop_ready(&t, 0, 2) {
                    t.write(task, 100 + task);
                    close_and_push(&t, &s, task, 1);
                }
            })
        };
        let linker = {
            let (t, s) = (t.clone(), s.clone());
            thread::spawn(move || {
                if stream::link_and_open(&s.stream(), &t.pending, 2, 0..2) {
                    t.queues().push_fenced(1, 2 | COUNTED);
                }
            })
        };
        assert_eq!(pop_ready(&t, 1, 1), [(2, 0xFF02)]);
        assert_eq!((t.read(0), t.read(1)), (100, 101));
        parents.join().unwrap();
        linker.join().unwrap();
        assert_eq!(t.pending[2].load(Gpu, Relaxed), 0);
        t.assert_empty(1, t.head[1].load(Gpu, Relaxed));
    });
}

/// j″. Two cross edges from one parent, linked while it runs: the second link's `next` holds the
/// first, and the close must read it (its swap acquires the links' CASes). Both children are
/// pushed once, each after task 0's result.
#[test]
fn loom_a_parent_closes_a_list_of_two() {
    model_long(10_000, || {
        let t = Tables::new(3, &[&[0], &[]], &[0, 2, 2]);
        let s = StreamWords::new(3, &[(0, 1), (0, 2)]);
        let parent = spawn_parent(&t, &s);
        let linker = {
            let (t, s) = (t.clone(), s.clone());
            thread::spawn(move || {
                for (task, edge) in [(1u32, 0u32), (2, 1)] {
                    if stream::link_and_open(&s.stream(), &t.pending, task, edge..edge + 1) {
                        t.queues().push_fenced(1, task | COUNTED);
                    }
                }
            })
        };
        let got = sorted(pop_ready(&t, 1, 2));
        assert_eq!(got, [(1, 0xFF01), (2, 0xFF02)]);
        assert_eq!(t.read(0), 100);
        parent.join().unwrap();
        linker.join().unwrap();
        t.assert_empty(1, t.head[1].load(Gpu, Relaxed));
    });
}

/// j‴. The host publishes a batch while its parent runs, and an idle worker links it: the host
/// writes task 1's record, its cross edge's words and its link, then publishes the link; worker 1
/// claims and links it (as [`Pick::acquire`](super::pick::Pick::acquire) does between its polls)
/// while worker 0 runs and closes task 0. Task 1 is pushed exactly once, whichever of the close
/// and the link comes first, and its runner sees the host's record and task 0's result; a second
/// claim finds nothing. Worker 1 tries twice while the others run (a spin without bound would
/// exceed loom's branches), then once more after they are joined.
#[test]
fn loom_a_worker_links_the_batch_the_host_publishes() {
    model(|| {
        let t = Tables::new(2, &[&[0], &[]], &[0, 2]);
        // The edge's words are the host's to write: placeholders until then.
        let s = StreamWords::new(2, &[(0, 0)]);
        let parent = spawn_parent(&t, &s);
        let host = {
            let (t, s) = (t.clone(), s.clone());
            thread::spawn(move || {
                t.write(1, 201);
                let stream = s.stream();
                for (w, word) in [0, 1, stream::OPEN].into_iter().enumerate() {
                    stream.edges[w].store(word, Gpu, Relaxed);
                }
                stream.set_link(0, 1, 0..1);
                stream.publish(1);
                stream.end(2);
            })
        };
        // Worker 1: links what is published, then pops and runs task 1.
        let run = |tries: usize| {
            for _ in 0..tries {
                stream::link_claimed(&s.stream(), &t.pending, |task| {
                    t.queues().push_fenced(1, task | COUNTED);
                });
                if let Some(link) = t.queues().pop(1) {
                    assert_eq!(t.read(1), 201);
                    assert_eq!(take(&t, link), 1);
                    assert_eq!(t.read(0), 100);
                    return true;
                }
                thread::yield_now();
            }
            false
        };
        let ran = run(2);
        parent.join().unwrap();
        host.join().unwrap();
        assert!(ran || run(1));
        assert!(s.stream().claim(stream::LINK_CLAIM).is_none());
        assert_eq!(t.pending[1].load(Gpu, Relaxed), 0);
        t.assert_empty(1, t.head[1].load(Gpu, Relaxed));
    });
}

/// j⁗. A link round: two threads of one idle block link their shares of two claimed links
/// ([`stream::link_share`]), each a cross edge from task 0 into its list, while task 0 runs and
/// closes it (the model's own thread is thread 0 of the block, then pops). The two CASes on one
/// head race each other and the close; both children are pushed once, each after task 0's result.
#[test]
fn loom_two_threads_of_a_block_link_one_round() {
    model_long(10_000, || {
        let t = Tables::new(3, &[&[0], &[]], &[0, 2, 2]);
        let s = StreamWords::new(3, &[(0, 1), (0, 2)]);
        let stream = s.stream();
        stream.set_link(0, 1, 0..1);
        stream.set_link(1, 2, 1..2);
        stream.publish(2);
        let claimed = stream
            .claim(stream::LINK_CLAIM)
            .expect("two published links");
        assert_eq!(claimed, 0..2);
        let parent = spawn_parent(&t, &s);
        let share = |thread: u32, t: &Tables, s: &StreamWords| {
            stream::link_share(&s.stream(), &t.pending, 0..2, (thread, 2), |task| {
                t.queues().push_fenced(1, task | COUNTED);
            });
        };
        let other = {
            let (t, s) = (t.clone(), s.clone());
            thread::spawn(move || share(1, &t, &s))
        };
        share(0, &t, &s);
        let got = sorted(pop_ready(&t, 1, 2));
        assert_eq!(got, [(1, 0xFF01), (2, 0xFF02)]);
        assert_eq!(t.read(0), 100);
        parent.join().unwrap();
        other.join().unwrap();
        t.assert_empty(1, t.head[1].load(Gpu, Relaxed));
    });
}
