//! Data affinity: for each task, the parent it shares the most data with.
//!
//! 1. Record each task's accesses with [`TaskRanges::push_task`], in spawn order: the ranges are
//!    merged per array, whatever the access mode.
//! 2. [`affine_parents`] compares every child with each of its parents in the [`Dag`]: the bytes
//!    of the ranges both access (elements in both merged sets, times the array's element size).
//!    The parent with the most bytes is the child's *affine parent*; ties go to the latest
//!    parent (the highest id, the one most likely still in cache); a task with no parent, or
//!    sharing no byte with any, has [`NO_AFFINE_PARENT`].
//!
//! The affinity placement policy pushes a freed child to the worker that ran its affine parent,
//! whose SM is likely to still hold that data in its L1 and nearby L2.
//!
//! ```
//! use taskweave_host::graph::{Access, DepTracker, TaskRanges, affine_parents};
//!
//! // Task 2 reads 0..8, which task 0 wrote, and 6..10, which task 1 wrote.
//! let tasks = [
//!     vec![(0, 0..8, Access::Write)],
//!     vec![(0, 8..10, Access::Write)],
//!     vec![(0, 0..10, Access::Read)],
//! ];
//! let mut tracker = DepTracker::new(&[10]);
//! let mut ranges = TaskRanges::default();
//! for accesses in &tasks {
//!     tracker.add_task(accesses)?;
//!     ranges.push_task(accesses.iter().map(|(slot, range, _)| (*slot, range.clone())))?;
//! }
//! let dag = tracker.finish()?;
//! // 8 elements shared with task 0, 2 with task 1.
//! assert_eq!(affine_parents(&dag, &ranges, &[4])[2], 0);
//! # Ok::<(), taskweave_host::graph::LimitExceeded>(())
//! ```

use core::ops::Range;

use super::{Dag, LimitExceeded};

/// [`affine_parents`]' value for a task with no parent it shares data with.
pub const NO_AFFINE_PARENT: u32 = u32::MAX;

/// The most ranges a [`TaskRanges`] holds: its offsets are `u32`.
const MAX_RANGES: usize = u32::MAX as usize;

/// One merged range of one array.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SlotRange {
    slot: u32,
    range: Range<usize>,
}

/// The ranges every task accesses, merged per array (sorted by array, then start; disjoint and
/// non-adjacent), in CSR form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRanges {
    /// Length `tasks + 1`: task `t`'s ranges are `ranges[offsets[t]..offsets[t + 1]]`.
    offsets: Vec<u32>,
    ranges: Vec<SlotRange>,
    /// The most ranges: [`MAX_RANGES`], lower in tests.
    max_ranges: usize,
}

impl Default for TaskRanges {
    fn default() -> Self {
        Self {
            offsets: vec![0],
            ranges: Vec::new(),
            max_ranges: MAX_RANGES,
        }
    }
}

impl TaskRanges {
    /// Records the next task's accesses, as `(array slot, range)` pairs in any order; empty
    /// ranges are dropped, overlapping and adjacent ones of one array merged.
    ///
    /// # Errors
    ///
    /// [`LimitExceeded`] when the merged ranges of all tasks would number more than `u32::MAX`;
    /// the task is not recorded.
    pub fn push_task(
        &mut self,
        accesses: impl IntoIterator<Item = (u32, Range<usize>)>,
    ) -> Result<(), LimitExceeded> {
        let start = self.ranges.len();
        self.ranges.extend(
            accesses
                .into_iter()
                .filter(|(_, r)| !r.is_empty())
                .map(|(slot, range)| SlotRange { slot, range }),
        );
        let own = &mut self.ranges[start..];
        own.sort_unstable_by_key(|r| (r.slot, r.range.start));
        // Merge in place: `kept` is the index of the last merged range.
        let mut kept = start;
        for i in start + 1..self.ranges.len() {
            let (slot, next) = (self.ranges[i].slot, self.ranges[i].range.clone());
            let last = &mut self.ranges[kept];
            if last.slot == slot && next.start <= last.range.end {
                last.range.end = last.range.end.max(next.end);
            } else {
                kept += 1;
                self.ranges[kept] = SlotRange { slot, range: next };
            }
        }
        let end = if self.ranges.len() > start {
            kept + 1
        } else {
            start
        };
        if end > self.max_ranges {
            self.ranges.truncate(start);
            return Err(LimitExceeded {
                what: "access ranges",
                limit: self.max_ranges as u64,
            });
        }
        self.ranges.truncate(end);
        // Cannot truncate: there are at most `MAX_RANGES` ranges.
        self.offsets.push(end as u32);
        Ok(())
    }

    /// Forgets the last task recorded, if any.
    pub(crate) fn pop_task(&mut self) {
        if self.task_count() > 0 {
            self.offsets.pop();
            self.ranges
                .truncate(self.offsets[self.offsets.len() - 1] as usize);
        }
    }

    /// Lowers the most ranges (tests cannot allocate four billion).
    #[cfg(test)]
    pub(crate) fn set_max_ranges(&mut self, max: usize) {
        self.max_ranges = max.min(MAX_RANGES);
    }

    /// The number of tasks recorded.
    pub fn task_count(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Task `task`'s merged ranges, as `(array slot, range)`, sorted.
    pub fn of(&self, task: u32) -> impl Iterator<Item = (u32, Range<usize>)> + '_ {
        self.slice(task).iter().map(|r| (r.slot, r.range.clone()))
    }

    fn slice(&self, task: u32) -> &[SlotRange] {
        let t = task as usize;
        &self.ranges[self.offsets[t] as usize..self.offsets[t + 1] as usize]
    }

    /// The bytes tasks `a` and `b` both access: elements in both merged sets, times the element
    /// size of their array (`elem_bytes[slot]`). A merge walk over the two sorted lists.
    pub fn shared_bytes(&self, a: u32, b: u32, elem_bytes: &[usize]) -> u64 {
        let (x, y) = (self.slice(a), self.slice(b));
        let (mut i, mut j, mut bytes) = (0, 0, 0u64);
        while i < x.len() && j < y.len() {
            let (p, q) = (&x[i], &y[j]);
            if p.slot == q.slot {
                let lo = p.range.start.max(q.range.start);
                let hi = p.range.end.min(q.range.end);
                if lo < hi {
                    bytes += ((hi - lo) * elem_bytes[p.slot as usize]) as u64;
                }
            }
            // Advance whichever range ends first (by array, then end).
            if (p.slot, p.range.end) <= (q.slot, q.range.end) {
                i += 1;
            } else {
                j += 1;
            }
        }
        bytes
    }
}

/// Each task's affine parent: the parent in `dag` it shares the most bytes of accessed ranges with
/// (`ranges`, element sizes `elem_bytes` per array slot), ties to the latest parent,
/// [`NO_AFFINE_PARENT`] for none. `O(edges × ranges per task)`.
pub fn affine_parents(dag: &Dag, ranges: &TaskRanges, elem_bytes: &[usize]) -> Vec<u32> {
    assert_eq!(
        ranges.task_count(),
        dag.task_count(),
        "one range list per task"
    );
    let parents = dag.parents();
    (0..dag.task_count() as u32)
        .map(|child| {
            let mut best = (0u64, NO_AFFINE_PARENT);
            // Ascending ids: `>=` lets a later parent win a tie.
            for &parent in parents.parents_of(child) {
                let bytes = ranges.shared_bytes(child, parent, elem_bytes);
                if bytes > 0 && bytes >= best.0 {
                    best = (bytes, parent);
                }
            }
            best.1
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Access, DepTracker};

    fn ranges_of(tasks: &[Vec<(u32, Range<usize>)>]) -> TaskRanges {
        let mut ranges = TaskRanges::default();
        for t in tasks {
            ranges.push_task(t.iter().cloned()).unwrap();
        }
        ranges
    }

    #[test]
    fn ranges_are_merged_per_array_and_sorted() {
        let r = ranges_of(&[
            vec![
                (1, 4..6),
                (0, 5..9),
                (0, 0..3),
                (1, 0..0),
                (0, 2..5),
                (1, 6..7),
            ],
            vec![],
            vec![(0, 3..3)],
            vec![(2, 1..2), (0, 10..12), (2, 1..2)],
        ]);
        assert_eq!(r.task_count(), 4);
        assert_eq!(r.of(0).collect::<Vec<_>>(), [(0, 0..9), (1, 4..7)]);
        assert_eq!(r.of(1).count(), 0);
        assert_eq!(r.of(2).count(), 0);
        assert_eq!(r.of(3).collect::<Vec<_>>(), [(0, 10..12), (2, 1..2)]);
    }

    #[test]
    fn ranges_past_the_limit_are_an_error_and_the_task_is_not_recorded() {
        let mut r = TaskRanges::default();
        r.set_max_ranges(3);
        r.push_task([(0, 0..2), (1, 0..2)]).unwrap();
        let error = r.push_task([(0, 4..6), (1, 4..6)]).unwrap_err();
        assert_eq!(
            error,
            LimitExceeded {
                what: "access ranges",
                limit: 3
            }
        );
        assert_eq!(r.task_count(), 1);
        // Merged ranges count once; the limit is reached, not passed.
        r.push_task([(0, 4..6), (0, 5..8)]).unwrap();
        assert_eq!(r.of(1).collect::<Vec<_>>(), [(0, 4..8)]);
        assert_eq!(r.of(0).collect::<Vec<_>>(), [(0, 0..2), (1, 0..2)]);
        r.pop_task();
        assert_eq!(r.task_count(), 1);
        r.push_task([(2, 1..2)]).unwrap();
        assert_eq!(r.of(1).collect::<Vec<_>>(), [(2, 1..2)]);
    }

    #[test]
    fn shared_bytes_count_common_elements_times_element_size() {
        let r = ranges_of(&[
            vec![(0, 0..10), (1, 0..4), (2, 5..6)],
            vec![(0, 5..7), (0, 8..20), (1, 4..8), (2, 0..100)],
        ]);
        // Array 0: 5..7 and 8..10 (4 elements of 4 bytes); array 1: none; array 2: 5..6 (8 bytes).
        assert_eq!(r.shared_bytes(0, 1, &[4, 2, 8]), 16 + 8);
        assert_eq!(r.shared_bytes(1, 0, &[4, 2, 8]), 24);
        assert_eq!(r.shared_bytes(0, 0, &[4, 2, 8]), 40 + 8 + 8);
    }

    /// Runs `tasks` through the tracker and returns the affine parents.
    fn affine(
        lens: &[usize],
        elem: &[usize],
        tasks: &[Vec<(u32, Range<usize>, Access)>],
    ) -> Vec<u32> {
        let mut tracker = DepTracker::new(lens);
        let mut ranges = TaskRanges::default();
        for t in tasks {
            tracker.add_task(t).unwrap();
            ranges
                .push_task(t.iter().map(|(s, r, _)| (*s, r.clone())))
                .unwrap();
        }
        affine_parents(&tracker.finish().unwrap(), &ranges, elem)
    }

    use Access::{Read as R, ReadWrite as RW, Write as W};
    const NONE: u32 = NO_AFFINE_PARENT;

    #[test]
    fn the_parent_sharing_more_bytes_wins_and_ties_go_to_the_latest() {
        let parents = affine(
            &[20, 20],
            &[4, 8],
            &[
                vec![(0, 0..10, W)],
                vec![(1, 0..6, W)],
                // 10 elements × 4 bytes from task 0 against 6 × 8 from task 1: task 1 wins.
                vec![(0, 0..10, R), (1, 0..6, R)],
                vec![(0, 10..15, W)],
                vec![(0, 5..15, R)],
            ],
        );
        assert_eq!(parents[..3], [NONE, NONE, 1]);
        assert_eq!(parents[3], NONE);
        // Task 4 reads 5..10 (written by 0, read by 2: its parent is 0 by RAW, and 2 is no
        // parent, a read after a read) and 10..15 (written by 3): 20 bytes each, 3 is later.
        assert_eq!(parents[4], 3);
    }

    #[test]
    fn any_access_mode_counts() {
        // A WAR parent shares the range it read; a WAW parent the range it wrote.
        let parents = affine(
            &[10],
            &[1],
            &[vec![(0, 0..4, R)], vec![(0, 4..10, W)], vec![(0, 0..10, W)]],
        );
        assert_eq!(parents, [NONE, NONE, 1]);
        let parents = affine(&[10], &[1], &[vec![(0, 0..10, RW)], vec![(0, 2..3, RW)]]);
        assert_eq!(parents, [NONE, 0]);
    }

    /// The tile `(i, j)` of an `n × n` grid of tiles of `b × b` elements, row by row.
    fn tile(i: usize, j: usize, n: usize, b: usize) -> Range<usize> {
        let start = (i * n + j) * b * b;
        start..start + b * b
    }

    #[test]
    fn a_wavefront_tile_follows_the_neighbour_it_reads_more_of() {
        // Tile (i, j) reads its own tile, all of its left neighbour and one row (b elements) of
        // the tile above it: the left neighbour shares more, so it is the affine parent, except
        // in the first column, where the tile above is the only parent.
        let (n, b) = (4, 4);
        let mut tasks = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let mut accesses = vec![(0, tile(i, j, n, b), RW)];
                if j > 0 {
                    accesses.push((0, tile(i, j - 1, n, b), R));
                }
                if i > 0 {
                    let above = tile(i - 1, j, n, b);
                    accesses.push((0, above.end - b..above.end, R));
                }
                tasks.push(accesses);
            }
        }
        let parents = affine(&[n * n * b * b], &[4], &tasks);
        for i in 0..n {
            for j in 0..n {
                let want = match (i, j) {
                    (0, 0) => NONE,
                    (_, 0) => ((i - 1) * n) as u32,
                    _ => (i * n + j - 1) as u32,
                };
                assert_eq!(parents[i * n + j], want, "tile ({i}, {j})");
            }
        }
    }

    #[test]
    fn a_wavefront_tile_follows_the_tile_above_when_it_shares_more() {
        // Now tile (i, j) reads one column of its left neighbour and all of the tile above.
        let (n, b) = (3, 4);
        let mut tasks = Vec::new();
        for i in 0..n {
            for j in 0..n {
                let mut accesses = vec![(0, tile(i, j, n, b), RW)];
                if j > 0 {
                    let left = tile(i, j - 1, n, b);
                    for r in 0..b {
                        let e = left.start + r * b + b - 1;
                        accesses.push((0, e..e + 1, R));
                    }
                }
                if i > 0 {
                    accesses.push((0, tile(i - 1, j, n, b), R));
                }
                tasks.push(accesses);
            }
        }
        let parents = affine(&[n * n * b * b], &[8], &tasks);
        assert_eq!(parents[0], NONE);
        assert_eq!(parents[1], 0, "first row: only the left neighbour");
        for i in 1..n {
            for j in 0..n {
                assert_eq!(
                    parents[i * n + j],
                    ((i - 1) * n + j) as u32,
                    "tile ({i}, {j})"
                );
            }
        }
    }
}
