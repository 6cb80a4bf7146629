//! Streamed regions: a region's tasks run while its body is still recording them.
//!
//! A streamed call starts the workers on empty tables sized to a capacity, and runs the body on
//! the calling thread. Each batch of tasks whose edges are known (while every written array keeps
//! to the tile path, see [`Recorder::with_feed`]) goes into the tables at once with a link for
//! each task that has edges from earlier batches (or no parent in its own), which the idle
//! workers claim and link into the parents' lists, as the device's
//! [`stream`](taskweave_device::sched::stream) protocol says. When the body returns, the
//! inspection is finished as usual, the tasks not yet fed go in one last batch (their edges from
//! the finished DAG), and the total is published: the workers end when every task has run.
//!
//! * A region that outgrows the capacity stops feeding. Its workers end with what was fed, and the
//!   rest runs on fresh tables, its edges from the tasks that already ran dropped.
//! * A body that fails or panics aborts the workers, and the region's arrays are restored from
//!   their snapshot: nothing the run wrote is left.
//! * What streams: the CPU backend, under every policy that does not plan ahead (not
//!   [`Policy::Static`]), for regions without wide tasks or SM-aware workers, on host arrays.
//!   Anything else runs inspected, as without streaming. The persistent GPU backend streams too,
//!   on the same scheduler code, with its host half in [`gpu`].
//! * What a streamed run does not know yet while it runs: the critical path (the priority policy's
//!   ranks are all 0) and the affine parents (the affinity policy finds no home); both policies
//!   still run every task once its parents are done.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU32 as StdAtomic, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use taskweave_device::abi::{
    ArrayDesc, FLAG_STREAM, RegionDesc, TaskRecord, TraceRecord, WorkerStats,
};
use taskweave_device::atomic::{AtomicU32, Ordering::Relaxed, Scope::Gpu};
use taskweave_device::sched::affinity::{NO_PARENT, NOT_RUN};
use taskweave_device::sched::deps::SOLE_PARENT;
use taskweave_device::sched::queue::NIL;
use taskweave_device::sched::stream::{self, EDGE_WORDS, LINK_WORDS, Stream};

use crate::backend::cpu::{Caught, Pool, failed};
use crate::call::{Binding, Call};
use crate::error::Error;
use crate::inspect::{Batch, Feed, Inspection};
use crate::meta::RegionMeta;
use crate::options::{Backend, Options};
use crate::plan::Plan;
use crate::policy::Policy;
use crate::report::Report;
use crate::tables::{CounterWords, table_ptr};
use table::Table;

pub(crate) mod gpu;
mod table;

/// The fewest tasks a streamed call's tables hold (the last inspection of the region may ask
/// for more).
const MIN_CAPACITY: usize = 1 << 16;
/// Argument words, CSR entries and cross edges the tables hold per task of the capacity.
const ARGS_PER_TASK: usize = 16;
const EDGES_PER_TASK: usize = 8;

/// `edges` (`(child, parent)`) sorted and without duplicates. When every child is one of the `n`
/// tasks from `first`, as a batch's are, a counting sort by child and then each child's few
/// parents sorted: a general sort of a batch's edges was most of the feeder's time.
fn by_child(
    edges: impl Iterator<Item = (u32, u32)> + Clone,
    first: u32,
    n: usize,
) -> Vec<(u32, u32)> {
    let mut starts = vec![0u32; n + 1];
    let mut len = 0;
    for (c, _) in edges.clone() {
        let Some(i) = (c.checked_sub(first)).filter(|&i| (i as usize) < n) else {
            let mut all: Vec<_> = edges.collect();
            all.sort_unstable();
            all.dedup();
            return all;
        };
        starts[i as usize + 1] += 1;
        len += 1;
    }
    for i in 0..n {
        starts[i + 1] += starts[i];
    }
    let mut sorted = vec![(0, 0); len];
    let mut fill = starts.clone();
    for (c, p) in edges {
        let slot = &mut fill[(c - first) as usize];
        sorted[*slot as usize] = (c, p);
        *slot += 1;
    }
    for w in starts.windows(2) {
        let run = &mut sorted[w[0] as usize..w[1] as usize];
        if run.len() > 1 {
            run.sort_unstable();
        }
    }
    sorted.dedup();
    sorted
}

/// A small table of `len` atomics, each `value`.
fn words(len: usize, value: u32) -> Box<[AtomicU32]> {
    (0..len).map(|_| AtomicU32::new(value)).collect()
}

/// A batch that does not fit the tables.
#[derive(Debug)]
struct Full;

/// One streamed run's tables, for tasks `base..base + capacity` of the region.
pub(crate) struct StreamTables {
    /// The region id of local task 0.
    base: u32,
    /// The argument word of the region at local word 0.
    args_base: u32,
    capacity: usize,
    tasks: Table<TaskRecord>,
    args: Table<u64>,
    offsets: Table<u32>,
    children: Table<u32>,
    rank: Box<[u32]>,
    affine: Box<[u32]>,
    ran_by: Table<AtomicU32>,
    pending: Table<AtomicU32>,
    next: Table<AtomicU32>,
    head: Box<[AtomicU32]>,
    tail: Box<[AtomicU32]>,
    lock: Box<[AtomicU32]>,
    counters: Box<CounterWords>,
    heads: Table<AtomicU32>,
    edges: Table<AtomicU32>,
    links: Table<AtomicU32>,
    /// The stream's words: the total, the links published and claimed.
    words: Box<[AtomicU32]>,
    /// Local tasks, argument words, CSR entries, cross edges and links fed so far.
    fed: usize,
    args_len: usize,
    children_len: usize,
    cross_len: usize,
    links_len: usize,
    /// Every edge fed, `(parent, child)` in region ids, when the caller keeps them (tests).
    kept: Option<Vec<(u32, u32)>>,
}

impl StreamTables {
    /// Empty tables for `capacity` tasks from region task `base` (whose argument words start at
    /// `args_base`) and `workers` workers, for `policy`.
    fn new(base: u32, args_base: u32, capacity: usize, workers: u32, policy: Policy) -> Self {
        let w = workers as usize;
        let (args_cap, edges_cap) = (capacity * ARGS_PER_TASK, capacity * EDGES_PER_TASK);
        let tasks = Table::zeroed(capacity + 1);
        // The record past the capacity bounds the argument words, and the offset past it the
        // CSR, for the workers' view of the tables (no task ever ends there: see `publish`).
        tasks.set(
            capacity,
            TaskRecord {
                kind: u32::MAX,
                args: args_cap as u32,
            },
        );
        let offsets = Table::zeroed(capacity + 1);
        offsets.set(capacity, edges_cap as u32);
        let ran_by = policy.row().records_ran_by;
        let next = Table::atomics(capacity + w, NIL);
        // Each queue starts empty: its stub, the node after the tasks, is head and tail.
        let stubs = |_| {
            (capacity..capacity + w)
                .map(|s| AtomicU32::new(s as u32))
                .collect()
        };
        Self {
            base,
            args_base,
            capacity,
            tasks,
            args: Table::zeroed(args_cap),
            offsets,
            children: Table::zeroed(edges_cap),
            rank: vec![0; capacity].into(),
            affine: vec![NO_PARENT; if ran_by { capacity } else { 0 }].into(),
            ran_by: Table::atomics(if ran_by { capacity } else { 0 }, NOT_RUN),
            pending: Table::atomics(capacity, 0),
            next,
            head: stubs(()),
            tail: stubs(()),
            lock: words(w, 0),
            counters: CounterWords::fresh(workers, 0, 1),
            heads: Table::atomics(capacity, stream::OPEN),
            edges: Table::atomics(edges_cap * EDGE_WORDS, 0),
            // At most one link per task.
            links: Table::atomics(capacity * LINK_WORDS, 0),
            words: [stream::UNKNOWN_TOTAL, 0, 0].map(AtomicU32::new).into(),
            fed: 0,
            args_len: 0,
            children_len: 0,
            cross_len: 0,
            links_len: 0,
            kept: None,
        }
    }

    /// `base` (the run's options, see `Options::desc`) with these tables filled in, the region
    /// streamed; the caller fills in the per-run buffers.
    fn desc(&self, base: RegionDesc) -> RegionDesc {
        RegionDesc {
            n_tasks: self.capacity as u32,
            flags: base.flags | FLAG_STREAM,
            tasks: self.tasks.addr(),
            args: self.args.addr(),
            offsets: self.offsets.addr(),
            children: self.children.addr(),
            pending: self.pending.as_ptr() as u64,
            rank: self.rank.as_ptr() as u64,
            next: self.next.as_ptr() as u64,
            head: self.head.as_ptr() as u64,
            tail: self.tail.as_ptr() as u64,
            lock: self.lock.as_ptr() as u64,
            counters: self.counters.0.as_ptr() as u64,
            affine: table_ptr(self.affine.as_ptr(), self.affine.len()),
            ran_by: table_ptr(self.ran_by.as_ptr(), self.ran_by.len()),
            stream_heads: self.heads.as_ptr() as u64,
            stream_edges: self.edges.as_ptr() as u64,
            stream_edges_len: (self.edges.len() / EDGE_WORDS) as u32,
            stream_total: self.words.as_ptr() as u64,
            stream_links: self.links.as_ptr() as u64,
            stream_links_len: (self.links.len() / LINK_WORDS) as u32,
            ..base
        }
    }

    fn stream(&self) -> Stream<'_> {
        Stream {
            heads: &self.heads,
            edges: &self.edges,
            links: &self.links,
            words: &self.words,
        }
    }

    fn completed(&self) -> u32 {
        self.counters.0[0].load(Ordering::Relaxed)
    }

    /// Puts `batch` into the tables and links it; [`Full`] (and nothing written) when it does not
    /// fit. Edges from tasks before `base` are dropped: those tasks ran before these tables.
    fn publish(&mut self, batch: &Batch<'_>) -> Result<(), Full> {
        let n = batch.records.len() - 1;
        if n == 0 {
            // Nothing to write: its bound was written with the batch before, and workers read it.
            return Ok(());
        }
        let first = (batch.first - self.base) as usize;
        debug_assert_eq!(first, self.fed, "batches come in task order");
        let (a0, a1) = (batch.records[0].args, batch.records[n].args);
        let words = (a1 - a0) as usize;
        let first32 = first as u32;
        let edges = by_child(
            (batch.edges.iter())
                .filter(|&&(_, p)| p >= self.base)
                .map(|&(c, p)| (c - self.base, p - self.base)),
            first32,
            n,
        );
        let within = edges.iter().filter(|e| e.1 >= first32).count();
        let cross = edges.len() - within;
        // Strictly inside: the record and the offset past the capacity bound the tables.
        if first + n >= self.capacity
            || self.args_len + words >= self.args.len
            || self.children_len + within >= self.children.len
            || self.cross_len + cross > self.edges.len() / EDGE_WORDS
        {
            return Err(Full);
        }
        if let Some(kept) = &mut self.kept {
            kept.extend(edges.iter().map(|&(c, p)| (p + self.base, c + self.base)));
        }
        // The argument words and the records; the first record's offset, and the offset of the
        // batch's first CSR row, were written as the bounds of the batch before.
        let local_args = |g: u32| g - self.args_base;
        let from = batch.args_from;
        for (i, &w) in batch.args[(a0 - from) as usize..(a1 - from) as usize]
            .iter()
            .enumerate()
        {
            self.args.set(self.args_len + i, w);
        }
        for (i, r) in batch.records[..n].iter().enumerate() {
            let at = first + i;
            // SAFETY: `at < capacity`; a record's fields are written once, before it is
            // published.
            unsafe { (&raw mut (*self.tasks.ptr.add(at)).kind).write(r.kind) };
            if i > 0 {
                // SAFETY: as above; the first record's `args` was written by the batch before, as
                // its bound, and workers running that batch's last task may read it.
                unsafe { (&raw mut (*self.tasks.ptr.add(at)).args).write(local_args(r.args)) };
            }
        }
        // SAFETY: `first + n < capacity`; no worker reads it before the next batch.
        unsafe { (&raw mut (*self.tasks.ptr.add(first + n)).args).write(local_args(a1)) };
        self.args_len += words;
        // Per task: parents in the batch, parents before it.
        let mut inside = vec![0u32; n];
        let mut before = vec![0u32; n];
        let mut degree = vec![0u32; n];
        for &(c, p) in &edges {
            let c = (c - first32) as usize;
            if p >= first32 {
                inside[c] += 1;
                degree[(p - first32) as usize] += 1;
            } else {
                before[c] += 1;
            }
        }
        let guarded = |c: usize| before[c] > 0 || inside[c] == 0;
        let sole = |c: usize| before[c] == 0 && inside[c] == 1;
        // The CSR rows of the batch's tasks, children of the batch only.
        let mut fill = vec![0u32; n];
        let mut at = self.children_len as u32;
        for (i, d) in degree.iter().enumerate() {
            fill[i] = at;
            at += d;
            self.offsets.set(first + i + 1, at);
        }
        let mut cross_of: Vec<(u32, u32)> = Vec::with_capacity(cross);
        for &(c, p) in &edges {
            if p >= first32 {
                let slot = &mut fill[(p - first32) as usize];
                let local = (c - first32) as usize;
                let flag = if sole(local) { SOLE_PARENT } else { 0 };
                self.children.set(*slot as usize, c | flag);
                *slot += 1;
            } else {
                cross_of.push((c, p));
            }
        }
        self.children_len = at as usize;
        for c in 0..n {
            let count = if sole(c) {
                0
            } else {
                inside[c] + if guarded(c) { before[c] + 1 } else { 0 }
            };
            self.pending[first + c].store(count, Gpu, Relaxed);
        }
        // The cross edges, then a link per guarded task, in task order, and their publication:
        // the workers link them and take the guards (see the module docs).
        let x0 = self.cross_len;
        for (i, &(c, p)) in cross_of.iter().enumerate() {
            let e = (x0 + i) * EDGE_WORDS;
            self.edges[e + stream::PARENT].store(p, Gpu, Relaxed);
            self.edges[e + stream::CHILD].store(c, Gpu, Relaxed);
            self.edges[e + stream::NEXT].store(stream::OPEN, Gpu, Relaxed);
        }
        self.cross_len += cross;
        let mut x = x0 as u32;
        let mut link = self.links_len as u32;
        let stream = self.stream();
        for (c, &cross) in before.iter().enumerate() {
            if !guarded(c) {
                continue;
            }
            stream.set_link(link, first32 + c as u32, x..x + cross);
            link += 1;
            x += cross;
        }
        stream.publish(link);
        self.links_len = link as usize;
        self.fed = first + n;
        Ok(())
    }
}

/// A streamed call's feed: the tables the batches go into, while they fit.
struct Feeding {
    tables: Arc<Mutex<StreamTables>>,
    /// Whether a batch did not fit: nothing more is fed.
    full: Arc<StdAtomic>,
}

impl Feed for Feeding {
    fn batch(&mut self, batch: Batch<'_>) {
        if self.full.load(Ordering::Relaxed) != 0 {
            return;
        }
        let mut tables = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if tables.publish(&batch).is_err() {
            self.full.store(1, Ordering::Relaxed);
        }
    }
}

/// Whether a call with `options` on `arrays` streams on the CPU backend when it asks to (see the
/// module docs).
pub(crate) fn streams(meta: &RegionMeta, options: &Options, arrays: &[Binding<'_>]) -> bool {
    options.stream
        && options.backend.is_none_or(|b| b == Backend::Cpu)
        && streams_here(meta, options)
        && arrays
            .iter()
            .all(|b| b.device.is_none() && b.cell.is_none())
}

/// Whether a call streams on a backend that streams, by its region and options: not under a
/// policy that plans ahead, nor with wide tasks or SM-aware workers. (Each backend says which
/// arrays it streams on: those a failed call can leave as they were.)
fn streams_here(meta: &RegionMeta, options: &Options) -> bool {
    !options.run_policy().row().plans && !meta.dispatch.gangs() && !options.sm_aware()
}

/// What a streamed run leaves beside its report: for tests, what it fed.
pub(crate) struct Streamed {
    pub report: Report,
    #[cfg_attr(not(test), expect(dead_code, reason = "what the tests check"))]
    /// Tasks fed while the body ran (the rest went in at its end).
    pub fed_early: usize,
    #[cfg_attr(not(test), expect(dead_code, reason = "what the tests check"))]
    /// Every edge fed, `(parent, child)`, when asked for. A region past the capacity has none
    /// from the tasks of its first tables (`0..first_tables`) to the rest, which ran after them.
    pub edges: Option<Vec<(u32, u32)>>,
    #[cfg_attr(not(test), expect(dead_code, reason = "what the tests check"))]
    /// The tasks that ran on the first tables.
    pub first_tables: usize,
}

/// Runs a region's body with its tasks streamed to the CPU backend's workers (see the module
/// docs). `record` runs the body into the recorder it is given (made with the feed) and
/// finishes the inspection, returning it, how many tasks it fed, and how many of them while the
/// body ran. The tables hold `capacity`
/// tasks (at least [`MIN_CAPACITY`] when `at_least`). `keep_edges` keeps every edge fed, for
/// tests.
pub(crate) fn run_cpu(
    meta: RegionMeta,
    options: Options,
    arrays: &[Binding<'_>],
    workers: u32,
    (capacity, at_least): (usize, bool),
    keep_edges: bool,
    record: impl FnOnce(Box<dyn Feed>) -> Result<(Inspection, usize, usize), Error>,
) -> Result<Streamed, Error> {
    let start = Instant::now();
    let workers = options.workers.unwrap_or(workers).max(1);
    let lanes = options.cpu_lanes.max(1);
    let policy = options.run_policy();
    // At least `MIN_CAPACITY`, and what the region recorded last time (`at_least`), or exactly
    // `capacity` (tests).
    let capacity = if at_least {
        capacity.max(MIN_CAPACITY)
    } else {
        capacity
    };
    let mut first = StreamTables::new(0, 0, capacity, workers, policy);
    first.kept = keep_edges.then(Vec::new);
    let tables = Arc::new(Mutex::new(first));
    let full = Arc::new(StdAtomic::new(0));
    let descs: Vec<ArrayDesc> = (arrays.iter())
        .map(|b| ArrayDesc {
            ptr: b.ptr as u64,
            len: b.info.len as u64,
        })
        .collect();
    // Host arrays are restored after any failure, the body's included.
    let snapshot: Vec<(usize, Vec<u8>)> = (arrays.iter().enumerate())
        .filter(|(_, b)| b.info.writable)
        .map(|(i, b)| (i, b.bytes().to_vec()))
        .collect();
    let restore = || {
        for (i, bytes) in &snapshot {
            // SAFETY: the array is writable and every worker has been joined.
            unsafe { arrays[*i].write(bytes) };
        }
    };
    let mut stats = vec![WorkerStats::default(); workers as usize];
    // A record per task of the first tables, when traced; the rest's come after them.
    let mut trace = vec![TraceRecord::default(); if options.trace { capacity } else { 0 }];
    let abort = StdAtomic::new(0);
    let current: Vec<StdAtomic> = (0..workers).map(|_| StdAtomic::new(u32::MAX)).collect();
    let failure: Mutex<Option<Caught>> = Mutex::new(None);
    let desc = {
        let tables = tables.lock().unwrap_or_else(|e| e.into_inner());
        RegionDesc {
            arrays: descs.as_ptr() as u64,
            abort: abort.as_ptr() as u64,
            stats: stats.as_mut_ptr() as u64,
            current: current.as_ptr() as u64,
            trace: table_ptr(trace.as_mut_ptr(), trace.len()),
            ..tables.desc(options.desc(workers, descs.len()))
        }
    };
    let pool = Pool {
        desc: &desc,
        sms: None,
        lanes,
        options: &options,
        dispatch: meta.dispatch,
        failure: &failure,
        abort: &abort,
    };
    let feed = Feeding {
        tables: tables.clone(),
        full: full.clone(),
    };
    let completed = || tables.lock().map_or(0, |t| t.completed());
    // The body runs on this thread while the workers run what it feeds; once it is done (or has
    // failed), the rest is fed and the total published, or the workers aborted.
    // SAFETY: the tables live in `tables` (and the buffers above) past the workers' join; the
    // feed writes them as the protocol allows.
    let (recorded, (stalled, running)) = unsafe {
        pool.run(completed, || {
            let recorded = catch_unwind(AssertUnwindSafe(|| record(Box::new(feed))));
            let mut t = tables.lock().unwrap_or_else(|e| e.into_inner());
            match &recorded {
                Ok(Ok((inspection, fed, _))) => {
                    let n = inspection.task_count();
                    let rest = batch_of(inspection, *fed..n);
                    if full.load(Ordering::Relaxed) == 0 && t.publish(&rest.batch()).is_ok() {
                        t.stream().end(n as u32);
                    } else {
                        // The tasks fed end the run; the rest run on tables of their own.
                        let fed = t.fed as u32;
                        t.stream().end(fed);
                    }
                }
                _ => abort.store(1, Ordering::Release),
            }
            recorded
        })
    };
    let execute_end = Instant::now();
    let (inspection, _, fed_early) = match recorded {
        Err(panic) => {
            restore();
            resume_unwind(panic);
        }
        Ok(Err(error)) => {
            restore();
            return Err(error);
        }
        Ok(Ok(done)) => done,
    };
    let n = inspection.task_count();
    let caught = failure.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(error) = failed(&inspection, caught, stalled, running, || {
        tables.lock().map_or(0, |t| t.completed()) as usize
    }) {
        restore();
        return Err(error);
    }
    let mut tables = Arc::into_inner(tables)
        .expect("the feed is dropped with the body")
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let mut edges = tables.kept.take();
    let ran = tables.fed;
    drop(tables);
    trace.truncate(ran);
    if ran < n {
        // The region outgrew the tables: its last tasks run on tables of their own.
        match run_rest(&meta, &options, &inspection, ran, &desc, lanes, &mut trace) {
            Ok(rest) => {
                if let Some(edges) = &mut edges {
                    edges.extend(rest);
                }
            }
            Err(error) => {
                restore();
                return Err(error);
            }
        }
    }
    let trace = options.trace.then_some(trace);
    let (_, report) = finished(
        meta,
        options,
        inspection,
        arrays,
        (Backend::Cpu, workers, lanes),
        (execute_end - start, stats, trace),
    )?;
    let mut report = report.since(start);
    report.fed_while_recording = fed_early;
    Ok(Streamed {
        report,
        fed_early,
        edges,
        first_tables: ran,
    })
}

/// A streamed call's plan, made from its finished `inspection`, and its report: run on `backend`
/// by `workers` workers of `lanes` threads (or lanes) each, for `execute`, with the workers'
/// `stats` and the `trace` if traced.
fn finished(
    meta: RegionMeta,
    options: Options,
    inspection: Inspection,
    arrays: &[Binding<'_>],
    (backend, workers, lanes): (Backend, u32, u32),
    (execute, stats, trace): (Duration, Vec<WorkerStats>, Option<Vec<TraceRecord>>),
) -> Result<(Plan, Report), Error> {
    let (inspect_time, edges_time) = (inspection.time, inspection.edges_time);
    let mut plan = Plan::new(meta, options, inspection)?;
    let (work, _) = plan.parts();
    let call = Call {
        work,
        arrays,
        order: None,
        inspect_time,
        edges_time,
        reused: false,
        prestaged: None,
    };
    let mut report = Report::new(
        &call,
        backend,
        workers,
        lanes,
        Duration::ZERO,
        execute,
        stats,
        trace,
    );
    report.streamed = true;
    Ok((plan, report))
}

/// Tasks `range` of a finished inspection as one batch, their edges from the DAG.
struct Rest<'i> {
    first: u32,
    records: &'i [TaskRecord],
    args: &'i [u64],
    edges: Vec<(u32, u32)>,
}

impl Rest<'_> {
    fn batch(&self) -> Batch<'_> {
        Batch {
            first: self.first,
            records: self.records,
            args: self.args,
            args_from: 0,
            edges: &self.edges,
        }
    }
}

fn batch_of(inspection: &Inspection, range: core::ops::Range<usize>) -> Rest<'_> {
    let dag = &inspection.dag;
    let mut edges = Vec::new();
    for p in 0..range.end {
        for &c in dag.children_of(p as u32) {
            if range.contains(&(c as usize)) {
                edges.push((c, p as u32));
            }
        }
    }
    Rest {
        first: range.start as u32,
        // The records and the sentinel after them (`Recorder::finish` appends it).
        records: &inspection.tasks[range.start..=range.end],
        args: &inspection.args,
        edges,
    }
}

/// Runs tasks `from..` of `inspection`, whose earlier tasks have run, on tables of their own
/// (the workers and buffers of `desc`), their trace records appended to `trace` when traced.
/// Returns the edges it fed.
fn run_rest(
    meta: &RegionMeta,
    options: &Options,
    inspection: &Inspection,
    from: usize,
    desc: &RegionDesc,
    lanes: u32,
    trace: &mut Vec<TraceRecord>,
) -> Result<Vec<(u32, u32)>, Error> {
    let workers = desc.n_workers;
    let n = inspection.task_count();
    let args_base = inspection.tasks[from].args;
    let mut tables = StreamTables::new(
        from as u32,
        args_base,
        n - from + 1,
        workers,
        options.run_policy(),
    );
    tables.kept = Some(Vec::new());
    // Generous room: everything is known.
    let rest = batch_of(inspection, from..n);
    tables.args = Table::zeroed(inspection.args.len() - args_base as usize + 1);
    tables.children = Table::zeroed(rest.edges.len() + 1);
    tables.edges = Table::atomics((rest.edges.len() + 1) * EDGE_WORDS, 0);
    tables.tasks.set(
        n - from + 1,
        TaskRecord {
            kind: u32::MAX,
            args: tables.args.len as u32,
        },
    );
    tables.offsets.set(n - from + 1, tables.children.len as u32);
    tables
        .publish(&rest.batch())
        .expect("the tables are sized to the batch");
    tables.stream().end((n - from) as u32);
    let abort = StdAtomic::new(0);
    let failure: Mutex<Option<Caught>> = Mutex::new(None);
    // The rest's tasks are numbered from 0 here, as its trace records.
    let mut rest_trace = vec![TraceRecord::default(); if options.trace { n - from } else { 0 }];
    let rest_desc = RegionDesc {
        abort: abort.as_ptr() as u64,
        trace: table_ptr(rest_trace.as_mut_ptr(), rest_trace.len()),
        ..tables.desc(*desc)
    };
    let pool = Pool {
        desc: &rest_desc,
        sms: None,
        lanes,
        options,
        dispatch: meta.dispatch,
        failure: &failure,
        abort: &abort,
    };
    // SAFETY: the tables and buffers outlive the run; nothing is written meanwhile.
    let (_, (stalled, _)) = unsafe { pool.run(|| tables.completed(), || ()) };
    if let Some(caught) = failure.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(Error::TaskPanicked {
            task: inspection.task_ref(caught.task + from as u32),
            message: caught.message,
            restored: true,
        });
    }
    if let Some(waited) = stalled {
        return Err(Error::Stalled {
            region: inspection.region,
            waited,
            unfinished: n - from - tables.completed() as usize,
            tasks: n,
            first: Vec::new(),
        });
    }
    trace.append(&mut rest_trace);
    Ok(tables.kept.take().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    //! Streamed runs on the CPU backend against inspected ones and a sequential reference: the
    //! same edges, the same results, under every policy that streams; and a body that fails or
    //! panics mid-stream leaves its array as it was.

    use std::panic::Location;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use proptest::prelude::*;
    use taskweave_device::Block;
    use taskweave_device::abi::ArrayDesc;
    use taskweave_device::sched::Dispatch;

    use crate::error::Error;
    use crate::graph::Piping;
    use crate::inspect::Access;
    use crate::meta::RegionMeta;
    use crate::policy::Policy;
    use crate::region::Region;
    use crate::stream::by_child;

    /// Elements per tile.
    const TILE: usize = 4;

    /// One task: it reads `read` and updates `write`, `x[write·T + i] = 3·x[write·T + i] +
    /// x[read + i] + task` for `i < len`, where `read` and `len` are element offsets (a whole
    /// tile, or, to leave the tile path, a shorter range: its write is part of a tile).
    #[derive(Clone, Copy, Debug)]
    struct Step {
        write: usize,
        read: usize,
        len: usize,
    }

    /// How many task bodies have run, in this process.
    static RAN: AtomicUsize = AtomicUsize::new(0);

    struct Steps;

    impl Dispatch for Steps {
        fn run(&self, block: &Block, _: u32, args: &[u64], arrays: &[ArrayDesc], _: bool) {
            let x = arrays[0].ptr as *mut u64;
            let [write, read, len, task] = [args[0], args[1], args[2], args[3]].map(|w| w as usize);
            if block.thread() == 0 {
                for i in 0..len {
                    // SAFETY: inspection checked both ranges against the array; the DAG orders
                    // this task after every task that touches them.
                    unsafe {
                        let r = *x.add(read + i);
                        let w = x.add(write * TILE + i);
                        *w = (*w)
                            .wrapping_mul(3)
                            .wrapping_add(r)
                            .wrapping_add(task as u64);
                    }
                }
                RAN.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// What the steps leave in `x`, run one after the other.
    fn reference(x: &mut [u64], steps: &[Step]) {
        for (task, s) in steps.iter().enumerate() {
            for i in 0..s.len {
                let r = x[s.read + i];
                let w = &mut x[s.write * TILE + i];
                *w = w.wrapping_mul(3).wrapping_add(r).wrapping_add(task as u64);
            }
        }
    }

    /// The region of `steps` over `x`; after `fail_at` tasks (if any) its body fails with an
    /// out-of-bounds range, or panics when `panic`, once a task has run.
    fn region<'a>(
        x: &'a mut [u64],
        steps: &'a [Step],
        fail_at: Option<usize>,
        panic: bool,
    ) -> Region<'a> {
        let mut region = Region::new(RegionMeta {
            name: "streamed steps",
            kernel: "taskweave_region_streamed_steps",
            code: None,
            kinds: &["step"],
            args: &[],
            dispatch: &Steps,
            location: Location::caller(),
        });
        let len = x.len();
        let x = region.bind_mut(x, "x");
        region.body(move |rec| {
            for (task, s) in steps.iter().enumerate() {
                if fail_at == Some(task) {
                    if panic {
                        while RAN.load(Ordering::Relaxed) == 0 {
                            std::thread::yield_now();
                        }
                        panic!("the body fails mid-stream");
                    }
                    let words = [0, 0, 0, task as u64];
                    let out = Access {
                        slot: x.slot(),
                        range: len..len + 1,
                        write: true,
                        param: "x",
                    };
                    rec.spawn(0, Location::caller(), &words, &[out])?;
                }
                let at = |lo: usize, write| Access {
                    slot: x.slot(),
                    range: lo..lo + s.len,
                    write,
                    param: "x",
                };
                let words = [s.write, s.read, s.len, task].map(|w| w as u64);
                rec.spawn(
                    0,
                    Location::caller(),
                    &words,
                    &[at(s.read, false), at(s.write * TILE, true)],
                )?;
            }
            Ok(())
        })
    }

    /// `tasks` random steps over `tiles` tiles; with `cut`, about one task in 40 reads and writes a
    /// range shorter than a tile (a write of part of a tile sends the array off the tile path,
    /// and streaming stops there).
    fn steps(tiles: usize, tasks: usize, cut: bool) -> impl Strategy<Value = Vec<Step>> {
        proptest::collection::vec((0..tiles, 0..tiles, 0..40u32), 1..tasks).prop_map(move |v| {
            v.into_iter()
                .map(|(write, read, short)| Step {
                    write,
                    read: read * TILE,
                    len: if cut && short == 0 { TILE - 1 } else { TILE },
                })
                .collect()
        })
    }

    /// Runs `steps` streamed under `policy` on 3 workers of `lanes` lanes with tables of
    /// `capacity` tasks, its tracker moved to a thread of its own as `piping` says, and checks it
    /// against the inspected DAG and the sequential reference.
    fn check(
        steps: &[Step],
        tiles: usize,
        (policy, lanes): (Policy, u32),
        capacity: usize,
        piping: Piping,
    ) {
        let start: Vec<u64> = (0..(tiles * TILE) as u64).map(|i| i * 7 + 1).collect();
        let mut want = start.clone();
        reference(&mut want, steps);
        let inspected = {
            let mut x = start.clone();
            region(&mut x, steps, None, false)
                .inspect()
                .expect("the region inspects")
        };
        let mut x = start.clone();
        let streamed = region(&mut x, steps, None, false)
            .policy(policy)
            .cpu_lanes(lanes)
            .run_streamed(3, Some(capacity), true, Some(piping))
            .expect("the region runs streamed");
        assert!(streamed.report.streamed);
        if capacity < steps.len() {
            assert!(streamed.first_tables < steps.len());
        }
        assert_eq!(
            x, want,
            "{policy:?}, {piping:?}: results differ from the sequential reference"
        );
        let mut fed = streamed.edges.expect("edges kept");
        fed.sort_unstable();
        fed.dedup();
        let dag = &inspected.dag;
        // Past the capacity, the rest runs after the first tables' tasks: no edge between them.
        let split = streamed.first_tables as u32;
        let mut edges: Vec<(u32, u32)> = (0..dag.task_count() as u32)
            .flat_map(|p| dag.children_of(p).iter().map(move |&c| (p, c)))
            .filter(|&(p, c)| !(p < split && c >= split))
            .collect();
        edges.sort_unstable();
        assert_eq!(
            fed, edges,
            "{policy:?}, {piping:?}: the streamed DAG is not the inspected one"
        );
    }

    /// Every policy a streamed call runs under.
    fn streaming() -> impl Strategy<Value = Policy> {
        proptest::sample::select(
            Policy::ALL
                .into_iter()
                .filter(|p| !p.row().plans)
                .collect::<Vec<_>>(),
        )
    }

    /// The tracker on the recording thread, or on its own from a random task on, in chunks of a
    /// random size: the edges then come back from that thread.
    fn piping() -> impl Strategy<Value = Piping> {
        prop_oneof![
            Just(Piping::Never),
            (0..300u32, 1..80usize).prop_map(|(after, chunk)| Piping::Force { after, chunk }),
        ]
    }

    proptest! {
        /// A batch's edges sorted by child then parent, without duplicates, as a general sort
        /// gives them: grouped or not, with duplicates, and with a child outside the batch.
        #[test]
        fn a_batch_s_edges_sort_as_a_general_sort_does(
            edges in proptest::collection::vec((0u32..40, 0u32..60), 0..200),
            first in 0u32..20,
        ) {
            let n = 24;
            let mut expected = edges.clone();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(by_child(edges.iter().copied(), first, n), expected);
            let inside: Vec<_> = edges.iter().map(|&(c, p)| (first + c % n as u32, p)).collect();
            let mut expected = inside.clone();
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(by_child(inside.iter().copied(), first, n), expected);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Random tiled regions of up to 600 tasks, fed in several batches, on workers of one to
        /// three lanes (the lanes of an idle worker share its link rounds).
        #[test]
        fn a_streamed_region_runs_the_inspected_dag(
            steps in steps(12, 600, false),
            policy in streaming(),
            lanes in 1..4u32,
            piping in piping(),
        ) {
            check(&steps, 12, (policy, lanes), 1 << 12, piping);
        }

        /// The same with ranges that leave the tile path part-way: what was fed before runs
        /// while the body records the rest, which goes in when it returns.
        #[test]
        fn a_region_that_leaves_the_tile_path_streams_up_to_there(
            steps in steps(8, 400, true),
            policy in streaming(),
            piping in piping(),
        ) {
            check(&steps, 8, (policy, 1), 1 << 12, piping);
        }

        /// Tables too small for the region: what fits runs, then the rest on tables of its own.
        #[test]
        fn a_region_past_the_capacity_runs_its_rest_apart(
            steps in steps(6, 500, false),
            policy in streaming(),
            piping in piping(),
        ) {
            check(&steps, 6, (policy, 1), 100, piping);
        }
    }

    /// `count` steps over `tiles` whole tiles: step `t` writes tile `t % tiles` and reads tile
    /// `t * stride % tiles`.
    fn tiled_steps(count: usize, tiles: usize, stride: usize) -> Vec<Step> {
        (0..count)
            .map(|t| Step {
                write: t % tiles,
                read: (t * stride % tiles) * TILE,
                len: TILE,
            })
            .collect()
    }

    /// Sleeps: a root (kind 0) for 50 ms, a leaf (kind 1) for 1 ms.
    struct Naps;

    impl Dispatch for Naps {
        fn run(&self, block: &Block, kind: u32, _: &[u64], _: &[ArrayDesc], _: bool) {
            if block.thread() == 0 {
                let ms = if kind == 0 { 50 } else { 1 };
                std::thread::sleep(std::time::Duration::from_millis(ms));
            }
        }
    }

    /// The children a streamed task frees when it ends go out as the policy places a row's
    /// children: under local first the first to the worker's own queue, the next ones to its
    /// neighbours'. A slow root writes tile 0 while a first batch of 63 leaves runs; 48 leaves
    /// that read tile 0 come in the next batch, linked while the root runs, and are freed by its
    /// end. When each freed child was placed as if it were the first, all 48 went to one worker,
    /// which ran them one after the other while the others idled.
    #[test]
    fn a_streamed_task_s_freed_children_are_spread_as_a_row_s() {
        let mut x = vec![0u64; 112 * TILE];
        let mut region = Region::new(RegionMeta {
            name: "streamed naps",
            kernel: "taskweave_region_streamed_naps",
            code: None,
            kinds: &["root", "leaf"],
            args: &[],
            dispatch: &Naps,
            location: Location::caller(),
        });
        let x_slot = region.bind_mut(&mut x, "x");
        let region = region.body(move |rec| {
            let tile = |t: usize, write| Access {
                slot: x_slot.slot(),
                range: t * TILE..(t + 1) * TILE,
                write,
                param: "x",
            };
            rec.spawn(0, Location::caller(), &[], &[tile(0, true)])?;
            for t in 1..112 {
                let read = if t < 64 { t } else { 0 };
                if read == t {
                    rec.spawn(1, Location::caller(), &[], &[tile(t, true)])?;
                } else {
                    rec.spawn(1, Location::caller(), &[], &[tile(0, false), tile(t, true)])?;
                }
            }
            Ok(())
        });
        let streamed = region
            .policy(Policy::Lf)
            .run_streamed(4, Some(1 << 10), false, Some(Piping::Never))
            .expect("the region runs");
        let tasks: Vec<u32> = streamed
            .report
            .worker_stats
            .iter()
            .map(|s| s.tasks)
            .collect();
        assert_eq!(tasks.iter().sum::<u32>(), 112, "{tasks:?}");
        assert!(
            tasks.iter().all(|&t| t <= 40),
            "one worker ran most of the leaves: {tasks:?}"
        );
    }

    /// A traced streamed run has a record per task, its own tables' and the rest's past the
    /// capacity alike, and each task starts after its parents in the inspected DAG have ended.
    #[test]
    fn a_traced_streamed_run_records_every_task_after_its_parents() {
        let steps = tiled_steps(700, 9, 4);
        let start: Vec<u64> = (0..(9 * TILE) as u64).collect();
        let inspected = region(&mut start.clone(), &steps, None, false)
            .inspect()
            .expect("the region inspects");
        for capacity in [1 << 12, 300] {
            let mut x = start.clone();
            let streamed = region(&mut x, &steps, None, false)
                .trace(true)
                .run_streamed(3, Some(capacity), false, None)
                .expect("the region runs streamed");
            assert!(streamed.report.streamed);
            assert_eq!(capacity < steps.len(), streamed.first_tables < steps.len());
            let mut want = start.clone();
            reference(&mut want, &steps);
            assert_eq!(x, want, "capacity {capacity}");
            let trace = streamed.report.trace.as_deref().expect("a trace");
            assert_eq!(trace.len(), steps.len(), "capacity {capacity}");
            let dag = &inspected.dag;
            for (t, r) in trace.iter().enumerate() {
                assert!(
                    r.start > 0 && r.start <= r.end && r.worker < 3,
                    "task {t}: {r:?}"
                );
                for &p in dag.parents().parents_of(t as u32) {
                    let parent = trace[p as usize];
                    assert!(
                        parent.end <= r.start,
                        "capacity {capacity}: task {t} started before its parent {p} ended"
                    );
                }
            }
            assert!(streamed.report.trace_path().is_some());
        }
    }

    /// A body that panics after some of its tasks ran: the panic reaches the caller, and the
    /// array is as it was.
    #[test]
    fn a_body_that_panics_mid_stream_leaves_its_array_as_it_was() {
        let steps = tiled_steps(300, 5, 3);
        let start: Vec<u64> = (0..(5 * TILE) as u64).collect();
        let mut x = start.clone();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            RAN.store(0, Ordering::Relaxed);
            region(&mut x, &steps, Some(200), true)
                .run_streamed(2, None, false, None)
                .map(|s| s.report)
        }));
        let payload = caught.expect_err("the body's panic reaches the caller");
        assert_eq!(
            payload.downcast_ref::<&str>(),
            Some(&"the body fails mid-stream")
        );
        assert!(
            RAN.load(Ordering::Relaxed) > 0,
            "tasks ran before the panic"
        );
        assert_eq!(x, start, "the array is restored");
    }

    /// A body that fails with a bad range after some of its tasks ran: the error names it, and
    /// the array is as it was.
    #[test]
    fn a_body_that_fails_mid_stream_leaves_its_array_as_it_was() {
        let steps = tiled_steps(300, 5, 3);
        let start: Vec<u64> = (0..(5 * TILE) as u64).collect();
        let mut x = start.clone();
        let error = region(&mut x, &steps, Some(250), false)
            .run_streamed(2, Some(1024), false, None)
            .map(|s| s.report)
            .expect_err("the body fails");
        assert!(matches!(error, Error::OutOfBounds { .. }), "{error}");
        assert_eq!(x, start, "the array is restored");
    }

    /// Feeding starts before the body ends: a region of 130 tiled tasks feeds its first batch
    /// while it records, and the rest when it returns.
    #[test]
    fn batches_are_fed_while_the_body_records() {
        let steps = tiled_steps(130, 7, 2);
        let mut x: Vec<u64> = (0..(7 * TILE) as u64).collect();
        let start = x.clone();
        let streamed = region(&mut x, &steps, None, false)
            .run_streamed(2, Some(256), false, Some(Piping::Never))
            .expect("the region runs");
        assert_eq!(streamed.fed_early, 64);
        assert_eq!(streamed.report.tasks, 130);
        let mut want = start;
        reference(&mut want, &steps);
        assert_eq!(x, want);
    }

    /// With the tracker on a thread of its own from the 100th task, the edges it hands back are
    /// fed while the body records: at most 8 chunks wait for that thread, so it has handed back
    /// its first chunks long before the 3,000th task.
    #[test]
    fn a_piped_tracker_s_edges_are_fed_while_the_body_records() {
        let steps = tiled_steps(3000, 7, 2);
        let mut x: Vec<u64> = (0..(7 * TILE) as u64).collect();
        let start = x.clone();
        let piping = Piping::Force {
            after: 100,
            chunk: 64,
        };
        let streamed = region(&mut x, &steps, None, false)
            .run_streamed(2, Some(1 << 12), false, Some(piping))
            .expect("the region runs");
        assert!(
            (101..3000).contains(&streamed.fed_early),
            "fed while recording: {}",
            streamed.fed_early
        );
        assert_eq!(streamed.report.tasks, 3000);
        let mut want = start;
        reference(&mut want, &steps);
        assert_eq!(x, want);
    }
}
