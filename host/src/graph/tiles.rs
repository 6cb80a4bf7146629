//! [`Tiles`]: the constant-time path of dependence tracking, for an array whose every range is one
//! whole tile of a fixed side.
//!
//! Tiled regions (the factorizations, most stencils over blocks) declare each access as exactly
//! one tile: `a[t * s..(t + 1) * s]` for a fixed tile size `s`. On such an array the interval map
//! of [`Runs`](super::interval::Runs) degenerates into one state per tile, found by a division,
//! and its edges can be found the moment the task is recorded instead of after a sort of every
//! range end. [`DepTracker`](super::DepTracker) keeps an array on this path until a range breaks
//! the pattern (another size, a cut tile), and then hands its recorded accesses to the general
//! path ([`Tiles::into_recs`]): the edges are the same either way, only their cost differs.

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
fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(TILE_PATH_VAR).as_deref() != Ok("0"))
}

/// The most tiles one array may have on this path: a state per tile is allocated up front, so an
/// array of a hundred million one-element "tiles" goes to the general path instead.
const MAX_TILES: usize = 1 << 22;

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
    nodes: Vec<(u32, u32)>,
    sink: SinkBuffers,
}

impl TileBuffers {
    pub(super) fn bytes(&self) -> usize {
        bytes(&self.tiles) + bytes(&self.recs) + bytes(&self.nodes) + self.sink.bytes()
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
    /// Every access in record order, `(task, tile, access)`, to hand to the general path.
    recs: Vec<(u32, u32, Access)>,
}

impl Tiles {
    /// The tiles of an array of `len` elements whose first range is `range` (non-empty), or
    /// `None` when tiles of that size would be too many to keep (or the path is off,
    /// [`TILE_PATH_VAR`]). Its tables are written into `spare`'s buffers.
    pub(super) fn new(
        len: usize,
        range: &core::ops::Range<usize>,
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
        })
    }

    /// The tile that is exactly `range`, if any.
    #[inline]
    pub(super) fn tile(&self, range: &core::ops::Range<usize>) -> Option<u32> {
        let (lo, hi) = (range.start.checked_sub(self.base)?, range.end - self.base);
        if hi - lo != self.size {
            return None;
        }
        match self.shift {
            Some(shift) => (lo & (self.size - 1) == 0).then_some((lo >> shift) as u32),
            None => (lo % self.size == 0).then_some((lo / self.size) as u32),
        }
    }

    /// Records `task`'s access to `tile`; its edges come with [`Tiles::add_task`].
    #[inline]
    pub(super) fn record(&mut self, task: u32, tile: u32, access: Access) {
        self.recs.push((task, tile, access));
    }

    /// What this array recorded, to size the next inspection's.
    pub(super) fn sizes(&self) -> ArraySizes {
        ArraySizes {
            recs: self.recs.len(),
            tasks: self.sink.tasks(),
            edges: self.sink.parents.len(),
            children: self.sink.children.len(),
            readers: self.arena.len(),
            ends: 0,
        }
    }

    /// Reserves room for what an earlier inspection of the region recorded here.
    pub(super) fn reserve(&mut self, sizes: ArraySizes) {
        self.recs.reserve(sizes.recs);
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
        while self.recs.last().is_some_and(|r| r.0 == task) {
            self.recs.pop();
        }
    }

    /// Finds the edges of `task`, whose accesses are the recorded ones from `from` on, all
    /// evaluated against the state before the task, and updates the tiles. Reads, then
    /// read-writes, then writes, each applied right after its edges, as
    /// [`job`](super::job)'s `add_ranges` does and for the same reasons.
    pub(super) fn add_task(&mut self, task: u32, from: usize) {
        let Tiles {
            tiles,
            arena,
            sink,
            recs,
            ..
        } = self;
        sink.begin(task);
        let local = sink.task();
        let accesses = &recs[from..];
        for &(_, tile, access) in accesses {
            if access == Access::Read {
                let state = &mut tiles[tile as usize];
                if state.writer != NONE {
                    sink.add(state.writer, EdgeKind::Raw);
                }
                state.readers = arena.push(state.readers, local);
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
            nodes: self.arena.into_nodes(),
            sink,
        };
        Ok((edges, rest))
    }

    /// Appends the recorded accesses to `recs` as the general path's records, their ends
    /// numbered in `ends`.
    pub(super) fn into_recs(self, ends: &mut Endpoints, recs: &mut Vec<Rec>) {
        let (base, size) = (self.base, self.size);
        recs.extend(self.recs.into_iter().map(|(task, tile, access)| {
            let lo = base + tile as usize * size;
            let (a, b) = (ends.number(lo), ends.number(lo + size));
            Rec { a, b, task, access }
        }));
    }
}
