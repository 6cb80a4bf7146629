//! [`EdgeSink`]: the edges of one job, one per (parent, child) pair, as they are found.

use super::{EdgeKind, LimitExceeded, MAX_EDGES};

/// The buffers of an [`EdgeSink`] no longer needed, kept for a later one (see
/// [`Spare`](super::Spare)).
#[derive(Debug, Default)]
pub(super) struct SinkBuffers {
    pub global: Vec<u32>,
    pub mark: Vec<u32>,
    /// The edges' vectors: taken for the edges found, given back once they are merged.
    pub parents: Vec<u32>,
    pub kinds: Vec<EdgeKind>,
    pub children: Vec<(u32, u32)>,
}

/// The edges one job found, grouped by child in increasing order.
#[derive(Debug, Default)]
pub(super) struct JobEdges {
    /// `(child, end)`: the child's parents are `parents[previous end..end]`.
    pub children: Vec<(u32, u32)>,
    /// Parents (region ids), no duplicates within a child.
    pub parents: Vec<u32>,
    /// Edge kinds, parallel to `parents`.
    pub kinds: Vec<EdgeKind>,
}

impl SinkBuffers {
    /// Gives back the vectors of `edges`, the edges these buffers held, once they are merged.
    pub(super) fn give_back(&mut self, edges: JobEdges) {
        (self.parents, self.kinds, self.children) = (edges.parents, edges.kinds, edges.children);
    }

    pub(super) fn bytes(&self) -> usize {
        use super::buffer::bytes;
        bytes(&self.global)
            + bytes(&self.mark)
            + bytes(&self.parents)
            + bytes(&self.kinds)
            + bytes(&self.children)
    }
}

/// Collects the edges of the task being added, one per parent.
///
/// Tasks have local ids in a job: the `i`-th task that touches the job's ranges is `i`, and
/// `global[i]` is its id in the region. `mark[p]` is one more than the index of the newest edge
/// whose parent is `p` (0: none), so "does the current task already have an edge from `p`" is one
/// load and one compare.
#[derive(Clone, Debug)]
pub(super) struct EdgeSink {
    /// The local id of the task being added.
    task: u32,
    /// Index of its first edge.
    start: usize,
    /// Each local task's id in the region.
    global: Vec<u32>,
    /// Parent (region id) of every edge; edges are grouped by child in increasing child order.
    pub(super) parents: Vec<u32>,
    /// Kind of every edge.
    pub(super) kinds: Vec<EdgeKind>,
    /// `(child, end)` for every task with edges: its edges end at `end`.
    pub(super) children: Vec<(u32, u32)>,
    /// Per local task: 1 + index of the newest edge it is the parent of, or 0.
    mark: Vec<u32>,
    /// The most edges.
    max_edges: usize,
    /// An edge did not fit (and was not recorded).
    overflowed: bool,
}

impl Default for EdgeSink {
    fn default() -> Self {
        Self {
            task: 0,
            start: 0,
            global: Vec::new(),
            parents: Vec::new(),
            kinds: Vec::new(),
            children: Vec::new(),
            mark: Vec::new(),
            max_edges: MAX_EDGES,
            overflowed: false,
        }
    }
}

impl EdgeSink {
    /// A sink that refuses edges past `max_edges`.
    pub(super) fn with_max_edges(max_edges: usize) -> Self {
        Self {
            max_edges,
            ..Self::default()
        }
    }

    /// A sink that refuses edges past `max_edges`, writing into the buffers of `spare` (cleared
    /// first).
    pub(super) fn with_buffers(max_edges: usize, spare: SinkBuffers) -> Self {
        use super::buffer::cleared;
        Self {
            global: cleared(spare.global),
            mark: cleared(spare.mark),
            parents: cleared(spare.parents),
            kinds: cleared(spare.kinds),
            children: cleared(spare.children),
            ..Self::with_max_edges(max_edges)
        }
    }

    /// The edges found, or the limit they passed; with the buffers to keep for a later job (the
    /// edges' own are given back once they are merged, [`SinkBuffers::give_back`]).
    pub(super) fn finish(self) -> Result<(JobEdges, SinkBuffers), LimitExceeded> {
        if self.overflowed {
            return Err(LimitExceeded {
                what: "dependence edges",
                limit: self.max_edges as u64,
            });
        }
        let edges = JobEdges {
            children: self.children,
            parents: self.parents,
            kinds: self.kinds,
        };
        let rest = SinkBuffers {
            global: self.global,
            mark: self.mark,
            ..SinkBuffers::default()
        };
        Ok((edges, rest))
    }

    /// Tasks begun so far.
    pub(super) fn tasks(&self) -> usize {
        self.global.len()
    }

    /// Reserves room for `tasks` tasks, `edges` edges and `children` tasks with edges.
    pub(super) fn reserve(&mut self, tasks: usize, edges: usize, children: usize) {
        self.global.reserve(tasks);
        self.mark.reserve(tasks);
        self.parents.reserve(edges);
        self.kinds.reserve(edges);
        self.children.reserve(children);
    }

    /// Starts collecting the edges of region task `task`, which must be later than the last.
    pub(super) fn begin(&mut self, task: u32) {
        debug_assert!(self.global.last().is_none_or(|&t| t < task));
        // Cannot truncate: a job holds fewer than `u32::MAX` tasks.
        self.task = self.global.len() as u32;
        self.global.push(task);
        self.start = self.parents.len();
        self.mark.push(0);
    }

    /// Ends the current task.
    pub(super) fn end(&mut self) {
        if self.parents.len() > self.start {
            // Cannot truncate: there are at most `MAX_EDGES` edges.
            let end = self.parents.len() as u32;
            self.children.push((self.global[self.task as usize], end));
        }
    }

    /// The local id of the task being added.
    #[inline]
    pub(super) fn task(&self) -> u32 {
        self.task
    }

    /// Adds an edge from local task `parent` to the current one of `kind`, unless it is a self
    /// edge; if the edge exists, keeps the kind with the higher [`EdgeKind::priority`]. A new edge
    /// past the limit is not added and marks the sink overflowed. Always inlined: it is the
    /// inner step of both paths, and a call per edge costs the tile path about 5%.
    #[inline(always)]
    pub(super) fn add(&mut self, parent: u32, kind: EdgeKind) {
        if parent == self.task {
            return;
        }
        debug_assert!(parent < self.task, "edges go from lower to higher ids");
        let slot = &mut self.mark[parent as usize];
        let m = *slot as usize;
        if m > self.start {
            let existing = &mut self.kinds[m - 1];
            if kind.priority() > existing.priority() {
                *existing = kind;
            }
            return;
        }
        if self.parents.len() >= self.max_edges {
            self.overflowed = true;
            return;
        }
        self.parents.push(self.global[parent as usize]);
        self.kinds.push(kind);
        // Cannot truncate: there are at most `MAX_EDGES` edges.
        *slot = self.parents.len() as u32;
    }
}
