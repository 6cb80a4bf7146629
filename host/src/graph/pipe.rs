//! [`Tracking`]: dependence tracking beside the thread that records a region's tasks.
//!
//! Recording a task (validating its ranges, storing its words) and tracking it (its accesses
//! against the arrays' states, its edges) cost about the same on a tiled factorization, and
//! neither needs the other's result. Once a region has spawned [`Tracking::DEFAULT_PIPE_AFTER`]
//! tasks, the tracker moves to a thread of its own: the recording thread appends each task's
//! accesses to a chunk and hands full chunks over a bounded channel, and the tracker hands the
//! emptied chunks back. The tracker sees the same tasks in the same order, so the DAG is the same
//! either way; what changes is when a limit the tracker enforces is reported: when the region is
//! finished, not at the spawn that passed it.
//!
//! A streamed region reads its edges while the body still records ([`Tracking::stream_edges`]).
//! Piped, the tracker's thread reads each chunk's new edges once it has tracked it and hands them
//! back with the emptied chunk, in order, so that the recording thread feeds the tasks tracked so
//! far without tracking them itself.

use core::ops::Range;
use std::collections::VecDeque;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Access, DepTracker, LimitExceeded, split};

/// Tasks per chunk handed to the tracker's thread, by default.
const CHUNK_TASKS: usize = 1024;

/// Full chunks that may wait for the tracker before the recording thread blocks: enough to ride
/// out a stall of either thread, few enough that a slow tracker does not let the accesses of the
/// whole region pile up.
const CHUNKS_IN_FLIGHT: usize = 8;

/// Emptied chunks the recording thread keeps before it fills the oldest again, rather than the
/// newest. A chunk the tracker has just read is in its core's cache, and every line the recorder
/// then writes is taken back from there: refilling the newest cost the recording thread of an LU
/// at 4096 (89,377 tasks) 5.7 ms of CPU against 4.0 this way, on the development machine
/// (`pipe-ring/`). At most this many chunks of 1024 tasks (about 100 KB each on a
/// factorization) besides those in flight.
const RING: usize = 8;

/// Dependence tracking for one inspection (see the module docs).
pub(crate) struct Tracking {
    state: State,
    /// The task count at which tracking moves to its own thread (`u32::MAX`: never).
    pipe_after: u32,
    /// Tasks handed to the tracker so far.
    tasks: u32,
    /// Whether moving needs two idle threads, asked when the region reaches `pipe_after`.
    ask_first: bool,
    /// Tasks per chunk handed to the tracker's thread.
    chunk_tasks: usize,
    /// A streamed region's edges, read as its tasks are tracked ([`Tracking::stream_edges`]).
    streaming: Option<Streaming>,
}

/// When the tracker of a streamed region moves to a thread of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Piping {
    /// Never: the recording thread tracks every task.
    Never,
    /// As for any region: after [`Tracking::DEFAULT_PIPE_AFTER`] tasks, when two threads are
    /// idle then.
    Default,
    /// After `after` tasks whatever the load, in chunks of `chunk` tasks (tests).
    #[cfg_attr(not(test), expect(dead_code, reason = "tests force the pipe"))]
    Force { after: u32, chunk: usize },
}

impl Piping {
    /// For a streamed region on `busy` threads of this process (the CPU backend's workers): as for
    /// any region when two more threads are idle ([`split::idle_threads`]), else never.
    pub(crate) fn beside(busy: usize) -> Self {
        if split::idle_threads() >= busy + 2 {
            Piping::Default
        } else {
            Piping::Never
        }
    }
}

/// How long [`Tracking::take_edges`] waits for the tracker's thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Not at all: the edges of the tasks it has tracked already.
    Not,
    /// For its next chunk, if one is out.
    Next,
}

/// A streamed region's edges (see [`Tracking::take_edges`]).
struct Streaming {
    /// Per array, how far the tracker's edges were read; on the tracker's thread once piped.
    cursors: Vec<usize>,
    /// Edges the tracker's thread handed back and the recorder has not taken yet.
    edges: Vec<(u32, u32)>,
    /// The tasks the tracker's thread has tracked and handed back.
    tracked: u32,
    /// Whether every edge is known so far: no array left the tile path and no limit was passed.
    known: bool,
}

enum State {
    /// On the recording thread.
    Inline(Box<DepTracker>),
    /// On a thread of its own.
    Piped(Pipe),
}

/// The recording side of a tracker on its own thread. Dropped before [`Tracking::finish`] (the
/// region's body panicked), it closes the channel and joins the thread, which ends once it has
/// tracked what it was handed: no thread outlives the inspection.
struct Pipe {
    /// The chunk being filled.
    chunk: Chunk,
    /// `None` once closed.
    full: Option<SyncSender<Chunk>>,
    empty: Receiver<Chunk>,
    /// `None` once joined.
    worker: Option<JoinHandle<Tracked>>,
    /// Chunks handed over, and handed back.
    handed: usize,
    returned: usize,
    /// Emptied chunks, oldest first: the oldest is filled next once there are [`RING`].
    spare: VecDeque<Chunk>,
}

impl Pipe {
    /// Closes the channel and waits for the tracker's thread.
    fn join(&mut self) -> Option<std::thread::Result<Tracked>> {
        self.full.take();
        self.worker.take().map(JoinHandle::join)
    }
}

impl Drop for Pipe {
    fn drop(&mut self) {
        let _ = self.join();
    }
}

/// What the tracker's thread hands back: the tracker, the first limit a task passed (the tasks
/// after it are not tracked), and the time it spent on its chunks.
type Tracked = (Box<DepTracker>, Option<LimitExceeded>, Duration);

/// Accesses of consecutive tasks: task `i`'s are `accesses[ends[i - 1]..ends[i]]`. Handed back,
/// a streamed region's chunk carries the edges found once its tasks were tracked.
#[derive(Default)]
struct Chunk {
    accesses: Vec<(u32, Range<usize>, Access)>,
    ends: Vec<u32>,
    /// The edges into the chunk's tasks, `(child, parent)`, when `known`.
    edges: Vec<(u32, u32)>,
    /// Tasks tracked, this chunk's included.
    tracked: u32,
    known: bool,
}

impl Chunk {
    fn with_capacity(tasks: usize) -> Self {
        Chunk {
            accesses: Vec::with_capacity(4 * tasks),
            ends: Vec::with_capacity(tasks),
            ..Chunk::default()
        }
    }
}

impl Tracking {
    /// Tasks recorded before tracking moves to its own thread, when the process may use two
    /// threads for inspection ([`THREADS_VAR`](super::THREADS_VAR)): below it, starting a thread
    /// costs more than it saves.
    pub(crate) const DEFAULT_PIPE_AFTER: u32 = 2048;

    /// Tracking by `tracker`, moved to its own thread after [`Tracking::DEFAULT_PIPE_AFTER`]
    /// tasks when two threads are idle then (a small region does not ask), on the calling thread
    /// otherwise.
    pub(crate) fn new(tracker: DepTracker) -> Self {
        let mut tracking = Self::piped_after(tracker, Self::DEFAULT_PIPE_AFTER);
        tracking.ask_first = true;
        tracking
    }

    /// Tracking by `tracker`, moved to its own thread once `pipe_after` tasks were added
    /// (`u32::MAX`: never; 0: from the first task).
    pub(crate) fn piped_after(tracker: DepTracker, pipe_after: u32) -> Self {
        Tracking {
            state: State::Inline(Box::new(tracker)),
            pipe_after,
            tasks: 0,
            ask_first: false,
            chunk_tasks: CHUNK_TASKS,
            streaming: None,
        }
    }

    /// Reads the edges as the tasks are tracked, for a streamed region ([`Tracking::take_edges`]),
    /// with the tracker moved to its own thread as `piping` says. Before the first task only.
    pub(crate) fn stream_edges(&mut self, piping: Piping) {
        debug_assert_eq!(self.tasks, 0);
        match piping {
            Piping::Never => self.pipe_after = u32::MAX,
            Piping::Default => {}
            Piping::Force { after, chunk } => {
                (self.pipe_after, self.chunk_tasks, self.ask_first) = (after, chunk.max(1), false);
            }
        }
        self.streaming = Some(Streaming {
            cursors: Vec::new(),
            edges: Vec::new(),
            tracked: 0,
            known: true,
        });
    }

    /// For a streamed region ([`Tracking::stream_edges`]): the edges found since the last call
    /// into `out` (cleared first), as `(child, parent)`, and how many tasks are tracked, those
    /// edges' children among them. Every task added so far is handed to the tracker's thread
    /// unless `wait` is [`Wait::Not`], which takes only what it has tracked already; [`Wait::Next`]
    /// then waits for its next chunk, if one is out (see [`Tracking::chunks_out`]). `None` once
    /// an edge is not known: an array left the tile path (see [`DepTracker::edges_known`]) or a
    /// task passed a limit on the tracker's thread; the edges then come from the finished DAG.
    pub(crate) fn take_edges(&mut self, out: &mut Vec<(u32, u32)>, wait: Wait) -> Option<u32> {
        let streaming = self.streaming.as_mut()?;
        match &mut self.state {
            State::Inline(tracker) => {
                if !tracker.edges_known() {
                    return None;
                }
                tracker.new_edges(&mut streaming.cursors, out);
                Some(tracker.task_count())
            }
            State::Piped(pipe) => {
                if wait != Wait::Not && !pipe.chunk.ends.is_empty() {
                    pipe.hand_over(Some(streaming), self.chunk_tasks);
                }
                match wait {
                    Wait::Not => pipe.take_back(Some(streaming)),
                    Wait::Next => pipe.wait_next(streaming),
                }
                if !streaming.known {
                    return None;
                }
                out.clear();
                std::mem::swap(out, &mut streaming.edges);
                Some(streaming.tracked)
            }
        }
    }

    /// Whether chunks handed to the tracker's thread are still to come back: a streamed region's
    /// [`Tracking::take_edges`] with [`Wait::Next`] then takes more.
    pub(crate) fn chunks_out(&self) -> bool {
        match &self.state {
            State::Inline(_) => false,
            State::Piped(pipe) => pipe.returned < pipe.handed,
        }
    }

    /// The tracker, while it is on the calling thread.
    #[cfg(test)]
    pub(crate) fn inline(&mut self) -> Option<&mut DepTracker> {
        match &mut self.state {
            State::Inline(tracker) => Some(tracker),
            State::Piped(_) => None,
        }
    }

    /// Adds the next task, as [`DepTracker::add_task_from`] does. On the calling thread a limit
    /// is reported here and the task is not tracked; on the tracker's thread it is reported by
    /// [`Tracking::finish`].
    pub(crate) fn add_task_from(
        &mut self,
        accesses: impl IntoIterator<Item = (u32, Range<usize>, Access)>,
    ) -> Result<(), LimitExceeded> {
        if self.tasks == self.pipe_after {
            self.start_thread();
        }
        match &mut self.state {
            State::Inline(tracker) => {
                tracker.add_task_from(accesses)?;
            }
            State::Piped(pipe) => {
                let chunk = &mut pipe.chunk;
                chunk.accesses.extend(accesses);
                // Cannot truncate: a chunk holds `CHUNK_TASKS` tasks of a few accesses each.
                chunk.ends.push(chunk.accesses.len() as u32);
                if chunk.ends.len() == self.chunk_tasks {
                    pipe.hand_over(self.streaming.as_mut(), self.chunk_tasks);
                }
            }
        }
        self.tasks += 1;
        Ok(())
    }

    /// Moves the tracker to a thread of its own; stays on this one if no thread can be started.
    #[cold]
    fn start_thread(&mut self) {
        if self.ask_first && split::idle_threads() < 2 {
            self.pipe_after = u32::MAX;
            return;
        }
        let State::Inline(tracker) = &mut self.state else {
            return;
        };
        let tracker = std::mem::replace(tracker, Box::new(DepTracker::new(&[])));
        let (full, chunks) = mpsc::sync_channel::<Chunk>(CHUNKS_IN_FLIGHT);
        let (recycle, empty) = mpsc::channel::<Chunk>();
        // The tracker travels in a slot the thread empties, so that a thread that cannot be
        // started gives it back.
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(tracker)));
        let theirs = std::sync::Arc::clone(&slot);
        // A streamed region's cursors go with the tracker: its thread reads the edges.
        let mut cursors = self.streaming.as_ref().map(|s| s.cursors.clone());
        let started = std::thread::Builder::new()
            .name("taskweave-track".into())
            .spawn(move || {
                let taken = theirs.lock().ok().and_then(|mut t| t.take());
                let mut tracker = taken.expect("the tracker is handed over once");
                let mut failed = None;
                let mut busy = Duration::ZERO;
                for mut chunk in chunks {
                    let start = Instant::now();
                    if failed.is_none() {
                        failed = track(&mut tracker, &chunk).err();
                    }
                    chunk.accesses.clear();
                    chunk.ends.clear();
                    if let Some(cursors) = &mut cursors {
                        chunk.known = failed.is_none() && tracker.edges_known();
                        if chunk.known {
                            tracker.new_edges(cursors, &mut chunk.edges);
                        }
                        chunk.tracked = tracker.task_count();
                    }
                    busy += start.elapsed();
                    // The recorder may have finished and stopped taking chunks back.
                    let _ = recycle.send(chunk);
                }
                (tracker, failed, busy)
            });
        match started {
            Ok(worker) => {
                self.state = State::Piped(Pipe {
                    chunk: Chunk::with_capacity(self.chunk_tasks),
                    full: Some(full),
                    empty,
                    worker: Some(worker),
                    handed: 0,
                    returned: 0,
                    spare: VecDeque::new(),
                });
            }
            Err(_) => {
                let tracker = slot.lock().ok().and_then(|mut t| t.take());
                self.state = State::Inline(tracker.expect("the thread never started"));
                self.pipe_after = u32::MAX;
            }
        }
    }

    /// The tracker with every task added, or the first limit a task passed on the tracker's
    /// thread. A panic on that thread resumes here.
    ///
    /// With the tracker, the time its thread spent tracking chunks (wall time, `None` when the
    /// tracker stayed on the calling thread): what bounds an inspection on two threads when it
    /// comes close to the inspection's own time.
    pub(crate) fn finish(self) -> Result<(DepTracker, Option<Duration>), LimitExceeded> {
        match self.state {
            State::Inline(tracker) => Ok((*tracker, None)),
            State::Piped(mut pipe) => {
                if !pipe.chunk.ends.is_empty() {
                    pipe.hand_over(None, 0);
                }
                match pipe.join().expect("the thread is joined once") {
                    Ok((tracker, None, busy)) => Ok((*tracker, Some(busy))),
                    Ok((_, Some(limit), _)) => Err(limit),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
        }
    }
}

impl Pipe {
    /// Sends the current chunk to the tracker and takes the oldest emptied one, once there are
    /// [`RING`] (or a new one of `chunk_tasks`), to fill; a streamed region's edges handed back go
    /// to `streaming`.
    fn hand_over(&mut self, streaming: Option<&mut Streaming>, chunk_tasks: usize) {
        self.take_back(streaming);
        let next = if self.spare.len() >= RING {
            self.spare.pop_front().expect("a spare chunk")
        } else {
            Chunk::with_capacity(chunk_tasks)
        };
        let full = std::mem::replace(&mut self.chunk, next);
        let Some(sender) = &self.full else {
            return;
        };
        match sender.send(full) {
            Ok(()) => self.handed += 1,
            // The tracker's thread is gone: it panicked, which `finish` reports. Keep the
            // chunk so that nothing here fails first.
            Err(mpsc::SendError(chunk)) => self.chunk = chunk,
        }
    }

    /// Takes back the chunks the tracker has emptied, without waiting.
    fn take_back(&mut self, mut streaming: Option<&mut Streaming>) {
        while let Ok(chunk) = self.empty.try_recv() {
            self.returned(chunk, streaming.as_deref_mut());
        }
    }

    /// Takes back the next chunk handed over, if one is out (or learns that the tracker's thread
    /// ended), and the others the tracker has emptied since.
    fn wait_next(&mut self, streaming: &mut Streaming) {
        if self.returned < self.handed {
            match self.empty.recv() {
                Ok(chunk) => self.returned(chunk, Some(streaming)),
                // The thread panicked: no edge after its last chunk is known.
                Err(_) => streaming.known = false,
            }
        }
        self.take_back(Some(streaming));
    }

    /// Keeps an emptied chunk to fill again, its edges taken out first.
    fn returned(&mut self, mut chunk: Chunk, streaming: Option<&mut Streaming>) {
        self.returned += 1;
        if let Some(s) = streaming {
            s.known &= chunk.known;
            if s.known {
                s.edges.append(&mut chunk.edges);
                s.tracked = chunk.tracked;
            }
        }
        chunk.edges.clear();
        self.spare.push_back(chunk);
    }
}

/// Adds a chunk's tasks to `tracker`, up to the first that passes a limit.
fn track(tracker: &mut DepTracker, chunk: &Chunk) -> Result<(), LimitExceeded> {
    let mut start = 0;
    for &end in &chunk.ends {
        let accesses = &chunk.accesses[start..end as usize];
        tracker.add_task_from(accesses.iter().cloned())?;
        start = end as usize;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiled program with a cut halfway, so that both paths run: `n` tasks over one array of
    /// 64 tiles of 16, each reading one tile and writing the next, then a write of a cut tile.
    fn program(n: usize) -> Vec<Vec<(u32, Range<usize>, Access)>> {
        (0..n)
            .map(|t| {
                let (r, w) = ((t * 7) % 64, (t * 13 + 1) % 64);
                let mut task = vec![(0, r * 16..r * 16 + 16, Access::Read)];
                if r != w {
                    task.push((0, w * 16..w * 16 + 16, Access::Write));
                }
                if t == n / 2 {
                    task.push((1, 3..40, Access::ReadWrite));
                    task.push((0, 5..21, Access::Write));
                }
                task
            })
            .collect()
    }

    fn edges(tracker: DepTracker) -> Vec<(u32, u32)> {
        let dag = tracker.finish().unwrap();
        (0..dag.task_count() as u32)
            .flat_map(|t| dag.children_of(t).iter().map(move |&c| (t, c)))
            .collect()
    }

    #[test]
    fn a_piped_tracker_gives_the_inline_dag() {
        // Enough chunks that emptied ones are filled again.
        let n = if cfg!(miri) { 300 } else { 20_000 };
        let tasks = program(n);
        let mut inline = DepTracker::new(&[1024, 64]);
        for t in &tasks {
            inline.add_task(t).unwrap();
        }
        let want = edges(inline);
        assert!(want.len() > n, "the program has edges: {}", want.len());
        for pipe_after in [0, 1, 700, u32::MAX] {
            let mut tracking = Tracking::piped_after(DepTracker::new(&[1024, 64]), pipe_after);
            for t in &tasks {
                tracking.add_task_from(t.iter().cloned()).unwrap();
            }
            let piped = (pipe_after as usize) < n;
            assert_eq!(matches!(tracking.state, State::Piped(_)), piped);
            let (tracker, busy) = tracking.finish().unwrap();
            // The tracker's thread says how long it tracked; the calling thread does not.
            assert_eq!(busy.is_some(), piped);
            assert_eq!(edges(tracker), want, "piped after {pipe_after}");
        }
    }

    #[test]
    fn a_tracking_dropped_mid_region_joins_its_thread() {
        // A region's body that panics drops the recorder with chunks still queued: closing the
        // channel ends the tracker's thread, which the drop joins (a thread still waiting for
        // chunks would hang this test).
        let tasks = program(if cfg!(miri) { 100 } else { 5000 });
        let mut tracking = Tracking::piped_after(DepTracker::new(&[1024, 64]), 0);
        for t in &tasks {
            tracking.add_task_from(t.iter().cloned()).unwrap();
        }
        let State::Piped(pipe) = &mut tracking.state else {
            panic!("piped from the first task");
        };
        let (tracker, failed, _) = pipe.join().expect("not joined yet").expect("no panic");
        assert!(failed.is_none());
        // The partial chunk was never handed over: the thread tracked whole chunks only.
        assert_eq!(
            tracker.task_count() as usize,
            tasks.len() / CHUNK_TASKS * CHUNK_TASKS
        );
        assert!(pipe.join().is_none(), "joined once");
        drop(tracking);
    }

    /// A streamed region's edges, taken as they come: inline, and from the tracker's thread in
    /// chunks of 7 (waiting for each chunk at the end), the same edges and the same count of tasks
    /// tracked.
    #[test]
    fn the_tracker_s_thread_hands_back_the_inline_edges() {
        let tasks = program(if cfg!(miri) { 60 } else { 600 });
        // The cut task leaves the tile path: the edges are known up to it.
        let known = tasks.len() / 2;
        let run = |piping: Piping| {
            let mut tracking = Tracking::piped_after(DepTracker::new(&[1024, 64]), u32::MAX);
            tracking.stream_edges(piping);
            let (mut all, mut edges, mut tracked) = (Vec::new(), Vec::new(), 0);
            for (t, task) in tasks[..known].iter().enumerate() {
                tracking.add_task_from(task.iter().cloned()).unwrap();
                if t % 50 == 49
                    && let Some(n) = tracking.take_edges(&mut edges, Wait::Not)
                {
                    assert!(n >= tracked && n as usize <= t + 1);
                    tracked = n;
                    all.extend_from_slice(&edges);
                }
            }
            // The rest as the tracker's thread hands it back, chunk by chunk.
            let n = loop {
                let n = (tracking.take_edges(&mut edges, Wait::Next)).expect("every edge known");
                assert!(n >= tracked, "{piping:?}: the count tracked only grows");
                tracked = n;
                all.extend_from_slice(&edges);
                if !tracking.chunks_out() {
                    break n;
                }
            };
            assert_eq!(n as usize, known, "{piping:?}: every task tracked");
            tracking
                .add_task_from(tasks[known].iter().cloned())
                .unwrap();
            assert_eq!(
                tracking.take_edges(&mut edges, Wait::Next),
                None,
                "{piping:?}: off the path"
            );
            all.sort_unstable();
            all
        };
        let inline = run(Piping::Never);
        assert!(inline.len() > known, "the program has edges");
        let piped = run(Piping::Force { after: 3, chunk: 7 });
        assert_eq!(piped, inline);
    }

    /// A limit passed on the tracker's thread stops the edges there (the region is finished
    /// inspected, and fails with it).
    #[test]
    fn a_limit_on_the_tracker_s_thread_stops_the_edges() {
        let mut tracker = DepTracker::new(&[64]);
        tracker.leave_room_for(3);
        let mut tracking = Tracking::piped_after(tracker, u32::MAX);
        tracking.stream_edges(Piping::Force { after: 0, chunk: 1 });
        let mut edges = Vec::new();
        for t in 0..5 {
            let access = if t % 2 == 0 {
                Access::Write
            } else {
                Access::Read
            };
            tracking.add_task_from([(0, 0..64, access)]).unwrap();
        }
        // The chunks before the limit may come back first.
        let last = loop {
            let tracked = tracking.take_edges(&mut edges, Wait::Next);
            if tracked.is_none() || !tracking.chunks_out() {
                break tracked;
            }
        };
        assert_eq!(last, None);
        assert_eq!(tracking.finish().unwrap_err().what, "tasks");
    }

    #[test]
    fn a_limit_passed_on_the_tracker_s_thread_is_reported_by_finish() {
        let mut inline = DepTracker::new(&[64]);
        inline.leave_room_for(3);
        let piped = inline.clone();
        let mut inline = Tracking::piped_after(inline, u32::MAX);
        let mut piped = Tracking::piped_after(piped, 0);
        for t in 0..5 {
            let access = if t % 2 == 0 {
                Access::Write
            } else {
                Access::Read
            };
            // On the calling thread the fourth task is refused at once; on the tracker's
            // thread every spawn goes through and the limit comes with the tracker.
            assert_eq!(inline.add_task_from([(0, 0..64, access)]).is_ok(), t < 3);
            piped.add_task_from([(0, 0..64, access)]).unwrap();
        }
        assert!(inline.finish().is_ok());
        let err = piped.finish().unwrap_err();
        assert_eq!(err.what, "tasks");
    }
}
