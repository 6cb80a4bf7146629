//! [`DepTracker`]: turns a stream of tasks with declared accesses into dependence edges.
//!
//! 1. [`DepTracker::add_task`] records each task's non-empty ranges, per array, in task order.
//!    While every write to an array is one whole tile of a fixed size and every read lies within
//!    the tiles (up to 256 of them), the array is on the tile path ([`Tiles`]): its edges are
//!    found right there, one lookup per tile.
//! 2. [`DepTracker::finish`] cuts the other arrays that some task writes into jobs (whole arrays, or
//!    element ranges of big ones when threads pay), tracks the jobs on up to [`Split::threads`]
//!    threads ([`job::run`](super::job::run)), unites their edges, and builds the [`Dag`].
//!
//! An array that no task writes gives no edge, so its ranges are recorded but never tracked.

use core::ops::Range;

use super::buffer::cleared;
use super::compress::Endpoints;
use super::dag::Dag;
use super::job::{self, Limits, Part, Rec};
use super::log::{ArrayLog, LogBuffers};
use super::spare::Spare;
use super::split::{self, Split};
use super::tiles::{ArraySizes, Tiles};
use super::{Access, LimitExceeded};

/// The most dependence edges a [`DepTracker`] records: the CSR offsets are `u32`.
pub const MAX_EDGES: usize = u32::MAX as usize;

/// The most tasks a tracker records: task ids are `u32`, and the interval maps keep `u32::MAX`
/// for "no task".
const MAX_TASKS: u32 = u32::MAX - 1;

/// The most ranges one array may record: their ends are numbered in `u32`, two per range.
const MAX_RANGES: usize = (u32::MAX / 2) as usize;

/// Builds the task DAG from each task's declared accesses.
///
/// See the [module documentation](super) for the exact semantics.
#[derive(Clone, Debug)]
pub struct DepTracker {
    arrays: Vec<ArrayLog>,
    /// How each array is tracked, by slot.
    paths: Vec<Path>,
    /// The arrays on the tile path that the task being recorded touches, each with where its
    /// accesses start in that array's records.
    touched: Vec<(usize, usize)>,
    /// Tasks recorded.
    tasks: u32,
    limits: Limits,
    /// What an earlier inspection recorded on each array, reserved when the array takes its path
    /// ([`DepTracker::reserve`]).
    hints: Vec<ArraySizes>,
    /// Buffers of an earlier inspection of the same region, written into rather than fresh
    /// memory ([`DepTracker::recycle`]).
    spare: Spare,
    /// Where each array off the tile path left it, in the order they left.
    breaks: Vec<PathBreak>,
}

/// Where an array left the tile path, or why it never took it: the range of the task that broke
/// the pattern (see [`Tiles`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathBreak {
    /// The array's slot.
    pub slot: u32,
    /// The task whose range broke the pattern.
    pub task: u32,
    /// That range.
    pub range: Range<usize>,
    /// Whether the task writes it.
    pub writes: bool,
    /// The array's tiles then, `(size, where the first starts)`; `None` when it never took the
    /// path.
    pub tiles: Option<(usize, usize)>,
    /// Why the range broke it, as a phrase that follows the range ("is not one whole tile").
    pub why: &'static str,
}

/// How the tracker finds an array's edges.
#[derive(Clone, Debug)]
enum Path {
    /// No range recorded yet.
    Unseen,
    /// Every write so far is one whole tile and every read lies within the tiles: edges as each
    /// task is recorded ([`Tiles`]).
    Tiles(Box<Tiles>),
    /// Ranges recorded, edges found by [`DepTracker::finish`] (see the module docs).
    General,
}

/// The path of an array (in `slot`) whose first non-empty range is `range`: the tile path when
/// tiles of its size fit, sized from what the last inspection recorded there and written into
/// the buffers it left in `spare`. Once per array: kept out of the recording's hot loop, which the
/// compiler then inlines where it is called.
#[cold]
#[inline(never)]
fn first_path(
    array: &mut ArrayLog,
    range: &Range<usize>,
    limits: Limits,
    hint: ArraySizes,
    spare: &mut Spare,
    slot: u32,
) -> Path {
    // Whichever path the array takes, its records may end on the general one.
    let log = spare.take_log(slot);
    array.recs = cleared(log.recs);
    array.ends = Endpoints::new_in(0, 1024, log.ends);
    match Tiles::new(array.len, range, limits, spare.take_tiles(slot)) {
        Some(mut tiles) => {
            tiles.reserve(hint);
            Path::Tiles(Box::new(tiles))
        }
        None => {
            array.reserve(hint);
            Path::General
        }
    }
}

/// Moves an array from the tile path (`path`) to the general one, its ranges so far numbered
/// there. Once per array, out of the hot loop as [`first_path`] is.
#[cold]
#[inline(never)]
fn leave_tiles(path: &mut Path, array: &mut ArrayLog, hint: ArraySizes) {
    let Path::Tiles(tiles) = std::mem::replace(path, Path::General) else {
        unreachable!("on the tile path")
    };
    array.ends.reserve(hint.ends());
    array
        .recs
        .reserve(hint.recs().saturating_sub(array.recs.len()));
    tiles.into_recs(&mut array.ends, &mut array.recs);
}

impl DepTracker {
    /// A tracker for arrays whose element counts are `array_lens` (`array_lens[a]` for slot `a`).
    pub fn new(array_lens: &[usize]) -> Self {
        DepTracker {
            arrays: array_lens
                .iter()
                .map(|&len| ArrayLog {
                    len,
                    recs: Vec::new(),
                    // The array's table comes with its first range (`first_path`).
                    ends: Endpoints::without_table(),
                    written: false,
                    read_only: false,
                })
                .collect(),
            paths: vec![Path::Unseen; array_lens.len()],
            touched: Vec::new(),
            hints: vec![ArraySizes::default(); array_lens.len()],
            spare: Spare::default(),
            breaks: Vec::new(),
            tasks: 0,
            limits: Limits {
                edges: MAX_EDGES,
                reader_entries: super::interval::MAX_READER_ENTRIES,
            },
        }
    }

    /// Declares that no task writes the array in `slot`: its accesses give no edge, so they are
    /// not even recorded. A region's `&[T]` parameters are such arrays.
    ///
    /// # Panics
    ///
    /// [`DepTracker::add_task`] panics on a write to the array.
    pub fn mark_read_only(&mut self, slot: u32) {
        self.arrays[slot as usize].read_only = true;
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
    /// [`LimitExceeded`] when the task would make more than `u32::MAX - 1` tasks, or more than
    /// `u32::MAX / 2` ranges of one array. The task is not recorded.
    ///
    /// # Panics
    ///
    /// If a slot is out of range, a range is reversed or exceeds its array, or a task writes an
    /// array [marked read-only](DepTracker::mark_read_only).
    pub fn add_task(
        &mut self,
        accesses: &[(u32, Range<usize>, Access)],
    ) -> Result<u32, LimitExceeded> {
        self.add_task_from(accesses.iter().map(|(a, r, x)| (*a, r.clone(), *x)))
    }

    /// [`DepTracker::add_task`] with the accesses from an iterator.
    pub fn add_task_from(
        &mut self,
        accesses: impl IntoIterator<Item = (u32, Range<usize>, Access)>,
    ) -> Result<u32, LimitExceeded> {
        let task = self.tasks;
        if task >= MAX_TASKS {
            return Err(LimitExceeded {
                what: "tasks",
                limit: u64::from(MAX_TASKS),
            });
        }
        for (slot, range, access) in accesses {
            let array = &mut self.arrays[slot as usize];
            assert!(
                range.start <= range.end && range.end <= array.len,
                "range {}..{} is not within an array of length {}",
                range.start,
                range.end,
                array.len
            );
            if array.read_only {
                assert!(!access.writes(), "a task writes a read-only array");
                continue;
            }
            if range.is_empty() {
                continue;
            }
            let path = &mut self.paths[slot as usize];
            if let Path::Unseen = path {
                let hint = self.hints[slot as usize];
                *path = first_path(array, &range, self.limits, hint, &mut self.spare, slot);
                if let Path::General = path {
                    self.breaks.push(PathBreak {
                        slot,
                        task,
                        range: range.clone(),
                        writes: access.writes(),
                        tiles: None,
                        why: super::tiles::why_never(),
                    });
                }
            }
            if let Path::Tiles(tiles) = path {
                let at = slot as usize;
                let mut found = tiles.find(&range, access);
                if found.is_none() && access.writes() && !array.written {
                    // Nothing is written yet: this write may set the tile size.
                    let from = (self.touched.iter().find(|&&(s, _)| s == at))
                        .map_or(tiles.len(), |&(_, from)| from);
                    let hint = self.hints[slot as usize];
                    if tiles.retile(array.len, &range, from, hint) {
                        found = tiles.find(&range, access);
                    }
                }
                if let Some(tile) = found {
                    if tiles.len() >= MAX_RANGES {
                        self.forget(task);
                        return Err(LimitExceeded {
                            what: "ranges of one array",
                            limit: MAX_RANGES as u64,
                        });
                    }
                    array.written |= access.writes();
                    if !self.touched.iter().any(|&(s, _)| s == at) {
                        self.touched.push((at, tiles.len()));
                    }
                    tiles.record(task, tile, &range, access);
                    continue;
                }
                // The pattern breaks: the array's ranges so far go to the general path.
                self.breaks.push(PathBreak {
                    slot,
                    task,
                    range: range.clone(),
                    writes: access.writes(),
                    tiles: Some(tiles.geometry()),
                    why: tiles.why_not(&range, access),
                });
                leave_tiles(path, array, self.hints[slot as usize]);
                self.touched.retain(|&(s, _)| s != slot as usize);
            }
            if array.recs.len() >= MAX_RANGES {
                self.forget(task);
                return Err(LimitExceeded {
                    what: "ranges of one array",
                    limit: MAX_RANGES as u64,
                });
            }
            array.written |= access.writes();
            let (a, b) = (array.ends.number(range.start), array.ends.number(range.end));
            array.recs.push(Rec { a, b, task, access });
        }
        for (slot, from) in self.touched.drain(..) {
            if let Path::Tiles(tiles) = &mut self.paths[slot] {
                tiles.add_task(task, from);
            }
        }
        self.tasks += 1;
        Ok(task)
    }

    /// Whether the edges of every task added so far are known now: no array that some task wrote
    /// has left the tile path (the general path finds its edges only when the region is
    /// finished; an array no task wrote yet gave no edge). What a streamed region needs to
    /// publish a batch ([`DepTracker::new_edges`]).
    pub(crate) fn edges_known(&self) -> bool {
        (self.arrays.iter().zip(&self.paths))
            .all(|(array, path)| !array.written || matches!(path, Path::Unseen | Path::Tiles(_)))
    }

    /// The edges the tile path found since the last call, as `(child, parent)` region ids, into
    /// `out` (cleared first); `cursors` holds, per array, how far earlier calls read. Only while
    /// [`DepTracker::edges_known`]: a child's edges from several arrays come one array after the
    /// other, and may repeat a parent.
    pub(crate) fn new_edges(&self, cursors: &mut Vec<usize>, out: &mut Vec<(u32, u32)>) {
        out.clear();
        cursors.resize(self.paths.len(), 0);
        for (path, cursor) in self.paths.iter().zip(cursors.iter_mut()) {
            if let Path::Tiles(tiles) = path {
                tiles.edges_since(cursor, out);
            }
        }
    }

    /// Removes the ranges of `task`, the last, which was refused.
    #[cold]
    fn forget(&mut self, task: u32) {
        self.touched.clear();
        for (array, path) in self.arrays.iter_mut().zip(&mut self.paths) {
            while array.recs.last().is_some_and(|r| r.task == task) {
                array.recs.pop();
            }
            array.written = array.recs.iter().any(|r| r.access.writes());
            if let Path::Tiles(tiles) = path {
                tiles.forget(task);
                array.written |= tiles.writes();
            }
        }
    }

    /// Where the arrays that some task writes left the tile path (or why they never took it), in
    /// the order they left: what keeps their edges from being known as tasks are recorded
    /// ([`DepTracker::edges_known`]).
    pub(crate) fn path_breaks(&self) -> impl Iterator<Item = &PathBreak> {
        (self.breaks.iter()).filter(|b| self.arrays[b.slot as usize].written)
    }

    /// Lowers the most edges and reader-list entries (tests cannot allocate four billion).
    #[cfg(test)]
    pub(crate) fn set_limits(&mut self, max_edges: usize, max_reader_entries: usize) {
        self.limits.edges = max_edges.min(MAX_EDGES);
        self.limits.reader_entries = max_reader_entries;
    }

    /// Leaves room for only `left` more tasks (tests cannot add four billion).
    #[cfg(test)]
    pub(super) fn leave_room_for(&mut self, left: u32) {
        self.tasks = MAX_TASKS - left;
    }

    /// What each array recorded so far, for [`DepTracker::reserve`] in the next inspection of the
    /// same region.
    pub(crate) fn sizes(&self) -> Vec<ArraySizes> {
        (self.paths.iter().zip(&self.arrays))
            .map(|(p, array)| match p {
                Path::Tiles(tiles) => tiles.sizes(),
                Path::General => ArraySizes::general(array.recs.len(), array.ends.values().len()),
                Path::Unseen => ArraySizes::default(),
            })
            .collect()
    }

    /// Reserves what an earlier inspection of the same region recorded ([`DepTracker::sizes`]),
    /// array by array, when each array takes its path.
    pub(crate) fn reserve(&mut self, sizes: &[ArraySizes]) {
        for (hint, &size) in self.hints.iter_mut().zip(sizes) {
            *hint = size;
        }
    }

    /// Writes this tracker's tables into `spare`, the buffers of an earlier inspection of the
    /// same region ([`DepTracker::finish_keeping`]), rather than fresh memory.
    pub(crate) fn recycle(&mut self, spare: Spare) {
        self.spare = spare;
    }

    /// Arrays on the tile path.
    #[cfg(test)]
    pub(crate) fn tiled_arrays(&self) -> usize {
        (self.paths.iter())
            .filter(|p| matches!(p, Path::Tiles(_)))
            .count()
    }

    /// Number of tasks added so far.
    pub fn task_count(&self) -> u32 {
        self.tasks
    }

    /// Number of non-empty ranges recorded so far, over all arrays.
    pub fn range_count(&self) -> usize {
        let tiled = self.paths.iter().map(|p| match p {
            Path::Tiles(tiles) => tiles.len(),
            Path::Unseen | Path::General => 0,
        });
        self.general_ranges() + tiled.sum::<usize>()
    }

    /// Ranges recorded on the general path, which [`DepTracker::finish`] tracks.
    fn general_ranges(&self) -> usize {
        self.arrays.iter().map(|a| a.recs.len()).sum()
    }

    /// Tracks the dependences and builds the CSR [`Dag`], on as many threads as pay
    /// ([`Split::auto`]).
    ///
    /// # Errors
    ///
    /// [`LimitExceeded`] when the DAG would have more than [`MAX_EDGES`] edges, or one job more
    /// than `u32::MAX - 1` reader-list entries (one per read and run of equal state it covers).
    pub fn finish(self) -> Result<Dag, LimitExceeded> {
        self.finish_keeping(&mut Spare::default())
    }

    /// [`DepTracker::finish`], leaving in `keep` the buffers it used but for the DAG's own (and
    /// those of [`DepTracker::recycle`] it did not use), for the next inspection of the region.
    pub(crate) fn finish_keeping(self, keep: &mut Spare) -> Result<Dag, LimitExceeded> {
        let split = Split::auto(self.general_ranges());
        self.finish_into(split, keep)
    }

    /// [`DepTracker::finish`] with the work spread as `split` says. Every split gives the same
    /// [`Dag`].
    ///
    /// # Errors
    ///
    /// As [`DepTracker::finish`]. Under a split into several jobs, reader-list entries are counted
    /// per job.
    pub fn finish_with(self, split: Split) -> Result<Dag, LimitExceeded> {
        self.finish_into(split, &mut Spare::default())
    }

    /// [`DepTracker::finish_with`], keeping buffers as [`DepTracker::finish_keeping`] does.
    pub(super) fn finish_into(
        mut self,
        split: Split,
        keep: &mut Spare,
    ) -> Result<Dag, LimitExceeded> {
        let n = self.tasks as usize;
        let limits = self.limits;
        let mut spare = std::mem::take(&mut self.spare);
        let mut written = Vec::new();
        let mut tiled = Vec::new();
        let mut buffers = Vec::new();
        for (slot, (array, path)) in self.arrays.into_iter().zip(self.paths).enumerate() {
            match path {
                Path::Tiles(tiles) if array.written => {
                    let (edges, rest) = tiles.edges()?;
                    tiled.push(edges);
                    buffers.push((slot as u32, rest));
                }
                Path::General if array.written && !array.recs.is_empty() => {
                    written.push((slot as u32, array));
                }
                _ => {}
            }
        }
        let mut general = None;
        // One job keeps its parts' records, tables of ends and its own buffers for the next
        // inspection; the threads' jobs free theirs as they end, before the CSR allocations.
        let mut outs = if written.is_empty() {
            Vec::new()
        } else if split.jobs <= 1 {
            let mut kept = Vec::with_capacity(written.len());
            let parts = (written.into_iter())
                .map(|(slot, a)| {
                    let part = Part::ranked(a.recs, &a.ends);
                    kept.push((slot, a.ends.into_buffers()));
                    part
                })
                .collect();
            let (edges, recs) = job::run_keeping(parts, limits, &mut spare.job)?;
            general = Some(
                kept.into_iter()
                    .zip(recs)
                    .map(|((slot, ends), recs)| (slot, LogBuffers { recs, ends })),
            );
            vec![edges]
        } else {
            split::track(written.into_iter().map(|(_, a)| a).collect(), split, limits)?
        };
        let first_tiled = outs.len();
        outs.extend(tiled);
        let dag = split::merge(n, &outs, limits.edges, spare.dag.take(), &mut spare.lists)?;
        for ((_, rest), edges) in buffers.iter_mut().zip(outs.drain(first_tiled..)) {
            rest.give_back(edges);
        }
        let logs = match general {
            Some(logs) => {
                if let Some(edges) = outs.pop() {
                    spare.job.give_back(edges);
                }
                logs.collect()
            }
            None => std::mem::take(&mut spare.logs),
        };
        // Buffers given and not used stay for a later inspection.
        buffers.append(&mut spare.tiles);
        *keep = Spare {
            dag: None,
            tiles: buffers,
            lists: spare.lists,
            logs,
            job: spare.job,
        };
        Ok(dag)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::EdgeKind::{self, Raw, War, Waw};

    #[test]
    fn a_general_path_sized_by_the_last_inspection_grows_nothing_and_finds_the_same_edges() {
        // Ranges of many lengths at many offsets: the general path, with thousands of ends.
        let tasks: Vec<(u32, Range<usize>, Access)> = (0..3000usize)
            .map(|i| {
                let start = (i * 7919) % 60_000;
                let access = if i % 3 != 2 {
                    Access::Write
                } else {
                    Access::Read
                };
                (0, start..start + 1 + (i * 31) % 500, access)
            })
            .collect();
        let inspect = |hints: Option<&[ArraySizes]>| {
            let mut tracker = DepTracker::new(&[61_000]);
            if let Some(hints) = hints {
                tracker.reserve(hints);
            }
            // The first range takes the tile path (a tile of its length), the second (a write of
            // another length) leaves it.
            tracker.add_task(&tasks[..1]).unwrap();
            tracker.add_task(&tasks[1..2]).unwrap();
            assert!(matches!(tracker.paths[0], Path::General));
            let slots = tracker.arrays[0].ends.slots();
            for task in tasks.chunks(1).skip(2) {
                tracker.add_task(task).unwrap();
            }
            let grew = tracker.arrays[0].ends.slots() != slots;
            (tracker.sizes(), grew, tracker.finish().unwrap())
        };
        let (sizes, grew, dag) = inspect(None);
        assert!(grew, "without a hint the table of ends grows");
        assert!(sizes[0].ends() > 1000 && sizes[0].recs() == tasks.len());
        let (_, grew, hinted) = inspect(Some(&sizes));
        assert!(!grew, "sized from the last inspection, it is never rebuilt");
        assert_eq!(hinted, dag);
    }

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

    /// The DAG of `tasks`, the same whether tracked whole or cut into element ranges on threads.
    fn run(lens: &[usize], tasks: &[&[(u32, Range<usize>, Access)]]) -> Dag {
        let mut tracker = DepTracker::new(lens);
        for (i, accesses) in tasks.iter().enumerate() {
            assert_eq!(tracker.add_task(accesses), Ok(i as u32));
        }
        assert_eq!(tracker.task_count() as usize, tasks.len());
        let split = Split {
            threads: 2,
            jobs: 8,
        };
        let dag = tracker.clone().finish_with(Split::SEQUENTIAL).unwrap();
        assert_eq!(tracker.finish_with(split).unwrap(), dag);
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
        let dag = DepTracker::new(&[]).finish().unwrap();
        assert_eq!(dag.task_count(), 0);
        assert_eq!(dag.offsets, vec![0]);
        assert_eq!(dag.critical_path(), 0);
        assert!(dag.levels().is_empty());
    }

    #[test]
    fn arrays_no_task_writes_are_not_tracked() {
        let mut tracker = DepTracker::new(&[4, 4]);
        // No reader list can be built for array 0: it is never written.
        tracker.set_limits(usize::MAX, 0);
        for _ in 0..3 {
            tracker.add_task(&[(0, 0..4, R), (1, 0..0, W)]).unwrap();
        }
        assert_eq!(tracker.range_count(), 3);
        assert_eq!(tracker.finish().unwrap().edge_count(), 0);
    }

    #[test]
    fn read_only_arrays_are_not_recorded() {
        let mut tracker = DepTracker::new(&[4, 4]);
        tracker.mark_read_only(0);
        tracker.add_task(&[(0, 0..4, R), (1, 0..2, W)]).unwrap();
        tracker.add_task(&[(0, 0..4, R), (1, 1..3, R)]).unwrap();
        assert_eq!(tracker.range_count(), 2);
        assert_eq!(edges(&tracker.finish().unwrap()), vec![(0, 1, Raw)]);
    }

    #[test]
    #[should_panic(expected = "writes a read-only array")]
    fn a_write_to_a_read_only_array_panics() {
        let mut tracker = DepTracker::new(&[4]);
        tracker.mark_read_only(0);
        let _ = tracker.add_task(&[(0, 0..1, RW)]);
    }

    #[test]
    fn edges_past_the_limit_are_an_error_when_finishing() {
        let tasks: [&[(u32, Range<usize>, Access)]; 4] = [
            &[(0, 0..4, W)],
            &[(0, 0..2, R)],
            &[(0, 2..4, R)],
            &[(0, 0..4, W)],
        ];
        let tracker = |tasks: &[&[(u32, Range<usize>, Access)]]| {
            let mut tracker = DepTracker::new(&[4]);
            tracker.set_limits(2, usize::MAX);
            for (i, accesses) in tasks.iter().enumerate() {
                assert_eq!(tracker.add_task(accesses), Ok(i as u32));
            }
            tracker
        };
        // Exactly at the limit.
        let dag = tracker(&tasks[..3]).finish().unwrap();
        assert_eq!(edges(&dag), vec![(0, 1, Raw), (0, 2, Raw)]);
        // Three more edges (WAW from 0, WAR from 1 and 2), whether tracked whole or in parts.
        let error = LimitExceeded {
            what: "dependence edges",
            limit: 2,
        };
        assert_eq!(error.to_string(), "more than 2 dependence edges");
        assert_eq!(tracker(&tasks).finish(), Err(error));
        let split = Split {
            threads: 2,
            jobs: 4,
        };
        assert_eq!(tracker(&tasks).finish_with(split), Err(error));
    }

    #[test]
    fn the_edge_limit_counts_edges_not_conflicts() {
        // Task 1 conflicts with task 0 twice (RAW and WAW): one edge.
        let mut tracker = DepTracker::new(&[4]);
        tracker.set_limits(1, usize::MAX);
        tracker.add_task(&[(0, 0..4, W)]).unwrap();
        assert_eq!(tracker.add_task(&[(0, 0..2, R), (0, 2..4, W)]), Ok(1));
        assert_eq!(edges(&tracker.finish().unwrap()), vec![(0, 1, Raw)]);
    }

    #[test]
    fn reader_entries_past_the_limit_are_an_error() {
        let mut tracker = DepTracker::new(&[4]);
        tracker.set_limits(usize::MAX, 2);
        for _ in 0..3 {
            tracker.add_task(&[(0, 0..4, R)]).unwrap();
        }
        tracker.add_task(&[(0, 0..4, W)]).unwrap();
        let error = LimitExceeded {
            what: "reader-list entries",
            limit: 2,
        };
        assert_eq!(tracker.finish(), Err(error));
    }

    /// A stencil's pattern: each task reads the last row of the tile above (a part of it) and its
    /// edge array's one column, then writes its tile and both columns. The first range of the
    /// edge array is a part read, so the first write sets its tile size, and both arrays keep to
    /// the tile path with their edges known as tasks are recorded; so does a read across tiles.
    /// What breaks the pattern leaves it, with the same edges.
    #[test]
    fn part_reads_keep_an_array_on_the_tile_path() {
        use crate::graph::oracle::{dag_edges, reference_edges};
        // Four tiles of 4 in `u` and two elements past them; four pairs of 2-element columns in
        // `cols`.
        let lens = [18, 16];
        let task = |t: usize| {
            let mut accesses = vec![(1, t * 4..t * 4 + 2, R)];
            if t > 0 {
                accesses.push((0, t * 4 - 1..t * 4, R));
            }
            accesses.extend([(0, t * 4..t * 4 + 4, W), (1, t * 4..t * 4 + 4, W)]);
            accesses
        };
        let tasks: Vec<_> = (0..4).map(task).collect();
        let mut tracker = DepTracker::new(&lens);
        for accesses in &tasks {
            tracker.add_task(accesses).unwrap();
        }
        assert_eq!(tracker.tiled_arrays(), 2);
        assert!(tracker.edges_known());
        let dag = tracker.finish().unwrap();
        assert_eq!(edges(&dag), vec![(0, 1, Raw), (1, 2, Raw), (2, 3, Raw)]);
        assert_eq!(dag_edges(&dag), reference_edges(&lens, &tasks));

        // A read across tiles stays; a read past the last whole tile, or a write of part of one,
        // leaves the path.
        for (range, access, tiled) in [(3..13, R, 2), (15..17, R, 1), (4..6, W, 1)] {
            let mut tracker = DepTracker::new(&lens);
            let mut all = tasks.clone();
            all.push(vec![(0, range.clone(), access)]);
            all.push(vec![(0, 8..12, W)]);
            for accesses in &all {
                tracker.add_task(accesses).unwrap();
            }
            assert_eq!(tracker.tiled_arrays(), tiled, "{range:?} {access:?}");
            let dag = tracker.finish().unwrap();
            assert_eq!(dag_edges(&dag), reference_edges(&lens, &all), "{range:?}");
        }
    }

    /// A read over 256 tiles keeps to the tile path, one over 257 leaves it: past that, the
    /// general path's runs cost less than an entry on every tile.
    #[test]
    fn a_read_over_too_many_tiles_leaves_the_tile_path() {
        use crate::graph::oracle::{dag_edges, reference_edges};
        for (tiles, tiled) in [(256, 1), (257, 0)] {
            // Tiles of 2; the read starts in the middle of the first.
            let tasks = vec![
                vec![(0, 0..2, W)],
                vec![(0, 1..2 * tiles - 1, R)],
                vec![(0, 0..2, W)],
            ];
            let mut tracker = DepTracker::new(&[600]);
            for accesses in &tasks {
                tracker.add_task(accesses).unwrap();
            }
            assert_eq!(tracker.tiled_arrays(), tiled, "{tiles} tiles");
            let dag = tracker.finish().unwrap();
            assert_eq!(dag_edges(&dag), reference_edges(&[600], &tasks));
            assert_eq!(edges(&dag), vec![(0, 1, Raw), (0, 2, Waw), (1, 2, War)]);
        }
    }

    /// An array whose first range would cut it into more tiles than the path keeps never takes
    /// it, and says so once a task writes it.
    #[test]
    fn an_array_of_too_many_tiles_says_why_it_never_took_the_path() {
        let mut tracker = DepTracker::new(&[5_000_000]);
        tracker.add_task(&[(0, 0..1, W)]).unwrap();
        assert!(matches!(tracker.paths[0], Path::General));
        let breaks: Vec<_> = tracker.path_breaks().cloned().collect();
        assert_eq!(breaks.len(), 1);
        assert_eq!((breaks[0].task, breaks[0].range.clone()), (0, 0..1));
        assert_eq!(breaks[0].tiles, None);
        assert_eq!(breaks[0].why, super::super::tiles::why_never());
        if super::super::tiles::enabled() {
            assert!(
                breaks[0].why.contains("4,194,304 tiles"),
                "{}",
                breaks[0].why
            );
        }
    }

    /// An array off the tile path that no task wrote yet holds back no edge: the edges are known
    /// until a task writes it, and only then does its break count.
    #[test]
    fn an_array_off_the_tile_path_counts_once_written() {
        let mut tracker = DepTracker::new(&[64, 64]);
        // Array 0: tiles of 6, then a read into the 4 elements past the last whole one (which
        // leaves the path); array 1: whole tiles.
        tracker.add_task(&[(0, 0..6, R), (1, 0..8, W)]).unwrap();
        tracker.add_task(&[(0, 58..63, R), (1, 8..16, W)]).unwrap();
        assert!(matches!(tracker.paths[0], Path::General));
        assert!(tracker.edges_known());
        assert_eq!(tracker.path_breaks().count(), 0);
        tracker.add_task(&[(0, 0..4, W)]).unwrap();
        assert!(!tracker.edges_known());
        let breaks: Vec<_> = tracker.path_breaks().cloned().collect();
        let want = PathBreak {
            slot: 0,
            task: 1,
            range: 58..63,
            writes: false,
            tiles: Some((6, 0)),
            why: "runs past the last whole tile",
        };
        assert_eq!(breaks, [want]);
    }

    #[test]
    fn a_refused_task_leaves_nothing_behind() {
        let mut tracker = DepTracker::new(&[4]);
        tracker.tasks = MAX_TASKS;
        let error = tracker.add_task(&[(0, 0..4, W)]).unwrap_err();
        assert_eq!(error.what, "tasks");
        assert_eq!(tracker.range_count(), 0);
        tracker.tasks = 1;
        tracker.arrays[0].recs.push(Rec {
            a: 0,
            b: 1,
            task: 0,
            access: R,
        });
        tracker.forget(0);
        assert_eq!(tracker.range_count(), 0);
        assert!(!tracker.arrays[0].written);
    }

    #[test]
    #[should_panic]
    fn bad_slot_panics() {
        let _ = DepTracker::new(&[4]).add_task(&[(1, 0..1, R)]);
    }
}
