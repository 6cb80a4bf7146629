//! One unit of dependence tracking: the recorded ranges of one array, or of one element range of
//! it, turned into that part's edges.
//!
//! The semantics are per element, so the edges of a region are the union of the edges its
//! arrays give, and those of an array the union of what disjoint element ranges of it give (a
//! range crossing a cut is clipped into both sides). Jobs are therefore independent: they share
//! nothing while they run, and [`merge`](super::tracker) unites their edges afterwards.

use super::compress::Endpoints;
use super::interval::{ReaderArena, Runs};
use super::{Access, EdgeKind, LimitExceeded};

/// One recorded range: a task's non-empty access to `lo..hi` of an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rec {
    pub lo: usize,
    pub hi: usize,
    pub task: u32,
    pub access: Access,
}

/// A recorded range with its ends replaced by their ranks.
#[derive(Clone, Copy, Debug)]
struct Ranked {
    a: u32,
    b: u32,
    task: u32,
    access: Access,
}

/// What a job may allocate: the tracker's `u32` limits, lowered in tests.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// The most dependence edges.
    pub edges: usize,
    /// The most reader-list entries of one job.
    pub reader_entries: usize,
}

/// Collects the edges of the task being added, one per parent.
///
/// Tasks have local ids in a job: the `i`-th task that touches the job's ranges is `i`, and
/// `global[i]` is its id in the region. `mark[p]` is one more than the index of the newest edge
/// whose parent is `p` (0: none), so "does the current task already have an edge from `p`" is one
/// load and one compare.
#[derive(Debug)]
pub(super) struct EdgeSink {
    /// The local id of the task being added.
    task: u32,
    /// Index of its first edge.
    start: usize,
    /// Each local task's id in the region.
    global: Vec<u32>,
    /// Parent (region id) of every edge; edges are grouped by child in increasing child order.
    parents: Vec<u32>,
    /// Kind of every edge.
    kinds: Vec<EdgeKind>,
    /// `(child, end)` for every task with edges: its edges end at `end`.
    children: Vec<(u32, u32)>,
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
            max_edges: super::MAX_EDGES,
            overflowed: false,
        }
    }
}

impl EdgeSink {
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
    /// past the limit is not added and marks the sink overflowed.
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
        self.parents.push(self.global[parent as usize]);
        self.kinds.push(kind);
        // Cannot truncate: there are at most `MAX_EDGES` edges.
        *slot = self.parents.len() as u32;
    }
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

/// A part of a job: ranges of one array, or of one element range of it, in task order across
/// the slices.
pub(super) type Part<'a> = Vec<&'a [Rec]>;

/// A part being tracked: its ranked ranges, how far they are done, and its interval map.
struct Tracked {
    ranked: Vec<Ranked>,
    next: usize,
    runs: Runs,
}

/// Tracks the dependences of `parts` (of different arrays, or disjoint ranges of one), task by
/// task, into one list of edges.
pub(super) fn run(parts: &[Part<'_>], limits: Limits) -> Result<JobEdges, LimitExceeded> {
    let mut tracked: Vec<Tracked> = parts
        .iter()
        .filter_map(|part| {
            let (ranked, ends) = rank(part);
            (!ranked.is_empty()).then(|| Tracked {
                ranked,
                next: 0,
                runs: Runs::new(ends),
            })
        })
        .collect();
    let mut arena = ReaderArena::default();
    arena.set_max_nodes(limits.reader_entries);
    let mut sink = EdgeSink {
        max_edges: limits.edges,
        ..EdgeSink::default()
    };
    if let [one] = &mut tracked[..] {
        // One part: no other part's ranges to interleave.
        let mut rest = &one.ranked[..];
        while let Some(first) = rest.first() {
            let count = 1 + rest[1..]
                .iter()
                .take_while(|r| r.task == first.task)
                .count();
            let (task, tail) = rest.split_at(count);
            sink.begin(first.task);
            add_ranges(task, &mut one.runs, &mut arena, &mut sink);
            sink.end();
            rest = tail;
        }
    } else {
        // Each part's ranges of the current task: `ranked[next..ends[i]]`.
        let mut ends = vec![0usize; tracked.len()];
        while let Some(task) = (tracked.iter())
            .filter_map(|t| t.ranked.get(t.next).map(|r| r.task))
            .min()
        {
            sink.begin(task);
            for (t, end) in tracked.iter_mut().zip(&mut ends) {
                *end = t.next;
                while t.ranked.get(*end).is_some_and(|r| r.task == task) {
                    *end += 1;
                }
                add_ranges(&t.ranked[t.next..*end], &mut t.runs, &mut arena, &mut sink);
                t.next = *end;
            }
            sink.end();
        }
    }
    // A full sink or arena drops what does not fit and carries on: one check at the end.
    if sink.overflowed {
        return Err(LimitExceeded {
            what: "dependence edges",
            limit: sink.max_edges as u64,
        });
    }
    if arena.overflowed() {
        return Err(LimitExceeded {
            what: "reader-list entries",
            limit: arena.max_nodes() as u64,
        });
    }
    Ok(JobEdges {
        children: sink.children,
        parents: sink.parents,
        kinds: sink.kinds,
    })
}

/// Adds one task's ranges of one part, all evaluated against the state before the task.
///
/// Applying reads, then read-writes, then writes, each right after computing its edges, gives the
/// same edges and final state as evaluating every access against the state before the task:
/// reads do not change writers; a later write that overlaps an earlier write of this task sees
/// the task itself (skipped) where the earlier one already took the same or a preferred edge from
/// the old writer and the same edges from the old readers.
#[inline]
fn add_ranges(task: &[Ranked], runs: &mut Runs, arena: &mut ReaderArena, sink: &mut EdgeSink) {
    let mut writes = 0usize;
    for r in task {
        if r.access == Access::Read {
            runs.read(r.a, r.b, arena, sink);
        } else {
            writes += 1;
        }
    }
    if writes == 0 {
        return;
    }
    let merge = writes > 1;
    for (phase, writer_kind) in [
        (Access::ReadWrite, EdgeKind::Raw),
        (Access::Write, EdgeKind::Waw),
    ] {
        for r in task.iter().filter(|r| r.access == phase) {
            runs.write(r.a, r.b, writer_kind, merge, arena, sink);
        }
    }
}

/// The ranges of `slices` with their ends replaced by ranks; and the number of distinct ends.
fn rank(slices: &[&[Rec]]) -> (Vec<Ranked>, usize) {
    let count = slices.iter().map(|s| s.len()).sum();
    let lo = (slices.iter().flat_map(|s| s.iter())).fold(usize::MAX, |lo, r| lo.min(r.lo));
    let mut ends = Endpoints::new(lo, 1024);
    let mut ranked = Vec::with_capacity(count);
    for r in slices.iter().flat_map(|s| s.iter()) {
        ranked.push(Ranked {
            a: ends.number(r.lo),
            b: ends.number(r.hi),
            task: r.task,
            access: r.access,
        });
    }
    let (rank, count) = ends.ranks();
    for r in &mut ranked {
        r.a = rank[r.a as usize];
        r.b = rank[r.b as usize];
    }
    (ranked, count)
}
