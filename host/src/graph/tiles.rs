//! [`Tiles`]: the constant-time path of dependence tracking, for an array whose every write is one
//! whole tile of a fixed side.
//!
//! Tiled regions (the factorizations, the wavefronts and stencils over blocks) declare each write
//! as exactly one tile: `a[t * s..(t + 1) * s]` for a fixed tile size `s`. Their reads are whole
//! tiles too, or a part of one (the last row of the tile above, one column of a tile's edges, a
//! corner cell), or a few tiles (a halo of neighbours, a panel). Since every write covers its
//! whole tile, a read of any part of a tile conflicts with exactly the tasks a read of the whole
//! tile would, so on such an array the interval map of [`Runs`](super::interval::Runs)
//! degenerates into one state per tile, found by a division, and its edges can be found the moment
//! the task is recorded instead of after a sort of every range end. A read of anything but one
//! whole tile (a *part read*) takes the state of every tile it touches, up to [`MAX_SPAN`] of
//! them, and keeps its exact range beside the records ([`PART`]).
//!
//! The first range sets the tile size; when it is a part read, the first write that does not fit
//! takes the size over while nothing is written yet ([`Tiles::retile`]).
//! [`DepTracker`](super::DepTracker) keeps an array on this path until a range breaks the pattern
//! (a write of another size or a cut tile, a read past the last whole tile or over too many
//! tiles), and then hands its recorded accesses to the general path ([`Tiles::into_recs`]): the
//! edges are the same either way, only their cost differs.

use core::ops::Range;

use super::Access;
use super::buffer::{bytes, cleared};
use super::compress::Endpoints;
use super::interval::{NONE, ReaderArena};
use super::job::{Limits, Rec};
use super::sink::{EdgeSink, JobEdges, SinkBuffers};
use super::{EdgeKind, LimitExceeded};

/// The environment variable that turns the tile path off (`0`), for an A/B of inspection: every
/// array then goes to the general path. Read once per process.
pub const TILE_PATH_VAR: &str = "TASKWEAVE_TILE_PATH";

/// Whether the tile path is on ([`TILE_PATH_VAR`]).
pub(super) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(TILE_PATH_VAR).as_deref() != Ok("0"))
}

/// The most tiles one array may have on this path: a state per tile is allocated up front, so an
/// array of a hundred million one-element "tiles" goes to the general path instead.
const MAX_TILES: usize = 1 << 22;

const _: () = assert!(
    MAX_TILES == 4_194_304,
    "the reason `why_never` gives names the count"
);

/// Why an array whose first range made [`Tiles::new`] refuse it never took the tile path, as a
/// phrase that follows the range.
pub(super) fn why_never() -> &'static str {
    if enabled() {
        "would make more than 4,194,304 tiles of its length"
    } else {
        "came with the tile path turned off (TASKWEAVE_TILE_PATH=0)"
    }
}

/// The bits of a record's tile that hold its tile number, below [`MAX_TILES`].
const TILE_BITS: u32 = MAX_TILES.trailing_zeros();

/// The most tiles one read may span on this path: the read takes a reader entry on each, where
/// the general path joins runs in the same state under one. Its count less one is kept in the
/// record's tile, above the tile number.
const MAX_SPAN: usize = 1 << 8;

/// The bit of a record's tile that marks a part read: a read of anything but one whole tile,
/// whose exact range is the next one in [`Tiles`]'s `parts`. Above every tile number and span.
const PART: u32 = 1 << 31;
const _: () = assert!(MAX_TILES.is_power_of_two() && TILE_BITS + MAX_SPAN.trailing_zeros() < 31);
const _: () = assert!(
    MAX_SPAN == 256,
    "the reason `Tiles::why_not` gives names the span"
);

/// The first tile of a record's `tile`, and how many tiles from it the access covers.
#[inline(always)]
fn tiles_of(tile: u32) -> (usize, usize) {
    let first = (tile & (MAX_TILES as u32 - 1)) as usize;
    let span = ((tile & !PART) >> TILE_BITS) as usize + 1;
    (first, span)
}

/// How much one array recorded: what the next inspection of the region reserves up front
/// ([`Tiles::reserve`] on the tile path; the records and the table of distinct ends on the
/// general path), so that its tables are not grown by doubling (each doubling copies the table,
/// or rehashes it, and touches its pages again).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ArraySizes {
    recs: usize,
    tasks: usize,
    edges: usize,
    children: usize,
    readers: usize,
    /// Part reads, on the tile path.
    parts: usize,
    /// Distinct range ends, on the general path.
    ends: usize,
}

impl ArraySizes {
    /// What an array on the general path recorded: `recs` ranges with `ends` distinct ends.
    pub(super) fn general(recs: usize, ends: usize) -> Self {
        ArraySizes {
            recs,
            ends,
            ..ArraySizes::default()
        }
    }

    /// Ranges recorded.
    pub(super) fn recs(self) -> usize {
        self.recs
    }

    /// Distinct range ends, on the general path.
    pub(super) fn ends(self) -> usize {
        self.ends
    }
}

/// One tile's state: its last writer and the readers since, as the job's local ids.
#[derive(Clone, Copy, Debug)]
struct Tile {
    writer: u32,
    readers: u32,
}

/// The buffers of a [`Tiles`] no longer needed, kept for a later one (see
/// [`Spare`](super::Spare)).
#[derive(Debug, Default)]
pub(crate) struct TileBuffers {
    tiles: Vec<Tile>,
    recs: Vec<(u32, u32, Access)>,
    parts: Vec<Range<usize>>,
    nodes: Vec<(u32, u32)>,
    sink: SinkBuffers,
}

impl TileBuffers {
    pub(super) fn bytes(&self) -> usize {
        bytes(&self.tiles)
            + bytes(&self.recs)
            + bytes(&self.parts)
            + bytes(&self.nodes)
            + self.sink.bytes()
    }

    /// Gives back the vectors of `edges`, the edges these buffers held, once they are merged.
    pub(super) fn give_back(&mut self, edges: JobEdges) {
        self.sink.give_back(edges);
    }
}

/// The tiles of one array and the edges their accesses gave so far (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Tiles {
    /// Where tile 0 starts, and the tile size.
    base: usize,
    size: usize,
    /// `log2(size)` when the size is a power of two (a tile of 64 × 64 elements is): a shift
    /// and a mask then find the tile, where a division costs more than the rest of the lookup.
    shift: Option<u32>,
    tiles: Vec<Tile>,
    arena: ReaderArena,
    sink: EdgeSink,
    /// Every access in record order, `(task, tile, access)`, to hand to the general path; a part
    /// read's tile carries [`PART`].
    recs: Vec<(u32, u32, Access)>,
    /// The exact range of each part read, in record order.
    parts: Vec<Range<usize>>,
    limits: Limits,
}

impl Tiles {
    /// The tiles of an array of `len` elements whose first range is `range` (non-empty), or
    /// `None` when tiles of that size would be too many to keep (or the path is off,
    /// [`TILE_PATH_VAR`]). Its tables are written into `spare`'s buffers.
    pub(super) fn new(
        len: usize,
        range: &Range<usize>,
        limits: Limits,
        spare: TileBuffers,
    ) -> Option<Self> {
        let size = range.end - range.start;
        let base = range.start % size;
        let count = (len - base) / size;
        if count > MAX_TILES || !enabled() {
            return None;
        }
        let mut arena = ReaderArena::with_nodes(spare.nodes);
        arena.set_max_nodes(limits.reader_entries);
        let mut tiles = cleared(spare.tiles);
        tiles.resize(
            count,
            Tile {
                writer: NONE,
                readers: NONE,
            },
        );
        Some(Tiles {
            base,
            size,
            shift: size.is_power_of_two().then(|| size.trailing_zeros()),
            tiles,
            arena,
            sink: EdgeSink::with_buffers(limits.edges, spare.sink),
            recs: cleared(spare.recs),
            parts: cleared(spare.parts),
            limits,
        })
    }

    /// Where `access` to `range` (non-empty) goes on this path: the tile that is exactly
    /// `range`, or for any other read its first tile, with the tiles it spans and [`PART`];
    /// `None` when the range breaks the pattern.
    #[inline]
    pub(super) fn find(&self, range: &Range<usize>, access: Access) -> Option<u32> {
        let (lo, hi) = (range.start.checked_sub(self.base)?, range.end - self.base);
        if hi - lo == self.size {
            let whole = match self.shift {
                Some(shift) => (lo & (self.size - 1) == 0).then_some((lo >> shift) as u32),
                None => (lo % self.size == 0).then_some((lo / self.size) as u32),
            };
            if whole.is_some() {
                return whole;
            }
        }
        if access != Access::Read {
            return None;
        }
        self.part(lo, hi)
    }

    /// The tiles holding `lo..hi` (relative to `base`) as a record's tile: the first, the count
    /// less one above [`TILE_BITS`], and [`PART`]; `None` when they are more than [`MAX_SPAN`]
    /// or run past the last whole tile. Out of line: a factorization never reads anything but
    /// whole tiles, and its lookups were 2% slower with this inlined.
    #[inline(never)]
    fn part(&self, lo: usize, hi: usize) -> Option<u32> {
        let (first, last) = match self.shift {
            Some(shift) => (lo >> shift, (hi - 1) >> shift),
            None => (lo / self.size, (hi - 1) / self.size),
        };
        // Cannot truncate: `first` is below the tile count, at most `MAX_TILES`, and the span at
        // most `MAX_SPAN`.
        (last < self.tiles.len() && last - first < MAX_SPAN)
            .then(|| first as u32 | ((last - first) as u32) << TILE_BITS | PART)
    }

    /// Records `task`'s access to `range`, found at `tile` ([`Tiles::find`]); its edges come
    /// with [`Tiles::add_task`].
    #[inline]
    pub(super) fn record(&mut self, task: u32, tile: u32, range: &Range<usize>, access: Access) {
        if tile & PART != 0 {
            self.parts.push(range.clone());
        }
        self.recs.push((task, tile, access));
    }

    /// The exact range of `tile`, a record's, whose part range (if it is one) is the next of
    /// `parts`.
    fn range_of<'a>(
        &self,
        tile: u32,
        parts: &mut impl Iterator<Item = &'a Range<usize>>,
    ) -> Range<usize> {
        if tile & PART != 0 {
            parts.next().expect("a part read's range").clone()
        } else {
            let lo = self.base + tile as usize * self.size;
            lo..lo + self.size
        }
    }

    /// Why `access` to `range` (non-empty), which [`Tiles::find`] refused, breaks the pattern.
    pub(super) fn why_not(&self, range: &Range<usize>, access: Access) -> &'static str {
        let (first, last) = match range.start.checked_sub(self.base) {
            Some(lo) => (lo / self.size, (range.end - self.base - 1) / self.size),
            None => return "starts before the first whole tile",
        };
        if access.writes() {
            "is not one whole tile"
        } else if last >= self.tiles.len() {
            "runs past the last whole tile"
        } else {
            debug_assert!(last - first >= MAX_SPAN);
            "spans more than 256 tiles"
        }
    }

    /// The tile size, and where the first tile starts.
    pub(super) fn geometry(&self) -> (usize, usize) {
        (self.size, self.base)
    }

    /// Takes the tile size of `range`, the write of an array on this path that nothing has
    /// written yet, whose first range was a part read: the records so far, all reads, are found
    /// again among the new tiles and the tasks before record `from` (the first of the task being
    /// recorded) added again, which finds no edge since nothing was written. The new tables
    /// reserve what `hint` says the region's last inspection recorded on the array. Returns
    /// whether it did; `false` (some read does not fit the new tiles, or they would be too many)
    /// leaves this path as it was.
    #[cold]
    #[inline(never)]
    pub(super) fn retile(
        &mut self,
        len: usize,
        range: &Range<usize>,
        from: usize,
        hint: ArraySizes,
    ) -> bool {
        debug_assert!(!self.writes(), "retiled after a write");
        let Some(mut new) = Tiles::new(len, range, self.limits, TileBuffers::default()) else {
            return false;
        };
        new.reserve(hint);
        let mut parts = self.parts.iter();
        for &(task, tile, access) in &self.recs {
            let r = self.range_of(tile, &mut parts);
            let Some(found) = new.find(&r, access) else {
                return false;
            };
            new.record(task, found, &r, access);
        }
        let mut start = 0;
        while start < from {
            let task = new.recs[start].0;
            let end = start
                + new.recs[start..from]
                    .iter()
                    .take_while(|r| r.0 == task)
                    .count();
            new.add_records(task, start, end);
            start = end;
        }
        *self = new;
        true
    }

    /// What this array recorded, to size the next inspection's.
    pub(super) fn sizes(&self) -> ArraySizes {
        ArraySizes {
            recs: self.recs.len(),
            tasks: self.sink.tasks(),
            edges: self.sink.parents.len(),
            children: self.sink.children.len(),
            readers: self.arena.len(),
            parts: self.parts.len(),
            ends: 0,
        }
    }

    /// Reserves room for what an earlier inspection of the region recorded here.
    pub(super) fn reserve(&mut self, sizes: ArraySizes) {
        self.recs.reserve(sizes.recs);
        self.parts.reserve(sizes.parts);
        self.sink.reserve(sizes.tasks, sizes.edges, sizes.children);
        self.arena.reserve(sizes.readers);
    }

    /// Accesses recorded.
    pub(super) fn len(&self) -> usize {
        self.recs.len()
    }

    /// Whether some recorded access writes.
    pub(super) fn writes(&self) -> bool {
        self.recs.iter().any(|r| r.2.writes())
    }

    /// Drops what `task`, the last, recorded (the tracker refused it).
    pub(super) fn forget(&mut self, task: u32) {
        while let Some(&(_, tile, _)) = self.recs.last().filter(|r| r.0 == task) {
            self.recs.pop();
            if tile & PART != 0 {
                self.parts.pop();
            }
        }
    }

    /// Finds the edges of `task`, whose accesses are the recorded ones from `from` on, all
    /// evaluated against the state before the task, and updates the tiles. Reads, then
    /// read-writes, then writes, each applied right after its edges, as
    /// [`job`](super::job)'s `add_ranges` does and for the same reasons.
    pub(super) fn add_task(&mut self, task: u32, from: usize) {
        self.add_records(task, from, self.recs.len());
    }

    /// [`Tiles::add_task`] for `task`, whose records are `from..to`.
    fn add_records(&mut self, task: u32, from: usize, to: usize) {
        let Tiles {
            tiles,
            arena,
            sink,
            recs,
            ..
        } = self;
        sink.begin(task);
        let local = sink.task();
        let accesses = &recs[from..to];
        let mut read = |state: &mut Tile| {
            if state.writer != NONE {
                sink.add(state.writer, EdgeKind::Raw);
            }
            state.readers = arena.push(state.readers, local);
        };
        for &(_, tile, access) in accesses {
            if access != Access::Read {
                continue;
            }
            // A whole tile apart: the factorizations read nothing else, and a loop of one cost
            // their inspections 1%.
            if tile & PART == 0 {
                read(&mut tiles[tile as usize]);
            } else {
                let (first, span) = tiles_of(tile);
                tiles[first..first + span].iter_mut().for_each(&mut read);
            }
        }
        if accesses.iter().any(|r| r.2 != Access::Read) {
            for (phase, writer_kind) in [
                (Access::ReadWrite, EdgeKind::Raw),
                (Access::Write, EdgeKind::Waw),
            ] {
                for &(_, tile, access) in accesses {
                    if access != phase {
                        continue;
                    }
                    let state = &mut tiles[tile as usize];
                    if state.writer != NONE {
                        sink.add(state.writer, writer_kind);
                    }
                    arena.for_each(state.readers, |r| sink.add(r, EdgeKind::War));
                    *state = Tile {
                        writer: local,
                        readers: NONE,
                    };
                }
            }
        }
        sink.end();
    }

    /// The edges found since `cursor` (an index into the sink's children, moved to the end) as
    /// `(child, parent)` region ids, appended to `out`.
    pub(super) fn edges_since(&self, cursor: &mut usize, out: &mut Vec<(u32, u32)>) {
        let children = &self.sink.children;
        let mut start = match *cursor {
            0 => 0,
            c => children[c - 1].1 as usize,
        };
        for &(child, end) in &children[*cursor..] {
            let end = end as usize;
            out.extend(self.sink.parents[start..end].iter().map(|&p| (child, p)));
            start = end;
        }
        *cursor = children.len();
    }

    /// The edges found, or the limit they passed; with the buffers to keep for a later
    /// inspection (the edges' own once they are merged).
    pub(super) fn edges(self) -> Result<(JobEdges, TileBuffers), LimitExceeded> {
        let (edges, sink) = self.sink.finish()?;
        self.arena.check()?;
        let rest = TileBuffers {
            tiles: self.tiles,
            recs: self.recs,
            parts: self.parts,
            nodes: self.arena.into_nodes(),
            sink,
        };
        Ok((edges, rest))
    }

    /// Appends the recorded accesses to `recs` as the general path's records, their ends
    /// numbered in `ends`.
    pub(super) fn into_recs(self, ends: &mut Endpoints, recs: &mut Vec<Rec>) {
        let mut parts = self.parts.iter();
        recs.extend(self.recs.iter().map(|&(task, tile, access)| {
            let r = self.range_of(tile, &mut parts);
            let (a, b) = (ends.number(r.start), ends.number(r.end));
            Rec { a, b, task, access }
        }));
    }
}
