//! [`DepTracker`]: turns a stream of tasks with declared accesses into dependence edges.

use core::ops::Range;

use super::dag::Dag;
use super::interval::{ReaderArena, Segments};
use super::sink::EdgeSink;
use super::{Access, EdgeKind, LimitExceeded};

/// The most dependence edges a [`DepTracker`] records: the CSR offsets are `u32`.
pub const MAX_EDGES: usize = u32::MAX as usize;

/// The most tasks a tracker records: task ids are `u32`, and the interval maps keep `u32::MAX`
/// for "no task".
const MAX_TASKS: u32 = u32::MAX - 1;

/// Builds the task DAG from each task's declared accesses, one task at a time.
///
/// See the [module documentation](super) for the exact semantics.
#[derive(Debug)]
pub struct DepTracker {
    /// One interval map per array slot.
    arrays: Vec<Segments>,
    /// Reader lists of all arrays.
    arena: ReaderArena,
    /// The edges so far (parent CSR).
    sink: EdgeSink,
    /// `in_offsets[t]..in_offsets[t + 1]` are task `t`'s edges in `sink`.
    in_offsets: Vec<u32>,
    /// The limit a task passed: the interval maps hold part of that task, so every later task is
    /// refused with the same error.
    full: Option<LimitExceeded>,
}

impl DepTracker {
    /// A tracker for arrays whose element counts are `array_lens` (`array_lens[a]` for slot `a`).
    pub fn new(array_lens: &[usize]) -> Self {
        DepTracker {
            arrays: array_lens.iter().map(|&len| Segments::new(len)).collect(),
            arena: ReaderArena::default(),
            sink: EdgeSink::default(),
            in_offsets: vec![0],
            full: None,
        }
    }

    /// Like [`DepTracker::new`], reserving room for about `tasks` tasks and `edges` edges.
    pub fn with_capacity(array_lens: &[usize], tasks: usize, edges: usize) -> Self {
        let mut tracker = Self::new(array_lens);
        tracker.in_offsets.reserve(tasks);
        tracker.sink.mark.reserve(tasks);
        tracker.sink.parents.reserve(edges);
        tracker.sink.kinds.reserve(edges);
        tracker
    }

    /// Records the next task (ids are 0, 1, 2, ... in call order) with all its accesses and
    /// returns its id.
    ///
    /// Each access is `(array slot, lo..hi, access)` with `lo <= hi <= len`; empty ranges create
    /// no dependences. All accesses are evaluated against the state before this task, so a task
    /// never depends on itself and the order of `accesses` does not matter.
    ///
    /// # Errors
    ///
    /// [`LimitExceeded`] when the task would make more than `u32::MAX - 1` tasks, [`MAX_EDGES`]
    /// dependence edges or `u32::MAX - 1` reader-list entries. The task is not recorded, and
    /// after an edge or reader-list overflow the tracker refuses every later task with the same
    /// error; [`DepTracker::finish`] still gives the DAG of the tasks before.
    ///
    /// # Panics
    ///
    /// If a slot is out of range, or a range is reversed or exceeds its array.
    pub fn add_task(
        &mut self,
        accesses: &[(u32, Range<usize>, Access)],
    ) -> Result<u32, LimitExceeded> {
        if let Some(full) = self.full {
            return Err(full);
        }
        // Cannot truncate: tasks are only added below `MAX_TASKS`.
        let task = (self.in_offsets.len() - 1) as u32;
        if task >= MAX_TASKS {
            return Err(LimitExceeded {
                what: "tasks",
                limit: u64::from(MAX_TASKS),
            });
        }
        self.sink.begin(task);

        // Applying reads, then read-writes, then writes, each right after computing its edges,
        // gives the same edges and final state as evaluating every access against the state
        // before the task: reads do not change writers; a later write that overlaps an earlier
        // write of this task sees `task` (skipped) where the earlier one already took the same
        // or a preferred edge from the old writer and the same edges from the old readers.
        let mut writes = 0usize;
        for (array, range, access) in accesses {
            if *access == Access::Read {
                let segs = &mut self.arrays[*array as usize];
                segs.read(range.start, range.end, &mut self.arena, &mut self.sink);
            } else {
                writes += 1;
            }
        }
        if writes > 0 {
            let merge = writes > 1;
            for phase in [Access::ReadWrite, Access::Write] {
                let writer_kind = match phase {
                    Access::ReadWrite => EdgeKind::Raw,
                    _ => EdgeKind::Waw,
                };
                for (array, range, access) in accesses {
                    if *access == phase {
                        let segs = &mut self.arrays[*array as usize];
                        let (lo, hi, sink) = (range.start, range.end, &mut self.sink);
                        segs.write(lo, hi, writer_kind, merge, &self.arena, sink);
                    }
                }
            }
        }

        // One flag test per task; the limits are checked where the edges and reader entries are
        // pushed.
        if self.sink.overflowed || self.arena.overflowed() {
            let full = if self.sink.overflowed {
                LimitExceeded {
                    what: "dependence edges",
                    limit: self.sink.max_edges as u64,
                }
            } else {
                LimitExceeded {
                    what: "reader-list entries",
                    limit: self.arena.max_nodes() as u64,
                }
            };
            self.sink.abort();
            self.full = Some(full);
            return Err(full);
        }
        // Cannot truncate: there are at most `MAX_EDGES` edges.
        let end = self.sink.parents.len() as u32;
        self.in_offsets.push(end);
        Ok(task)
    }

    /// Lowers the most edges and reader-list entries (tests cannot allocate four billion).
    #[cfg(test)]
    pub(crate) fn set_limits(&mut self, max_edges: usize, max_reader_entries: usize) {
        self.sink.max_edges = max_edges.min(MAX_EDGES);
        self.arena.set_max_nodes(max_reader_entries);
    }

    /// Number of tasks added so far.
    pub fn task_count(&self) -> u32 {
        // Cannot truncate: `add_task` keeps the count below `u32::MAX`.
        (self.in_offsets.len() - 1) as u32
    }

    /// Number of edges so far.
    pub fn edge_count(&self) -> usize {
        self.sink.parents.len()
    }

    /// Current number of segments over all arrays (a measure of the tracker's memory).
    pub fn segment_count(&self) -> usize {
        self.arrays.iter().map(Segments::segment_count).sum()
    }

    /// Number of reader-list entries allocated so far (a measure of the tracker's memory).
    pub fn reader_entry_count(&self) -> usize {
        self.arena.len()
    }

    /// Consumes the tracker into the CSR [`Dag`].
    pub fn finish(self) -> Dag {
        let DepTracker {
            arrays,
            arena,
            sink,
            in_offsets,
            ..
        } = self;
        // Free the interval maps before the CSR allocations to keep the peak down.
        drop(arrays);
        drop(arena);
        let EdgeSink {
            parents,
            kinds,
            mark,
            ..
        } = sink;
        drop(mark);
        Dag::from_parent_lists(&in_offsets, &parents, &kinds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::EdgeKind::{Raw, War, Waw};

    /// Edges as `(parent, child, kind)` in CSR order.
    fn edges(dag: &Dag) -> Vec<(u32, u32, EdgeKind)> {
        (0..dag.task_count() as u32)
            .flat_map(|t| {
                let r = dag.offsets[t as usize] as usize..dag.offsets[t as usize + 1] as usize;
                dag.children[r.clone()]
                    .iter()
                    .zip(&dag.kinds[r])
                    .map(move |(&c, &k)| (t, c, k))
            })
            .collect()
    }

    fn run(lens: &[usize], tasks: &[&[(u32, Range<usize>, Access)]]) -> Dag {
        let mut tracker = DepTracker::new(lens);
        for (i, accesses) in tasks.iter().enumerate() {
            assert_eq!(tracker.add_task(accesses), Ok(i as u32));
        }
        assert_eq!(tracker.task_count() as usize, tasks.len());
        let edge_count = tracker.edge_count();
        let dag = tracker.finish();
        assert_eq!(dag.edge_count(), edge_count);
        dag
    }

    use Access::{Read as R, ReadWrite as RW, Write as W};

    #[test]
    fn raw_edge() {
        let dag = run(&[10], &[&[(0, 0..10, W)], &[(0, 0..10, R)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Raw)]);
    }

    #[test]
    fn war_edge() {
        let dag = run(&[10], &[&[(0, 0..10, R)], &[(0, 0..10, W)]]);
        assert_eq!(edges(&dag), vec![(0, 1, War)]);
    }

    #[test]
    fn waw_edge() {
        let dag = run(&[10], &[&[(0, 0..10, W)], &[(0, 0..10, W)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Waw)]);
    }

    #[test]
    fn read_write_takes_raw_from_writer_and_war_from_readers() {
        let dag = run(
            &[10],
            &[&[(0, 0..10, W)], &[(0, 0..5, R)], &[(0, 0..10, RW)]],
        );
        assert_eq!(edges(&dag), vec![(0, 1, Raw), (0, 2, Raw), (1, 2, War)]);
    }

    #[test]
    fn partial_overlap_read() {
        // write [0,10), read [5,15) -> RAW.
        let dag = run(&[20], &[&[(0, 0..10, W)], &[(0, 5..15, R)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Raw)]);
        // Disjoint ranges and adjacent ranges do not conflict.
        let dag = run(
            &[20],
            &[&[(0, 0..10, W)], &[(0, 10..15, R)], &[(0, 15..20, W)]],
        );
        assert_eq!(edges(&dag), vec![]);
    }

    #[test]
    fn read_after_two_partial_writes() {
        // write [0,10), write [5,7), read [0,10) -> RAW from both; WAW 0 -> 1.
        let dag = run(
            &[10],
            &[&[(0, 0..10, W)], &[(0, 5..7, W)], &[(0, 0..10, R)]],
        );
        assert_eq!(edges(&dag), vec![(0, 1, Waw), (0, 2, Raw), (1, 2, Raw)]);
        // A read of [0,5) only sees the first writer.
        let dag = run(&[10], &[&[(0, 0..10, W)], &[(0, 5..7, W)], &[(0, 0..5, R)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Waw), (0, 2, Raw)]);
    }

    #[test]
    fn readers_accumulate_and_write_clears_them() {
        let dag = run(
            &[10],
            &[
                &[(0, 0..10, W)],
                &[(0, 0..4, R)],
                &[(0, 2..8, R)],
                &[(0, 3..5, W)],
                &[(0, 0..10, W)],
            ],
        );
        assert_eq!(
            edges(&dag),
            vec![
                (0, 1, Raw),
                (0, 2, Raw),
                (0, 3, Waw),
                (0, 4, Waw),
                (1, 3, War),
                (1, 4, War),
                (2, 3, War),
                (2, 4, War),
                (3, 4, Waw),
            ]
        );
        // After task 4's full write, a reader only depends on it.
        let dag = run(&[4], &[&[(0, 0..4, R)], &[(0, 0..4, W)], &[(0, 0..4, W)]]);
        assert_eq!(edges(&dag), vec![(0, 1, War), (1, 2, Waw)]);
    }

    #[test]
    fn reader_outside_the_write_survives() {
        // Task 1 reads [0,10); task 2 writes [0,5); task 3 writes [5,10) -> WAR 1 -> 3 too.
        let dag = run(
            &[10],
            &[
                &[(0, 0..10, W)],
                &[(0, 0..10, R)],
                &[(0, 0..5, W)],
                &[(0, 5..10, W)],
            ],
        );
        assert!(edges(&dag).contains(&(1, 3, War)));
        assert!(edges(&dag).contains(&(1, 2, War)));
        assert!(!edges(&dag).contains(&(2, 3, Waw)));
    }

    #[test]
    fn no_duplicate_edges_and_kind_preference() {
        // Task 1 reads two segments written by task 0 and also writes: one RAW edge.
        let dag = run(
            &[10],
            &[
                &[(0, 0..3, W), (0, 6..9, W)],
                &[(0, 0..10, R), (0, 4..5, W), (0, 7..8, W)],
            ],
        );
        assert_eq!(edges(&dag), vec![(0, 1, Raw)]);
        // Reader and writer of the same parent: Waw beats War.
        let dag = run(&[10], &[&[(0, 0..5, R), (0, 5..10, W)], &[(0, 0..10, W)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Waw)]);
        // Raw beats Waw.
        let dag = run(&[10], &[&[(0, 0..10, W)], &[(0, 0..3, R), (0, 5..8, W)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Raw)]);
    }

    #[test]
    fn no_self_edges_and_accesses_use_the_state_before_the_task() {
        // Write then read of the same range in one task: the read still sees task 0.
        let dag = run(&[10], &[&[(0, 0..10, W)], &[(0, 0..10, W), (0, 2..4, R)]]);
        assert_eq!(edges(&dag), vec![(0, 1, Raw)]);
        // A task reading and writing overlapping parts of fresh data has no edges at all.
        let dag = run(&[10], &[&[(0, 0..6, R), (0, 4..10, W), (0, 0..10, RW)]]);
        assert_eq!(edges(&dag), vec![]);
    }

    #[test]
    fn arrays_are_independent_and_empty_ranges_ignored() {
        let dag = run(
            &[10, 10, 0],
            &[
                &[(0, 0..10, W), (2, 0..0, W)],
                &[(1, 0..10, R), (0, 3..3, R)],
                &[(1, 0..10, W), (2, 0..0, R)],
            ],
        );
        assert_eq!(edges(&dag), vec![(1, 2, War)]);
    }

    #[test]
    fn diamond_rank_and_levels() {
        let dag = run(
            &[2],
            &[
                &[(0, 0..2, W)],
                &[(0, 0..1, RW)],
                &[(0, 1..2, RW)],
                &[(0, 0..2, R)],
            ],
        );
        assert_eq!(
            edges(&dag),
            vec![(0, 1, Raw), (0, 2, Raw), (1, 3, Raw), (2, 3, Raw)]
        );
        assert_eq!(dag.in_degree, vec![0, 1, 1, 2]);
        assert_eq!(dag.ready, vec![0]);
        assert_eq!(dag.rank, vec![3, 2, 2, 1]);
        assert_eq!(dag.levels(), vec![0, 1, 1, 2]);
        assert_eq!(dag.critical_path(), 3);
        let parents = dag.parents();
        assert_eq!(parents.parents_of(3), &[1, 2]);
        assert_eq!(parents.parents_of(0), &[] as &[u32]);
    }

    #[test]
    fn children_sorted_ascending() {
        // Task 3 and 4 both read what 0 wrote, task 1 overwrites part of it first.
        let dag = run(
            &[8],
            &[
                &[(0, 0..8, W)],
                &[(0, 0..2, R)],
                &[(0, 0..8, R)],
                &[(0, 4..8, W)],
            ],
        );
        assert_eq!(dag.children_of(0), &[1, 2, 3]);
        assert_eq!(dag.children_of(2), &[3]);
    }

    #[test]
    fn empty_tracker() {
        let dag = DepTracker::new(&[]).finish();
        assert_eq!(dag.task_count(), 0);
        assert_eq!(dag.offsets, vec![0]);
        assert_eq!(dag.critical_path(), 0);
        assert!(dag.levels().is_empty());
    }

    #[test]
    fn edges_past_the_limit_are_an_error_and_later_tasks_are_refused() {
        let mut tracker = DepTracker::new(&[4]);
        tracker.set_limits(2, usize::MAX);
        assert_eq!(tracker.add_task(&[(0, 0..4, W)]), Ok(0));
        assert_eq!(tracker.add_task(&[(0, 0..2, R)]), Ok(1));
        // Exactly at the limit.
        assert_eq!(tracker.add_task(&[(0, 2..4, R)]), Ok(2));
        assert_eq!(tracker.edge_count(), 2);
        // Three more edges (WAW from 0, WAR from 1 and 2).
        let error = LimitExceeded {
            what: "dependence edges",
            limit: 2,
        };
        assert_eq!(tracker.add_task(&[(0, 0..4, W)]), Err(error));
        assert_eq!(error.to_string(), "more than 2 dependence edges");
        // The interval map holds part of the refused task, so nothing more goes in, even a task
        // with no edges.
        assert_eq!(tracker.add_task(&[]), Err(error));
        assert_eq!(tracker.task_count(), 3);
        assert_eq!(tracker.edge_count(), 2);
        let dag = tracker.finish();
        assert_eq!(edges(&dag), vec![(0, 1, Raw), (0, 2, Raw)]);
    }

    #[test]
    fn the_edge_limit_counts_edges_not_conflicts() {
        // Task 1 conflicts with task 0 twice (RAW and WAW): one edge.
        let mut tracker = DepTracker::new(&[4]);
        tracker.set_limits(1, usize::MAX);
        tracker.add_task(&[(0, 0..4, W)]).unwrap();
        assert_eq!(tracker.add_task(&[(0, 0..2, R), (0, 2..4, W)]), Ok(1));
        assert_eq!(edges(&tracker.finish()), vec![(0, 1, Raw)]);
    }

    #[test]
    fn reader_entries_past_the_limit_are_an_error() {
        let mut tracker = DepTracker::new(&[4]);
        tracker.set_limits(usize::MAX, 2);
        assert_eq!(tracker.add_task(&[(0, 0..4, R)]), Ok(0));
        assert_eq!(tracker.add_task(&[(0, 0..4, R)]), Ok(1));
        let error = LimitExceeded {
            what: "reader-list entries",
            limit: 2,
        };
        assert_eq!(tracker.add_task(&[(0, 0..4, R)]), Err(error));
        assert_eq!(tracker.add_task(&[(0, 0..4, W)]), Err(error));
        assert_eq!(tracker.reader_entry_count(), 2);
        assert_eq!(tracker.finish().task_count(), 2);
    }

    #[test]
    #[should_panic]
    fn bad_slot_panics() {
        let _ = DepTracker::new(&[4]).add_task(&[(1, 0..1, R)]);
    }
}
