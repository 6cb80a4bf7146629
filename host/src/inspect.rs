//! Inspection: running a region's control flow to record its tasks, without running them.
//!
//! 1. The region binds each array parameter to a slot ([`ArrayArg`]) and runs its body with a
//!    [`Recorder`].
//! 2. Each `spawn!` calls the task's generated spawn function, which evaluates the declared ranges
//!    and calls [`Recorder::spawn`] with the packed scalars and the accesses.
//! 3. The recorder validates every range against its array, hands the task's ranges to the
//!    [`DepTracker`] (on a thread of its own once the region is big, `graph::Tracking`), and
//!    appends the task to the task table.
//! 4. `Recorder::finish` has the tracker add the RAW, WAR and WAW edges (on several threads for a
//!    big region) and yields an [`Inspection`]: the task table, argument words, the DAG in CSR
//!    form, and the spawn locations errors refer to.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;
use std::panic::Location;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use taskweave_device::abi::TaskRecord;

use crate::cover::Cover;
use crate::error::{Error, TaskRef};
use crate::graph::{self, Dag, DepTracker, TaskRanges, Tracking};

/// How one argument word of a task prints in errors, from the task's signature (`#[task]` emits
/// one per word): errors print `fill(a, 60, 70, 2.0)`, not the raw words. Formatting happens
/// only when an error or a DOT label is built, never while recording.
#[derive(Clone, Copy, Debug)]
pub enum Arg {
    /// An array parameter: the word is a slot, printed as the region's name for its array.
    Array,
    /// A scalar parameter, its value printed by its type's [`Scalar::fmt_bits`](taskweave_device::Scalar::fmt_bits).
    Value(fn(u64, &mut fmt::Formatter<'_>) -> fmt::Result),
}

/// A task's argument words as errors print them: each by its [`Arg`], or as a signed integer
/// where the task's formats are unknown.
struct Args<'a> {
    words: &'a [u64],
    formats: &'a [Arg],
    arrays: &'a [ArrayInfo],
}

impl fmt::Display for Args<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &word) in self.words.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            match self.formats.get(i) {
                Some(Arg::Array) => match self.arrays.get(word as usize) {
                    Some(array) => f.write_str(array.name)?,
                    None => write!(f, "{word}")?,
                },
                Some(Arg::Value(format)) => format(word, f)?,
                None => write!(f, "{}", word as i64)?,
            }
        }
        Ok(())
    }
}

/// Marks an array as read-only or read-write in a region.
pub trait Mode: Copy + 'static + private::Sealed {}

/// A region array passed as `&[T]`.
#[derive(Clone, Copy, Debug)]
pub struct ReadOnly;
/// A region array passed as `&mut [T]`.
#[derive(Clone, Copy, Debug)]
pub struct ReadWrite;
impl Mode for ReadOnly {}
impl Mode for ReadWrite {}

mod private {
    pub trait Sealed {}
    impl Sealed for super::ReadOnly {}
    impl Sealed for super::ReadWrite {}
}

/// A region array inside a region's body: a slot number, the length, the element type and whether
/// tasks may write it. Pass it to tasks in `spawn!`.
pub struct ArrayArg<T, M: Mode> {
    slot: u32,
    len: usize,
    _marker: PhantomData<fn() -> (T, M)>,
}

impl<T, M: Mode> Clone for ArrayArg<T, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, M: Mode> Copy for ArrayArg<T, M> {}

impl<T, M: Mode> ArrayArg<T, M> {
    pub(crate) fn new(slot: u32, len: usize) -> Self {
        Self {
            slot,
            len,
            _marker: PhantomData,
        }
    }

    /// The array's length in elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when the array is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The array's slot in the region.
    pub fn slot(&self) -> u32 {
        self.slot
    }
}

/// One declared access of a spawned task, with its range evaluated.
#[derive(Clone, Debug)]
pub struct Access {
    /// The array's slot.
    pub slot: u32,
    /// The range.
    pub range: Range<usize>,
    /// Declared under `writes`.
    pub write: bool,
    /// The task's parameter name.
    pub param: &'static str,
}

/// The most tasks a region may spawn: task indices need their top bit free (the device marks
/// single-parent children with it) and the top values serve as scheduler commands.
pub const MAX_TASKS: u32 = (1 << 31) - 4;

// A task index never has the sole-parent bit, and the largest one with that bit set stays below
// the scheduler's commands.
const _: () = assert!((MAX_TASKS - 1) & taskweave_device::sched::deps::SOLE_PARENT == 0);
const _: () = assert!(
    (MAX_TASKS - 1) | taskweave_device::sched::deps::SOLE_PARENT
        < taskweave_device::sched::command::NONE
);

/// Compile-time check that a region scalar is `Copy`.
pub const fn assert_copy<T: Copy>() {}

/// A region's scalar argument on its way into the region's plan key (see the `cache` module):
/// `task_region!` writes `(&KeyOf(&arg)).key_word()` for each, which is the argument's
/// [`Scalar::to_bits`](taskweave_device::Scalar::to_bits) when its type is a
/// [`Scalar`](taskweave_device::Scalar) ([`ScalarKey`]) and `None` otherwise ([`OpaqueKey`], one
/// auto-reference further), which keeps the region out of the cache.
#[doc(hidden)]
pub struct KeyOf<'a, T>(pub &'a T);

/// The key word of a [`Scalar`](taskweave_device::Scalar) argument (see [`KeyOf`]).
#[doc(hidden)]
pub trait ScalarKey {
    fn key_word(&self) -> Option<u64>;
}

impl<T: taskweave_device::Scalar> ScalarKey for KeyOf<'_, T> {
    fn key_word(&self) -> Option<u64> {
        Some(self.0.to_bits())
    }
}

/// No key word, for an argument of any other type (see [`KeyOf`]).
#[doc(hidden)]
pub trait OpaqueKey {
    fn key_word(&self) -> Option<u64>;
}

impl<T> OpaqueKey for &KeyOf<'_, T> {
    fn key_word(&self) -> Option<u64> {
        None
    }
}

/// An array as inspection sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    /// The region's parameter name.
    pub name: &'static str,
    /// Length in elements.
    pub len: usize,
    /// Passed as `&mut [T]`.
    pub writable: bool,
    /// Bytes per element (`size_of::<T>()`).
    pub elem_bytes: usize,
    /// Declared `#[output]`: the region writes each element before reading it, so its host
    /// contents are not copied to the GPU (see [`Region::bind_output`](crate::Region::bind_output)).
    pub output: bool,
}

/// Records the tasks a region spawns.
pub struct Recorder {
    region: &'static str,
    kinds: &'static [&'static str],
    /// Per kind, how its argument words print.
    arg_formats: &'static [&'static [Arg]],
    /// Per kind, the blocks its tasks run on (`#[task(blocks = K)]`); empty: one each.
    blocks: Vec<u32>,
    arrays: Vec<ArrayInfo>,
    /// The dependence tracker: on this thread for a small region, on its own for a big one.
    tracking: Tracking,
    /// Each task's ranges, when the region runs under the affinity policy.
    ranges: Option<TaskRanges>,
    tasks: Vec<TaskRecord>,
    args: Vec<u64>,
    locations: Vec<&'static Location<'static>>,
    footprints: Vec<Footprint>,
    /// Per `#[output]` array slot, the elements the tasks recorded so far declare written.
    written: Vec<Option<Cover>>,
    /// [`MAX_TASKS`]; lower in tests, which cannot spawn two billion tasks.
    max_tasks: u32,
    /// The most argument words: `u32::MAX`, as the task table's offsets are `u32`.
    max_args: u64,
    /// A streamed region's feed, handed each batch of tasks as soon as their edges are known.
    feeding: Option<Feeding>,
    /// How long [`Recorder::feed_all`] waited for the tracker: part of the edges' time, as an
    /// inspected region's wait for its tracker in [`Recorder::finish`] is.
    tracker_wait: Duration,
}

/// A batch of recorded tasks, with their edges, handed to a streamed region's [`Feed`].
pub(crate) struct Batch<'r> {
    /// The region id of the batch's first task.
    pub first: u32,
    /// The batch's task records, then the record after them (its `args` the end of the batch's
    /// argument words; its kind not yet known).
    pub records: &'r [TaskRecord],
    /// The argument words recorded so far from word `args_from` (the recorder's: every one), the
    /// batch's among them.
    pub args: &'r [u64],
    /// The region's argument word at `args[0]`.
    pub args_from: u32,
    /// The edges into the batch's tasks, `(child, parent)`, grouped by array (a parent may repeat
    /// for a child).
    pub edges: &'r [(u32, u32)],
}

/// Where a streamed region's batches go (see [`Recorder::with_feed`]).
pub(crate) trait Feed {
    /// Takes the next batch: its tasks follow the last batch's.
    fn batch(&mut self, batch: Batch<'_>);

    /// Takes the region's task count, once every task is fed and the body has returned: before
    /// the inspection is finished, which the workers need not wait for.
    fn end(&mut self, _tasks: usize) {}
}

/// A recorder's feed and how far it fed.
struct Feeding {
    feed: Box<dyn Feed>,
    /// Tasks handed over so far.
    fed: usize,
    /// The task count at which the next batch goes.
    next_at: usize,
    /// How many tasks the next batch holds.
    size: usize,
    edges: Vec<(u32, u32)>,
}

/// The first batch of a streamed region: small, so that the workers start early. Each next batch
/// is twice as large, up to [`MAX_BATCH`].
const FIRST_BATCH: usize = 64;
/// The largest batch.
const MAX_BATCH: usize = 8192;

/// What the last inspection of each region recorded: its tasks, argument words and tile-path
/// tables, by region name. The next inspection of the region reserves as much up front: a
/// region's calls mostly repeat their shape, and a table grown by doubling is copied and its
/// pages touched again at each step (a tenth of the inspection of a tiled factorization).
#[derive(Clone, Debug, Default)]
struct Sizes {
    tasks: usize,
    args: usize,
    arrays: Vec<graph::ArraySizes>,
}

/// [`Sizes`] of the regions inspected so far in this process.
fn sizes() -> std::sync::MutexGuard<'static, std::collections::HashMap<&'static str, Sizes>> {
    static SIZES: OnceLock<std::sync::Mutex<std::collections::HashMap<&'static str, Sizes>>> =
        OnceLock::new();
    (SIZES.get_or_init(Default::default).lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The buffers of the last inspection of each region, cleared, for its next inspection to write
/// into (see [`graph::Spare`]): its task records, argument words and locations, and the
/// tracker's tables and DAG.
#[derive(Debug, Default)]
struct Kept {
    tasks: Vec<TaskRecord>,
    args: Vec<u64>,
    locations: Vec<&'static Location<'static>>,
    graph: graph::Spare,
}

impl Kept {
    fn bytes(&self) -> usize {
        self.tasks.capacity() * size_of::<TaskRecord>()
            + self.args.capacity() * size_of::<u64>()
            + self.locations.capacity() * size_of::<&Location<'_>>()
            + self.graph.bytes()
    }
}

/// [`Kept`] buffers by region name.
fn kept() -> std::sync::MutexGuard<'static, std::collections::HashMap<&'static str, Kept>> {
    static KEPT: OnceLock<std::sync::Mutex<std::collections::HashMap<&'static str, Kept>>> =
        OnceLock::new();
    (KEPT.get_or_init(Default::default).lock()).unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Adds what `add` gives to the buffers kept for `region`, unless they would then hold more than
/// [`graph::MAX_SPARE_BYTES`]: a region that large has them freed.
fn keep(region: &'static str, add: impl FnOnce(&mut Kept)) {
    let mut kept = kept();
    let entry = kept.entry(region).or_default();
    add(entry);
    if entry.bytes() > graph::MAX_SPARE_BYTES {
        kept.remove(region);
    }
}

/// `v` cleared, with room for `len` items.
fn cleared<T>(mut v: Vec<T>, len: usize) -> Vec<T> {
    v.clear();
    v.reserve(len);
    v
}

/// How many tasks the last inspection of region `region` in this process recorded (0: none).
pub(crate) fn size_hint(region: &str) -> usize {
    sizes().get(region).map_or(0, |s| s.tasks)
}

impl Recorder {
    pub(crate) fn new(
        region: &'static str,
        kinds: &'static [&'static str],
        arrays: Vec<ArrayInfo>,
    ) -> Self {
        let lens: Vec<usize> = arrays.iter().map(|a| a.len).collect();
        let mut tracker = DepTracker::new(&lens);
        let last = sizes().get(region).cloned().unwrap_or_default();
        tracker.reserve(&last.arrays);
        let spare = kept().remove(region).unwrap_or_default();
        tracker.recycle(spare.graph);
        // A `&[T]` parameter reaches tasks only as `&[T]`: no task writes it.
        for (slot, array) in arrays.iter().enumerate() {
            if !array.writable {
                tracker.mark_read_only(slot as u32);
            }
        }
        Self {
            region,
            kinds,
            arg_formats: &[],
            blocks: Vec::new(),
            tracking: Tracking::new(tracker),
            footprints: vec![Footprint::default(); arrays.len()],
            written: arrays
                .iter()
                .map(|a| a.output.then(Cover::default))
                .collect(),
            arrays,
            // One more task: the sentinel that `finish` appends.
            tasks: cleared(spare.tasks, last.tasks + 1),
            args: cleared(spare.args, last.args),
            locations: cleared(spare.locations, last.tasks),
            ranges: None,
            max_tasks: MAX_TASKS,
            max_args: u64::from(u32::MAX),
            feeding: None,
            tracker_wait: Duration::ZERO,
        }
    }

    /// Hands `feed` each batch of recorded tasks as soon as their edges are known: while every
    /// writable array keeps to the tile path (see `graph::DepTracker::edges_known`). Once one
    /// leaves it, nothing more is fed: the rest of the region's tasks are the caller's to hand on
    /// when it is finished ([`Recorder::fed`] says how many were fed). The tracker moves to a
    /// thread of its own as `piping` says, which then hands the edges back as it finds them.
    /// Before the first task.
    pub(crate) fn with_feed(mut self, feed: Box<dyn Feed>, piping: graph::Piping) -> Self {
        self.tracking.stream_edges(piping);
        self.feeding = Some(Feeding {
            feed,
            fed: 0,
            next_at: FIRST_BATCH,
            size: FIRST_BATCH,
            edges: Vec::new(),
        });
        self
    }

    /// Feeds the tasks tracked since the last batch, if their edges are known; else stops
    /// feeding for good.
    #[cold]
    pub(crate) fn feed(&mut self) {
        self.feed_tracked(graph::Wait::Not);
    }

    /// Feeds every task recorded (if their edges are known; else stops feeding for good): a batch
    /// for each chunk the tracker's thread hands back, as it comes. The tracker is often behind
    /// the body by thousands of tasks (the last steps of a factorization), which then run while
    /// it tracks the ones after rather than once it has tracked them all.
    pub(crate) fn feed_all(&mut self) {
        let start = Instant::now();
        while self.feed_tracked(graph::Wait::Next) {}
        self.tracker_wait += start.elapsed();
    }

    /// Feeds what is tracked, after `wait`: whether some recorded task is still to be fed.
    fn feed_tracked(&mut self, wait: graph::Wait) -> bool {
        let Some(feeding) = &mut self.feeding else {
            return false;
        };
        if feeding.next_at == usize::MAX {
            return false;
        }
        let Some(tracked) = self.tracking.take_edges(&mut feeding.edges, wait) else {
            feeding.next_at = usize::MAX;
            return false;
        };
        let (len, tracked) = (self.tasks.len(), tracked as usize);
        if tracked > feeding.fed {
            // The record after the batch, where its argument words end: the next task's, or one
            // pushed for the while.
            let last = tracked == len;
            if last {
                self.tasks.push(TaskRecord {
                    kind: u32::MAX,
                    args: self.args.len() as u32,
                });
            }
            feeding.feed.batch(Batch {
                first: feeding.fed as u32,
                records: &self.tasks[feeding.fed..=tracked],
                args: &self.args,
                args_from: 0,
                edges: &feeding.edges,
            });
            if last {
                self.tasks.pop();
            }
            feeding.fed = tracked;
            feeding.size = (feeding.size * 2).min(MAX_BATCH);
        }
        // A tracker on its own thread may be behind: look again a little later.
        feeding.next_at = (feeding.fed + feeding.size).max(len + FIRST_BATCH);
        feeding.fed < len && self.tracking.chunks_out()
    }

    /// Tells the feed that the region has `tasks` tasks, when the body has returned and every
    /// one is fed ([`Feed::end`]); whether it was told.
    pub(crate) fn end_feed(&mut self) -> bool {
        let n = self.tasks.len();
        match &mut self.feeding {
            Some(feeding) if feeding.fed == n => {
                feeding.feed.end(n);
                true
            }
            _ => false,
        }
    }

    /// Tasks handed to the feed so far (see [`Recorder::with_feed`]).
    pub(crate) fn fed(&self) -> usize {
        self.feeding.as_ref().map_or(0, |f| f.fed)
    }

    /// Keeps each task's ranges, for [`Inspection::affine_parents`]. Only the affinity policy
    /// needs them, so that other regions do not pay for the recording (about 30 ns and 24 bytes
    /// per range).
    pub(crate) fn with_ranges(mut self) -> Self {
        self.ranges = Some(TaskRanges::default());
        self
    }

    /// Prints each kind's argument words by `args[kind]` in errors.
    pub(crate) fn with_args(mut self, args: &'static [&'static [Arg]]) -> Self {
        self.arg_formats = args;
        self
    }

    /// Takes each kind's blocks (`#[task(blocks = K)]`) from the region's dispatch table.
    pub(crate) fn with_blocks(mut self, dispatch: &dyn taskweave_device::sched::Dispatch) -> Self {
        if dispatch.gangs() {
            self.blocks = (0..self.kinds.len() as u32)
                .map(|kind| dispatch.width(kind))
                .collect();
        }
        self
    }

    fn task_ref(&self, kind: u32, words: &[u64], location: &'static Location<'static>) -> TaskRef {
        TaskRef {
            index: self.tasks.len() as u32,
            kind: self.kinds.get(kind as usize).copied().unwrap_or("?"),
            args: print_args(words, self.arg_formats, kind, &self.arrays),
            location,
        }
    }

    /// The error for a task that got the array in `slot` through two parameters, `params`, of
    /// which `writable` says whether each is `&mut [T]`. A task's spawn function checks this
    /// before [`Recorder::spawn`], as only it knows its parameters' types; nothing is recorded.
    pub fn aliased(
        &self,
        kind: u32,
        location: &'static Location<'static>,
        words: &[u64],
        slot: u32,
        params: [&'static str; 2],
        writable: [bool; 2],
    ) -> Error {
        Error::AliasedArray {
            task: self.task_ref(kind, words, location),
            array: self.arrays[slot as usize].name,
            first: params[0],
            first_writable: writable[0],
            second: params[1],
            second_writable: writable[1],
        }
    }

    /// Records one task: validates its ranges, records them for dependence tracking, and appends
    /// the task. Nothing is recorded when a range is invalid or the region grows past a limit
    /// ([`Error::TooLarge`]); a limit of the tracker's, once it runs on its own thread, is
    /// reported when the region is finished instead. The edges of arrays off the tile path are
    /// found when the region is finished.
    pub fn spawn(
        &mut self,
        kind: u32,
        location: &'static Location<'static>,
        words: &[u64],
        accesses: &[Access],
    ) -> Result<(), Error> {
        for access in accesses {
            let array = self.arrays[access.slot as usize];
            let range = access.range.clone();
            if range.start > range.end {
                let task = self.task_ref(kind, words, location);
                return Err(Error::ReversedRange {
                    task,
                    array: array.name,
                    param: access.param,
                    range,
                });
            }
            if range.end > array.len {
                let task = self.task_ref(kind, words, location);
                return Err(Error::OutOfBounds {
                    task,
                    array: array.name,
                    param: access.param,
                    range,
                    len: array.len,
                });
            }
            // An output's host contents stay on the host: what a task reads of it, an earlier
            // task must have written.
            if let Some(written) = &self.written[access.slot as usize]
                && !access.write
                && let Some(element) = written.first_missing(&range)
            {
                let task = self.task_ref(kind, words, location);
                return Err(Error::UnwrittenOutput {
                    task,
                    array: array.name,
                    param: access.param,
                    range,
                    element,
                });
            }
        }
        if self.tasks.len() >= self.max_tasks as usize {
            return Err(Error::TooLarge {
                region: self.region,
                what: "tasks",
                limit: u64::from(self.max_tasks),
            });
        }
        if (self.args.len() + words.len()) as u64 > self.max_args {
            return Err(Error::TooLarge {
                region: self.region,
                what: "argument words",
                limit: self.max_args,
            });
        }
        let too_large = |limit: graph::LimitExceeded| Error::TooLarge {
            region: self.region,
            what: limit.what,
            limit: limit.limit,
        };
        // The ranges first: they can be taken back if the tracker refuses the task, which cannot.
        if let Some(ranges) = &mut self.ranges {
            ranges
                .push_task(accesses.iter().map(|a| (a.slot, a.range.clone())))
                .map_err(too_large)?;
        }
        let recorded = self.tracking.add_task_from(accesses.iter().map(|a| {
            let mode = if a.write {
                graph::Access::Write
            } else {
                graph::Access::Read
            };
            (a.slot, a.range.clone(), mode)
        }));
        if let Err(limit) = recorded {
            if let Some(ranges) = &mut self.ranges {
                ranges.pop_task();
            }
            return Err(too_large(limit));
        }
        for a in accesses {
            let footprint = &mut self.footprints[a.slot as usize];
            if a.write {
                Footprint::widen(&mut footprint.write, &a.range);
                if let Some(written) = &mut self.written[a.slot as usize] {
                    written.insert(a.range.clone());
                }
            } else {
                Footprint::widen(&mut footprint.read, &a.range);
            }
        }
        self.tasks.push(TaskRecord {
            kind,
            args: self.args.len() as u32,
        });
        self.args.extend_from_slice(words);
        self.locations.push(location);
        if let Some(feeding) = &self.feeding
            && self.tasks.len() >= feeding.next_at
        {
            self.feed();
        }
        Ok(())
    }

    /// Tracks the dependences of the recorded tasks and yields the inspection, timed from `start`
    /// (when the region's body began). [`Error::TooLarge`] when the DAG has too many edges.
    pub(crate) fn finish(mut self, start: Instant) -> Result<Inspection, Error> {
        let too_large = |limit: graph::LimitExceeded| Error::TooLarge {
            region: self.region,
            what: limit.what,
            limit: limit.limit,
        };
        let edges_start = Instant::now();
        let (tracker, tracker_time) = self.tracking.finish().map_err(too_large)?;
        // A task refused after its range took an array off the path (a limit passed, and the
        // body went on past the error) was never recorded: the last recorded task stands in.
        let recorded_task = |t: u32| (t as usize).min(self.locations.len().saturating_sub(1));
        let off_tile_path = (tracker.path_breaks())
            .filter_map(|b| {
                let t = recorded_task(b.task);
                Some(OffTilePath {
                    array: self.arrays[b.slot as usize].name,
                    task: b.task,
                    kind: (self.tasks.get(t))
                        .and_then(|r| self.kinds.get(r.kind as usize))
                        .copied()
                        .unwrap_or("?"),
                    location: *self.locations.get(t)?,
                    range: b.range.clone(),
                    writes: b.writes,
                    tiles: b.tiles,
                    why: b.why,
                })
            })
            .collect();
        let recorded = Sizes {
            tasks: self.tasks.len(),
            args: self.args.len(),
            arrays: tracker.sizes(),
        };
        sizes().insert(self.region, recorded);
        self.tasks.push(TaskRecord {
            kind: u32::MAX,
            args: self.args.len() as u32,
        });
        let mut spare = graph::Spare::default();
        let dag = tracker.finish_keeping(&mut spare).map_err(too_large)?;
        keep(self.region, |kept| kept.graph.fill_from(spare));
        Ok(Inspection {
            region: self.region,
            kinds: self.kinds,
            arg_formats: self.arg_formats,
            blocks: self.blocks,
            arrays: self.arrays,
            dag,
            ranges: self.ranges,
            affine: OnceLock::new(),
            tasks: self.tasks,
            args: self.args,
            locations: self.locations,
            footprints: {
                let mut footprints = self.footprints;
                for (footprint, written) in footprints.iter_mut().zip(&self.written) {
                    if let (Some(written), Some(span)) = (written, &footprint.write) {
                        footprint.unwritten = Some(written.gaps(span.clone()));
                    }
                }
                footprints
            },
            time: start.elapsed(),
            edges_time: edges_start.elapsed() + self.tracker_wait,
            tracker_time,
            off_tile_path,
        })
    }
}

/// The words of a task of `kind`, printed by `args[kind]`.
fn print_args(words: &[u64], args: &[&[Arg]], kind: u32, arrays: &[ArrayInfo]) -> String {
    let formats = args.get(kind as usize).copied().unwrap_or_default();
    Args {
        words,
        formats,
        arrays,
    }
    .to_string()
}

/// The elements a region's tasks touch in one array: the smallest range covering every read, and
/// the one covering every write. Regions in flight on a shared array are ordered by these.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// The span of the reads, if any.
    pub read: Option<Range<usize>>,
    /// The span of the writes, if any.
    pub write: Option<Range<usize>>,
    /// For an `#[output]` array that the tasks write: the parts of the write span that no task
    /// declares written, in order (their host values are the only ones copied up). `None` for
    /// other arrays.
    pub unwritten: Option<Vec<Range<usize>>>,
}

impl Footprint {
    fn widen(span: &mut Option<Range<usize>>, range: &Range<usize>) {
        if range.is_empty() {
            return;
        }
        *span = Some(match span.take() {
            Some(s) => s.start.min(range.start)..s.end.max(range.end),
            None => range.clone(),
        });
    }
}

/// What inspecting a region produced.
#[derive(Debug)]
pub struct Inspection {
    /// The region's name.
    pub region: &'static str,
    /// Task function names by kind.
    pub kinds: &'static [&'static str],
    /// Per kind, how its argument words print.
    arg_formats: &'static [&'static [Arg]],
    /// Per kind, the blocks its tasks run on (`#[task(blocks = K)]`); empty when every kind runs
    /// on one.
    blocks: Vec<u32>,
    /// The region's arrays by slot.
    pub arrays: Vec<ArrayInfo>,
    /// The dependence DAG.
    pub dag: Dag,
    /// Each task's declared ranges, merged per array whatever the access mode; recorded only when
    /// the region was inspected under [`Policy::Affinity`](crate::Policy::Affinity).
    pub ranges: Option<TaskRanges>,
    /// [`Inspection::affine_parents`], computed on first use.
    affine: OnceLock<Vec<u32>>,
    /// One record per task, plus a sentinel whose `args` ends the last task's words.
    pub tasks: Vec<TaskRecord>,
    /// Argument words of all tasks.
    pub args: Vec<u64>,
    /// Where each task was spawned.
    pub locations: Vec<&'static Location<'static>>,
    /// Per array slot: the span of elements the tasks read and the span they write.
    pub footprints: Vec<Footprint>,
    /// How long inspection took (running the body, tracking dependences, building the CSR).
    pub time: Duration,
    /// Of [`Inspection::time`], what tracking the dependences and building the CSR took; the rest
    /// ran the body and recorded the tasks and ranges.
    pub edges_time: Duration,
    /// When the dependence tracker ran on a thread of its own (past 2,048 tasks, with two threads
    /// idle), the time it spent tracking, beside the body: where it comes close to
    /// [`Inspection::time`] less the DAG's construction, the tracker bounds the inspection.
    pub tracker_time: Option<Duration>,
    /// The arrays some task writes that left the tile path, each with the range that broke its
    /// pattern, in the order they left; empty when every edge was found as its task was recorded
    /// ([`Inspection::edges_as_recorded`]).
    pub off_tile_path: Vec<OffTilePath>,
}

/// An array that left the tile path ([`Inspection::off_tile_path`]): which task's range broke the
/// pattern, and why. Prints as a sentence about the region's code: ``array `a`: task 12 (`trsm`,
/// spawned at src/lu.rs:52) writes 5..21, which is not one whole tile (tiles of 16 from element
/// 0)``.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffTilePath {
    /// The array's parameter name.
    pub array: &'static str,
    /// The task, in spawn order.
    pub task: u32,
    /// Its task function.
    pub kind: &'static str,
    /// Where the task was spawned.
    pub location: &'static Location<'static>,
    /// The range that broke the pattern.
    pub range: Range<usize>,
    /// Whether the task writes it.
    pub writes: bool,
    /// The array's tiles then, `(size, where the first starts)`; `None` when the array never
    /// took the path.
    pub tiles: Option<(usize, usize)>,
    /// Why, as a phrase that follows the range.
    pub why: &'static str,
}

impl fmt::Display for OffTilePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = if self.writes { "writes" } else { "reads" };
        write!(
            f,
            "array `{}`: task {} (`{}`, spawned at {}) {verb} {:?}, which {}",
            self.array, self.task, self.kind, self.location, self.range, self.why
        )?;
        match self.tiles {
            Some((size, base)) => write!(f, " (tiles of {size} from element {base})"),
            None => Ok(()),
        }
    }
}

impl Inspection {
    /// Gives this inspection's buffers to its region's next inspection (see `graph/spare.rs`),
    /// leaving its tables empty: for the runtime, once the plan that held it is dropped. (Not a
    /// `Drop` of its own: the fields are the caller's to move out of an inspection it was given.)
    pub(crate) fn give_back(&mut self) {
        let dag = Dag {
            offsets: std::mem::take(&mut self.dag.offsets),
            children: std::mem::take(&mut self.dag.children),
            kinds: std::mem::take(&mut self.dag.kinds),
            in_degree: std::mem::take(&mut self.dag.in_degree),
            ready: std::mem::take(&mut self.dag.ready),
            rank: std::mem::take(&mut self.dag.rank),
        };
        let (tasks, args) = (
            std::mem::take(&mut self.tasks),
            std::mem::take(&mut self.args),
        );
        let locations = std::mem::take(&mut self.locations);
        keep(self.region, |kept| {
            if kept.tasks.capacity() < tasks.capacity() {
                kept.tasks = tasks;
            }
            if kept.args.capacity() < args.capacity() {
                kept.args = args;
            }
            if kept.locations.capacity() < locations.capacity() {
                kept.locations = locations;
            }
            kept.graph.keep_dag(dag);
        });
    }

    /// Whether every edge was found as its task was recorded: every array some task writes kept
    /// to the tile path (each write one whole tile of a fixed size, each read within at most 256
    /// of the tiles). A streamed call ([`Region::stream`](crate::Region::stream)) then feeds the
    /// running kernel every task as the body records it; otherwise it stops feeding at the first
    /// range that broke the pattern ([`Inspection::off_tile_path`] says which), and the rest goes
    /// in when the body returns.
    pub fn edges_as_recorded(&self) -> bool {
        self.off_tile_path.is_empty()
    }

    /// The number of tasks.
    pub fn task_count(&self) -> usize {
        self.locations.len()
    }

    /// Whether the region has wide tasks (`#[task(blocks = K)]`, `K > 1`): its tables then hold
    /// gang words (see `taskweave_device::gang`).
    pub fn gangs(&self) -> bool {
        !self.blocks.is_empty()
    }

    /// Every task's blocks (`#[task(blocks = K)]`), for the static plan to cost wide tasks by
    /// their width ([`list_schedule_wide`](graph::list_schedule_wide)); empty when the region has
    /// no wide tasks.
    pub fn task_widths(&self) -> Vec<u32> {
        if self.blocks.is_empty() {
            return Vec::new();
        }
        (self.tasks[..self.task_count()].iter())
            .map(|t| self.blocks.get(t.kind as usize).copied().unwrap_or(1))
            .collect()
    }

    /// The widest task kind the region spawned, with its blocks, if it has wide tasks: a run needs
    /// at least as many workers.
    pub fn widest_gang(&self) -> Option<(&'static str, u32)> {
        if self.blocks.is_empty() {
            return None;
        }
        let mut spawned = vec![false; self.blocks.len()];
        for task in &self.tasks[..self.task_count()] {
            if let Some(s) = spawned.get_mut(task.kind as usize) {
                *s = true;
            }
        }
        (0..self.blocks.len())
            .filter(|&k| spawned[k] && self.blocks[k] > 1)
            .max_by_key(|&k| self.blocks[k])
            .map(|k| (self.kinds[k], self.blocks[k]))
    }

    /// Per task, the parent it shares the most bytes of declared ranges with, or
    /// [`NO_AFFINE_PARENT`](graph::NO_AFFINE_PARENT) (see [`graph::affine_parents`]): where the
    /// affinity policy sends the task. `None` unless the region was inspected under
    /// [`Policy::Affinity`](crate::Policy::Affinity) (`region.policy(Policy::Affinity).inspect()`),
    /// the only policy that records the ranges. Computed on the first call,
    /// `O(edges × ranges per task)`.
    pub fn affine_parents(&self) -> Option<&[u32]> {
        let ranges = self.ranges.as_ref()?;
        let affine = self.affine.get_or_init(|| {
            let elem_bytes: Vec<usize> = self.arrays.iter().map(|a| a.elem_bytes).collect();
            graph::affine_parents(&self.dag, ranges, &elem_bytes)
        });
        Some(affine)
    }

    /// Task `index` as errors name it.
    pub fn task_ref(&self, index: u32) -> TaskRef {
        let record = self.tasks[index as usize];
        let words = &self.args[record.args as usize..self.tasks[index as usize + 1].args as usize];
        TaskRef {
            index,
            kind: self.kinds.get(record.kind as usize).copied().unwrap_or("?"),
            args: print_args(words, self.arg_formats, record.kind, &self.arrays),
            location: self.locations[index as usize],
        }
    }

    /// The DAG in Graphviz DOT, tasks labelled `kind(args)`.
    pub fn to_dot(&self) -> String {
        self.dag.to_dot(|t| {
            let r = self.task_ref(t);
            format!("{}({})", r.kind, r.args)
        })
    }

    /// The DAG as JSON: tasks with kind, arguments and source location; edges with their kind.
    pub fn to_json(&self) -> serde_json::Value {
        self.dag.to_json(|t| {
            let r = self.task_ref(t);
            serde_json::json!({
                "index": t,
                "kind": r.kind,
                "args": self.args[self.tasks[t as usize].args as usize..self.tasks[t as usize + 1].args as usize],
                "location": r.location.to_string(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> Recorder {
        let arrays = vec![ArrayInfo {
            name: "x",
            len: 4,
            writable: true,
            elem_bytes: 4,
            output: false,
        }];
        Recorder::new("limits", &["t"], arrays)
    }

    fn write(lo: usize, hi: usize) -> [Access; 1] {
        [Access {
            slot: 0,
            range: lo..hi,
            write: true,
            param: "x",
        }]
    }

    fn output_recorder() -> Recorder {
        let arrays = vec![ArrayInfo {
            name: "d",
            len: 100,
            writable: true,
            elem_bytes: 4,
            output: true,
        }];
        Recorder::new("outputs", &["t"], arrays)
    }

    fn read(lo: usize, hi: usize) -> Access {
        Access {
            slot: 0,
            range: lo..hi,
            write: false,
            param: "d",
        }
    }

    #[test]
    fn a_regions_next_inspection_writes_into_the_last_ones_buffers_and_records_the_same() {
        let inspect = || {
            let arrays = vec![ArrayInfo {
                name: "x",
                len: 64,
                writable: true,
                elem_bytes: 4,
                output: false,
            }];
            // A name of its own: tests run side by side, and buffers are kept by region.
            let mut rec = Recorder::new("kept buffers", &["t"], arrays);
            let here = Location::caller();
            for i in 0..200u64 {
                let tile = (i * 5 % 8) as usize * 8;
                rec.spawn(0, here, &[i], &write(tile, tile + 8)).unwrap();
            }
            rec.finish(Instant::now()).unwrap()
        };
        let mut first = inspect();
        let (tasks, children) = (first.tasks.as_ptr(), first.dag.children.as_ptr());
        let (dag, args) = (first.dag.clone(), first.args.clone());
        assert_eq!(
            dag.edge_count(),
            192,
            "each write follows the last one of its tile"
        );
        first.give_back();
        let second = inspect();
        assert_eq!(second.tasks.as_ptr(), tasks, "the task records' buffer");
        assert_eq!(second.dag.children.as_ptr(), children, "the DAG's");
        assert_eq!((&second.dag, &second.args), (&dag, &args));
    }

    #[test]
    fn an_output_read_before_any_task_writes_it_is_refused_and_not_recorded() {
        let mut rec = output_recorder();
        let here = Location::caller();
        rec.spawn(0, here, &[0], &write(0, 10))
            .expect("writes only");
        rec.spawn(0, here, &[1], &write(10, 20))
            .expect("writes only");
        // Reads what tasks 0 and 1 wrote, and writes on.
        let [w] = write(20, 30);
        rec.spawn(0, here, &[2], &[read(0, 20), w])
            .expect("reads what was written");
        // Reads one element past what was written: its own write does not count.
        let [w] = write(30, 40);
        let error = rec.spawn(0, here, &[3], &[read(25, 31), w]).unwrap_err();
        assert!(
            matches!(
                error,
                Error::UnwrittenOutput {
                    array: "d",
                    param: "d",
                    element: 30,
                    ref range,
                    ..
                } if *range == (25..31)
            ),
            "{error}"
        );
        let message = error.to_string();
        assert!(message.contains("task #3 `t(3)`"), "{message}");
        assert!(message.contains("`#[output]`"), "{message}");
        let ins = rec.finish(Instant::now()).expect("three tasks");
        assert_eq!(ins.task_count(), 3);
        assert_eq!(ins.footprints[0].write, Some(0..30));
        assert_eq!(ins.footprints[0].unwritten, Some(vec![]));
    }

    #[test]
    fn an_output_s_unwritten_gaps_are_kept_and_other_arrays_have_none() {
        let mut rec = output_recorder();
        let here = Location::caller();
        rec.spawn(0, here, &[0], &write(0, 10)).expect("writes");
        rec.spawn(0, here, &[1], &write(50, 60)).expect("writes");
        rec.spawn(0, here, &[2], &write(70, 80)).expect("writes");
        let ins = rec.finish(Instant::now()).expect("three tasks");
        assert_eq!(ins.footprints[0].write, Some(0..80));
        assert_eq!(ins.footprints[0].unwritten, Some(vec![10..50, 60..70]));

        let mut rec = recorder();
        rec.spawn(0, here, &[0], &write(0, 1)).expect("writes");
        let ins = rec.finish(Instant::now()).expect("one task");
        assert_eq!(ins.footprints[0].unwritten, None);
    }

    #[test]
    fn the_task_past_the_limit_is_an_error_and_is_not_recorded() {
        let mut rec = recorder();
        assert_eq!(rec.max_tasks, MAX_TASKS);
        rec.max_tasks = 2;
        let here = Location::caller();
        for t in 0..2 {
            rec.spawn(0, here, &[t], &write(0, 4))
                .expect("within the limit");
        }
        let error = rec.spawn(0, here, &[2], &write(0, 4)).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    region: "limits",
                    what: "tasks",
                    limit: 2
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "region `limits` is too large: more than 2 tasks"
        );
        let ins = rec.finish(Instant::now()).expect("within the limits");
        assert_eq!(ins.task_count(), 2);
        assert_eq!(ins.dag.edge_count(), 1);
        assert_eq!(ins.args, [0, 1]);
    }

    #[test]
    fn dependence_edges_past_the_limit_are_an_error_when_finishing() {
        let mut rec = recorder().with_ranges();
        rec.tracking.inline().unwrap().set_limits(1, usize::MAX);
        let here = Location::caller();
        rec.spawn(0, here, &[0], &write(0, 2)).expect("no edge");
        rec.spawn(0, here, &[1], &write(0, 2)).expect("one edge");
        // A second edge, WAW from task 1: found when the tracker runs.
        rec.spawn(0, here, &[2], &write(0, 4)).expect("recorded");
        let error = rec.finish(Instant::now()).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    region: "limits",
                    what: "dependence edges",
                    limit: 1
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "region `limits` is too large: more than 1 dependence edges"
        );
    }

    #[test]
    fn affine_parents_come_from_the_recorded_ranges() {
        let mut rec = recorder().with_ranges();
        let here = Location::caller();
        rec.spawn(0, here, &[0], &write(0, 2)).expect("no edge");
        rec.spawn(0, here, &[1], &write(0, 2)).expect("one edge");
        let ins = rec.finish(Instant::now()).expect("within the limits");
        assert_eq!(ins.task_count(), 2);
        assert_eq!(ins.dag.edge_count(), 1);
        assert_eq!(ins.args, [0, 1]);
        assert_eq!(ins.footprints[0].write, Some(0..2));
        assert_eq!(ins.ranges.as_ref().map(TaskRanges::task_count), Some(2));
        assert_eq!(
            ins.affine_parents(),
            Some(&[graph::NO_AFFINE_PARENT, 0][..])
        );
    }

    #[test]
    fn argument_words_past_the_limit_are_an_error() {
        let mut rec = recorder();
        rec.max_args = 5;
        let here = Location::caller();
        rec.spawn(0, here, &[1, 2, 3], &write(0, 1))
            .expect("3 words fit");
        let error = rec.spawn(0, here, &[4, 5, 6], &write(1, 2)).unwrap_err();
        assert!(
            matches!(
                error,
                Error::TooLarge {
                    what: "argument words",
                    limit: 5,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            rec.finish(Instant::now()).expect("within the limits").args,
            [1, 2, 3]
        );
    }
}
