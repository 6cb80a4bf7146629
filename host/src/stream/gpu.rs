//! The persistent GPU backend's half of streamed regions: the kernel starts on empty tables sized
//! to the capacity, and each batch the body records is copied into them while it runs.
//!
//! 1. On a thread of its own while the body starts recording: the region's kernel is picked (its
//!    module loaded on the region's first call in a process), the tables are allocated in one
//!    piece and set as an empty run's (zeros, open lists, empty queues, the total unknown). That
//!    thread then feeds the tables, the batches the body recorded meanwhile first, while another
//!    copies the host arrays to the GPU whole (no task is known yet to say what it touches) and
//!    launches the kernel behind them.
//! 2. Each batch goes into a host mirror of the tables ([`StreamTables::publish`], as on the CPU
//!    backend), and what it wrote is copied into the device's tables on the control stream, which
//!    does not wait for the kernel: the records, argument words, CSR rows, counters, cross edges
//!    and links, then the count of links published. The copies of one stream complete in order,
//!    so a worker that reads the new count reads the batch after it; its `Acquire` load of the
//!    count, and the acquires on the way to each task, keep stale lines out of its L1 (the tables
//!    are read with `ld.global`, which an acquire invalidates, not `ld.global.nc`).
//! 3. When the body returns, the rest of the region goes as one last batch and the total after
//!    it; the host then watches the kernel as for any run ([`watch`]), turns a fault into an error
//!    naming the task, and copies the written arrays back.
//! 4. A body that fails or panics raises the abort flag and waits for the kernel: the host arrays
//!    were never written, so nothing is lost. A region that outgrows the capacity is aborted the
//!    same way and its finished inspection runs as an inspected call would
//!    ([`GpuStreamed::Outgrown`]).

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg, result,
};
use taskweave_device::abi::{
    ArrayDesc, FLAG_STREAM, RegionDesc, TaskRecord, TraceRecord, WorkerStats,
};
use taskweave_device::error::ErrorRecord;
use taskweave_device::sched::affinity::{NO_PARENT, NOT_RUN};
use taskweave_device::sched::queue::NIL;
use taskweave_device::sched::stream::{self as protocol, EDGE_WORDS, LINK_WORDS, WORDS};

use super::{MIN_CAPACITY, StreamTables, batch_of};
use crate::backend::{
    GRACE, Launched, Running, bytes_of, default_workers, fault, finish_stall, records, wait_done,
    watch,
};
use crate::call::{self, Binding};
use crate::error::Error;
use crate::gpu::Gpu;
use crate::gpu::residency::Reservation;
use crate::gpu::transfer::Piece;
use crate::inspect::{ArrayInfo, Batch, Feed, Footprint, Inspection};
use crate::meta::RegionMeta;
use crate::options::{Backend, Options};
use crate::plan::Plan;
use crate::report::Report;
use crate::resident::Done;

/// The widest level of each region's last streamed call in this process, by region: the workers
/// of its next one, whose kernel starts before the DAG is known (see
/// [`default_workers`]: one worker per SM for a chain, every resident one for a wide DAG).
static WIDEST: Mutex<BTreeMap<&'static str, usize>> = Mutex::new(BTreeMap::new());

/// How a streamed GPU call ended, when it did not fail.
pub(crate) enum GpuStreamed {
    /// It ran: its report, and the plan of its inspection (for the runtime's plan cache).
    Ran(Box<Report>, Box<Plan>),
    /// The region outgrew the tables: nothing ran that counts, and its finished inspection runs
    /// as an inspected call would.
    Outgrown(Box<Inspection>),
}

/// One 128-byte-aligned table in the device allocation: its offset and bytes.
#[derive(Clone, Copy, Default)]
struct Place {
    at: u64,
    bytes: usize,
}

/// Where every table of a streamed call lies in its one device allocation.
#[derive(Default)]
struct Places {
    end: u64,
    tasks: Place,
    args: Place,
    offsets: Place,
    children: Place,
    rank: Place,
    affine: Place,
    ran_by: Place,
    pending: Place,
    next: Place,
    head: Place,
    tail: Place,
    lock: Place,
    counters: Place,
    heads: Place,
    edges: Place,
    links: Place,
    words: Place,
    error: Place,
    stats: Place,
    current: Place,
    abort: Place,
    arrays: Place,
    desc: Place,
    /// A record per task of the capacity when traced, else empty.
    trace: Place,
}

impl Places {
    fn put(&mut self, bytes: usize) -> Place {
        let at = self.end.next_multiple_of(128);
        self.end = at + bytes.max(8) as u64;
        Place { at, bytes }
    }

    /// The places of `t`'s tables, and of the run's own words for `arrays` arrays, with a trace
    /// record per task of the capacity when `traced`.
    fn of(t: &StreamTables, arrays: usize, traced: bool) -> Self {
        let mut p = Self::default();
        let w = t.head.len();
        p.tasks = p.put(t.tasks.len * size_of::<TaskRecord>());
        p.args = p.put(t.args.len * 8);
        p.offsets = p.put(t.offsets.len * 4);
        p.children = p.put(t.children.len * 4);
        p.rank = p.put(t.rank.len() * 4);
        p.affine = p.put(t.affine.len() * 4);
        p.ran_by = p.put(t.ran_by.len() * 4);
        p.pending = p.put(t.pending.len() * 4);
        p.next = p.put(t.next.len() * 4);
        p.head = p.put(w * 4);
        p.tail = p.put(w * 4);
        p.lock = p.put(w * 4);
        p.counters = p.put(size_of_val(&*t.counters));
        p.heads = p.put(t.heads.len() * 4);
        p.edges = p.put(t.edges.len() * 4);
        p.links = p.put(t.links.len() * 4);
        p.words = p.put(WORDS * 4);
        p.error = p.put(size_of::<ErrorRecord>());
        p.stats = p.put(w * size_of::<WorkerStats>());
        p.current = p.put(w * 4);
        p.abort = p.put(8);
        p.arrays = p.put(arrays * size_of::<ArrayDesc>());
        p.desc = p.put(size_of::<RegionDesc>());
        if traced {
            p.trace = p.put(t.capacity * size_of::<TraceRecord>());
        }
        p
    }
}

/// The device tables of a streamed call, and the stream the batches are copied on.
struct Device {
    _memory: CudaSlice<u8>,
    base: u64,
    places: Places,
    control: Arc<CudaStream>,
}

impl Device {
    fn addr(&self, place: Place) -> u64 {
        self.base + place.at
    }

    /// Copies `pieces` ([`written`]) into the device tables, in order, on the control stream.
    fn send(&self, pieces: &[Written]) -> Result<(), Error> {
        for w in pieces {
            // SAFETY: each piece lies in a mirror table (`written`), written by `publish` and
            // never again; the copy from pageable memory is staged before the call returns. The
            // device range lies in the table's place.
            unsafe {
                let bytes = std::slice::from_raw_parts(w.host.add(w.bytes.start), w.bytes.len());
                result::memcpy_htod_async(
                    self.addr(w.place) + w.bytes.start as u64,
                    bytes,
                    self.control.cu_stream(),
                )
            }
            .map_err(Error::cuda("copying a streamed batch to the GPU"))?;
        }
        Ok(())
    }

    /// Raises the run's abort flag from the control stream, and waits for the copy.
    fn abort(&self) {
        // SAFETY: the flag is a live word of the tables the kernel polls.
        let _ = unsafe {
            result::memcpy_htod_async(
                self.addr(self.places.abort),
                &[1u32][..],
                self.control.cu_stream(),
            )
        };
        let _ = self.control.synchronize();
    }
}

/// Bytes `bytes` of a mirror table at `host`, to be copied to the same bytes of `place`.
struct Written {
    place: Place,
    host: *const u8,
    bytes: std::ops::Range<usize>,
}

/// The bytes of the table at `host` that entries `range` of `T` cover, for `place`.
fn piece<T>(place: Place, host: *const T, range: std::ops::Range<usize>) -> Written {
    let size = size_of::<T>();
    debug_assert!(
        range.end * size <= place.bytes.max(size),
        "a piece past its table"
    );
    Written {
        place,
        host: host.cast(),
        bytes: range.start * size..range.end * size,
    }
}

/// What the mirror `t` published since `from` (its counts then), in the order it is copied: the
/// batch's records (and the record past it, which carries the batch's argument bound), argument
/// words, CSR rows, counters, cross edges and links, then the count of links published, which
/// publishes the rest to the workers.
fn written(t: &StreamTables, p: &Places, from: &Marks) -> Vec<Written> {
    let mut pieces = vec![
        piece(p.tasks, t.tasks.ptr.cast_const(), from.fed..t.fed + 1),
        piece(p.args, t.args.ptr.cast_const(), from.args..t.args_len),
        piece(
            p.offsets,
            t.offsets.ptr.cast_const(),
            from.fed + 1..t.fed + 1,
        ),
        piece(
            p.children,
            t.children.ptr.cast_const(),
            from.children..t.children_len,
        ),
        piece(p.pending, t.pending.as_ptr(), from.fed..t.fed),
        piece(
            p.edges,
            t.edges.as_ptr(),
            from.cross * EDGE_WORDS..t.cross_len * EDGE_WORDS,
        ),
        piece(
            p.links,
            t.links.as_ptr(),
            from.links * LINK_WORDS..t.links_len * LINK_WORDS,
        ),
        piece(
            p.words,
            t.words.as_ptr(),
            protocol::PUBLISHED..protocol::PUBLISHED + 1,
        ),
    ];
    pieces.retain(|w| !w.bytes.is_empty());
    pieces
}

/// The mirror's total, once published ([`protocol::Stream::end`]).
fn total(t: &StreamTables, p: &Places) -> Written {
    piece(
        p.words,
        t.words.as_ptr(),
        protocol::TOTAL..protocol::TOTAL + 1,
    )
}

/// The mirror's counts before a batch: what [`Device::send`] copies from.
#[derive(Clone, Copy, Default)]
struct Marks {
    fed: usize,
    args: usize,
    children: usize,
    cross: usize,
    links: usize,
}

impl Marks {
    fn of(t: &StreamTables) -> Self {
        Self {
            fed: t.fed,
            args: t.args_len,
            children: t.children_len,
            cross: t.cross_len,
            links: t.links_len,
        }
    }
}

/// The feed of a streamed GPU call: each batch, copied, to the feeder thread ([`feeder`]), which
/// puts it into the mirror and copies it to the device while the body records the next.
struct Feeding {
    to: mpsc::Sender<Message>,
    /// The feeder's [`Shared::stopped`].
    stopped: Arc<AtomicBool>,
}

/// What the recording thread hands the feeder.
enum Message {
    Batch(Owned),
    /// Every task is fed: the region's task count ([`Feed::end`]).
    End(u32),
}

/// A batch's own copy of its records, argument words and edges.
struct Owned {
    first: u32,
    records: Vec<TaskRecord>,
    args: Vec<u64>,
    args_from: u32,
    edges: Vec<(u32, u32)>,
}

impl Owned {
    fn of(batch: &Batch<'_>) -> Self {
        let (a0, a1) = (
            batch.records[0].args,
            batch.records[batch.records.len() - 1].args,
        );
        let from = batch.args_from;
        Self {
            first: batch.first,
            records: batch.records.to_vec(),
            args: batch.args[(a0 - from) as usize..(a1 - from) as usize].to_vec(),
            args_from: a0,
            edges: batch.edges.to_vec(),
        }
    }

    fn batch(&self) -> Batch<'_> {
        Batch {
            first: self.first,
            records: &self.records,
            args: &self.args,
            args_from: self.args_from,
            edges: &self.edges,
        }
    }
}

/// What the feeder and the caller share.
struct Shared {
    tables: Mutex<StreamTables>,
    device: Device,
    /// A batch did not fit, or a copy failed: nothing more is fed.
    stopped: Arc<AtomicBool>,
    /// The total is published: every task was fed while the body ran.
    ended: AtomicBool,
    /// The copy that failed.
    failed: Mutex<Option<Error>>,
}

impl Shared {
    /// Publishes `batch` into the mirror and sends it; false when it does not fit or a copy fails.
    fn feed(&self, batch: &Batch<'_>) -> bool {
        let mut t = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        let from = Marks::of(&t);
        if t.publish(batch).is_err() {
            return false;
        }
        self.sent(self.device.send(&written(&t, &self.device.places, &from)))
    }

    /// Publishes the total, `tasks`, when every one of them is in the tables.
    fn end(&self, tasks: u32) -> bool {
        let t = self.tables.lock().unwrap_or_else(|e| e.into_inner());
        if t.fed != tasks as usize {
            return false;
        }
        t.stream().end(tasks);
        let ended = self.sent(self.device.send(&[total(&t, &self.device.places)]));
        self.ended.store(ended, Ordering::Relaxed);
        ended
    }

    /// Keeps a failed copy's error: whether the copy went.
    fn sent(&self, sent: Result<(), Error>) -> bool {
        match sent {
            Ok(()) => true,
            Err(error) => {
                *self.failed.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
                false
            }
        }
    }
}

impl Feed for Feeding {
    fn batch(&mut self, batch: Batch<'_>) {
        if !self.stopped.load(Ordering::Relaxed) {
            // A feeder that has stopped has dropped its end: nothing to send to.
            let _ = self.to.send(Message::Batch(Owned::of(&batch)));
        }
    }

    fn end(&mut self, tasks: usize) {
        let _ = self.to.send(Message::End(tasks as u32));
    }
}

/// The feeder, on the set-up thread once the tables are set (the context current there): puts
/// each batch into the tables and the total after them, until the recording thread drops its end
/// of the channel, or a batch does not fit or a copy fails.
fn feeder(shared: &Shared, batches: mpsc::Receiver<Message>) {
    for message in batches {
        let went = match message {
            Message::Batch(batch) => shared.feed(&batch.batch()),
            Message::End(tasks) => shared.end(tasks),
        };
        if !went {
            shared.stopped.store(true, Ordering::Relaxed);
            return;
        }
    }
}

/// Whether a call with `options` on `arrays` streams on the persistent GPU backend when it asks
/// to: as on the CPU backend (see [`super::streams`]), when the call runs on the persistent
/// backend, on host arrays and arrays resident on the GPU (not on resident host arrays).
pub(crate) fn streams(
    meta: &RegionMeta,
    options: &Options,
    arrays: &[Binding<'_>],
    backend: Backend,
) -> bool {
    options.stream
        && options.backend.unwrap_or(backend) == Backend::Persistent
        && super::streams_here(meta, options)
        && arrays
            .iter()
            .all(|b| b.device.is_some() || b.cell.is_none())
}

/// The call's resident arrays, ordered after the runs in flight that use them (whole: what the
/// tasks touch is not known before they are recorded), and set done when dropped.
struct Ordered(Arc<Done>);

impl Ordered {
    fn after_earlier(arrays: &[Binding<'_>]) -> Self {
        let whole: Vec<Footprint> = (arrays.iter())
            .map(|b| Footprint {
                read: Some(0..b.info.len),
                write: b.info.writable.then_some(0..b.info.len),
                unwritten: None,
            })
            .collect();
        let done = Arc::new(Done::default());
        for earlier in call::register(arrays, &whole, &done) {
            earlier.wait();
        }
        Self(done)
    }
}

impl Drop for Ordered {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Copies of the writable resident arrays, taken before the kernel: a call that fails puts them
/// back, so that it leaves them as they were, as it leaves host arrays (which it never writes).
struct Snapshots(Vec<(u64, CudaSlice<u8>, usize)>);

impl Snapshots {
    fn take(gpu: &Gpu, arrays: &[Arg]) -> Result<Self, Error> {
        let mut kept = Vec::new();
        for b in arrays.iter().filter(|b| b.info.writable) {
            let Some(address) = b.device else { continue };
            let bytes = b.bytes.max(8);
            // SAFETY: filled by the copy below before anything reads it.
            let copy = unsafe { gpu.stream().alloc::<u8>(bytes) }.map_err(gpu.alloc_error(
                format!("keeping a copy of {} while the region streams", b.info.name),
                bytes,
            ))?;
            let into = copy.device_ptr(gpu.stream()).0;
            // SAFETY: both ranges are live device memory of `b.bytes` bytes; the region stream
            // orders the copy before the kernel.
            unsafe { result::memcpy_dtod_async(into, address, b.bytes, gpu.stream().cu_stream()) }
                .map_err(Error::cuda("keeping a copy of a resident array"))?;
            kept.push((address, copy, b.bytes));
        }
        Ok(Self(kept))
    }

    /// Puts the arrays back, after the kernel has ended.
    fn restore(&self, gpu: &Gpu) -> Result<(), Error> {
        for (address, copy, bytes) in &self.0 {
            let from = copy.device_ptr(gpu.stream()).0;
            // SAFETY: as in `take`; the kernel has ended.
            unsafe { result::memcpy_dtod_async(*address, from, *bytes, gpu.stream().cu_stream()) }
                .map_err(Error::cuda("restoring a resident array"))?;
        }
        gpu.stream()
            .synchronize()
            .map_err(Error::cuda("restoring a resident array"))
    }
}

/// What the set-up thread of a streamed call needs of an argument array: a [`Binding`] holds a
/// raw pointer, and stays on the calling thread.
#[derive(Clone, Copy)]
struct Arg {
    info: ArrayInfo,
    /// The host memory's address (a host array's).
    host: usize,
    bytes: usize,
    /// The device address of an array resident on the GPU.
    device: Option<u64>,
}

impl Arg {
    fn of(b: &Binding<'_>) -> Self {
        Self {
            info: b.info,
            host: b.ptr as usize,
            bytes: b.bytes,
            device: b.device,
        }
    }
}

/// A streamed call's kernel as its set-up thread leaves it: chosen, its tables set and fed.
struct Started<'g> {
    shared: Arc<Shared>,
    /// The host arrays' device copies (`None` for a resident array), by argument.
    copies: Vec<Option<CudaSlice<u8>>>,
    snapshots: Snapshots,
    admitted: Reservation<'g>,
    desc: RegionDesc,
    workers: u32,
    /// When each step ran.
    steps: Steps,
}

/// A streamed call's upload and launch, on a thread of their own beside the feeder (the kernel
/// reads whatever the feeder published before it started).
struct Launch {
    pieces: Vec<Piece>,
    function: CudaFunction,
    config: LaunchConfig,
    desc: u64,
    shared: Arc<Shared>,
}

/// How a streamed call's launch went.
struct Went {
    begin: CudaEvent,
    end: CudaEvent,
    /// The launch (the upload before it): an error leaves no kernel running.
    result: Result<(), Error>,
    /// Whether some host array was uploaded.
    uploaded: bool,
}

impl Launch {
    /// Uploads the host arrays, then launches the kernel behind them on the region stream; the
    /// steps' times into `steps`.
    fn run(self, gpu: &Gpu, region: &'static str, steps: &mut Steps) -> Result<Went, Error> {
        gpu.bind()?;
        let event = || {
            gpu.context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(Error::cuda("creating an event"))
        };
        let (begin, end) = (event()?, event()?);
        // SAFETY: each host range is an array the call borrows, unwritten while it runs, each
        // device range its new copy.
        let upload = unsafe { gpu.upload(&self.pieces) };
        steps.uploaded = Instant::now();
        let result = upload.and_then(|()| {
            begin
                .record(gpu.stream())
                .map_err(Error::cuda("recording an event"))?;
            let mut builder = gpu.stream().launch_builder(&self.function);
            builder.arg(&self.desc);
            // SAFETY: the kernel's one parameter is `*const RegionDesc`; the descriptor and every
            // table it points to live in `shared` and the call's copies, which outlive the kernel
            // (or are abandoned).
            unsafe { builder.launch(self.config) }
                .map_err(Error::cuda(format!("launching region `{region}`")))?;
            if let Err(error) = end.record(gpu.stream()) {
                // The kernel waits for a total that will not come: stopped before its tables go.
                self.shared.device.abort();
                let _ = gpu.stream().synchronize();
                return Err(Error::cuda("recording an event")(error));
            }
            Ok(())
        });
        steps.launched = Instant::now();
        Ok(Went {
            begin,
            end,
            result,
            uploaded: !self.pieces.is_empty(),
        })
    }
}

/// When a streamed call's kernel was chosen and loaded, its tables set, the host arrays uploaded,
/// the kernel launched and its last batch fed.
struct Steps {
    start: Instant,
    loaded: Instant,
    set: Instant,
    uploaded: Instant,
    launched: Instant,
    fed: Instant,
}

impl Steps {
    /// The call's phases beyond the body, which ended at `body`: what each step took after it.
    /// The feeding after the body counts as upload (the tables' copies).
    fn after(&self, body: Instant) -> [Duration; 4] {
        let part = |from: Instant, to: Instant| to.saturating_duration_since(from.max(body));
        [
            part(self.start, self.loaded),
            part(self.loaded, self.set),
            part(self.set, self.uploaded) + part(self.launched, self.fed),
            part(self.uploaded, self.launched),
        ]
    }
}

/// Chooses the kernel for a streamed call and sets its empty tables on the device: what the
/// set-up thread does before it feeds, the upload and the launch ([`Launch`]) going beside it.
fn set_up_kernel<'g>(
    gpu: &'g Gpu,
    meta: &RegionMeta,
    options: &Options,
    arrays: &[Arg],
    capacity: usize,
    stopped: &Arc<AtomicBool>,
) -> Result<(Started<'g>, Launch), Error> {
    let start = Instant::now();
    // The copies below need the context current on this thread.
    gpu.bind()?;
    let sms = gpu.sm_count();
    // The DAG's width is not known yet: as wide as the region's last streamed call's, else a
    // worker per SM, unless the region sets the workers.
    let widest = (WIDEST.lock().unwrap_or_else(|e| e.into_inner()))
        .get(meta.name)
        .copied()
        .unwrap_or(sms as usize);
    let picked = gpu.pick(meta, options, meta.kernel, |resident| {
        options
            .workers
            .unwrap_or_else(|| default_workers(resident, sms, widest))
    })?;
    let loaded = Instant::now();
    let workers = picked.blocks;
    let capacity = capacity.max(MIN_CAPACITY);
    let mirror = StreamTables::new(0, 0, capacity, workers, options.run_policy());
    let places = Places::of(&mirror, arrays.len(), options.trace);
    // The host arrays, whole, into buffers of their own (uploaded below); resident arrays stay
    // where they are.
    let mut copies: Vec<Option<CudaSlice<u8>>> = Vec::with_capacity(arrays.len());
    let mut pieces = Vec::new();
    let mut descs = Vec::with_capacity(arrays.len());
    for b in arrays {
        let ptr = match b.device {
            Some(address) => {
                copies.push(None);
                address
            }
            None => {
                let bytes = b.bytes.max(8);
                // SAFETY: filled below before any kernel reads it.
                let copy = unsafe { gpu.stream().alloc::<u8>(bytes) }
                    .map_err(gpu.alloc_error(format!("allocating {}", b.info.name), bytes))?;
                let device = copy.device_ptr(gpu.stream()).0;
                pieces.push(Piece {
                    host: b.host,
                    device,
                    len: b.bytes,
                });
                copies.push(Some(copy));
                device
            }
        };
        descs.push(ArrayDesc {
            ptr,
            len: b.info.len as u64,
        });
    }
    let snapshots = Snapshots::take(gpu, arrays)?;
    let bytes = places.end as usize;
    // SAFETY: every byte is set below (zeros first) before the kernel reads it.
    let memory = unsafe { gpu.stream().alloc::<u8>(bytes) }
        .map_err(gpu.alloc_error("allocating a streamed region's tables", bytes))?;
    let base = memory.device_ptr(gpu.stream()).0;
    let device = Device {
        _memory: memory,
        base,
        places,
        control: gpu.control().clone(),
    };
    let p = &device.places;
    let affinity = !mirror.affine.is_empty();
    let desc = RegionDesc {
        n_tasks: capacity as u32,
        flags: options.desc(workers, arrays.len()).flags | FLAG_STREAM,
        tasks: device.addr(p.tasks),
        args: device.addr(p.args),
        arrays: device.addr(p.arrays),
        offsets: device.addr(p.offsets),
        children: device.addr(p.children),
        pending: device.addr(p.pending),
        rank: device.addr(p.rank),
        next: device.addr(p.next),
        head: device.addr(p.head),
        tail: device.addr(p.tail),
        lock: device.addr(p.lock),
        counters: device.addr(p.counters),
        abort: device.addr(p.abort),
        error: device.addr(p.error),
        stats: device.addr(p.stats),
        current: device.addr(p.current),
        affine: if affinity { device.addr(p.affine) } else { 0 },
        ran_by: if affinity { device.addr(p.ran_by) } else { 0 },
        stream_heads: device.addr(p.heads),
        stream_edges: device.addr(p.edges),
        stream_total: device.addr(p.words),
        stream_links: device.addr(p.links),
        stream_edges_len: (mirror.edges.len() / EDGE_WORDS) as u32,
        stream_links_len: (mirror.links.len() / LINK_WORDS) as u32,
        trace: if options.trace {
            device.addr(p.trace)
        } else {
            0
        },
        ..options.desc(workers, arrays.len())
    };
    set_up(gpu, &device, &mirror, &descs, &desc)?;
    let set = Instant::now();
    let admitted = gpu
        .residency
        .reserve(sms, workers, picked.resident / sms.max(1));
    // The launch, as the persistent backend makes it (`backend::persistent`).
    let config = LaunchConfig {
        grid_dim: (picked.blocks, 1, 1),
        block_dim: (options.threads, 1, 1),
        shared_mem_bytes: picked.shared,
    };
    let desc_ptr = device.addr(device.places.desc);
    let shared = Arc::new(Shared {
        tables: Mutex::new(mirror),
        device,
        stopped: stopped.clone(),
        ended: AtomicBool::new(false),
        failed: Mutex::new(None),
    });
    let launch = Launch {
        pieces,
        function: picked.function,
        config,
        desc: desc_ptr,
        shared: shared.clone(),
    };
    let started = Started {
        shared,
        copies,
        snapshots,
        admitted,
        desc,
        workers,
        steps: Steps {
            start,
            loaded,
            set,
            uploaded: set,
            launched: set,
            fed: set,
        },
    };
    Ok((started, launch))
}

/// Runs a region's body with its tasks streamed to the persistent kernel on `gpu` (see the
/// module docs). `record` runs the body into the recorder it is given and finishes the
/// inspection, as for [`super::run_cpu`]; the tables hold `capacity` tasks, and at least
/// [`MIN_CAPACITY`].
///
/// The kernel is chosen (its module loaded on a region's first call in a process) and its tables
/// set on a thread of its own while the body records, which then feeds them the batches, those
/// recorded meanwhile first, while a third uploads the host arrays and launches the kernel.
pub(crate) fn run_gpu(
    gpu: &Gpu,
    meta: RegionMeta,
    options: Options,
    arrays: &[Binding<'_>],
    capacity: usize,
    record: impl FnOnce(Box<dyn Feed>) -> Result<(Inspection, usize, usize), Error>,
) -> Result<GpuStreamed, Error> {
    let start = Instant::now();
    gpu.check_usable()?;
    let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
    gpu.check_code(code)?;
    // The copies to the tables after the body, and the reads after the kernel, are made here.
    gpu.bind()?;
    let _ordered = Ordered::after_earlier(arrays);
    // The body, while the set-up thread starts the kernel and then feeds it what the body
    // records. The feed, and with it the channel's sending end, is dropped with the recorder:
    // the feeder then ends.
    let stopped = Arc::new(AtomicBool::new(false));
    let (to, batches) = mpsc::channel();
    let feed = Feeding {
        to,
        stopped: stopped.clone(),
    };
    let args: Vec<Arg> = arrays.iter().map(Arg::of).collect();
    let (recorded, body_end, started) = std::thread::scope(|scope| {
        let starting = scope.spawn(|| {
            let set = set_up_kernel(gpu, &meta, &options, &args, capacity, &stopped);
            let (mut started, launch) =
                set.inspect_err(|_| stopped.store(true, Ordering::Relaxed))?;
            let mut steps = started.steps;
            let launching = scope.spawn(move || {
                let launched = launch.run(gpu, meta.name, &mut steps);
                (launched, steps)
            });
            feeder(&started.shared, batches);
            let fed = Instant::now();
            let (launched, steps) = launching
                .join()
                .unwrap_or_else(|panic| resume_unwind(panic));
            started.steps = Steps { fed, ..steps };
            Ok((started, launched?))
        });
        let recorded = catch_unwind(AssertUnwindSafe(|| record(Box::new(feed))));
        let body_end = Instant::now();
        let started = starting.join().unwrap_or_else(|panic| resume_unwind(panic));
        (recorded, body_end, started)
    });
    let (started, launched) = match started {
        Ok(started) => started,
        // Nothing was launched or written.
        Err(error) => return unlaunched(recorded, error),
    };
    let Started {
        shared,
        copies,
        snapshots,
        admitted,
        desc,
        workers,
        steps,
    } = started;
    let Went {
        begin,
        end,
        result,
        uploaded,
    } = launched;
    if let Err(error) = result {
        // No kernel runs: nothing was written, and the tables can go.
        let _ = gpu.stream().synchronize();
        drop(admitted);
        snapshots.restore(gpu)?;
        return unlaunched(recorded, error);
    }
    let failed = shared
        .failed
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    let fed_while_recording = match &recorded {
        Ok(Ok((_, _, early))) => *early,
        _ => 0,
    };
    let outcome = match (recorded, failed) {
        (Ok(Ok((inspection, ..))), None) if shared.ended.load(Ordering::Relaxed) => {
            Ok(Ok(inspection))
        }
        (Ok(Ok(done)), None) => {
            let (inspection, fed, _) = done;
            let n = inspection.task_count();
            let mut t = shared.tables.lock().unwrap_or_else(|e| e.into_inner());
            let rest = batch_of(&inspection, fed..n);
            let from = Marks::of(&t);
            let fits = !shared.stopped.load(Ordering::Relaxed) && t.publish(&rest.batch()).is_ok();
            let sent = fits
                .then(|| {
                    let places = &shared.device.places;
                    shared.device.send(&written(&t, places, &from))?;
                    t.stream().end(n as u32);
                    shared.device.send(&[total(&t, places)])
                })
                .transpose();
            drop(t);
            match sent {
                Ok(Some(())) => Ok(Ok(inspection)),
                Ok(None) => Ok(Err(inspection)),
                Err(error) => Err(Err(error)),
            }
        }
        (Ok(Ok(_)), Some(error)) | (Ok(Err(error)), _) => Err(Err(error)),
        (Err(panic), _) => Err(Ok(panic)),
    };
    let inspection = match outcome {
        Ok(Ok(inspection)) => inspection,
        stopped => {
            // Nothing the kernel did counts: it is stopped, and the host arrays were never written.
            shared.device.abort();
            let ended = wait_done(&end, GRACE);
            drop(admitted);
            if !ended {
                let error = Error::Stalled {
                    region: meta.name,
                    waited: GRACE,
                    unfinished: 0,
                    tasks: 0,
                    first: Vec::new(),
                };
                abandon(shared, copies);
                gpu.mark_stuck(&error);
                return Err(error);
            }
            let _ = gpu.stream().synchronize();
            snapshots.restore(gpu)?;
            return match stopped {
                Ok(Err(inspection)) => Ok(GpuStreamed::Outgrown(Box::new(inspection))),
                Err(Ok(panic)) => resume_unwind(panic),
                Err(Err(error)) => Err(error),
                Ok(Ok(_)) => unreachable!("a finished run is not stopped"),
            };
        }
    };
    // While the kernel runs the last tasks: the DAG's width, for the region's next streamed call.
    let widest = inspection.dag.max_level_width();
    WIDEST
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(meta.name, widest);
    let waiting = Instant::now();
    if let Some(stall) = watch(gpu, &end, &desc, Running::Workers, options.watchdog, || {
        false
    }) {
        return match finish_stall(stall, &inspection, &end) {
            Launched::Failed(error) => {
                let _ = gpu.stream().synchronize();
                snapshots.restore(gpu)?;
                Err(error)
            }
            Launched::Stuck(error) => {
                abandon(shared, copies);
                gpu.mark_stuck(&error);
                Err(error)
            }
        };
    }
    gpu.stream()
        .synchronize()
        .map_err(gpu.after_kernel(format!("running region `{}`", meta.name)))?;
    drop(admitted);
    let wait = waiting.elapsed();
    let kernel = begin
        .elapsed_ms(&end)
        .map_err(Error::cuda("timing the kernel"))?;
    let downloading = Instant::now();
    let device = &shared.device;
    let both = read(
        gpu,
        device.addr(device.places.error),
        device.places.stats.at + device.places.stats.bytes as u64 - device.places.error.at,
    )?;
    let record = records::<ErrorRecord>(&both[..size_of::<ErrorRecord>()])[0];
    if let Some(error) = fault(&record, &inspection, meta.location) {
        snapshots.restore(gpu)?;
        return Err(error);
    }
    let stats_at = (device.places.stats.at - device.places.error.at) as usize;
    let stats = records::<WorkerStats>(&both[stats_at..stats_at + device.places.stats.bytes]);
    let trace = if options.trace {
        let n = inspection.task_count();
        let bytes = read(
            gpu,
            device.addr(device.places.trace),
            (n * size_of::<TraceRecord>()) as u64,
        )?;
        Some(records::<TraceRecord>(&bytes))
    } else {
        None
    };
    // The written arrays back, whole.
    let back: Vec<Piece> = arrays
        .iter()
        .zip(&copies)
        .filter_map(|(b, copy)| {
            let copy = copy.as_ref().filter(|_| b.info.writable)?;
            Some(Piece {
                host: b.ptr as usize,
                device: copy.device_ptr(gpu.stream()).0,
                len: b.bytes,
            })
        })
        .collect();
    // SAFETY: each host range is a writable array the call borrows, each device range its copy,
    // and the kernel has ended.
    unsafe { gpu.download(&back) }?;
    let download = downloading.elapsed();
    drop(shared);
    drop(copies);
    let threads = options.threads;
    let (plan, mut report) = super::finished(
        meta,
        options,
        inspection,
        arrays,
        (Backend::Persistent, workers, threads),
        (
            Duration::from_secs_f64(f64::from(kernel) / 1e3),
            stats,
            trace,
        ),
    )?;
    // The set-up thread's steps, as long as they took, and as phases what the call waited for
    // them beyond the body.
    report.setup_time += steps.set - steps.start;
    let [load, tables, upload, launch] = steps.after(body_end);
    report.phases.load = load;
    report.phases.tables = tables;
    report.phases.upload = upload;
    report.phases.launch = launch;
    report.phases.wait = wait;
    report.phases.download = download;
    report.fed_while_recording = fed_while_recording;
    report.transfer_time = if uploaded {
        steps.uploaded - steps.set
    } else {
        Duration::ZERO
    } + download;
    Ok(GpuStreamed::Ran(
        Box::new(report.since(start)),
        Box::new(plan),
    ))
}

/// How a streamed call that launched no kernel ends once its body has returned: with the body's
/// panic, else with `error`.
fn unlaunched<T>(recorded: std::thread::Result<T>, error: Error) -> Result<GpuStreamed, Error> {
    if let Err(panic) = recorded {
        resume_unwind(panic);
    }
    Err(error)
}

/// Sets the device tables as an empty streamed run's on the region stream, and waits for it:
/// zeros, then the words that start otherwise (open lists, empty queues, the bounds past the
/// capacity, the counters, the stream's words, the error record), the array table and the
/// descriptor.
fn set_up(
    gpu: &Gpu,
    device: &Device,
    t: &StreamTables,
    arrays: &[ArrayDesc],
    desc: &RegionDesc,
) -> Result<(), Error> {
    let stream = gpu.stream().cu_stream();
    let p = &device.places;
    let fill = |place: Place, value: u32| {
        // SAFETY: the place lies in the allocation, which no kernel uses yet.
        unsafe { sys::cuMemsetD32Async(device.addr(place), value, place.bytes / 4, stream) }
            .result()
            .map_err(Error::cuda("setting a streamed region's tables"))
    };
    let put = |place: Place, offset: usize, bytes: &[u8]| {
        // SAFETY: as above; pageable memory is staged before the call returns, and the stream is
        // synchronized before `bytes` goes.
        unsafe { result::memcpy_htod_async(device.addr(place) + offset as u64, bytes, stream) }
            .map_err(Error::cuda("setting a streamed region's tables"))
    };
    // SAFETY: the whole allocation, which no kernel uses yet.
    unsafe { result::memset_d8_async(device.base, 0, p.end as usize, stream) }
        .map_err(Error::cuda("clearing a streamed region's tables"))?;
    fill(p.heads, protocol::OPEN)?;
    fill(p.next, NIL)?;
    fill(p.current, u32::MAX)?;
    if !t.affine.is_empty() {
        fill(p.affine, NO_PARENT)?;
        fill(p.ran_by, NOT_RUN)?;
    }
    let capacity = t.capacity;
    // The bounds past the capacity, as the mirror has them.
    // SAFETY: the mirror's record and offset at `capacity` are written (`StreamTables::new`).
    let (bound, end) = unsafe {
        (
            t.tasks.ptr.add(capacity).read(),
            t.offsets.ptr.add(capacity).read(),
        )
    };
    put(
        p.tasks,
        capacity * size_of::<TaskRecord>(),
        bytes_of(&[bound]),
    )?;
    put(p.offsets, capacity * 4, bytes_of(&[end]))?;
    let words = |w: &[taskweave_device::atomic::AtomicU32]| -> Vec<u32> {
        w.iter()
            .map(|a| {
                a.load(
                    taskweave_device::atomic::Scope::Gpu,
                    taskweave_device::atomic::Ordering::Relaxed,
                )
            })
            .collect()
    };
    put(p.head, 0, bytes_of(&words(&t.head)))?;
    put(p.tail, 0, bytes_of(&words(&t.tail)))?;
    let counters: Vec<u32> = (t.counters.0.iter())
        .map(|w| w.load(Ordering::Relaxed))
        .collect();
    put(p.counters, 0, bytes_of(&counters))?;
    put(p.words, 0, bytes_of(&words(&t.words)))?;
    put(p.error, 0, bytes_of(&[ErrorRecord::EMPTY]))?;
    put(p.arrays, 0, bytes_of(arrays))?;
    put(p.desc, 0, bytes_of(std::slice::from_ref(desc)))?;
    gpu.stream()
        .synchronize()
        .map_err(Error::cuda("setting a streamed region's tables"))
}

/// Reads `len` bytes at device address `src`, after the kernel.
fn read(gpu: &Gpu, src: u64, len: u64) -> Result<Vec<u8>, Error> {
    gpu.bind()?;
    let mut out = vec![0u8; len as usize];
    // SAFETY: `src` lies in the live tables; the kernel has ended.
    unsafe { result::memcpy_dtoh_sync(&mut out, src) }
        .map_err(Error::cuda("reading the error record and statistics"))?;
    Ok(out)
}

/// Leaves a stuck kernel's memory allocated for good.
fn abandon(shared: Arc<Shared>, copies: Vec<Option<CudaSlice<u8>>>) {
    std::mem::forget(shared);
    std::mem::forget(copies);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;

    /// The mirror's tables that batches write, as (place, bytes now).
    fn tables(t: &StreamTables, p: &Places) -> Vec<(Place, Vec<u8>)> {
        // SAFETY: each table holds `len` entries of its type, written before this reads them.
        let bytes =
            |ptr: *const u8, len: usize| unsafe { std::slice::from_raw_parts(ptr, len) }.to_vec();
        vec![
            (
                p.tasks,
                bytes(t.tasks.ptr.cast(), t.tasks.len * size_of::<TaskRecord>()),
            ),
            (p.args, bytes(t.args.ptr.cast(), t.args.len * 8)),
            (p.offsets, bytes(t.offsets.ptr.cast(), t.offsets.len * 4)),
            (p.children, bytes(t.children.ptr.cast(), t.children.len * 4)),
            (
                p.pending,
                bytes(t.pending.as_ptr().cast(), t.pending.len() * 4),
            ),
            (p.edges, bytes(t.edges.as_ptr().cast(), t.edges.len() * 4)),
            (p.links, bytes(t.links.as_ptr().cast(), t.links.len() * 4)),
            (p.words, bytes(t.words.as_ptr().cast(), WORDS * 4)),
        ]
    }

    /// Publishes `batch` into `t`, and checks that the pieces [`written`] gives cover every byte
    /// the batch changed, in a table's place, and end with the published count.
    fn check_batch(t: &mut StreamTables, p: &Places, batch: &Batch<'_>) {
        let before = tables(t, p);
        let from = Marks::of(t);
        t.publish(batch).expect("the batch fits");
        let pieces = written(t, p, &from);
        let last = pieces.last().expect("a batch is published");
        assert_eq!(last.place.at, p.words.at, "the published count goes last");
        for ((place, old), (_, new)) in before.iter().zip(tables(t, p)) {
            for (i, (a, b)) in old.iter().zip(&new).enumerate() {
                if a != b {
                    let covered = pieces
                        .iter()
                        .any(|w| w.place.at == place.at && w.bytes.contains(&i));
                    assert!(
                        covered,
                        "byte {i} of the table at {} changed, uncopied",
                        place.at
                    );
                }
            }
        }
        for w in &pieces {
            assert!(w.bytes.end <= w.place.bytes, "a piece past its table");
        }
    }

    #[test]
    fn a_batch_is_copied_wherever_the_mirror_changed() {
        let mut t = StreamTables::new(0, 0, 64, 4, Policy::Grr);
        let p = Places::of(&t, 2, false);
        // Every place on its own lines, in order, inside the allocation.
        let all = [
            p.tasks, p.args, p.offsets, p.children, p.rank, p.affine, p.ran_by, p.pending, p.next,
            p.head, p.tail, p.lock, p.counters, p.heads, p.edges, p.links, p.words, p.error,
            p.stats, p.current, p.abort, p.arrays, p.desc,
        ];
        for pair in all.windows(2) {
            assert_eq!(pair[0].at % 128, 0);
            assert!(pair[0].at + pair[0].bytes as u64 <= pair[1].at);
        }
        assert!(p.desc.at + p.desc.bytes as u64 <= p.end);
        let record = |kind, args| TaskRecord { kind, args };
        let args: Vec<u64> = (0..40).collect();
        // Tasks 0..4: 1 and 3 after 0, 2 after 1.
        let first = [0, 2, 4, 6, 8].map(|a| record(1, a));
        check_batch(
            &mut t,
            &p,
            &Batch {
                first: 0,
                records: &first,
                args: &args,
                args_from: 0,
                edges: &[(1, 0), (2, 1), (3, 0)],
            },
        );
        // Tasks 4..8: 4 after 3 and 6 after 2 (cross edges), 5 after 4, 7 after 6.
        let second = [8, 9, 12, 15, 20].map(|a| record(2, a));
        check_batch(
            &mut t,
            &p,
            &Batch {
                first: 4,
                records: &second,
                args: &args[8..],
                args_from: 8,
                edges: &[(4, 3), (5, 4), (6, 2), (7, 6)],
            },
        );
        assert_eq!((t.fed, t.cross_len, t.links_len), (8, 2, 3));
    }
}
