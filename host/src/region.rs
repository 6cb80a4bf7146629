//! Regions: what calling a `task_region!` function returns, and how a region or its plan runs.
//!
//! 1. The generated function binds its arrays ([`Region::bind`], [`Region::bind_mut`],
//!    [`Region::bind_resident`], …) and hands its body to [`Region::body`].
//! 2. The caller sets options ([`Region::policy`], [`Region::threads`], …) and calls
//!    [`Region::run`] with a [`Runtime`], [`Region::submit`] to run it without waiting,
//!    [`Region::plan`] to inspect it once and run it many times ([`Plan::run`]), or
//!    [`Region::inspect`] to get the DAG without running it.
//! 3. `run` inspects the body into a [`Plan`], then hands the plan and the region's arrays (a
//!    call) to the runtime, which runs it on a backend and returns a [`Report`]. The runtime keeps
//!    the plan: a later `run` of the region with the same scalar arguments, array shapes and
//!    options runs it again without inspecting (see [`Runtime::cache_plans`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backend::prestage;
use crate::cache::PlanKey;
use crate::call::{self, Binding, Call, Order, Prestaged};
use crate::costs::TaskCosts;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::graph::Piping;
use crate::inspect::{ArrayArg, Inspection, ReadOnly, ReadWrite, Recorder};
use crate::meta::RegionMeta;
use crate::options::{Backend, Options, Policy};
use crate::plan::Plan;
use crate::report::Report;
use crate::resident::{DeviceArray, Done};
use crate::runtime::Runtime;
use crate::stream::gpu::GpuStreamed;
use crate::submit::{self, Job, Pending};

type Body<'a> = Box<dyn FnOnce(&mut Recorder) -> Result<(), Error> + 'a>;
type Edit<'a> = Box<dyn FnOnce(&mut Inspection) + 'a>;

/// A region, bound to its arguments and ready to run.
#[must_use = "a region does nothing until it is run"]
pub struct Region<'a> {
    meta: RegionMeta,
    arrays: Vec<Binding<'a>>,
    body: Option<Body<'a>>,
    options: Options,
    /// The test seam of [`Region::edit_inspection`].
    edit: Option<Edit<'a>>,
    /// The words of the scalar arguments, when every one is a [`Scalar`](taskweave_device::Scalar)
    /// ([`Region::key_words`]); `None` keeps the region out of the runtime's plan cache.
    key: Option<Vec<u64>>,
    /// Whether `run` may use the runtime's plan cache ([`Region::cache`]).
    cache: bool,
}

impl<'a> Region<'a> {
    /// A region with no arrays and an empty body (the macro fills both in).
    pub fn new(meta: RegionMeta) -> Self {
        Self {
            meta,
            arrays: Vec::new(),
            body: None,
            options: Options::default(),
            edit: None,
            key: None,
            cache: true,
        }
    }

    /// The words of the region's scalar arguments, in order, for the runtime's plan cache
    /// (`task_region!` passes them): `None` for an argument that is not a
    /// [`Scalar`](taskweave_device::Scalar), which keeps every call of the region out of the
    /// cache. A region never given its words is never cached.
    #[doc(hidden)]
    pub fn key_words(&mut self, words: &[Option<u64>]) {
        self.key = words.iter().copied().collect();
    }

    fn push(&mut self, binding: Binding<'a>) -> u32 {
        self.arrays.push(binding);
        self.arrays.len() as u32 - 1
    }

    fn push_resident<T: Copy>(
        &mut self,
        array: &DeviceArray<T>,
        name: &'static str,
        writable: bool,
    ) -> u32 {
        let (place, cell) = array.location();
        self.push(Binding::resident::<T>(
            place,
            cell,
            array.len(),
            name,
            writable,
        ))
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
        let slot = self.push(Binding::host(
            data.as_ptr().cast_mut(),
            data.len(),
            name,
            false,
        ));
        ArrayArg::new(slot, data.len())
    }

    /// Binds a read-write array (copied to the device and back).
    pub fn bind_mut<T: Copy>(
        &mut self,
        data: &'a mut [T],
        name: &'static str,
    ) -> ArrayArg<T, ReadWrite> {
        let slot = self.push(Binding::host(data.as_mut_ptr(), data.len(), name, true));
        ArrayArg::new(slot, data.len())
    }

    /// Binds an array the region writes before it reads it (a region parameter marked
    /// `#[output]`): copied back like [`Region::bind_mut`], but its host contents are not copied
    /// to the device, except for the elements inside the tasks' written span that no task
    /// declares written, which must come back as they were.
    ///
    /// Inspection checks the first half of the promise: a task that reads an element no earlier
    /// task declares written is refused with [`Error::UnwrittenOutput`]. The second half is the
    /// caller's: a task writes every element of the ranges it declares written. An element
    /// declared written but left unwritten comes back as zero from the GPU backends, and as it
    /// was from the CPU backend, which works in place.
    pub fn bind_output<T: Copy>(
        &mut self,
        data: &'a mut [T],
        name: &'static str,
    ) -> ArrayArg<T, ReadWrite> {
        let mut binding = Binding::host(data.as_mut_ptr(), data.len(), name, true);
        binding.info.output = true;
        let slot = self.push(binding);
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
    /// the records index, a location per task, edges from lower to higher task ids. See also
    /// [`Plan::edit_inspection`].
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

    /// The scheduling policy. By default the runtime chooses: [`Policy::Grr`] for a call that
    /// inspects, and the static plan for a plan it runs again, made on a thread of its own after
    /// the plan's first call and taken up by the first call after it is ready (see
    /// [`Options::run_policy`](crate::Options::run_policy)).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.options.policy = Some(policy);
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

    /// Runs the DAG's critical path alone on the first `n` SMs of the set (SM-aware workers under
    /// [`Policy::Static`](crate::Policy::Static)): the tasks on it, in the static schedule's model
    /// where every task costs the same, go to the first worker of each of those SMs, the other
    /// workers there get none, and every other task goes to the other SMs. The schedule alone
    /// already keeps a chain on one worker; this keeps the workers that would share its SM idle,
    /// so that a factorization's chain of panel tasks (POTRF, the TRSM below it, the update of
    /// the next diagonal tile) does not share an SM with the updates that run beside it. Without
    /// `workers_per_sm` or `sms`, under another policy, or with no SM left for the other tasks,
    /// the run is refused with [`Error::SmOptions`](crate::Error::SmOptions). 0 (the default)
    /// sets nothing apart.
    ///
    /// Give [`Region::task_costs`] with it where paths tie in tasks: counted in tasks, every
    /// task on a path as long as the longest is critical, and the chain workers run them all in
    /// turn (the examples' Cholesky at N = 4096 on the H200: 57 ms against 4 without the option;
    /// with costs, 3.7).
    pub fn critical_path_sms(mut self, n: u32) -> Self {
        self.options.critical_sms = n;
        self
    }

    /// Plans the static policy's schedule with what each task kind costs ([`TaskCosts`]): ranks
    /// are then the longest paths in time, not in tasks, and each task goes to the worker where
    /// that model starts it earliest. [`Report::task_costs`](crate::Report::task_costs) measures
    /// them from a traced run. Also sets apart by that model's critical path under
    /// [`Region::critical_path_sms`]. Costs under another policy, naming a task the region does
    /// not have, or leaving one of its tasks out are refused with
    /// [`Error::TaskCosts`](crate::Error::TaskCosts) when the region is inspected.
    pub fn task_costs(mut self, costs: TaskCosts) -> Self {
        self.options.task_costs = Some(costs);
        self
    }

    /// Streams the call (default off): its tasks start on the workers while the body still
    /// records them, a batch at a time, instead of after the whole region is inspected. A region
    /// called once then waits for its body and the last of its tasks, not for both one after the
    /// other. The results are the same as without streaming, and a body that fails or panics
    /// leaves the region's arrays as they were.
    ///
    /// Streams on the CPU backend (host arrays) and the persistent GPU backend (host arrays and
    /// arrays resident on the GPU), for regions without wide tasks or SM-aware workers, under the
    /// policies that do not plan ahead, traced or not; a call that cannot stream runs as it would
    /// without (see [`Report::streamed`]). Batches go while every array the region writes keeps
    /// to whole tiles of one size, whose edges are known as each task is recorded; the rest of
    /// the region goes when its body returns.
    ///
    /// On the GPU a streamed call copies its host arrays up whole (what the tasks touch is not
    /// known yet), keeps a copy of each writable resident array to put back if the call fails,
    /// and waits for every run in flight on its resident arrays. A region that outgrows the
    /// tables (sized by its last call in the process, at least 65,536 tasks) is stopped and runs
    /// inspected, its arrays as they were. A streamed call's plan is kept as an inspected call's
    /// is: the region's next call runs it.
    pub fn stream(mut self, on: bool) -> Self {
        self.options.stream = on;
        self
    }

    /// Threads per emulated block on the CPU backend (default 1).
    pub fn cpu_lanes(mut self, lanes: u32) -> Self {
        self.options.cpu_lanes = lanes.max(1);
        self
    }

    /// Bytes of shared scratch per block, for [`Block::shared`](crate::Block::shared) and the
    /// tile library, instead of the default: 8 KiB, and for kernels that use the tile library what
    /// every tile operation needs at the region's block size
    /// ([`tile::scratch_need`](taskweave_tile::scratch_need), 20 KiB at 128 threads),
    /// raised on the GPU to the most that leaves the kernel's occupancy as it is (more pipeline
    /// stages, and staged panels, for the same number of resident blocks).
    pub fn shared_bytes(mut self, bytes: u32) -> Self {
        self.options.shared_bytes = Some(bytes);
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

    /// Whether [`Region::run`] may reuse the plan of an earlier call of this region with the same
    /// scalar arguments, array shapes and options, kept by the runtime (default on; see
    /// [`Runtime::cache_plans`]). Turn it off for a region whose body spawns tasks by something
    /// other than its arguments: a global, the clock, a random source. In debug builds a cached
    /// plan is checked against a fresh inspection at every call, and such a body fails with
    /// [`Error::PlanMismatch`].
    pub fn cache(mut self, on: bool) -> Self {
        self.cache = on;
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
        let mut recorder = Recorder::new(self.meta.name, self.meta.kinds, arrays)
            .with_args(self.meta.args)
            .with_blocks(self.meta.dispatch);
        if self.options.run_policy().row().needs_ranges {
            recorder = recorder.with_ranges();
        }
        if let Some(body) = self.body.take() {
            body(&mut recorder)?;
        }
        let mut inspection = recorder.finish(start)?;
        if let Some(edit) = self.edit.take() {
            edit(&mut inspection);
        }
        Ok(inspection)
    }

    /// Runs the region streamed on the CPU backend's `workers` threads (see [`Region::stream`]);
    /// `capacity` sets the tables' task capacity (tests; `None`: the default), `keep_edges` keeps
    /// every edge it fed (tests), `piping` when the tracker moves to a thread of its own (tests;
    /// `None`: as for any region when the workers leave two cores idle, else never).
    pub(crate) fn run_streamed(
        mut self,
        workers: u32,
        capacity: Option<usize>,
        keep_edges: bool,
        piping: Option<Piping>,
    ) -> Result<crate::stream::Streamed, Error> {
        let body = self.body.take();
        let (meta, options) = (self.meta, self.options.clone());
        let piping =
            piping.unwrap_or_else(|| Piping::beside(options.workers.unwrap_or(workers) as usize));
        let hint = capacity.unwrap_or(crate::inspect::size_hint(meta.name) + 1);
        let arrays = std::mem::take(&mut self.arrays);
        let infos: Vec<_> = arrays.iter().map(|b| b.info).collect();
        let at_least = capacity.is_none();
        crate::stream::run_cpu(
            meta,
            options,
            &arrays,
            workers,
            (hint, at_least),
            keep_edges,
            |feed| {
                let ranges = self.options.run_policy().row().needs_ranges;
                record_streamed(meta, infos, ranges, body, (feed, piping))
            },
        )
    }

    /// Runs the region streamed to the persistent kernel on `gpu` (see [`Region::stream`]): how it
    /// ended, and the region's arrays.
    fn run_streamed_gpu(mut self, gpu: &Gpu) -> Result<(GpuStreamed, Vec<Binding<'a>>), Error> {
        let body = self.body.take();
        let (meta, options) = (self.meta, self.options.clone());
        let capacity = crate::inspect::size_hint(meta.name) + 1;
        let arrays = std::mem::take(&mut self.arrays);
        let infos: Vec<_> = arrays.iter().map(|b| b.info).collect();
        let ranges = self.options.run_policy().row().needs_ranges;
        let ended = crate::stream::gpu::run_gpu(gpu, meta, options, &arrays, capacity, |feed| {
            record_streamed(meta, infos, ranges, body, (feed, Piping::Default))
        })?;
        Ok((ended, arrays))
    }

    /// The region's plan, and its arrays: the body inspected once.
    fn into_plan(mut self) -> Result<(Plan, Vec<Binding<'a>>), Error> {
        let inspection = self.inspect_body()?;
        let plan = Plan::new(self.meta, self.options, inspection)?;
        Ok((plan, self.arrays))
    }

    /// [`Region::into_plan`], with the host arrays uploaded to `runtime`'s GPU meanwhile, on
    /// another thread, when the region runs on a GPU backend and they are large enough for it to
    /// pay (the upload then overlaps inspection).
    fn into_plan_uploading(
        mut self,
        runtime: &Runtime,
    ) -> Result<(Plan, Vec<Binding<'a>>, Option<Prestaged>, Duration), Error> {
        let hosts: Vec<Option<prestage::Host>> = self
            .arrays
            .iter()
            .map(|b| {
                b.device
                    .is_none()
                    .then_some((b.ptr as usize, b.bytes, b.info.output))
            })
            .collect();
        let on_gpu = runtime.gpu_for(self.options.backend);
        let gpu = on_gpu.filter(|_| prestage::worth_it(&hosts));
        // The persistent kernel's module loads meanwhile too: on a region's first call in a
        // process it takes milliseconds (tens for a large region), as long as inspection does.
        let persistent = self.options.backend.unwrap_or(runtime.backend()) == Backend::Persistent;
        let (meta, checked) = (self.meta, self.options.checked);
        let (inspection, prestaged, loading) = std::thread::scope(|scope| {
            let preload = on_gpu
                .filter(|g| persistent && g.needs_preload(&meta, checked))
                .map(|gpu| scope.spawn(move || gpu.preload(&meta, checked)));
            // SAFETY: the host arrays stay borrowed by the region, unwritten, until the scope ends.
            let upload = gpu.map(|gpu| scope.spawn(|| unsafe { prestage::upload(gpu, &hosts) }));
            let inspection = self.inspect_body();
            // An upload that failed is done again by the backend, which reports the error.
            let prestaged = upload.and_then(|u| u.join().ok()).and_then(Result::ok);
            // What the module's load took beyond the inspection: the call's `load` phase.
            let waiting = Instant::now();
            let _ = preload.map(|p| p.join());
            (inspection, prestaged, waiting.elapsed())
        });
        let plan = Plan::new(self.meta, self.options, inspection?)?;
        Ok((plan, self.arrays, prestaged, loading))
    }

    /// Inspects the region once and returns its [`Plan`], to run again and again with
    /// [`Plan::run`] on the arrays of later calls of the same shapes. The region's own arrays are
    /// not used: nothing runs yet.
    ///
    /// `runtime` is the one the plan will run on: a backend it cannot run is refused here
    /// ([`Error::NoGpu`]), before anything is inspected. The backends keep their tables in the plan
    /// from its first run on.
    pub fn plan(self, runtime: &Runtime) -> Result<Plan, Error> {
        runtime.check_backend(self.options.backend)?;
        Ok(self.into_plan()?.0)
    }

    /// Inspects the region and runs its DAG on `runtime`'s backend, after the regions in flight
    /// whose accesses to its resident arrays conflict with its own (see [`Region::submit`]).
    ///
    /// On a GPU backend, host arrays large enough for it to pay are uploaded on another thread
    /// while the body is inspected.
    ///
    /// The runtime keeps the plan (see [`Runtime::cache_plans`]): a later call of the region with
    /// the same scalar arguments, array shapes and options runs it without inspecting, and from
    /// its third call on with the backend's tables kept on the device, as [`Plan::run`] does.
    pub fn run(self, runtime: &Runtime) -> Result<Report, Error> {
        let start = Instant::now();
        let key = self.plan_key(runtime);
        if let Some(key) = &key
            && let Some(mut plan) = runtime.take_plan(key)
        {
            let report = plan.run_again(self, runtime, true);
            // A plan whose region built another DAG is wrong for the key: it is dropped.
            if !matches!(report, Err(Error::PlanMismatch { .. })) {
                runtime.keep_plan(key.clone(), plan);
            }
            return report.map(|r| r.since(start));
        }
        if let Some(workers) = runtime.cpu_workers()
            && crate::stream::streams(&self.meta, &self.options, &self.arrays)
        {
            return Ok(self.run_streamed(workers, None, false, None)?.report);
        }
        let streamed = runtime.gpu_for(self.options.backend).filter(|_| {
            crate::stream::gpu::streams(&self.meta, &self.options, &self.arrays, runtime.backend())
        });
        let (meta, options) = (self.meta, self.options.clone());
        let (mut plan, arrays, prestaged, loading) = match streamed {
            Some(gpu) => match self.run_streamed_gpu(gpu)? {
                (GpuStreamed::Ran(report, mut plan), _) => {
                    if let Some(key) = key {
                        plan.start_upgrade(report.workers);
                        runtime.keep_plan(key, *plan);
                    }
                    return Ok(report.since(start));
                }
                // Past the tables' capacity: the finished inspection runs as an inspected call.
                (GpuStreamed::Outgrown(inspection), arrays) => {
                    let plan = Plan::new(meta, options, *inspection)?;
                    (plan, arrays, None, Duration::ZERO)
                }
            },
            None => self.into_plan_uploading(runtime)?,
        };
        let spent = (plan.inspection().time, plan.inspection().edges_time);
        let report = run_call(&mut plan, arrays, runtime, spent, false, prestaged).map(|mut r| {
            r.phases.load += loading;
            r
        });
        if let Some(key) = key {
            // The next call of the region runs this plan again: under the default policy, its
            // static plan is made meanwhile.
            if let Ok(report) = &report {
                plan.start_upgrade(report.workers);
            }
            runtime.keep_plan(key, plan);
        }
        report.map(|r| r.since(start))
    }

    /// Calls `f` with the inspection of the plan `runtime` keeps for this call, if it keeps one:
    /// for tests that compare it with a fresh inspection.
    #[doc(hidden)]
    pub fn with_cached_inspection<R>(
        &self,
        runtime: &Runtime,
        f: impl FnOnce(&Inspection) -> R,
    ) -> Option<R> {
        let key = self.plan_key(runtime)?;
        runtime.with_plan(&key, |plan| f(plan.inspection()))
    }

    /// The key of this call in `runtime`'s plan cache; `None` when the call stays out of it: the
    /// cache is off (in the runtime or for this region), a scalar argument is not a
    /// [`Scalar`](taskweave_device::Scalar), or a test edits the inspection.
    fn plan_key(&self, runtime: &Runtime) -> Option<PlanKey> {
        if !self.cache || self.edit.is_some() || !runtime.caches_plans() {
            return None;
        }
        Some(PlanKey::new(
            self.meta,
            self.key.clone()?,
            self.arrays.iter().map(|b| b.info).collect(),
            self.options.clone(),
        ))
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
    pub fn submit(self, runtime: &Runtime) -> Result<Pending<'a>, Error> {
        let start = Instant::now();
        let (plan, arrays) = self.into_plan()?;
        let done = Arc::new(Done::default());
        let after = call::register(&arrays, &plan.inspection().footprints, &done);
        let (arrays, copies, writeback) = submit::detach(arrays);
        let (job, pending) = Job::new(plan, arrays, copies, Order { after, done }, writeback);
        runtime.submit(job);
        Ok(pending.started(start))
    }
}

/// Runs a streamed call's `body` into a recorder fed by `feed`, and finishes the inspection:
/// it, how many tasks were fed in all, and how many while the body ran (see
/// [`crate::stream::run_cpu`]).
fn record_streamed(
    meta: RegionMeta,
    infos: Vec<crate::inspect::ArrayInfo>,
    ranges: bool,
    body: Option<Body<'_>>,
    (feed, piping): (Box<dyn crate::inspect::Feed>, Piping),
) -> Result<(Inspection, usize, usize), Error> {
    let start = Instant::now();
    let mut recorder = Recorder::new(meta.name, meta.kinds, infos)
        .with_args(meta.args)
        .with_blocks(meta.dispatch)
        .with_feed(feed, piping);
    if ranges {
        recorder = recorder.with_ranges();
    }
    if let Some(body) = body {
        body(&mut recorder)?;
    }
    // What went while the body ran; then what it recorded since.
    let early = recorder.fed();
    recorder.feed_all();
    let fed = recorder.fed();
    // Every task fed: the workers may end before the inspection is finished.
    recorder.end_feed();
    Ok((recorder.finish(start)?, fed, early))
}

/// Runs `plan` on `arrays`, after the runs in flight whose accesses to its resident arrays
/// conflict with its own; `spent` is what this call spent inspecting (all of it, and tracking the
/// dependences), and `reused` whether
/// the plan runs again (see [`Call::reused`]). The bindings are
/// dropped before the run is marked done, so that a resident array whose runs have all ended is
/// held by nothing else ([`DeviceArray::into_cuda`]).
fn run_call(
    plan: &mut Plan,
    arrays: Vec<Binding<'_>>,
    runtime: &Runtime,
    spent: (Duration, Duration),
    reused: bool,
    prestaged: Option<Prestaged>,
) -> Result<Report, Error> {
    let done = Arc::new(Done::default());
    for earlier in call::register(&arrays, &plan.inspection().footprints, &done) {
        earlier.wait();
    }
    if reused {
        plan.take_upgrade();
    }
    let (work, kept) = plan.parts();
    let mut call = Call {
        work,
        arrays: &arrays,
        order: None,
        inspect_time: spent.0,
        edges_time: spent.1,
        reused,
        prestaged,
    };
    let report = runtime.execute_making_room(&mut call, kept);
    drop(arrays);
    done.set();
    if reused && let Ok(report) = &report {
        plan.start_upgrade(report.workers);
    }
    report
}

impl Plan {
    /// Runs the plan on the arrays of `region`, a new call of the region it was made from with
    /// arrays of the same shapes, on `runtime`. The region's body does not run: the plan's DAG
    /// does, so the call must pass the scalars the plan was made with. With [`Plan::verify`] on
    /// (by default in debug builds) the body runs too and the call fails with
    /// [`Error::PlanMismatch`] when it builds another DAG.
    ///
    /// Options set on `region` must be the plan's own, or left unset; another region, or arrays
    /// of other lengths, element sizes or access modes, are an [`Error::PlanMismatch`].
    pub fn run(&mut self, region: Region<'_>, runtime: &Runtime) -> Result<Report, Error> {
        let start = Instant::now();
        self.run_again(region, runtime, false)
            .map(|r| r.since(start))
    }

    /// [`Plan::run`]; `cached` when the plan came from the runtime's plan cache, for the advice a
    /// mismatch gives.
    fn run_again(
        &mut self,
        mut region: Region<'_>,
        runtime: &Runtime,
        cached: bool,
    ) -> Result<Report, Error> {
        self.check_arrays(&region.meta, region.arrays.iter().map(|b| b.info))?;
        if region.options != Options::default() && region.options != *self.options() {
            return Err(Error::PlanMismatch {
                region: self.region(),
                detail: format!(
                    "the call sets options {:?}, the plan has {:?}; set them before making the plan",
                    region.options,
                    self.options()
                ),
            });
        }
        let mut spent = (Duration::ZERO, Duration::ZERO);
        if self.verifies() {
            region.options = self.options().clone();
            let fresh = region.inspect_body()?;
            spent = (fresh.time, fresh.edges_time);
            if cached {
                self.check_cached_inspection(&fresh)?;
            } else {
                self.check_inspection(&fresh)?;
            }
        }
        run_call(self, region.arrays, runtime, spent, true, None)
    }
}
