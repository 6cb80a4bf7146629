//! [`EdgeSink`]: the edges of the task being added, as the interval maps find them and the
//! tracker keeps them. Its own module, so that the maps and the tracker both use it without
//! using each other.

use super::{EdgeKind, MAX_EDGES};

/// Collects the edges of the task being added, one per parent, in a parent-CSR edge list.
///
/// `mark[p]` is one more than the index of the newest edge whose parent is `p` (0: none), so
/// "does the current task already have an edge from `p`" is one load and one compare.
#[derive(Debug)]
pub(super) struct EdgeSink {
    /// The task being added.
    task: u32,
    /// Index of its first edge.
    start: usize,
    /// Parent of every edge; edges are grouped by child in increasing child order.
    pub(super) parents: Vec<u32>,
    /// Kind of every edge.
    pub(super) kinds: Vec<EdgeKind>,
    /// Per task: 1 + index of the newest edge it is the parent of, or 0.
    pub(super) mark: Vec<u32>,
    /// The most edges: [`MAX_EDGES`], lower in tests.
    pub(super) max_edges: usize,
    /// An edge of the current task did not fit (and was not recorded).
    pub(super) overflowed: bool,
}

impl Default for EdgeSink {
    fn default() -> Self {
        Self {
            task: 0,
            start: 0,
            parents: Vec::new(),
            kinds: Vec::new(),
            mark: Vec::new(),
            max_edges: MAX_EDGES,
            overflowed: false,
        }
    }
}

impl EdgeSink {
    /// Starts collecting the edges of `task`, which must be the next id.
    pub(super) fn begin(&mut self, task: u32) {
        debug_assert_eq!(task as usize, self.mark.len());
        self.task = task;
        self.start = self.parents.len();
        self.mark.push(0);
    }

    /// Forgets the current task and its edges, after one of them did not fit. Its parents' marks
    /// still point past the kept edges, so no later task may be added.
    pub(super) fn abort(&mut self) {
        self.parents.truncate(self.start);
        self.kinds.truncate(self.start);
        self.mark.pop();
    }

    /// The task being added.
    #[inline]
    pub(super) fn task(&self) -> u32 {
        self.task
    }

    /// Adds an edge `parent -> task` of `kind`, unless it is a self edge; if the edge exists,
    /// keeps the kind with the higher [`EdgeKind::priority`]. A new edge past the limit is not
    /// added and marks the sink overflowed.
    #[inline]
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
        self.parents.push(parent);
        self.kinds.push(kind);
        // Cannot truncate: there are at most `MAX_EDGES` edges.
        *slot = self.parents.len() as u32;
    }
}
