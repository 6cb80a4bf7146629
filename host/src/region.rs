//! Regions: what calling a `task_region!` function returns.
//!
//! 1. The generated function binds its arrays ([`Region::bind`], [`Region::bind_mut`]) and hands its
//!    body to [`Region::body`].
//! 2. The caller sets options ([`Region::policy`], [`Region::threads`], …) and calls
//!    [`Region::run`] with a [`Runtime`], or [`Region::inspect`] to get the DAG without running it.
//! 3. `run` inspects the body, then hands the DAG to the runtime's backend and returns a
//!    [`Report`].

use std::marker::PhantomData;
use std::panic::Location;
use std::sync::Arc;
use std::time::{Duration, Instant};

use taskweave_device::sched::Dispatch;

use crate::error::Error;
use crate::inspect::{ArrayArg, ArrayInfo, Inspection, ReadOnly, ReadWrite, Recorder};
use crate::report::Report;
use crate::resident::{Cell, DeviceArray, Done, Place};
use crate::runtime::{Backend, Runtime};
use crate::submit::{Pending, WriteBack};

/// What the macro knows about a region at compile time.
#[derive(Clone, Copy)]
pub struct RegionMeta {
    /// The region function's name.
    pub name: &'static str,
    /// The name of its GPU kernel.
    pub kernel: &'static str,
    /// The PTX of its crate, when the crate has a device build.
    pub ptx: Option<&'static str>,
    /// The cubin assembled from that PTX at build time; empty when the build had no `ptxas`.
    pub cubin: &'static [u8],
    /// Its task functions, by kind.
    pub kinds: &'static [&'static str],
    /// Its table from kind to body.
    pub dispatch: &'static dyn Dispatch,
    /// Where the region was called.
    pub location: &'static Location<'static>,
}

impl RegionMeta {
    /// Its crate's device code, when the crate has a device build.
    pub fn code(&self) -> Option<crate::gpu::Code> {
        self.ptx.map(|ptx| crate::gpu::Code {
            ptx,
            cubin: self.cubin,
        })
    }
}

/// Where freed tasks go; see [`abi::policy`](taskweave_device::abi::policy).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Juggler's local round robin.
    Lrr,
    /// Juggler's global round robin.
    #[default]
    Grr,
    /// Juggler's local first.
    Lf,
    /// Run one freed child locally, the rest by global round robin.
    Local,
    /// Keep freed children locally; idle workers steal.
    Steal,
    /// Run the freed child with the longest path to the end next; the rest by global round robin.
    Priority,
    /// Send each freed child to the worker that ran its affine parent, the parent it shares the
    /// most data with (run it next when that is this worker), unless that worker has work queued;
    /// the rest by global round robin. See
    /// [`Inspection::affine_parents`](crate::inspect::Inspection::affine_parents).
    Affinity,
    /// Place every task on a worker before the run, by a list schedule of the DAG
    /// ([`graph::list_schedule`](crate::graph::list_schedule): critical path first, a task next to
    /// its parents where that costs no time). Each worker runs its list in order and waits on a
    /// task's counter only for its parents on other workers: no queue at run time, and no atomic
    /// at all between tasks of one worker. Best when tasks cost about the same; a task much longer
    /// than the others holds back the rest of its worker's list.
    Static,
}

impl Policy {
    /// Every policy.
    pub const ALL: [Policy; 8] = [
        Self::Lrr,
        Self::Grr,
        Self::Lf,
        Self::Local,
        Self::Steal,
        Self::Priority,
        Self::Affinity,
        Self::Static,
    ];

    /// The policy's number in the device ABI.
    pub fn abi(self) -> u32 {
        use taskweave_device::abi::policy;
        match self {
            Self::Lrr => policy::LRR,
            Self::Grr => policy::GRR,
            Self::Lf => policy::LF,
            Self::Local => policy::LOCAL,
            Self::Steal => policy::STEAL,
            Self::Priority => policy::PRIORITY,
            Self::Affinity => policy::AFFINITY,
            Self::Static => policy::STATIC,
        }
    }

    /// The policy's lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lrr => "lrr",
            Self::Grr => "grr",
            Self::Lf => "lf",
            Self::Local => "local",
            Self::Steal => "steal",
            Self::Priority => "priority",
            Self::Affinity => "affinity",
            Self::Static => "static",
        }
    }
}

impl std::str::FromStr for Policy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown policy `{s}`: expected one of {}",
                    Self::ALL.map(Self::name).join(", ")
                )
            })
    }
}

/// How a region runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Threads per task block.
    pub threads: u32,
    /// Where freed tasks go.
    pub policy: Policy,
    /// Check every index against the declared ranges.
    pub checked: bool,
    /// Worker count; `None` takes it from occupancy (GPU) or cores (CPU).
    pub workers: Option<u32>,
    /// SM-aware workers: active workers per SM (see [`Region::workers_per_sm`]).
    pub per_sm: Option<u32>,
    /// SM-aware workers: the SMs the region may use (see [`Region::sms`]).
    pub sm_set: Option<std::ops::Range<u32>>,
    /// Threads per emulated block on the CPU backend.
    pub cpu_lanes: u32,
    /// Bytes of shared scratch per block for `Block::shared`.
    pub shared_bytes: u32,
    /// Record when and where each task ran.
    pub trace: bool,
    /// Abort when no task completes for this long.
    pub watchdog: Duration,
    /// The backend, when not the runtime's own.
    pub backend: Option<Backend>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            threads: 128,
            policy: Policy::default(),
            checked: true,
            workers: None,
            per_sm: None,
            sm_set: None,
            cpu_lanes: 1,
            shared_bytes: 8 * 1024,
            trace: false,
            watchdog: Duration::from_secs(10),
            backend: None,
        }
    }
}

impl Options {
    /// The descriptor fields these options set, for `workers` workers and `arrays` arrays.
    pub(crate) fn desc(&self, workers: u32, arrays: usize) -> taskweave_device::abi::RegionDesc {
        use taskweave_device::abi::{FLAG_CHECKED, FLAG_TRACE, RegionDesc};
        RegionDesc {
            n_workers: workers,
            policy: self.policy.abi(),
            flags: if self.checked { FLAG_CHECKED } else { 0 }
                | if self.trace { FLAG_TRACE } else { 0 },
            scratch_bytes: self.shared_bytes,
            n_arrays: arrays as u32,
            ..RegionDesc::default()
        }
    }
}

/// A region array bound for the run: its memory and how to move it.
pub(crate) struct Binding<'a> {
    pub info: ArrayInfo,
    /// Host memory of the array; null for an array resident on the GPU.
    pub ptr: *mut u8,
    pub bytes: usize,
    /// The device address of an array resident on the GPU.
    pub device: Option<u64>,
    /// The memory of a resident array (GPU or host), kept alive and ordered by the binding.
    pub cell: Option<Arc<Cell>>,
    _marker: PhantomData<&'a mut [u8]>,
}

impl Binding<'_> {
    /// The array's bytes as the caller left them.
    pub fn bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            // An array resident on the GPU has no host bytes.
            return &[];
        }
        // SAFETY: the binding points at `bytes` bytes of the caller's array, which the region
        // borrows for its lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// Overwrites the array with `data` (the same length).
    ///
    /// # Safety
    /// The array must be writable (`&mut` in the region) and no task may be running on it.
    pub unsafe fn write(&self, data: &[u8]) {
        assert_eq!(data.len(), self.bytes, "an array is written back whole");
        // SAFETY: the region holds the caller's `&mut` borrow; the caller guarantees no task runs.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, self.bytes) };
    }
}

type Body<'a> = Box<dyn FnOnce(&mut Recorder) -> Result<(), Error> + 'a>;

/// An edit of the inspection before it runs: the mutation-test seam ([`Region::edit_inspection`]).
type Edit<'a> = Box<dyn FnOnce(&mut Inspection) + 'a>;

/// A region, bound to its arguments and ready to run.
#[must_use = "a region does nothing until it is run"]
pub struct Region<'a> {
    pub(crate) meta: RegionMeta,
    pub(crate) arrays: Vec<Binding<'a>>,
    body: Option<Body<'a>>,
    edit: Option<Edit<'a>>,
    pub(crate) options: Options,
    /// For a submitted region: the runs in flight it must follow, and its own completion. The
    /// persistent GPU backend orders itself after them on the device; the others wait on the
    /// host.
    pub(crate) order: Option<(Vec<Arc<Done>>, Arc<Done>)>,
}

impl<'a> Region<'a> {
    /// A region with no arrays and an empty body (the macro fills both in).
    pub fn new(meta: RegionMeta) -> Self {
        Self {
            meta,
            arrays: Vec::new(),
            body: None,
            edit: None,
            options: Options::default(),
            order: None,
        }
    }

    fn push<T: Copy>(
        &mut self,
        ptr: *mut T,
        len: usize,
        name: &'static str,
        writable: bool,
    ) -> u32 {
        let slot = self.arrays.len() as u32;
        self.arrays.push(Binding {
            info: ArrayInfo {
                name,
                len,
                writable,
                elem_bytes: size_of::<T>(),
            },
            ptr: ptr.cast(),
            bytes: len * size_of::<T>(),
            device: None,
            cell: None,
            _marker: PhantomData,
        });
        slot
    }

    fn push_resident<T: Copy>(
        &mut self,
        array: &DeviceArray<T>,
        name: &'static str,
        writable: bool,
    ) -> u32 {
        let (place, cell) = array.location();
        let slot = match place {
            Place::Host(ptr) => self.push(ptr.cast::<T>(), array.len(), name, writable),
            Place::Device(address) => {
                let slot = self.push(std::ptr::null_mut::<T>(), array.len(), name, writable);
                self.arrays[slot as usize].device = Some(address);
                slot
            }
        };
        self.arrays[slot as usize].cell = Some(cell);
        slot
    }

    /// Binds a read-only array resident on the device (nothing is copied). The region keeps the
    /// memory alive itself, so the borrow ends here.
    pub fn bind_resident<T: Copy>(
        &mut self,
        array: &DeviceArray<T>,
        name: &'static str,
    ) -> ArrayArg<T, ReadOnly> {
        ArrayArg::new(self.push_resident(array, name, false), array.len())
    }

    /// Binds a read-write array resident on the device (nothing is copied). As for
    /// [`Region::bind_resident`], the borrow ends here: regions in flight on one array are ordered
    /// by their declared ranges (see [`DeviceArray`]).
    pub fn bind_resident_mut<T: Copy>(
        &mut self,
        array: &mut DeviceArray<T>,
        name: &'static str,
    ) -> ArrayArg<T, ReadWrite> {
        ArrayArg::new(self.push_resident(array, name, true), array.len())
    }

    /// Binds a read-only array (copied to the device).
    pub fn bind<T: Copy>(&mut self, data: &'a [T], name: &'static str) -> ArrayArg<T, ReadOnly> {
        let slot = self.push(data.as_ptr().cast_mut(), data.len(), name, false);
        ArrayArg::new(slot, data.len())
    }

    /// Binds a read-write array (copied to the device and back).
    pub fn bind_mut<T: Copy>(
        &mut self,
        data: &'a mut [T],
        name: &'static str,
    ) -> ArrayArg<T, ReadWrite> {
        let slot = self.push(data.as_mut_ptr(), data.len(), name, true);
        ArrayArg::new(slot, data.len())
    }

    /// Sets the inspection body.
    pub fn body(mut self, body: impl FnOnce(&mut Recorder) -> Result<(), Error> + 'a) -> Self {
        self.body = Some(Box::new(body));
        self
    }

    /// Test seam for mutation checks: `edit` changes the inspection (its tasks, argument words and
    /// DAG) after the body ran and before anything else sees it, so that a test can drop a
    /// dependence, reorder or skip tasks and show that a verification notices. The edited
    /// inspection must stay consistent: one record per task plus the sentinel, argument words
    /// the records index, a location per task, edges from lower to higher task ids.
    #[doc(hidden)]
    pub fn edit_inspection(mut self, edit: impl FnOnce(&mut Inspection) + 'a) -> Self {
        self.edit = Some(Box::new(edit));
        self
    }

    /// Threads per task block (default 128).
    pub fn threads(mut self, threads: u32) -> Self {
        self.options.threads = threads.max(1);
        self
    }

    /// The scheduling policy (default [`Policy::Grr`]).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.options.policy = policy;
        self
    }

    /// Index checks against the declared ranges (default on).
    pub fn checked(mut self, checked: bool) -> Self {
        self.options.checked = checked;
        self
    }

    /// A fixed worker count instead of one from occupancy or cores.
    pub fn workers(mut self, workers: u32) -> Self {
        self.options.workers = Some(workers.max(1));
        self
    }

    /// SM-aware workers: `n` active workers on each SM the region uses (the SM-centric
    /// transformation's filling-retreating, ICS'15). The persistent backend launches every block
    /// that fits on the GPU at once; at kernel entry each block reads its SM and claims a rank on
    /// it, the first `n` on each SM become workers `(sm - first) * n + rank` and the others
    /// return at once. So worker `w` runs on SM `first + w / n`, and the worker count is the SMs
    /// times `n`. Without [`Region::sms`], every SM is used.
    ///
    /// `n` above the kernel's occupancy (blocks of [`Region::threads`] threads and
    /// [`Region::shared_bytes`] that fit on one SM) is an [`Error::SmOptions`], as is setting
    /// [`Region::workers`] too.
    ///
    /// An SM that another kernel holds may get no block: the workers of its empty slots never
    /// run, their queues are not drained, and the watchdog reports a stall instead of a hang.
    /// The CPU backend has no SMs: it counts each of its default worker threads as one SM and
    /// starts `n` threads for each SM of the set. The level-by-level, graph and streams backends
    /// ignore the option.
    pub fn workers_per_sm(mut self, n: u32) -> Self {
        self.options.per_sm = Some(n);
        self
    }

    /// SM-aware workers on the SMs `sms` only (a range of SM ids, `0..sm_count`), each with
    /// [`Region::workers_per_sm`] workers (by default as many as the DAG's widest level needs,
    /// spread over the set, within occupancy). An empty range, or one past the device's SMs, is
    /// an [`Error::SmOptions`].
    pub fn sms(mut self, sms: std::ops::Range<u32>) -> Self {
        self.options.sm_set = Some(sms);
        self
    }

    /// Threads per emulated block on the CPU backend (default 1).
    pub fn cpu_lanes(mut self, lanes: u32) -> Self {
        self.options.cpu_lanes = lanes.max(1);
        self
    }

    /// Bytes of shared scratch per block (default 8 KiB).
    pub fn shared_bytes(mut self, bytes: u32) -> Self {
        self.options.shared_bytes = bytes;
        self
    }

    /// Records a start/end time, worker and SM per task into the report.
    pub fn trace(mut self, trace: bool) -> Self {
        self.options.trace = trace;
        self
    }

    /// Aborts the region when no task completes for `timeout` (default 10 s).
    pub fn watchdog(mut self, timeout: Duration) -> Self {
        self.options.watchdog = timeout;
        self
    }

    /// Runs on `backend` instead of the runtime's own (the GPU backends need a GPU runtime).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.options.backend = Some(backend);
        self
    }

    /// The options as set.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// Runs the body on the host to record the tasks and their dependences.
    pub fn inspect(mut self) -> Result<Inspection, Error> {
        self.inspect_body()
    }

    fn inspect_body(&mut self) -> Result<Inspection, Error> {
        let start = Instant::now();
        let arrays = self.arrays.iter().map(|b| b.info).collect();
        let mut recorder = Recorder::new(self.meta.name, self.meta.kinds, arrays);
        if self.options.policy == Policy::Affinity {
            recorder = recorder.with_ranges();
        }
        if let Some(body) = self.body.take() {
            body(&mut recorder)?;
        }
        let mut inspection = recorder.finish(start.elapsed());
        if let Some(edit) = self.edit.take() {
            edit(&mut inspection);
        }
        Ok(inspection)
    }

    /// Inspects the region and runs its DAG on `runtime`'s backend, after the regions in flight
    /// whose accesses to its resident arrays conflict with its own (see [`Region::submit`]).
    pub fn run(mut self, runtime: &Runtime) -> Result<Report, Error> {
        let inspection = self.inspect_body()?;
        let done = Arc::new(Done::default());
        for earlier in self.register(&inspection, &done) {
            earlier.wait();
        }
        let report = runtime.execute(&self, &inspection);
        done.set();
        report
    }

    /// Inspects the region and hands it to `runtime`'s helper threads, which run it once the
    /// regions in flight it conflicts with have ended (OpenMP's `target nowait` with `depend`
    /// clauses, taken from the declared accesses). Returns at once with a [`Pending`] to wait on.
    ///
    /// - Host arrays stay borrowed until [`Pending::wait`], which copies the results into the
    ///   ones the region writes. The helpers work on copies taken now, so a `Pending` that is
    ///   leaked instead of waited on loses its results but never touches the caller's memory.
    /// - Resident arrays ([`DeviceArray`]) are shared: a later region that reads what this one
    ///   writes, or writes what it reads or writes (overlapping element ranges), waits for it; a
    ///   region on other arrays or other ranges runs beside it.
    ///
    /// Inspection errors (bad ranges) are returned here; errors of the run from
    /// [`Pending::wait`].
    pub fn submit(mut self, runtime: &Runtime) -> Result<Pending<'a>, Error> {
        let inspection = self.inspect_body()?;
        let done = Arc::new(Done::default());
        let after = self.register(&inspection, &done);
        let (mut region, copies, writeback) = self.detach();
        region.order = Some((after, done.clone()));
        Ok(runtime.submit(region, inspection, copies, done, writeback))
    }

    /// This region with its host arrays copied into buffers it owns, so that it can run on another
    /// thread after the caller's borrows end; plus the buffers, and where each writable host
    /// array's result goes back.
    fn detach(mut self) -> (Region<'static>, Vec<Vec<u64>>, Vec<WriteBack<'a>>) {
        let mut copies = Vec::new();
        let mut writeback = Vec::new();
        let arrays = std::mem::take(&mut self.arrays)
            .into_iter()
            .map(|b| {
                let mut ptr = b.ptr;
                if b.cell.is_none() && !b.ptr.is_null() {
                    let mut copy = vec![0u64; b.bytes.div_ceil(8).max(1)];
                    let bytes = b.bytes();
                    // SAFETY: `copy` holds at least `bytes.len()` bytes; they do not overlap.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            bytes.as_ptr(),
                            copy.as_mut_ptr().cast::<u8>(),
                            bytes.len(),
                        )
                    };
                    // The heap block does not move with the vector, and `as_mut_ptr` creates no
                    // reference to it: the pointer stays valid while the job owns `copies`.
                    ptr = copy.as_mut_ptr().cast();
                    if b.info.writable {
                        writeback.push(WriteBack {
                            copy: copies.len(),
                            binding: Binding {
                                info: b.info,
                                ptr: b.ptr,
                                bytes: b.bytes,
                                device: None,
                                cell: None,
                                _marker: PhantomData,
                            },
                        });
                    }
                    copies.push(copy);
                }
                Binding {
                    info: b.info,
                    ptr,
                    bytes: b.bytes,
                    device: b.device,
                    cell: b.cell,
                    _marker: PhantomData,
                }
            })
            .collect();
        let region = Region {
            meta: self.meta,
            arrays,
            body: None,
            edit: None,
            options: self.options.clone(),
            order: None,
        };
        (region, copies, writeback)
    }

    /// Waits on the host for the runs in flight this one follows (see [`Region::order`]).
    pub(crate) fn wait_for_earlier(&self) {
        if let Some((after, _)) = &self.order {
            for earlier in after {
                earlier.wait();
            }
        }
    }

    /// Registers this run's accesses with the resident arrays it binds, and returns the runs in
    /// flight it must wait for. One lock orders all registrations, so two regions registering at
    /// once cannot each wait for the other.
    pub(crate) fn register(&self, ins: &Inspection, done: &Arc<Done>) -> Vec<Arc<Done>> {
        static REGISTRATION: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _order = REGISTRATION
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut after: Vec<Arc<Done>> = Vec::new();
        for (binding, footprint) in self.arrays.iter().zip(&ins.footprints) {
            if let Some(cell) = &binding.cell {
                for d in cell.register(done, footprint.read.clone(), footprint.write.clone()) {
                    if !after.iter().any(|a| Arc::ptr_eq(a, &d)) {
                        after.push(d);
                    }
                }
            }
        }
        after
    }
}
