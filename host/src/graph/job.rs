//! One unit of dependence tracking: the recorded ranges of one array, or of one element range of
//! it, turned into that part's edges.
//!
//! The semantics are per element, so the edges of a region are the union of the edges its
//! arrays give, and those of an array the union of what disjoint element ranges of it give (a
//! range crossing a cut is clipped into both sides). Jobs are therefore independent: they share
//! nothing while they run, and [`merge`](super::tracker) unites their edges afterwards.

use super::compress::Endpoints;
use super::interval::{ReaderArena, Runs};
use super::sink::EdgeSink;
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
    let mut sink = EdgeSink::with_max_edges(limits.edges);
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
