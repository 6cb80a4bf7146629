//! Spreading dependence tracking over threads, and uniting what the pieces found.
//!
//! The semantics are per element, so the edges of a region are the union of those its arrays
//! give, and those of an array the union of those disjoint element ranges of it give (a range
//! crossing a cut is clipped into both sides). [`track`] uses that:
//!
//! 1. Each array some task writes gets a share of the jobs by its ranges; an array with several is
//!    cut at quantiles of its ranges' starts ([`cuts`]) into pieces of about as many ranges.
//! 2. Each thread takes a slice of every cut array's ranges and sorts them, clipped, into the
//!    pieces they overlap. A slice's ranges are in task order, so a piece's ranges from every
//!    slice, slice after slice, are too.
//! 3. Each thread then tracks pieces, biggest first, each as one [`job`](super::job).
//! 4. [`merge`] unites the pieces' edges into parent lists: a k-way merge by child, keeping one
//!    edge per (parent, child) pair.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::num::NonZero;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::LimitExceeded;
use super::dag::Dag;
use super::job::{self, Limits, Part, Rec, Span};
use super::log::ArrayLog;
use super::sink::JobEdges;
use super::spare::Lists;

/// The ranges a thread must have to track before [`Split::auto`] starts it: starting and joining
/// a thread costs tens of microseconds, tracking a range tens of nanoseconds.
pub const RANGES_PER_THREAD: usize = 1 << 15;

/// How [`DepTracker::finish_with`](super::DepTracker::finish_with) spreads the tracking over threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Threads, the calling one included; 1 runs everything on the calling thread.
    pub threads: usize,
    /// Jobs to cut the arrays into, shared among them by their recorded ranges: an array gets at
    /// least one job, and a big one several element ranges. 1 tracks each array whole.
    pub jobs: usize,
}

impl Split {
    /// Everything on the calling thread, one job per array.
    pub const SEQUENTIAL: Split = Split {
        threads: 1,
        jobs: 1,
    };

    /// What [`DepTracker::finish`](super::DepTracker::finish) uses for `ranges` recorded
    /// ranges: one thread per [`RANGES_PER_THREAD`] ranges, up to the idle cores (or
    /// [`THREADS_VAR`] when set), and four jobs per thread so that uneven jobs still balance.
    /// Small regions stay on the calling thread.
    ///
    /// The idle cores are those this process may use less the 1-minute load average (Linux's
    /// `/proc/loadavg`; elsewhere every core counts as idle): on a busy machine, a thread that
    /// waits for a core holds up every join, and one thread is faster.
    pub fn auto(ranges: usize) -> Split {
        let wanted = ranges / RANGES_PER_THREAD;
        if wanted < 2 {
            return Split::SEQUENTIAL;
        }
        Split::threads(wanted.min(idle_threads()))
    }

    /// `threads` threads (the calling one included), four jobs each; one thread for 0 or 1.
    pub fn threads(threads: usize) -> Split {
        if threads <= 1 {
            return Split::SEQUENTIAL;
        }
        Split {
            threads,
            jobs: 4 * threads,
        }
    }
}

/// The environment variable that caps the threads inspection uses (a positive number; 1 keeps
/// it on the calling thread). Read once per process.
pub const THREADS_VAR: &str = "TASKWEAVE_INSPECT_THREADS";

/// The threads inspection may use now: [`THREADS_VAR`] when set, else the cores this process may
/// use (asked once: the answer reads cgroup files on Linux) less the 1-minute load average.
pub(super) fn idle_threads() -> usize {
    static CAP: OnceLock<Option<usize>> = OnceLock::new();
    static CORES: OnceLock<usize> = OnceLock::new();
    let cap = CAP.get_or_init(|| {
        std::env::var(THREADS_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
    });
    if let Some(cap) = *cap {
        return cap;
    }
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, NonZero::get));
    cores.saturating_sub(load()).max(1)
}

/// The 1-minute load average, rounded down: the threads that were runnable on this machine, on
/// average, besides ours (0 where it cannot be read, and under Miri, whose isolation stops the
/// interpreter at the file's `open` instead of failing it).
fn load() -> usize {
    if cfg!(miri) {
        return 0;
    }
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0, |load| load as usize)
}

/// A piece of an array: its slot among the tracked arrays, and its elements.
struct Piece {
    array: usize,
    start: usize,
    end: usize,
}

/// Tracks `arrays` (each one's ranges in task order, ends numbered) as `split` says: the edges
/// of every piece, in no particular order.
pub(super) fn track(
    arrays: Vec<ArrayLog>,
    split: Split,
    limits: Limits,
) -> Result<Vec<JobEdges>, LimitExceeded> {
    let total: usize = arrays.iter().map(|a| a.recs.len()).sum();
    let threads = split.threads.max(1);
    let mut pieces = Vec::new();
    // Per array: its cuts, and its first piece.
    let mut cut: Vec<(Vec<usize>, usize)> = Vec::with_capacity(arrays.len());
    for (array, log) in arrays.iter().enumerate() {
        let share = (split.jobs * log.recs.len()).div_ceil(total.max(1));
        let cuts = if share > 1 {
            cuts(&log.recs, log.ends.values(), log.len, share)
        } else {
            Vec::new()
        };
        let first = pieces.len();
        let bounds = std::iter::once(0).chain(cuts.iter().copied());
        for (start, end) in bounds.zip(cuts.iter().copied().chain([log.len])) {
            pieces.push(Piece { array, start, end });
        }
        cut.push((cuts, first));
    }
    // Each slice's ranges of every cut array, in elements, by piece.
    let buckets: Vec<Vec<Vec<Span>>> = parallel_map(threads, threads, |slice| {
        let mut out = vec![Vec::new(); pieces.len()];
        for (log, (cuts, first)) in arrays.iter().zip(&cut) {
            if cuts.is_empty() {
                continue;
            }
            let values = log.ends.values();
            let from = log.recs.len() * slice / threads;
            let to = log.recs.len() * (slice + 1) / threads;
            for r in &log.recs[from..to] {
                let (lo, hi) = (values[r.a as usize], values[r.b as usize]);
                let mut p = cuts.partition_point(|&c| c <= lo);
                loop {
                    let piece = &pieces[first + p];
                    let end = hi.min(piece.end);
                    out[first + p].push(Span {
                        lo: lo.max(piece.start),
                        hi: end,
                        task: r.task,
                        access: r.access,
                    });
                    if end == hi {
                        break;
                    }
                    p += 1;
                }
            }
        }
        out
    });
    let size = |p: usize| {
        let piece = &pieces[p];
        match cut[piece.array].0.is_empty() {
            true => arrays[piece.array].recs.len(),
            false => buckets.iter().map(|b| b[p].len()).sum(),
        }
    };
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_cached_key(|&p| std::cmp::Reverse(size(p)));
    // The arrays cut into pieces are in the buckets now; the others go whole to one job each.
    let whole: Vec<Mutex<Option<ArrayLog>>> = (arrays.into_iter().zip(&cut))
        .map(|(log, (cuts, _))| Mutex::new(cuts.is_empty().then_some(log)))
        .collect();
    parallel_map(threads, order.len(), |i| {
        let piece = &pieces[order[i]];
        // An uncut array has one piece, so its log is taken once.
        let log = (whole[piece.array].lock())
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let part = match log {
            Some(log) => Part::ranked(log.recs, &log.ends),
            None => {
                let slices: Vec<&[Span]> = buckets.iter().map(|b| &b[order[i]][..]).collect();
                Part::of_spans(&slices, piece.start)
            }
        };
        job::run(vec![part], limits)
    })
    .into_iter()
    .collect()
}

/// Up to `pieces - 1` increasing cuts strictly inside `0..len`, at quantiles of a sample of the
/// ranges' starts (`values[r.a]`); none at or before the first start, which would leave a piece
/// with no range.
fn cuts(recs: &[Rec], values: &[usize], len: usize, pieces: usize) -> Vec<usize> {
    let stride = (recs.len() / (64 * pieces)).max(1);
    let mut sample: Vec<usize> = (recs.iter().step_by(stride))
        .map(|r| values[r.a as usize])
        .collect();
    sample.sort_unstable();
    let mut cuts: Vec<usize> = (1..pieces)
        .map(|i| sample[i * sample.len() / pieces])
        .filter(|&c| c > sample[0] && c < len)
        .collect();
    cuts.dedup();
    cuts
}

/// `f(0)`, ..., `f(items - 1)` on up to `threads` threads (the calling one included), each
/// taking the next item until none is left; the results in item order.
fn parallel_map<T: Send>(threads: usize, items: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= items {
                return done;
            }
            done.push((i, f(i)));
        }
    };
    let threads = threads.min(items).max(1);
    let mut done = if threads == 1 {
        work()
    } else {
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let mut done = work();
            for helper in helpers {
                match helper.join() {
                    Ok(more) => done.extend(more),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            done
        })
    };
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// The DAG over `n` tasks of the jobs' edges, united: one edge per (parent, child) pair, of the
/// kind with the highest [`EdgeKind::priority`](super::EdgeKind::priority). Its vectors are
/// `spare`'s (a DAG no longer needed), its parent lists `lists`', where given.
pub(super) fn merge(
    n: usize,
    outs: &[JobEdges],
    max_edges: usize,
    spare: Option<Dag>,
    lists: &mut Lists,
) -> Result<Dag, LimitExceeded> {
    let too_many = LimitExceeded {
        what: "dependence edges",
        limit: max_edges as u64,
    };
    let in_offsets = &mut lists.offsets;
    in_offsets.clear();
    in_offsets.reserve(n + 1);
    in_offsets.push(0);
    if outs.len() <= 1 {
        // One job's lists have no duplicates: only the empty tasks' offsets are missing.
        let none = JobEdges::default();
        let JobEdges {
            children,
            parents,
            kinds,
        } = outs.first().unwrap_or(&none);
        let mut end = 0;
        for &(child, child_end) in children {
            in_offsets.resize(child as usize + 1, end);
            in_offsets.push(child_end);
            end = child_end;
        }
        in_offsets.resize(n + 1, end);
        return Ok(Dag::from_parent_lists_in(spare, in_offsets, parents, kinds));
    }
    // A k-way merge by child: the job whose next child is smallest gives its edges next, so the
    // lists are written in order; duplicates across jobs are dropped as they come.
    let mut next = Fronts::new(outs.iter().map(|out| out.children.first().map(|c| c.0)));
    // Per job: its next group of edges, and where that group starts.
    let mut cursor = vec![(0usize, 0usize); outs.len()];
    let total: usize = outs.iter().map(|out| out.parents.len()).sum();
    let (parents, kinds) = (&mut lists.parents, &mut lists.kinds);
    parents.clear();
    parents.reserve(total);
    kinds.clear();
    kinds.reserve(total);
    // `mark[p]`: one more than the index of the newest kept edge from `p`.
    let mark = &mut lists.mark;
    mark.clear();
    mark.resize(n, 0);
    let mut first = 0;
    let mut current = None;
    while let Some((child, j)) = next.pop() {
        if current != Some(child) {
            // Cannot truncate: at most `MAX_EDGES` edges are kept.
            in_offsets.resize(child as usize + 1, parents.len() as u32);
            first = parents.len();
            current = Some(child);
        }
        let out = &outs[j];
        let (group, from) = &mut cursor[j];
        let to = out.children[*group].1 as usize;
        for (&p, &kind) in out.parents[*from..to].iter().zip(&out.kinds[*from..to]) {
            let m = mark[p as usize];
            if m > first {
                if kind.priority() > kinds[m - 1].priority() {
                    kinds[m - 1] = kind;
                }
                continue;
            }
            if parents.len() >= max_edges {
                return Err(too_many);
            }
            parents.push(p);
            kinds.push(kind);
            mark[p as usize] = parents.len();
        }
        *group += 1;
        *from = to;
        next.advance(j, out.children.get(*group).map(|c| c.0));
    }
    in_offsets.resize(n + 1, parents.len() as u32);
    Ok(Dag::from_parent_lists_in(spare, in_offsets, parents, kinds))
}

/// The next child of each job in [`merge`]: the smallest first, ties to the lower job. A scan of
/// a few jobs (a region's arrays on the tile path, most often two or three) costs less than a
/// heap's pop and push per child, which took an eighth of a stencil's inspection; a heap for
/// more.
enum Fronts {
    /// Each job's next child, `u32::MAX` when it has none (task ids stay below it).
    Few(Vec<u32>),
    Many(BinaryHeap<Reverse<(u32, usize)>>),
}

impl Fronts {
    /// Jobs up to which a scan is used.
    const FEW: usize = 8;

    fn new(firsts: impl ExactSizeIterator<Item = Option<u32>>) -> Self {
        if firsts.len() <= Self::FEW {
            Fronts::Few(firsts.map(|c| c.unwrap_or(u32::MAX)).collect())
        } else {
            let heap = (firsts.enumerate()).filter_map(|(j, c)| c.map(|c| Reverse((c, j))));
            Fronts::Many(heap.collect())
        }
    }

    /// The smallest next child and its job, whose next one [`Fronts::advance`] must give before
    /// the next pop.
    fn pop(&mut self) -> Option<(u32, usize)> {
        match self {
            Fronts::Few(heads) => {
                let (j, &child) = (heads.iter().enumerate()).min_by_key(|&(_, &c)| c)?;
                (child != u32::MAX).then_some((child, j))
            }
            Fronts::Many(heap) => heap.pop().map(|Reverse(next)| next),
        }
    }

    /// Job `j`'s next child, once the one [`Fronts::pop`] gave is merged.
    fn advance(&mut self, j: usize, child: Option<u32>) {
        match self {
            Fronts::Few(heads) => heads[j] = child.unwrap_or(u32::MAX),
            Fronts::Many(heap) => heap.extend(child.map(|c| Reverse((c, j)))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Access;

    #[test]
    fn big_arrays_are_cut_at_quantiles_of_their_ranges() {
        // Range `i` is `10 i..10 i + 10`: ends `2 i` and `2 i + 1` are `10 i` and `10 i + 10`.
        let values: Vec<usize> = (0..1000).flat_map(|i| [i * 10, i * 10 + 10]).collect();
        let recs: Vec<Rec> = (0..1000)
            .map(|i| Rec {
                a: 2 * i,
                b: 2 * i + 1,
                task: i,
                access: Access::Write,
            })
            .collect();
        let quartiles = cuts(&recs, &values, 10_000, 4);
        assert_eq!(quartiles.len(), 3);
        for (cut, quarter) in quartiles.iter().zip([2500, 5000, 7500]) {
            assert!(cut.abs_diff(quarter) <= 100, "{cut} vs {quarter}");
        }
        // All ranges start at one place: a cut would leave a piece without any.
        assert_eq!(
            cuts(&vec![recs[5]; 100], &values, 10_000, 8),
            Vec::<usize>::new()
        );
    }

    #[test]
    fn a_region_big_enough_for_threads_gives_the_one_thread_dag() {
        // Two arrays: a tiled LU on one, a wavefront over strided rows on the other, with ranges
        // that cross any cut; enough ranges for `auto` to use every core there is.
        let t = 40;
        let tile = |i: usize, j: usize| (i * t + j) * 16..(i * t + j + 1) * 16;
        let mut tracker = crate::graph::DepTracker::new(&[t * t * 16, t * t * 16 + 7]);
        for k in 0..t {
            for i in k..t {
                for j in k..t {
                    let own = (0, tile(i, j), Access::ReadWrite);
                    tracker
                        .add_task(&[
                            (0, tile(i, k), Access::Read),
                            (0, tile(k, j), Access::Read),
                            own,
                        ])
                        .unwrap();
                    let (lo, hi) = (tile(i, j).start + k % 16, tile(i, j).end + 7);
                    tracker
                        .add_task(&[
                            (1, lo..hi, Access::ReadWrite),
                            (1, lo / 2..lo, Access::Read),
                        ])
                        .unwrap();
                }
            }
        }
        let ranges = tracker.range_count();
        assert!(ranges > 2 * RANGES_PER_THREAD, "{ranges} ranges");
        let whole = tracker.clone().finish_with(Split::SEQUENTIAL).unwrap();
        assert_eq!(tracker.clone().finish().unwrap(), whole);
        let split = Split {
            threads: 3,
            jobs: 12,
        };
        assert_eq!(tracker.finish_with(split).unwrap(), whole);
    }

    #[test]
    fn parallel_map_keeps_item_order() {
        let squares = parallel_map(3, 100, |i| i * i);
        assert_eq!(squares, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(parallel_map(4, 0, |i| i).is_empty());
    }
}
