//! [`Spare`]: the buffers of a finished inspection, kept for the next inspection of the same
//! region to write into.
//!
//! An inspection writes every table it makes whole, once. Memory the allocator hands out fresh
//! (pages mapped for the call, the heap's top given back after the last one) faults in a page
//! at a time as it is written: about 0.1 µs a task on a tiled factorization, more than the rest
//! of its recording and tracking. Whether a later call gets such memory depends on the
//! allocator's history, not on the region. A region's calls mostly repeat their shape, so the
//! tables of its last inspection are the right size and already in memory: kept here, cleared,
//! they make a later one-off call's inspection cost the same whatever ran before it.
//!
//! Both paths keep theirs: the tile path its tiles, reader lists and edges; the general path
//! each array's records and table of ends, and, when it tracked everything as one job (no
//! threads), that job's reader lists, runs and edges.

use super::EdgeKind;
use super::buffer::bytes;
use super::dag::Dag;
use super::job::JobBuffers;
use super::log::LogBuffers;
use super::tiles::TileBuffers;

/// The most bytes a region's spare buffers may hold: a larger inspection's are freed as before
/// rather than kept for the rest of the process.
pub const MAX_SPARE_BYTES: usize = 256 << 20;

/// Buffers of a finished inspection, cleared (see the [module docs](self)).
#[derive(Debug, Default)]
pub struct Spare {
    /// The last DAG's vectors.
    pub(super) dag: Option<Dag>,
    /// The tile path's buffers, with the slot of the array that used them.
    pub(super) tiles: Vec<(u32, TileBuffers)>,
    /// The parent lists the DAG was built from: offsets, parents and kinds.
    pub(super) lists: Lists,
    /// The general path's records and tables of ends, with the slot of the array that used
    /// them.
    pub(super) logs: Vec<(u32, LogBuffers)>,
    /// The general path's job: its reader lists, runs and sink, when it ran as one job.
    pub(super) job: JobBuffers,
}

/// What the merge of the jobs' edges writes: the parent lists in CSR form (offsets, parents and
/// kinds), and its marks.
#[derive(Debug, Default)]
pub(super) struct Lists {
    pub offsets: Vec<u32>,
    pub parents: Vec<u32>,
    pub kinds: Vec<EdgeKind>,
    pub mark: Vec<usize>,
}

/// A clone has no buffers: they are a cache of memory, not state.
impl Clone for Spare {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl Lists {
    fn bytes(&self) -> usize {
        bytes(&self.offsets) + bytes(&self.parents) + bytes(&self.kinds) + bytes(&self.mark)
    }
}

impl Spare {
    /// Keeps the vectors of `dag`, a DAG no longer needed, for the next one.
    pub fn keep_dag(&mut self, dag: Dag) {
        self.dag = Some(dag);
    }

    /// The bytes these buffers hold.
    pub fn bytes(&self) -> usize {
        let dag = self.dag.as_ref().map_or(0, |d| {
            bytes(&d.offsets)
                + bytes(&d.children)
                + bytes(&d.kinds)
                + bytes(&d.in_degree)
                + bytes(&d.ready)
                + bytes(&d.rank)
        });
        let tiles: usize = self.tiles.iter().map(|(_, t)| t.bytes()).sum();
        let logs: usize = self.logs.iter().map(|(_, l)| l.bytes()).sum();
        dag + tiles + self.lists.bytes() + logs + self.job.bytes()
    }

    /// The tile path's buffers last used by the array in `slot`, if any.
    pub(super) fn take_tiles(&mut self, slot: u32) -> TileBuffers {
        match self.tiles.iter().position(|&(s, _)| s == slot) {
            Some(i) => self.tiles.swap_remove(i).1,
            None => TileBuffers::default(),
        }
    }

    /// Takes `other`'s buffers where this one has none.
    pub fn fill_from(&mut self, other: Spare) {
        if self.dag.is_none() {
            self.dag = other.dag;
        }
        if self.tiles.is_empty() {
            self.tiles = other.tiles;
        }
        if self.lists.bytes() == 0 {
            self.lists = other.lists;
        }
        if self.logs.is_empty() {
            self.logs = other.logs;
        }
        if self.job.bytes() == 0 {
            self.job = other.job;
        }
    }

    /// The general path's buffers last used by the array in `slot`, if any.
    pub(super) fn take_log(&mut self, slot: u32) -> LogBuffers {
        match self.logs.iter().position(|&(s, _)| s == slot) {
            Some(i) => self.logs.swap_remove(i).1,
            None => LogBuffers::default(),
        }
    }
}
