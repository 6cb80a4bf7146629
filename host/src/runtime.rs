//! The runtime: which backend runs regions.
//!
//! 1. [`Runtime::new`] takes the GPU when there is one and says why not otherwise, then falls back
//!    to the CPU backend.
//! 2. [`Runtime::gpu`] insists on the GPU; [`Runtime::cpu`] never touches it;
//!    [`Runtime::on_stream`] runs regions on a cudarc stream the caller already has, in order with
//!    the caller's own work on it, and [`Runtime::adopt`] takes the caller's [`CudaSlice`] as a
//!    resident array.
//! 3. [`Region::run`](crate::Region::run) and [`Plan::run`](crate::Plan::run) hand each call to
//!    the runtime, which runs it on the backend the region names or its own (see the `backend`
//!    module's table).
//! 4. The runtime keeps the plans of the regions it ran ([`Runtime::cache_plans`]): a region
//!    called again with the same scalar arguments, array shapes and options is not inspected
//!    again.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use cudarc::driver::{CudaSlice, CudaStream};

use crate::backend::{self, Executor, Kept, default_cpu_workers};
use crate::cache::{PlanCache, PlanKey};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::options::Backend;
use crate::pinned::Pinned;
use crate::plan::Plan;
use crate::report::Report;
use crate::resident::DeviceArray;
use crate::submit::{HELPERS, Helpers, Job};

enum Engine {
    /// Boxed: a `Gpu` is large, and a runtime is often moved.
    Gpu(Box<Gpu>),
    Cpu {
        workers: u32,
    },
}

/// Runs regions on one backend.
pub struct Runtime {
    /// The plans of earlier calls ([`Runtime::cache_plans`]). First, so that they are dropped
    /// first: what a backend keeps in a plan (device memory, CUDA graphs of the region's kernel)
    /// goes before the GPU handle, as when a caller drops a plan before its runtime. Dropped
    /// after it, a process that had kept a plan hung at exit on the H200.
    plans: Mutex<PlanCache>,
    engine: Engine,
    fallback: Option<String>,
    /// The helper threads of regions submitted without waiting, started on the first submit.
    helpers: OnceLock<Result<Helpers, String>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Default for Runtime {
    fn default() -> Self {
        Self::new()
    }
}

impl Runtime {
    /// The GPU if one is usable, else the CPU backend (see [`Runtime::fallback_reason`]).
    pub fn new() -> Self {
        match Gpu::new(0) {
            Ok(gpu) => Self {
                engine: Engine::Gpu(Box::new(gpu)),
                fallback: None,
                helpers: OnceLock::new(),
                plans: Mutex::new(PlanCache::from_env()),
            },
            Err(e) => Self {
                fallback: Some(e.to_string()),
                ..Self::cpu()
            },
        }
    }

    /// The persistent GPU backend on GPU `ordinal`, or why not.
    pub fn gpu(ordinal: usize) -> Result<Self, Error> {
        Ok(Self {
            engine: Engine::Gpu(Box::new(Gpu::new(ordinal)?)),
            fallback: None,
            helpers: OnceLock::new(),
            plans: Mutex::new(PlanCache::from_env()),
        })
    }

    /// The persistent GPU backend on the device of `stream`, a cudarc stream the caller already
    /// has: regions run with [`Region::run`](crate::Region::run) and plans go on that stream, in
    /// order with the caller's own work on it (submitted regions run on helper streams of the
    /// same context). The context's settings are left as the caller made them.
    ///
    /// ```no_run
    /// # use taskweave_host::{Error, Runtime, gpu::cudarc::driver::CudaContext};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let ctx = CudaContext::new(0)?;
    /// let stream = ctx.new_stream()?;
    /// let rt = Runtime::on_stream(stream.clone())?;
    /// let x = rt.adopt(stream.clone_htod(&[1.0f32; 1024])?)?; // the caller's data, no copy
    /// // … regions on `&mut x`, cudarc kernels on `x.cuda_view_mut()`, all on `stream` …
    /// let back = x.into_cuda().expect("no region holds it"); // the CudaSlice again
    /// # Ok(())
    /// # }
    /// ```
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<Self, Error> {
        Ok(Self {
            engine: Engine::Gpu(Box::new(Gpu::on_stream(stream)?)),
            fallback: None,
            helpers: OnceLock::new(),
            plans: Mutex::new(PlanCache::from_env()),
        })
    }

    /// `slice`, an allocation the caller made with cudarc on this runtime's GPU, as a resident
    /// array, with no copy (see [`DeviceArray`]'s docs). Work queued on the slice's stream comes
    /// first: nothing waits when it is the runtime's stream, and it is synchronized here when it
    /// is another. A CPU runtime, or a slice of another context, is an
    /// [`Error::ForeignArray`].
    pub fn adopt<T: Copy>(&self, slice: CudaSlice<T>) -> Result<DeviceArray<T>, Error> {
        let gpu = match &self.engine {
            Engine::Gpu(gpu) => gpu,
            Engine::Cpu { .. } => {
                return Err(Error::ForeignArray {
                    reason: "this runtime is the CPU backend, which cannot reach GPU memory"
                        .to_owned(),
                });
            }
        };
        if slice.context().cu_ctx() != gpu.context().cu_ctx() {
            return Err(Error::ForeignArray {
                reason: format!(
                    "the slice belongs to another CUDA context (device {}) than the runtime's \
                     (device {})",
                    slice.ordinal(),
                    gpu.context().ordinal()
                ),
            });
        }
        DeviceArray::adopt(slice, gpu.stream())
    }

    /// The CPU backend with one worker per core.
    pub fn cpu() -> Self {
        Self::cpu_with(default_cpu_workers())
    }

    /// The CPU backend with `workers` worker threads.
    pub fn cpu_with(workers: u32) -> Self {
        Self {
            engine: Engine::Cpu {
                workers: workers.max(1),
            },
            fallback: None,
            helpers: OnceLock::new(),
            plans: Mutex::new(PlanCache::from_env()),
        }
    }

    /// Keeps the plans of up to `capacity` calls (0 keeps none), dropping the least recently used
    /// beyond it. A plan is a region's DAG, kept from its first call, and from its second call
    /// on what the backend needs to run it again: on a GPU, its tables and buffers for its host
    /// arrays, in device memory until the plan is dropped ([`Runtime::clear_plans`]). A region
    /// called again with the same scalar arguments, array shapes and options runs its plan
    /// instead of being inspected again (see [`Region::cache`](crate::Region::cache)). The
    /// default is [`DEFAULT_PLANS`](crate::DEFAULT_PLANS), or the number in the environment
    /// variable [`PLAN_CACHE_ENV`](crate::PLAN_CACHE_ENV) when the runtime was made.
    pub fn cache_plans(&self, capacity: usize) {
        let dropped = self.plans().set_capacity(capacity);
        drop(dropped);
    }

    /// The plans kept now.
    pub fn cached_plans(&self) -> usize {
        self.plans().len()
    }

    /// Drops every kept plan, and the device memory the backends kept in them: when it returns,
    /// that memory is free (it waits for the GPU's work so far).
    pub fn clear_plans(&self) {
        let dropped = self.plans().clear();
        let had_some = !dropped.is_empty();
        drop(dropped);
        if let (true, Engine::Gpu(gpu)) = (had_some, &self.engine) {
            // A failure here is the GPU's, and the next region reports it.
            let _ = gpu.release_freed();
        }
    }

    /// Calls `f` with the plan kept for `key`, if there is one.
    pub(crate) fn with_plan<R>(&self, key: &PlanKey, f: impl FnOnce(&Plan) -> R) -> Option<R> {
        self.plans().find(key).map(f)
    }

    fn plans(&self) -> MutexGuard<'_, PlanCache> {
        self.plans.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the runtime keeps plans.
    pub(crate) fn caches_plans(&self) -> bool {
        self.plans().enabled()
    }

    /// Takes the kept plan of `key` out while it runs (see [`Runtime::keep_plan`]).
    pub(crate) fn take_plan(&self, key: &PlanKey) -> Option<Plan> {
        self.plans().take(key)
    }

    /// Keeps `plan` for later calls of `key`.
    pub(crate) fn keep_plan(&self, key: PlanKey, plan: Plan) {
        let dropped = self.plans().put(key, plan);
        drop(dropped);
    }

    /// The backend regions run on.
    pub fn backend(&self) -> Backend {
        self.executor().own()
    }

    /// Why [`Runtime::new`] fell back to the CPU, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The GPU, when the runtime has one.
    pub fn gpu_device(&self) -> Option<&Gpu> {
        match &self.engine {
            Engine::Gpu(gpu) => Some(gpu.as_ref()),
            Engine::Cpu { .. } => None,
        }
    }

    /// Copies `data` to where this runtime runs regions (GPU memory, or host memory on the CPU
    /// backend), for regions that take it as a `DeviceArray` and keep it there between runs.
    pub fn upload<T: Copy>(&self, data: &[T]) -> Result<DeviceArray<T>, Error> {
        match &self.engine {
            Engine::Gpu(gpu) => DeviceArray::gpu(data, gpu.stream()),
            Engine::Cpu { .. } => Ok(DeviceArray::host(data)),
        }
    }

    /// `data` copied into a host array in page-locked memory, which regions copy to and from the
    /// GPU in place, at the link's speed, where a `Vec` goes through the runtime's staging
    /// buffers at the speed of the host's memory copies. It dereferences to a slice: pass
    /// `&mut a[..]` or `&a[..]` wherever a region takes a host array. On the CPU runtime it is an
    /// ordinary heap array.
    ///
    /// Page-locked memory is a scarce resource of the operating system: use it for the arrays a
    /// program moves often, not for everything.
    pub fn pinned<T: Copy>(&self, data: &[T]) -> Result<Pinned<T>, Error> {
        match &self.engine {
            Engine::Gpu(gpu) => Pinned::locked(gpu, data),
            Engine::Cpu { .. } => Ok(Pinned::heap(data)),
        }
    }

    /// One line on the backend and its hardware.
    pub fn describe(&self) -> String {
        match &self.engine {
            Engine::Gpu(gpu) => format!(
                "persistent GPU scheduler on {} ({} SMs)",
                gpu.name(),
                gpu.sm_count()
            ),
            Engine::Cpu { workers } => format!("CPU backend, {workers} worker threads"),
        }
    }

    /// Whether this runtime can run a region whose options name `backend`: a GPU backend on the
    /// CPU runtime is an [`Error::NoGpu`].
    pub(crate) fn check_backend(&self, backend: Option<Backend>) -> Result<(), Error> {
        match (&self.engine, backend) {
            (Engine::Cpu { .. }, Some(b)) if b.needs_gpu() => {
                Err(backend::no_gpu(b, self.fallback.as_deref()))
            }
            _ => Ok(()),
        }
    }

    /// The GPU a call with backend option `backend` runs on, if it runs on one.
    pub(crate) fn gpu_for(&self, backend: Option<Backend>) -> Option<&Gpu> {
        match &self.engine {
            Engine::Gpu(gpu) if backend.is_none_or(Backend::needs_gpu) => Some(gpu),
            _ => None,
        }
    }

    /// What runs calls on this runtime.
    fn executor(&self) -> Executor<'_> {
        match &self.engine {
            Engine::Gpu(gpu) => Executor::Gpu(gpu),
            Engine::Cpu { workers } => Executor::Cpu { workers: *workers },
        }
    }

    /// The worker threads of a CPU runtime; `None` on a GPU runtime.
    pub(crate) fn cpu_workers(&self) -> Option<u32> {
        match &self.engine {
            Engine::Cpu { workers } => Some(*workers),
            _ => None,
        }
    }

    /// Runs `call` on the backend its options name, or the runtime's own.
    pub(crate) fn execute(
        &self,
        call: &mut Call<'_, '_>,
        kept: &mut Kept,
    ) -> Result<Report, Error> {
        backend::execute(&self.executor(), self.fallback.as_deref(), call, kept)
    }

    /// [`Runtime::execute`], making room on the device once when the call does not fit. The plans
    /// the runtime keeps may hold device memory of their own (their tables, buffers for their host
    /// arrays): a call that does not fit beside them gets that memory back and tries once more.
    /// `DeviceOutOfMemory` is found before anything is copied or run; a refused allocation
    /// (`OutOfMemory`) may come after the kernel, when a second run would apply the region twice
    /// to a resident array, so it is not retried.
    pub(crate) fn execute_making_room(
        &self,
        call: &mut Call<'_, '_>,
        kept: &mut Kept,
    ) -> Result<Report, Error> {
        let report = self.execute(call, kept);
        if matches!(report, Err(Error::DeviceOutOfMemory { .. })) && self.cached_plans() > 0 {
            self.clear_plans();
            return self.execute(call, kept);
        }
        report
    }

    /// Hands a submitted call to the helper threads (see [`Region::submit`](crate::Region::submit)).
    pub(crate) fn submit(&self, job: Job) {
        match self.helpers.get_or_init(|| self.start_helpers()) {
            Ok(helpers) => helpers.submit(job),
            // No helpers (the GPU refused more streams, or no thread would start): run the
            // region here, in order.
            Err(_) => job.run(&|call, kept| self.execute(call, kept)),
        }
    }

    fn start_helpers(&self) -> Result<Helpers, String> {
        let fallback = self.fallback.clone();
        match &self.engine {
            Engine::Gpu(gpu) => {
                let handles = (0..HELPERS)
                    .map(|_| gpu.with_own_streams())
                    .collect::<Result<Vec<Gpu>, Error>>()
                    .map_err(|e| e.to_string())?;
                Helpers::start(handles, move |gpu, call, kept| {
                    backend::execute(&Executor::Gpu(gpu), fallback.as_deref(), call, kept)
                })
            }
            Engine::Cpu { workers } => {
                let workers = *workers;
                Helpers::start(vec![(); HELPERS], move |_, call, kept| {
                    backend::execute(&Executor::Cpu { workers }, fallback.as_deref(), call, kept)
                })
            }
        }
    }
}
