//! The per-array interval map: maximal segments holding the last writer and the readers since.

use std::collections::BTreeMap;

use super::EdgeKind;
use super::sink::EdgeSink;

/// "No task" / "empty list" marker.
pub(super) const NONE: u32 = u32::MAX;

/// Reader sets as persistent singly linked lists sharing one arena.
///
/// A list is the index of its head node (or [`NONE`]). Lists are never mutated, only extended at
/// the head, so splitting a segment just copies the head index and both halves share the tail.
/// Nodes are never freed; there is one per (read, overlapped segment).
#[derive(Debug)]
pub(super) struct ReaderArena {
    /// `(task, next)` pairs.
    nodes: Vec<(u32, u32)>,
    /// The most nodes: [`MAX_READER_ENTRIES`], lower in tests.
    max_nodes: usize,
    /// A push found the arena full (and left the list without the task).
    overflowed: bool,
}

/// The most reader-list entries: node indices are `u32`, and [`NONE`] is no index.
const MAX_READER_ENTRIES: usize = NONE as usize;

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
    fn push(&mut self, head: u32, task: u32) -> u32 {
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

    /// Whether a push found the arena full.
    pub(super) fn overflowed(&self) -> bool {
        self.overflowed
    }

    /// The most nodes.
    pub(super) fn max_nodes(&self) -> usize {
        self.max_nodes
    }

    /// Lowers the most nodes (tests cannot allocate four billion).
    #[cfg(test)]
    pub(super) fn set_max_nodes(&mut self, max: usize) {
        self.max_nodes = max.min(MAX_READER_ENTRIES);
    }

    /// Calls `f` for every task in the list starting at `head`, newest first.
    #[inline]
    fn for_each(&self, mut head: u32, mut f: impl FnMut(u32)) {
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
}

/// One segment `start..end` (the start is the map key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seg {
    /// One past the last element.
    end: usize,
    /// Last writer, or [`NONE`].
    writer: u32,
    /// Readers since that write (a [`ReaderArena`] list).
    readers: u32,
}

/// The segments of one array. They always tile `0..len` exactly (none when `len == 0`).
#[derive(Debug)]
pub(super) struct Segments {
    map: BTreeMap<usize, Seg>,
    len: usize,
    /// Reused buffer for the keys a write removes.
    scratch: Vec<usize>,
}

impl Segments {
    /// One segment covering `0..len`, never written, with no readers.
    pub(super) fn new(len: usize) -> Self {
        let mut map = BTreeMap::new();
        if len > 0 {
            map.insert(
                0,
                Seg {
                    end: len,
                    writer: NONE,
                    readers: NONE,
                },
            );
        }
        Segments {
            map,
            len,
            scratch: Vec::new(),
        }
    }

    /// Number of segments currently in the map.
    pub(super) fn segment_count(&self) -> usize {
        self.map.len()
    }

    /// Records a read of `lo..hi` by the sink's current task: `Raw` from each overlapped
    /// writer, and the task joins the readers of exactly `lo..hi`.
    pub(super) fn read(
        &mut self,
        lo: usize,
        hi: usize,
        arena: &mut ReaderArena,
        sink: &mut EdgeSink,
    ) {
        self.check(lo, hi);
        let task = sink.task();
        if lo == hi {
            return;
        }
        let (&start, seg) = self
            .map
            .range_mut(..=lo)
            .next_back()
            .expect("segments tile the array");
        if hi <= seg.end {
            // Fast path: the range lies inside one segment.
            let old = *seg;
            if old.writer != NONE {
                sink.add(old.writer, EdgeKind::Raw);
            }
            let readers = arena.push(old.readers, task);
            if readers == old.readers {
                return;
            }
            if start == lo {
                seg.end = hi;
                seg.readers = readers;
            } else {
                seg.end = lo;
                self.map.insert(
                    lo,
                    Seg {
                        end: hi,
                        writer: old.writer,
                        readers,
                    },
                );
            }
            if hi < old.end {
                self.map.insert(
                    hi,
                    Seg {
                        end: old.end,
                        ..old
                    },
                );
            }
            return;
        }
        self.split(lo);
        self.split(hi);
        for seg in self.map.range_mut(lo..hi).map(|(_, s)| s) {
            if seg.writer != NONE {
                sink.add(seg.writer, EdgeKind::Raw);
            }
            seg.readers = arena.push(seg.readers, task);
        }
    }

    /// Records a write of `lo..hi` by the sink's current task: `writer_kind` (`Waw` for a plain
    /// write, `Raw` for a read-write) from each overlapped writer and `War` from each overlapped
    /// reader; then the task is the only writer of `lo..hi`, with no readers. With `merge`, a
    /// neighbouring segment in the same state (written by this task in another access, no
    /// readers) is merged.
    pub(super) fn write(
        &mut self,
        lo: usize,
        hi: usize,
        writer_kind: EdgeKind,
        merge: bool,
        arena: &ReaderArena,
        sink: &mut EdgeSink,
    ) {
        self.check(lo, hi);
        if lo == hi {
            return;
        }
        let new = Seg {
            end: hi,
            writer: sink.task(),
            readers: NONE,
        };
        let (&start, seg) = self
            .map
            .range_mut(..=lo)
            .next_back()
            .expect("segments tile the array");
        if hi <= seg.end {
            // Fast path: the range lies inside one segment.
            let old = *seg;
            Self::emit_write(old, writer_kind, arena, sink);
            if start == lo {
                *seg = new;
            } else {
                seg.end = lo;
                self.map.insert(lo, new);
            }
            if hi < old.end {
                self.map.insert(
                    hi,
                    Seg {
                        end: old.end,
                        ..old
                    },
                );
            }
        } else {
            self.split(lo);
            self.split(hi);
            self.scratch.clear();
            for (&key, &seg) in self.map.range(lo..hi) {
                Self::emit_write(seg, writer_kind, arena, sink);
                if key != lo {
                    self.scratch.push(key);
                }
            }
            for key in &self.scratch {
                self.map.remove(key);
            }
            self.map.insert(lo, new);
        }
        if merge {
            self.merge_around(lo, hi);
        }
    }

    /// Edges a write over `seg` gets.
    #[inline]
    fn emit_write(seg: Seg, writer_kind: EdgeKind, arena: &ReaderArena, sink: &mut EdgeSink) {
        if seg.writer != NONE {
            sink.add(seg.writer, writer_kind);
        }
        arena.for_each(seg.readers, |reader| sink.add(reader, EdgeKind::War));
    }

    /// Makes `at` a segment start (no-op when it already is one, or is the array's end).
    fn split(&mut self, at: usize) {
        if at >= self.len {
            return;
        }
        let (&start, seg) = self
            .map
            .range_mut(..=at)
            .next_back()
            .expect("segments tile the array");
        if start == at {
            return;
        }
        let right = *seg;
        seg.end = at;
        self.map.insert(at, right);
    }

    /// Merges the segment starting at `lo` (ending at `hi`) with equal-state neighbours.
    fn merge_around(&mut self, lo: usize, hi: usize) {
        let mid = self.map[&lo];
        let mut start = lo;
        if let Some((&prev_start, prev)) = self.map.range_mut(..lo).next_back()
            && prev.writer == mid.writer
            && prev.readers == mid.readers
        {
            prev.end = mid.end;
            self.map.remove(&lo);
            start = prev_start;
        }
        if let Some(&next) = self.map.get(&hi)
            && next.writer == mid.writer
            && next.readers == mid.readers
        {
            self.map.remove(&hi);
            self.map.get_mut(&start).expect("just merged").end = next.end;
        }
    }

    #[inline]
    fn check(&self, lo: usize, hi: usize) {
        assert!(
            lo <= hi && hi <= self.len,
            "range {lo}..{hi} is not within an array of length {}",
            self.len
        );
    }

    /// The segments as `(start, end, writer, readers newest first)`, for tests.
    #[cfg(test)]
    pub(super) fn dump(&self, arena: &ReaderArena) -> Vec<(usize, usize, Option<u32>, Vec<u32>)> {
        self.map
            .iter()
            .map(|(&start, seg)| {
                let mut readers = Vec::new();
                arena.for_each(seg.readers, |r| readers.push(r));
                let writer = (seg.writer != NONE).then_some(seg.writer);
                (start, seg.end, writer, readers)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_splits_into_three_and_shares_readers() {
        let mut arena = ReaderArena::default();
        let mut segs = Segments::new(10);
        let mut sink = EdgeSink::default();
        sink.begin(0);
        segs.read(0, 10, &mut arena, &mut sink);
        sink.begin(1);
        segs.read(3, 6, &mut arena, &mut sink);
        assert_eq!(
            segs.dump(&arena),
            vec![
                (0, 3, None, vec![0]),
                (3, 6, None, vec![1, 0]),
                (6, 10, None, vec![0]),
            ]
        );
        // The reader list of the outer segments was shared, not copied.
        assert_eq!(arena.len(), 2);
    }

    #[test]
    fn write_over_several_segments_collapses_them() {
        let mut arena = ReaderArena::default();
        let mut segs = Segments::new(20);
        let mut sink = EdgeSink::default();
        sink.begin(0);
        segs.write(0, 5, EdgeKind::Waw, false, &arena, &mut sink);
        sink.begin(1);
        segs.write(5, 10, EdgeKind::Waw, false, &arena, &mut sink);
        sink.begin(2);
        segs.read(8, 15, &mut arena, &mut sink);
        sink.begin(3);
        segs.write(3, 12, EdgeKind::Waw, false, &arena, &mut sink);
        assert_eq!(
            segs.dump(&arena),
            vec![
                (0, 3, Some(0), vec![]),
                (3, 12, Some(3), vec![]),
                (12, 15, None, vec![2]),
                (15, 20, None, vec![]),
            ]
        );
    }

    #[test]
    fn same_task_writes_merge() {
        let arena = ReaderArena::default();
        let mut segs = Segments::new(9);
        let mut sink = EdgeSink::default();
        sink.begin(0);
        segs.write(0, 3, EdgeKind::Waw, true, &arena, &mut sink);
        segs.write(6, 9, EdgeKind::Waw, true, &arena, &mut sink);
        segs.write(3, 6, EdgeKind::Waw, true, &arena, &mut sink);
        assert_eq!(segs.dump(&arena), vec![(0, 9, Some(0), vec![])]);
    }

    #[test]
    fn empty_array_and_empty_ranges() {
        let mut arena = ReaderArena::default();
        let mut segs = Segments::new(0);
        let mut sink = EdgeSink::default();
        sink.begin(0);
        segs.read(0, 0, &mut arena, &mut sink);
        segs.write(0, 0, EdgeKind::Waw, true, &arena, &mut sink);
        assert_eq!(segs.segment_count(), 0);
    }

    #[test]
    #[should_panic(expected = "not within an array")]
    fn out_of_bounds_range_panics() {
        let mut arena = ReaderArena::default();
        let mut segs = Segments::new(4);
        let mut sink = EdgeSink::default();
        sink.begin(0);
        segs.read(2, 5, &mut arena, &mut sink);
    }
}
