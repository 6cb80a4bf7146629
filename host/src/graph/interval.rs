//! The interval map of one array: maximal runs holding the last writer and the readers since.

use super::bitset::BitSet;
use super::sink::EdgeSink;
use super::{EdgeKind, LimitExceeded};

/// "No task" / "empty list" marker.
pub(super) const NONE: u32 = u32::MAX;

/// Reader sets as persistent singly linked lists sharing one arena.
///
/// A list is the index of its head node (or [`NONE`]). Lists are never mutated, only extended at
/// the head, so splitting a run just copies the head index and both halves share the tail.
/// Nodes are never freed; there is one per (read, overlapped run).
#[derive(Clone, Debug)]
pub(super) struct ReaderArena {
    /// `(task, next)` pairs.
    nodes: Vec<(u32, u32)>,
    /// The most nodes: [`MAX_READER_ENTRIES`], lower in tests.
    max_nodes: usize,
    /// A push found the arena full (and left the list without the task).
    overflowed: bool,
}

/// The most reader-list entries: node indices are `u32`, and [`NONE`] is no index.
pub(super) const MAX_READER_ENTRIES: usize = NONE as usize;

impl Default for ReaderArena {
    fn default() -> Self {
        Self {
            nodes: Vec::new(),
            max_nodes: MAX_READER_ENTRIES,
            overflowed: false,
        }
    }
}

impl ReaderArena {
    /// Returns the list `task :: head`, or `head` itself when `task` is already its head (a task
    /// is always the newest reader, so if it is in the list at all it is the head).
    ///
    /// When the arena is full, returns `head` and marks the arena [overflowed](Self::overflowed):
    /// the list then misses `task`, so the caller must drop the task and refuse later ones.
    #[inline]
    pub(super) fn push(&mut self, head: u32, task: u32) -> u32 {
        if head != NONE && self.nodes[head as usize].0 == task {
            return head;
        }
        if self.nodes.len() >= self.max_nodes {
            self.overflowed = true;
            return head;
        }
        // Cannot truncate, nor be `NONE`: the length is below `MAX_READER_ENTRIES`.
        let index = self.nodes.len() as u32;
        self.nodes.push((task, head));
        index
    }

    /// An arena writing into `nodes` (cleared first), a spare buffer.
    pub(super) fn with_nodes(mut nodes: Vec<(u32, u32)>) -> Self {
        nodes.clear();
        Self {
            nodes,
            ..Self::default()
        }
    }

    /// The arena's buffer, to be kept for a later one.
    pub(super) fn into_nodes(self) -> Vec<(u32, u32)> {
        self.nodes
    }

    /// The limit a push found passed, if one did.
    pub(super) fn check(&self) -> Result<(), LimitExceeded> {
        if self.overflowed {
            return Err(LimitExceeded {
                what: "reader-list entries",
                limit: self.max_nodes as u64,
            });
        }
        Ok(())
    }

    /// Lowers the most nodes (tests cannot allocate four billion).
    pub(super) fn set_max_nodes(&mut self, max: usize) {
        self.max_nodes = max.min(MAX_READER_ENTRIES);
    }

    /// Calls `f` for every task in the list starting at `head`, newest first.
    #[inline]
    pub(super) fn for_each(&self, mut head: u32, mut f: impl FnMut(u32)) {
        while head != NONE {
            let (task, next) = self.nodes[head as usize];
            f(task);
            head = next;
        }
    }

    /// Number of nodes ever allocated.
    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Reserves room for `nodes` more nodes.
    pub(super) fn reserve(&mut self, nodes: usize) {
        self.nodes.reserve(nodes.min(self.max_nodes));
    }
}

/// The state of one run: where it ends, its last writer and the readers since that write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Seg {
    /// The next run's start (one past this run's last rank).
    end: u32,
    /// Last writer, or [`NONE`].
    writer: u32,
    /// Readers since that write (a [`ReaderArena`] list).
    readers: u32,
}

/// The interval map of one array (or one element range of it), over the ranks of its range ends
/// (see [`Endpoints`](super::compress::Endpoints)): rank `r` stands for the elements from the
/// `r`-th distinct end to the next.
///
/// The ranks are cut into *runs* of equal state; [`BitSet`] holds the run starts and `segs[s]` the
/// state of the run starting at `s` (other entries are stale). Every rank starts as a run of its
/// own, so a range's ends are run starts on its first use and need no cut. A write over more than
/// [`COLLAPSE`] runs makes them one; a write over fewer leaves them apart (so that the reads of a
/// tile's rows that follow a write of the whole tile, on a stencil, cut nothing). A read joins the
/// runs it covers that are in the same state, which then share one reader entry. The last rank
/// is always a run start, so every run has a next. Task ids are the job's local ones.
#[derive(Debug)]
pub(super) struct Runs {
    starts: BitSet,
    segs: Vec<Seg>,
}

/// The most runs a write leaves apart. Each costs the write and every later read of the range one
/// step, and the reads one reader-list entry; past this many, one run is cheaper.
const COLLAPSE: usize = 8;

impl Runs {
    /// One run per rank `0..ends - 1`, never written, with no readers. `ends` is at least 2 and
    /// fits in a `u32`.
    #[cfg(test)]
    pub(super) fn new(ends: usize) -> Self {
        Self::new_in(ends, Vec::new())
    }

    /// [`Runs::new`], writing the runs into `segs` (cleared first), a spare buffer.
    pub(super) fn new_in(ends: usize, mut segs: Vec<Seg>) -> Self {
        debug_assert!(ends >= 2, "a range has two distinct ends");
        let last = u32::try_from(ends - 1).expect("a job numbers its ends in u32");
        segs.clear();
        segs.extend((1..=last).chain([last]).map(|end| Seg {
            end,
            writer: NONE,
            readers: NONE,
        }));
        Runs {
            starts: BitSet::full(ends),
            segs,
        }
    }

    /// The runs' buffer, to be kept for a later map.
    pub(super) fn into_segs(self) -> Vec<Seg> {
        self.segs
    }

    /// The last rank: the end of the last run.
    #[cfg(test)]
    fn last(&self) -> u32 {
        self.segs.len() as u32 - 1
    }

    /// The number of runs (a measure of the map's memory).
    #[cfg(test)]
    pub(super) fn run_count(&self) -> usize {
        let mut count = 0;
        let mut s = 0;
        while s < self.last() {
            count += 1;
            s = self.segs[s as usize].end;
        }
        count
    }

    /// Makes `at` a run start, copying the state of the run it cuts.
    #[inline]
    fn split(&mut self, at: u32) {
        if !self.starts.contains(at as usize) {
            self.cut(at);
        }
    }

    #[cold]
    #[inline(never)]
    fn cut(&mut self, at: u32) {
        let run = self
            .starts
            .prev_before(at as usize)
            .expect("rank 0 is a run start");
        self.starts.insert(at as usize);
        let seg = &mut self.segs[run];
        let right = Seg {
            end: seg.end,
            ..*seg
        };
        seg.end = at;
        self.segs[at as usize] = right;
    }

    /// Records a read of ranks `a..b` by the sink's current task: `Raw` from each overlapped
    /// writer, and the task joins the readers of exactly `a..b`.
    #[inline]
    pub(super) fn read(&mut self, a: u32, b: u32, arena: &mut ReaderArena, sink: &mut EdgeSink) {
        let task = sink.task();
        self.split(a);
        self.split(b);
        // The run before `s` within `a..b` and its state before this read: a run in the same
        // state ends up in the same state, so it joins that run instead of taking a reader entry
        // of its own (runs a write cut apart, or never touched, are often equal).
        let mut prev = (a, NONE, NONE);
        let mut s = a;
        while s < b {
            let seg = &mut self.segs[s as usize];
            let (end, writer, readers) = (seg.end, seg.writer, seg.readers);
            if s > a && writer == prev.1 && readers == prev.2 {
                self.starts.remove(s as usize);
                self.segs[prev.0 as usize].end = end;
            } else {
                if writer != NONE {
                    sink.add(writer, EdgeKind::Raw);
                }
                seg.readers = arena.push(readers, task);
                prev = (s, writer, readers);
            }
            s = end;
        }
    }

    /// Records a write of ranks `a..b` by the sink's current task: `writer_kind` (`Waw` for a
    /// plain write, `Raw` for a read-write) from each overlapped writer and `War` from each
    /// overlapped reader; then the task is the writer of `a..b`, with no readers (one run when the
    /// write covered more than [`COLLAPSE`]).
    #[inline]
    pub(super) fn write(
        &mut self,
        a: u32,
        b: u32,
        writer_kind: EdgeKind,
        arena: &ReaderArena,
        sink: &mut EdgeSink,
    ) {
        let task = sink.task();
        self.split(a);
        self.split(b);
        let mut s = a;
        let mut runs = 0;
        while s < b {
            let seg = &mut self.segs[s as usize];
            if seg.writer != NONE {
                sink.add(seg.writer, writer_kind);
            }
            arena.for_each(seg.readers, |reader| sink.add(reader, EdgeKind::War));
            seg.writer = task;
            seg.readers = NONE;
            s = seg.end;
            runs += 1;
        }
        if runs > COLLAPSE {
            self.starts.remove_range(a as usize + 1, b as usize);
            self.segs[a as usize].end = b;
        }
    }

    /// The runs as `(start, end, writer, readers newest first)`, for tests.
    #[cfg(test)]
    pub(super) fn dump(&self, arena: &ReaderArena) -> Vec<(u32, u32, Option<u32>, Vec<u32>)> {
        let mut out = Vec::new();
        let mut s = 0;
        while s < self.last() {
            let seg = self.segs[s as usize];
            let mut readers = Vec::new();
            arena.for_each(seg.readers, |r| readers.push(r));
            out.push((
                s,
                seg.end,
                (seg.writer != NONE).then_some(seg.writer),
                readers,
            ));
            s = seg.end;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink whose local ids are the task ids `0..tasks`.
    fn sink(tasks: u32) -> EdgeSink {
        let mut sink = EdgeSink::default();
        for t in 0..tasks {
            sink.begin(t);
            sink.end();
        }
        sink
    }

    #[test]
    fn every_rank_starts_apart_and_reads_share_reader_lists() {
        let mut arena = ReaderArena::default();
        let mut runs = Runs::new(4);
        assert_eq!(runs.run_count(), 3);
        let mut sink = sink(0);
        sink.begin(0);
        runs.read(0, 3, &mut arena, &mut sink);
        sink.end();
        sink.begin(1);
        runs.read(1, 2, &mut arena, &mut sink);
        sink.end();
        assert_eq!(
            runs.dump(&arena),
            vec![
                (0, 1, None, vec![0]),
                (1, 2, None, vec![1, 0]),
                (2, 3, None, vec![0]),
            ]
        );
        // The first read's three runs were alike, so they joined under one reader entry (cut
        // apart again by the second read); the second read took one more.
        assert_eq!(arena.len(), 2);
    }

    #[test]
    fn a_read_joins_alike_runs_and_keeps_unlike_ones_apart() {
        let mut arena = ReaderArena::default();
        let mut runs = Runs::new(7);
        let mut sink = sink(0);
        sink.begin(0);
        runs.write(2, 3, EdgeKind::Waw, &arena, &mut sink);
        sink.end();
        sink.begin(1);
        runs.read(0, 6, &mut arena, &mut sink);
        sink.end();
        // Ranks 0 and 1 were alike, and 3 to 5; rank 2 had a writer.
        assert_eq!(
            runs.dump(&arena),
            [
                (0, 2, None, vec![1]),
                (2, 3, Some(0), vec![1]),
                (3, 6, None, vec![1]),
            ]
        );
        assert_eq!(arena.len(), 3);
        assert_eq!(sink.parents, [0]);
    }

    #[test]
    fn a_write_over_few_runs_leaves_them_apart_and_over_many_collapses_them() {
        let mut arena = ReaderArena::default();
        let ends = COLLAPSE + 4;
        let mut runs = Runs::new(ends);
        let mut sink = sink(0);
        sink.begin(0);
        runs.read(2, 4, &mut arena, &mut sink);
        sink.end();
        sink.begin(1);
        runs.write(1, 4, EdgeKind::Waw, &arena, &mut sink);
        sink.end();
        // The read joined ranks 2 and 3 (alike, never touched); the write leaves its two runs
        // apart.
        assert_eq!(
            runs.dump(&arena)[..4],
            [
                (0, 1, None, vec![]),
                (1, 2, Some(1), vec![]),
                (2, 4, Some(1), vec![]),
                (4, 5, None, vec![]),
            ]
        );
        sink.begin(2);
        runs.write(0, ends as u32 - 1, EdgeKind::Waw, &arena, &mut sink);
        sink.end();
        assert_eq!(runs.dump(&arena), [(0, ends as u32 - 1, Some(2), vec![])]);
        // A read inside the collapsed run cuts it.
        sink.begin(3);
        runs.read(5, 6, &mut arena, &mut sink);
        sink.end();
        assert_eq!(
            runs.dump(&arena),
            [
                (0, 5, Some(2), vec![]),
                (5, 6, Some(2), vec![3]),
                (6, ends as u32 - 1, Some(2), vec![]),
            ]
        );
    }
}
