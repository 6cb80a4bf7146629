//! One unit of dependence tracking: the recorded ranges of one array, or of one element range of
//! it, turned into that part's edges.
//!
//! The semantics are per element, so the edges of a region are the union of the edges its
//! arrays give, and those of an array the union of what disjoint element ranges of it give (a
//! range crossing a cut is clipped into both sides). Jobs are therefore independent: they share
//! nothing while they run, and [`merge`](super::tracker) unites their edges afterwards.

use super::buffer::bytes;
use super::compress::Endpoints;
use super::interval::{ReaderArena, Runs, Seg};
use super::sink::{EdgeSink, JobEdges, SinkBuffers};
use super::{Access, EdgeKind, LimitExceeded};

/// A task's non-empty access to `lo..hi` of an array, in elements: what a piece of an array
/// holds after the ranges were cut at its bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Span {
    pub lo: usize,
    pub hi: usize,
    pub task: u32,
    pub access: Access,
}

/// A task's non-empty access to an array, its ends given by their numbers in the array's
/// [`Endpoints`]: first-seen numbers as recorded, ranks once [ranked](Part::ranked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rec {
    pub a: u32,
    pub b: u32,
    pub task: u32,
    pub access: Access,
}

/// What a job may allocate: the tracker's `u32` limits, lowered in tests.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    /// The most dependence edges.
    pub edges: usize,
    /// The most reader-list entries of one job.
    pub reader_entries: usize,
}

/// The buffers of a finished job, kept for a later one (see [`Spare`](super::Spare)): its reader
/// lists, each part's runs and its sink's (the edges' own once they are merged).
#[derive(Debug, Default)]
pub(super) struct JobBuffers {
    nodes: Vec<(u32, u32)>,
    segs: Vec<Vec<Seg>>,
    sink: SinkBuffers,
}

impl JobBuffers {
    pub(super) fn bytes(&self) -> usize {
        let segs: usize = self.segs.iter().map(bytes).sum();
        bytes(&self.nodes) + segs + self.sink.bytes()
    }

    /// Gives back the vectors of `edges`, the edges these buffers held, once they are merged.
    pub(super) fn give_back(&mut self, edges: JobEdges) {
        self.sink.give_back(edges);
    }
}

/// A part of a job: the ranges of one array, or of one element range of it, in task order, their
/// ends ranked among the part's `ends` distinct ones.
#[derive(Debug)]
pub(super) struct Part {
    pub ranked: Vec<Rec>,
    pub ends: usize,
}

impl Part {
    /// The part of `recs`, whose ends are numbered in `ends`: the numbers replaced by ranks, in
    /// place.
    pub(super) fn ranked(mut recs: Vec<Rec>, ends: &Endpoints) -> Part {
        let (rank, count) = ends.ranks();
        for r in &mut recs {
            r.a = rank[r.a as usize];
            r.b = rank[r.b as usize];
        }
        Part {
            ranked: recs,
            ends: count,
        }
    }

    /// The part of `slices` (one piece's spans from each slice, in order), starting at element
    /// `base`.
    pub(super) fn of_spans(slices: &[&[Span]], base: usize) -> Part {
        let count = slices.iter().map(|s| s.len()).sum();
        let mut ends = Endpoints::new(base, 1024);
        let mut recs = Vec::with_capacity(count);
        for r in slices.iter().flat_map(|s| s.iter()) {
            recs.push(Rec {
                a: ends.number(r.lo),
                b: ends.number(r.hi),
                task: r.task,
                access: r.access,
            });
        }
        Part::ranked(recs, &ends)
    }
}

/// A part being tracked: its ranked ranges, how far they are done, and its interval map.
struct Tracked {
    ranked: Vec<Rec>,
    next: usize,
    runs: Runs,
}

/// Tracks the dependences of `parts` (of different arrays, or disjoint element ranges of one),
/// task by task, into one list of edges.
pub(super) fn run(parts: Vec<Part>, limits: Limits) -> Result<JobEdges, LimitExceeded> {
    run_keeping(parts, limits, &mut JobBuffers::default()).map(|(edges, _)| edges)
}

/// [`run`], writing into the buffers of `spare` rather than fresh memory and leaving there those
/// it used but the edges' own; with each part's records (its ranges, ranked), in the order of
/// `parts`, to keep as well.
pub(super) fn run_keeping(
    parts: Vec<Part>,
    limits: Limits,
    spare: &mut JobBuffers,
) -> Result<(JobEdges, Vec<Vec<Rec>>), LimitExceeded> {
    let mut segs = std::mem::take(&mut spare.segs).into_iter();
    let mut empty = Vec::new();
    let mut tracked: Vec<Tracked> = Vec::with_capacity(parts.len());
    for (i, part) in parts.into_iter().enumerate() {
        if part.ranked.is_empty() {
            empty.push((i, part.ranked));
            continue;
        }
        tracked.push(Tracked {
            ranked: part.ranked,
            next: 0,
            runs: Runs::new_in(part.ends, segs.next().unwrap_or_default()),
        });
    }
    let mut arena = ReaderArena::with_nodes(std::mem::take(&mut spare.nodes));
    arena.set_max_nodes(limits.reader_entries);
    let mut sink = EdgeSink::with_buffers(limits.edges, std::mem::take(&mut spare.sink));
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
    let (edges, buffers) = sink.finish()?;
    arena.check()?;
    let mut recs = Vec::with_capacity(tracked.len() + empty.len());
    let mut segs = Vec::with_capacity(tracked.len());
    for t in tracked {
        segs.push(t.runs.into_segs());
        recs.push(t.ranked);
    }
    for (i, r) in empty {
        recs.insert(i, r);
    }
    *spare = JobBuffers {
        nodes: arena.into_nodes(),
        segs,
        sink: buffers,
    };
    Ok((edges, recs))
}

/// Adds one task's ranges of one part, all evaluated against the state before the task.
///
/// Applying reads, then read-writes, then writes, each right after computing its edges, gives the
/// same edges and final state as evaluating every access against the state before the task:
/// reads do not change writers; a later write that overlaps an earlier write of this task sees
/// the task itself (skipped) where the earlier one already took the same or a preferred edge from
/// the old writer and the same edges from the old readers.
#[inline]
fn add_ranges(task: &[Rec], runs: &mut Runs, arena: &mut ReaderArena, sink: &mut EdgeSink) {
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
    for (phase, writer_kind) in [
        (Access::ReadWrite, EdgeKind::Raw),
        (Access::Write, EdgeKind::Waw),
    ] {
        for r in task.iter().filter(|r| r.access == phase) {
            runs.write(r.a, r.b, writer_kind, arena, sink);
        }
    }
}
