//! A, the pick: the leader finds the next task (its continuation, the static policy's next link,
//! or a queued task, waiting if need be) and hands it to the block.

use super::leader::{CONTINUATIONS, IDLE_POLLS, Leader, Record};
use super::queue::{self, COUNTED};
use super::tables::Tables;
use super::{deps, policy, stream};
use crate::abi::FLAG_STREAM;
use crate::arch;
use crate::atomic::{Ordering::Relaxed, Scope::*};
use crate::gang;
use crate::words;
use crate::words::command;

/// An idle worker checks the abort flag and the completed count every this many empty polls of its
/// queue (on the GPU; every poll on the host, where the loads are cheap and threads few).
const IDLE_CHECK: u32 = if cfg!(target_arch = "nvptx64") { 8 } else { 1 };
/// The longest idle sleep: short, since it adds directly to the latency of a dependence hop.
const MAX_BACKOFF_NS: u32 = 256;
/// The longest idle sleep while a streamed region's host is still recording (see
/// [`Pick::acquire`]), and the empty rounds of a wait before it starts.
const STREAM_BACKOFF_NS: u32 = 16_384;
const STREAM_PATIENCE: u32 = 1024;
/// Polls of a task's counter without sleeping before [`Pick::wait`] starts backing off: a poll
/// is an L2 round trip already, and a sleep adds to the hop (64 rather than 4 took 1% off a
/// wavefront of ~1 us tasks on the H100, and did not slow the workloads).
const WAIT_SPINS: u32 = 64;
/// The longest sleep between polls of a waited-for task's counter.
const MAX_WAIT_BACKOFF_NS: u32 = 128;

/// A: the leader's pick. It takes `kept`, the continuation, if there is one; else, under the
/// static policy, the link after the last task in its list (copied into `AHEAD` during that task's
/// body: the pop without its load); else waits for a queued task. It hands the task (or `ABORT`,
/// when `abort_word`, the flag as read at the end of the last body, is up; or the command
/// `acquire` returned) and its record to the block. Inlined into the loop, as the
/// scheduler's other steps are: only the body is out of line (see `run_body`).
#[inline(always)]
pub(super) fn pick<'a, 'w>(
    rt: &impl Tables<'a>,
    mut me: Leader<'w>,
    kept: u32,
    abort_word: u32,
) -> Leader<'w> {
    let ahead = if policy::planned(rt.policy()) {
        me.get(words::AHEAD)
    } else {
        command::NONE
    };
    let (task, record) = if kept != command::NONE {
        me.add(CONTINUATIONS, 1);
        (kept, rt.record(kept))
    } else if ahead != command::NONE && ahead != queue::NIL {
        me.head = ahead & !COUNTED;
        rt.take(ahead, &mut me, false)
    } else {
        match rt.acquire(&mut me, false) {
            // A link round (a streamed region's): the claimed links stay in the `ARGS` words.
            command::NONE => (
                command::NONE,
                Record {
                    args: me.get(words::ARGS),
                    args_end: me.get(words::ARGS_END),
                    ..Record::default()
                },
            ),
            command if command >= command::NONE => (command, Record::default()),
            link => rt.take(link, &mut me, false),
        }
    };
    // A busy worker reads the abort flag at the end of every `ABORT_POLL`-th body and looks at it
    // here, so that the load is off the hop's critical path; idle and waiting workers poll it
    // themselves.
    let task = if task < command::NONE && abort_word != 0 {
        command::ABORT
    } else {
        task
    };
    me.words.store(words::CURRENT, task);
    record.store(me.words);
    me
}

/// A streamed region's link round, in every thread of the block after the barrier that follows
/// the pick: each thread links its share of the links its leader claimed (`ARGS..ARGS_END`,
/// [`stream::link_share`]), and the tasks that free go round robin, as an idle worker's roots do.
/// Out of line: only a streamed region's idle workers come here.
#[inline(never)]
pub(super) fn link_round<'a>(rt: &impl Tables<'a>, words: words::Words) {
    let Some(stream) = rt.stream() else {
        return;
    };
    let claimed = words.load(words::ARGS)..words.load(words::ARGS_END);
    let me = (arch::thread_idx(), arch::block_dim());
    stream::link_share(&stream, rt.pending(), claimed, me, |task| {
        let to = rt.grr().fetch_add(1, Gpu, Relaxed) % rt.workers();
        rt.queues().push_fenced(to, task | COUNTED);
    });
}

/// A: the pick of a region with wide tasks (see [`crate::gang`]). A forming gang comes first: the
/// leader takes one of its ranks, and puts aside (`PARKED`) what it would have run otherwise.
/// Then, as [`pick`] does, the parked link, the continuation, the static list or a queued task;
/// a wide task among them is posted as the forming gang, with this block as its rank 0, or, while
/// another gang forms, waits its turn. `width` gives a task kind's `blocks`. Hands the block the
/// task, its record and the block's rank (`GANG`: `NONE` for a one-block task).
#[inline(never)]
pub(super) fn pick_gang<'a, 'w>(
    rt: &impl Tables<'a>,
    width: impl Fn(u32) -> u32,
    mut me: Leader<'w>,
    kept: u32,
    abort_word: u32,
) -> Leader<'w> {
    let slots = rt.gang_slots();
    let mut link = me.get(words::PARKED);
    if link != command::NONE {
        me.set(words::PARKED, command::NONE);
        if kept != command::NONE {
            // The gang this worker joined freed a continuation: it waits in the worker's own
            // queue (the static policy keeps none), behind the parked task. It is ready, and the
            // push's release covers what the worker acquired for it.
            rt.queues().push(me.worker(), kept);
        }
    } else if kept != command::NONE {
        me.add(CONTINUATIONS, 1);
        // A continuation is ready: its link needs no acquire.
        link = kept;
    }
    let mut posts = 0u32;
    let (task, record, rank) = loop {
        let joined = slots.join(|g| {
            let joins = &rt.gangs()[2 * g as usize + gang::JOINS];
            gang::take_rank(joins, width(rt.record(g).kind))
        });
        if let Some((g, rank)) = joined {
            if link != command::NONE {
                me.set(words::PARKED, link);
            }
            break (g, rt.record(g), rank);
        }
        if link == command::NONE {
            let ahead = if policy::planned(rt.policy()) {
                me.get(words::AHEAD)
            } else {
                command::NONE
            };
            if ahead != command::NONE && ahead != queue::NIL {
                me.head = ahead & !COUNTED;
                me.set(words::AHEAD, command::NONE);
                link = ahead;
            } else {
                match rt.acquire(&mut me, true) {
                    // A gang is forming: join it.
                    command::NONE => continue,
                    command if command > command::NONE => {
                        break (command, Record::default(), command::NONE);
                    }
                    found => link = found,
                }
            }
        }
        let (task, record) = rt.take(link, &mut me, true);
        match task {
            // A gang started forming while the task waited: join it, then take the link again.
            command::NONE => continue,
            command::ABORT => break (task, record, command::NONE),
            _ => {}
        }
        if width(record.kind) == 1 {
            break (task, record, command::NONE);
        }
        if slots.post(task) {
            break (task, record, 0);
        }
        // Another gang is forming: this task is ready, and waits its turn (its counter, if it had
        // one, is acquired: its link needs no acquire now).
        link = task;
        posts += 1;
        if posts > 4 {
            if posts == 5 {
                rt.clear_current(me.worker());
            }
            arch::nanosleep(64);
        }
    };
    let task = if task < command::NONE && abort_word != 0 {
        command::ABORT
    } else {
        task
    };
    me.words.store(words::CURRENT, task);
    me.words.store(words::GANG, rank);
    record.store(me.words);
    me
}

/// The pick's steps, over any way of reaching the tables (see [`Tables`]).
pub(super) trait Pick<'a>: Tables<'a> {
    /// What the block needs to run `task`: its kind, the bounds of its argument words and of its
    /// CSR row. Four independent loads, which the leader issues as early as it knows the task.
    #[inline(always)]
    fn record(&self, task: u32) -> Record {
        let t = task as usize;
        debug_assert!(t < self.n_tasks() as usize);
        let (tasks, offsets) = (self.tasks(), self.offsets());
        // SAFETY: `tasks` and `offsets` have `n_tasks + 1` entries, and `task < n_tasks` comes
        // from the queues or the CSR; the task is published, and so are the bounds after it.
        unsafe {
            let this = tasks.get(t);
            Record {
                kind: this.kind,
                args: this.args,
                args_end: tasks.args(t + 1),
                row: offsets.get(t),
                row_end: offsets.get(t + 1),
            }
        }
    }

    /// Clears `worker`'s slot of the watchdog (`u32::MAX`: running nothing), before it waits. The
    /// slot names the worker's last task until it starts another or waits: a stalled run's report
    /// names the tasks that are running, not one that finished before its worker went idle.
    #[inline(always)]
    fn clear_current(&self, worker: u32) {
        if let Some(slot) = self.current().get(worker as usize) {
            slot.store(u32::MAX, Gpu, Relaxed);
        }
    }

    #[inline(always)]
    fn aborted(&self) -> bool {
        // The host's watchdog writes the flag from outside the GPU: system scope. A faulting task
        // raises the same flag (`error::raise`).
        self.abort_word() != 0
    }

    /// The abort flag's word (0: not aborted), for a leader that reads it ahead.
    #[inline(always)]
    fn abort_word(&self) -> u32 {
        self.abort().map_or(0, |a| a.load(System, Relaxed))
    }

    /// The leader's wait for work: a queued task's link (see [`Pick::take`]), or `DONE`, or
    /// `ABORT`; in a streamed region also `NONE`, a link round for the block ([`link_round`]) of
    /// the links it claimed into the `ARGS` words. Before it idles it adds its locally counted
    /// completions to the global count, which is what termination reads.
    ///
    /// In a region with wide tasks (`gangs`) it also returns `NONE` when a gang is forming, for
    /// the caller to join; and under the static policy a worker whose list is done stays, to join
    /// the gangs still to form.
    fn acquire(&self, me: &mut Leader, gangs: bool) -> u32 {
        let p = self.policy();
        let mut backoff = 0u32;
        // Empty rounds of this wait.
        let mut idle = 0u32;
        loop {
            if gangs && self.gang_slots().any() {
                return command::NONE;
            }
            if let Some(link) = policy::pop_own(p, self, me) {
                return link;
            }
            if policy::planned(p) && !gangs {
                // The plan is all linked before the run and nothing is pushed: an empty queue is
                // the end of this worker's list, for good. Leaving now rather than polling keeps
                // this block's loads (each an L1 invalidation, as acquires) off its SM.
                me.flush(self.completed());
                return command::DONE;
            }
            if let Some(link) = policy::steal(p, self, me) {
                return link;
            }
            // A streamed region's idle worker links the batches the host has published: the
            // leader claims them here, and its whole block links them (`link_round`).
            if self.flags() & FLAG_STREAM != 0 && self.claim_links(me) {
                return command::NONE;
            }
            if idle == 0 {
                self.clear_current(me.worker());
            }
            me.flush(self.completed());
            // The flags and the count are lines every idle worker reads: polled on every
            // `IDLE_CHECK`-th round only, so that hundreds of idle workers do not queue at one L2
            // slice ahead of the atomics of the busy ones.
            let polls = me.get(IDLE_POLLS);
            if polls.is_multiple_of(IDLE_CHECK) {
                if self.aborted() {
                    return command::ABORT;
                }
                // Relaxed: `completed == total` means no task remains anywhere; nothing is read
                // after. (A streamed region's total stays above every count until its last
                // batch is published.)
                if self.completed().load(Gpu, Relaxed) >= self.total() {
                    return command::DONE;
                }
            }
            me.set(IDLE_POLLS, polls + 1);
            if backoff > 0 {
                arch::nanosleep(backoff);
            }
            // While a streamed region's host still records, a worker idle for long waits for the
            // next batch rather than for a task: it backs off further, off the recording thread's
            // core. Short waits keep the short backoff, so that a batch is taken up at once.
            idle += 1;
            let most = if idle > STREAM_PATIENCE
                && self.flags() & FLAG_STREAM != 0
                && self.total() == stream::UNKNOWN_TOTAL
            {
                STREAM_BACKOFF_NS
            } else {
                MAX_BACKOFF_NS
            };
            backoff = (backoff * 2).clamp(32, most);
        }
    }

    /// A streamed region's idle leader: claims published links for a link round of its block
    /// ([`link_round`]), one per thread and at least [`stream::LINK_CLAIM`], into the `ARGS`
    /// words. Whether it claimed any. Out of line (see [`Tables::streamed_total`]).
    #[inline(never)]
    fn claim_links(&self, me: &Leader) -> bool {
        let Some(stream) = self.stream() else {
            return false;
        };
        let Some(claimed) = stream.claim(stream::LINK_CLAIM.max(arch::block_dim())) else {
            return false;
        };
        me.words.store(words::ARGS, claimed.start);
        me.words.store(words::ARGS_END, claimed.end);
        true
    }

    /// The task of a popped queue link and its record, its parents' results acquired through its
    /// counter when the link says it has other parents than its pusher's task (or, under the
    /// static policy, parents on other workers). The record's loads are issued first, so that they
    /// overlap the acquire's round trip. `ABORT` if the region was aborted while the task waited.
    ///
    /// In a region with wide tasks (`gangs`), `NONE` when a gang started forming while the task
    /// waited: the caller joins it and takes the link again later.
    #[inline(always)]
    fn take(&self, link: u32, me: &mut Leader, gangs: bool) -> (u32, Record) {
        let task = link & !COUNTED;
        let record = self.record(task);
        if link & COUNTED != 0 && !deps::ready(self.pending(), task) {
            let (outcome, polls) = self.wait(task, me.take_done(), me.worker(), gangs);
            me.add(IDLE_POLLS, polls);
            match outcome {
                Waited::Ready => {}
                Waited::Aborted => return (command::ABORT, record),
                Waited::Gang => return (command::NONE, record),
            }
        }
        (task, record)
    }

    /// Waits until `task`'s counter reads zero (with acquire, as [`deps::acquire`]): whether it
    /// did (`false`: the region was aborted meanwhile), and how many polls it took. Under a queue
    /// policy a popped task is ready as soon as its link is, so this returns at the first poll in
    /// practice; under the static policy a worker waits here for its next task's parents on other
    /// workers, for as long as they take, and so polls the abort flag and first reports its `done`
    /// completions, as an idle worker does, having cleared `worker`'s slot of the watchdog
    /// ([`Pick::clear_current`]). It takes values, not the [`Leader`], so that the leader's cursor
    /// can stay in a register.
    ///
    /// In a region with wide tasks (`gangs`) it also stops when a gang is forming, which the
    /// caller joins first: the task may be waiting for that very gang.
    #[inline(never)]
    fn wait(&self, task: u32, done: u32, worker: u32, gangs: bool) -> (Waited, u32) {
        self.clear_current(worker);
        if done > 0 {
            // Relaxed, as in `Leader::flush`.
            self.completed().fetch_add(done, Gpu, Relaxed);
        }
        let mut backoff = 0u32;
        let mut polls = 0u32;
        while !deps::ready(self.pending(), task) {
            polls += 1;
            if polls.is_multiple_of(IDLE_CHECK) && self.aborted() {
                return (Waited::Aborted, polls);
            }
            if gangs && self.gang_slots().any() {
                return (Waited::Gang, polls);
            }
            // Short sleeps only: the wake-up adds to the hop's latency, and one poll is already an
            // L2 round trip.
            if polls > WAIT_SPINS {
                arch::nanosleep(backoff);
                backoff = (backoff * 2).clamp(32, MAX_WAIT_BACKOFF_NS);
            }
        }
        (Waited::Ready, polls)
    }
}

/// How [`Pick::wait`] ended.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Waited {
    /// The task's counter reached zero.
    Ready,
    /// The region was aborted.
    Aborted,
    /// A gang is forming (regions with wide tasks only).
    Gang,
}

impl<'a, T: Tables<'a>> Pick<'a> for T {}
