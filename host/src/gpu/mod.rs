//! The GPU plumbing, over cudarc's driver API. The backends that run regions on it are in the
//! `backend` module; this one knows nothing of regions or plans.
//!
//! 1. [`Gpu::new`] opens a device: it loads `libcuda` at run time, so a machine without a driver or
//!    GPU gets [`Error::NoGpu`], never a panic or a link error. [`Gpu::on_stream`] uses a stream
//!    the caller already has (cudarc's [`CudaStream`]), so that regions run in order with the
//!    caller's own work on it.
//! 2. [`Gpu::module`] loads a kernels crate's module once and caches it: from the cubin the builder
//!    assembled, when it has one for this GPU, else from the PTX, after checking that the PTX's
//!    `.target` runs on this GPU.
//! 3. Each launch has its own error record and abort flag; regions on one `Gpu` take turns on its
//!    stream, and the helper threads of asynchronous regions have streams of their own
//!    ([`Gpu::with_own_streams`]).
//! 4. A fault the device layer cannot catch (a trap, an illegal address) poisons the CUDA context:
//!    the `Gpu` remembers it and every later region fails fast with [`Error::ContextLost`].

pub(crate) mod kernels;
mod ptx;
mod residency;
pub(crate) mod transfer;

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use cudarc;
use cudarc::driver::sys::{self, CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;
use taskweave_device::error::ErrorRecord;

pub use self::ptx::PtxTarget;
pub(crate) use self::residency::Residency;
use crate::error::Error;
pub use crate::meta::Code;
use crate::options::Backend;

/// What every [`Gpu`] handle of one device shares: the context, loaded modules, what is known
/// about the device, and the state that outlives one region (a lost context, a stuck kernel, the
/// backends' caches, the residency in use).
pub struct GpuShared {
    ctx: Arc<CudaContext>,
    modules: Mutex<HashMap<usize, Arc<CudaModule>>>,
    name: String,
    sms: u32,
    /// Compute capability as `10 * major + minor` (90 for an H100).
    arch: u32,
    /// Held by a region run by a backend that shares state between runs: see [`Gpu::exclusive`].
    running: Mutex<()>,
    /// Set when a kernel poisoned the context (see [`Gpu::after_kernel`]).
    lost: Mutex<Option<String>>,
    /// Set when a kernel outlived the watchdog and its grace period: it still runs, so its stream
    /// is blocked and the memory it uses cannot be freed. Later regions fail fast with this reason.
    stuck: Mutex<Option<String>>,
    /// What backends keep on this device between runs (the CUDA graph backend's instantiated
    /// graphs), by backend; see [`Gpu::backend_state`].
    backend_state: Mutex<Vec<(Backend, Arc<dyn Any + Send + Sync>)>>,
    /// The share of the GPU held by running kernels whose blocks must all be resident.
    pub(crate) residency: Residency,
    /// Held by an SM-aware launch until its blocks have filled their SMs: see
    /// [`Gpu::filling`].
    filling: Mutex<()>,
    /// Pinned staging buffers for copies of host arrays (see `transfer`).
    staging: transfer::StagingPool,
}

/// One GPU as one region run sees it: the shared [`GpuShared`], the stream its regions run on,
/// and a control stream that reads counters without waiting for the kernel.
/// [`Gpu::with_own_streams`] makes another handle with its own streams, so regions submitted
/// without waiting run side by side.
pub struct Gpu {
    shared: Arc<GpuShared>,
    stream: Arc<CudaStream>,
    control: Arc<CudaStream>,
    /// Held by the region running on this handle's stream: see [`Gpu::stream_turn`].
    turn: Mutex<()>,
}

impl std::ops::Deref for Gpu {
    type Target = GpuShared;
    fn deref(&self) -> &GpuShared {
        &self.shared
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Gpu({}, {} SMs)", self.name, self.sms)
    }
}

impl Gpu {
    /// Opens GPU `ordinal`.
    pub fn new(ordinal: usize) -> Result<Self, Error> {
        // SAFETY: only probes whether libcuda can be loaded; cudarc would panic on first use otherwise.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(Error::NoGpu {
                reason: "the CUDA driver library (libcuda.so) is not installed or not on the library path".to_owned(),
            });
        }
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::NoGpu {
            reason: format!("no usable CUDA device {ordinal}: {e}"),
        })?;
        // SAFETY: taskweave orders its own work: one stream runs regions, the control stream only
        // reads counters and raises the abort flag, which must not wait for the running kernel.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(Error::cuda("creating the region stream"))?;
        Self::open(ctx, stream)
    }

    /// A handle on the device of `stream`, a stream the caller already has: regions run on it, in
    /// order with the caller's own work. The context's settings (cudarc's event tracking among
    /// them) are left as the caller made them.
    pub fn on_stream(stream: Arc<CudaStream>) -> Result<Self, Error> {
        Self::open(stream.context().clone(), stream)
    }

    /// A handle on the device of `ctx` whose regions run on `stream`.
    fn open(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> Result<Self, Error> {
        let control = ctx
            .new_stream()
            .map_err(Error::cuda("creating the control stream"))?;
        let name = ctx.name().unwrap_or_else(|_| "unknown GPU".to_owned());
        let sms = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(Error::cuda("reading the SM count"))? as u32;
        let capability = |attribute| {
            ctx.attribute(attribute)
                .map_err(Error::cuda("reading the compute capability"))
        };
        let arch = capability(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?
            as u32
            * 10
            + capability(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32;
        Ok(Self {
            shared: Arc::new(GpuShared {
                ctx,
                modules: Mutex::new(HashMap::new()),
                name,
                sms,
                arch,
                running: Mutex::new(()),
                lost: Mutex::new(None),
                stuck: Mutex::new(None),
                backend_state: Mutex::new(Vec::new()),
                residency: Residency::default(),
                filling: Mutex::new(()),
                staging: transfer::StagingPool::default(),
            }),
            stream,
            control,
            turn: Mutex::new(()),
        })
    }

    /// Another handle on the same device with streams of its own: regions run on it go side by
    /// side with those on `self`.
    pub fn with_own_streams(&self) -> Result<Self, Error> {
        self.bind()?;
        Ok(Self {
            shared: self.shared.clone(),
            stream: self
                .ctx
                .new_stream()
                .map_err(Error::cuda("creating a region stream"))?,
            control: self
                .ctx
                .new_stream()
                .map_err(Error::cuda("creating a control stream"))?,
            turn: Mutex::new(()),
        })
    }

    /// What identifies the device this handle is on (every handle of one [`Gpu::new`] shares it).
    pub(crate) fn device_id(&self) -> usize {
        Arc::as_ptr(&self.shared) as usize
    }

    /// What every handle of the device shares, for what must not outlive it: a backend's tables
    /// kept in a plan hold it, so that a plan dropped after its runtime still goes first (its
    /// graphs use the device's loaded modules).
    pub(crate) fn shared(&self) -> Arc<GpuShared> {
        self.shared.clone()
    }

    /// Makes the context current on the calling thread, for the raw driver calls that follow.
    pub(crate) fn bind(&self) -> Result<(), Error> {
        self.ctx
            .bind_to_thread()
            .map_err(Error::cuda("binding the CUDA context"))
    }

    /// What `backend` keeps on this device between runs: one `T` per device, made on first use.
    pub(crate) fn backend_state<T: Default + Send + Sync + 'static>(
        &self,
        backend: Backend,
    ) -> Arc<T> {
        let mut states = self
            .backend_state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((_, state)) = states.iter().find(|(b, _)| *b == backend)
            && let Ok(state) = state.clone().downcast::<T>()
        {
            return state;
        }
        let state = Arc::new(T::default());
        states.retain(|(b, _)| *b != backend);
        states.push((backend, state.clone()));
        state
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The number of SMs.
    pub fn sm_count(&self) -> u32 {
        self.sms
    }

    /// The architecture, as PTX names it: `sm_90` for an H100.
    pub fn arch(&self) -> String {
        format!("sm_{}", self.arch)
    }

    /// Bytes of device memory free now.
    pub fn free_memory(&self) -> Result<u64, Error> {
        let (free, _) = self
            .ctx
            .mem_get_info()
            .map_err(Error::cuda("querying free device memory"))?;
        Ok(free as u64)
    }

    /// Waits for the memory freed so far to be free: frees are queued on streams and land in the
    /// device's memory pool, which gives them back (and [`Gpu::free_memory`] counts them) only
    /// after a synchronization. Waits for every stream of the context, other regions' too.
    pub(crate) fn release_freed(&self) -> Result<(), Error> {
        self.ctx
            .synchronize()
            .map_err(Error::cuda("waiting for freed device memory"))?;
        let mut pool = std::ptr::null_mut();
        // SAFETY: `pool` receives the device's default pool; trimming it to nothing releases the
        // memory no allocation holds, which is all it does.
        unsafe {
            sys::cuDeviceGetDefaultMemPool(&mut pool, self.ctx.cu_device())
                .result()
                .and_then(|()| sys::cuMemPoolTrimTo(pool, 0).result())
        }
        .map_err(Error::cuda("releasing freed device memory"))
    }

    /// The right to run a region on this handle's stream, until the guard drops. Regions from
    /// several host threads on one handle take turns: on one stream a kernel would queue behind
    /// another's, and its watchdog would fire on a region that has not started. (Submitted
    /// regions run on the helpers' handles, each with its own streams, and overlap.)
    pub(crate) fn stream_turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The right to launch an SM-aware region and let its blocks fill their SMs, until the guard
    /// drops: launches that fill at once churn through each other's SMs, and one of them can run
    /// out of blocks before its set is filled.
    pub(crate) fn filling(&self) -> MutexGuard<'_, ()> {
        self.shared
            .filling
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The right to run a region on this GPU alone, until the guard drops: for the backends whose
    /// state outlives a run (the graph cache, the streams backend's pool). The others need no turn:
    /// each launch has its own error record and abort flag, each [`Gpu::with_own_streams`] handle
    /// its own streams, and [`Residency`] admits the kernels whose blocks must all be resident.
    pub(crate) fn exclusive(&self) -> MutexGuard<'_, ()> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Turns the error of a call that waited for a kernel into an [`Error`]. The errors a fault in
    /// a kernel leaves behind (an illegal address, a trap, a misaligned access…) are sticky: the
    /// context is unusable from then on, so the `Gpu` records it and later regions fail fast.
    pub(crate) fn after_kernel(&self, what: String) -> impl FnOnce(DriverError) -> Error + '_ {
        move |source| {
            if !is_sticky(source.0) {
                return Error::Cuda {
                    context: what,
                    source,
                };
            }
            let reason = format!(
                "{what}: {source}; a task trapped or used an illegal address, which the device layer cannot catch"
            );
            *self.lost.lock().unwrap_or_else(PoisonError::into_inner) = Some(reason.clone());
            Error::ContextLost { reason }
        }
    }

    /// Turns the error of an allocation of `bytes` for `what` into an [`Error`]:
    /// [`Error::OutOfMemory`] when the device is full.
    pub(crate) fn alloc_error(
        &self,
        what: impl Into<String>,
        bytes: usize,
    ) -> impl FnOnce(DriverError) -> Error + '_ {
        Error::alloc(&self.ctx, what, bytes)
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream regions run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The stream the watchdog reads counters on, which does not wait for the running kernel.
    pub(crate) fn control(&self) -> &Arc<CudaStream> {
        &self.control
    }

    /// Records that a kernel of `region` is stuck (see the field's docs).
    pub(crate) fn mark_stuck(&self, region: &str) {
        *self.stuck.lock().unwrap_or_else(PoisonError::into_inner) = Some(format!(
            "a task of region `{region}` ignored the watchdog's abort and is still running on the GPU; \
             restart the process to get the GPU back"
        ));
    }

    /// Fails when an earlier kernel is stuck on the GPU or poisoned its context.
    pub(crate) fn check_usable(&self) -> Result<(), Error> {
        if let Some(reason) = &*self.lost.lock().unwrap_or_else(PoisonError::into_inner) {
            return Err(Error::ContextLost {
                reason: reason.clone(),
            });
        }
        match &*self.stuck.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(reason) => Err(Error::NoGpu {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The module of `code`, loaded on first use: from its cubin when it has one for this GPU's
    /// architecture (no JIT compilation), else from its PTX. PTX whose `.target` this GPU cannot
    /// run, or that the driver rejects, gives [`Error::PtxArch`], which names both architectures
    /// and the fix.
    pub fn module(&self, code: impl Into<Code>) -> Result<Arc<CudaModule>, Error> {
        let Code { ptx, cubin } = code.into();
        let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(module) = modules.get(&(ptx.as_ptr() as usize)) {
            return Ok(module.clone());
        }
        let target = PtxTarget::of(ptx);
        // The builder assembles the cubin for the PTX's own target; SASS runs on that major
        // architecture from that minor version on. A cubin the driver refuses anyway (a newer
        // `ptxas` than the driver, say) is skipped: the PTX still loads.
        if !cubin.is_empty()
            && let Some(t) = target
            && t.sm / 10 == self.arch / 10
            && self.arch >= t.sm
            && let Ok(module) = self.ctx.load_module(Ptx::from_binary(cubin.to_vec()))
        {
            modules.insert(ptx.as_ptr() as usize, module.clone());
            return Ok(module);
        }
        let arch_error = |detail: String| Error::PtxArch {
            ptx_arch: target.map_or_else(|| "an unknown target".to_owned(), |t| t.to_string()),
            gpu: self.name.clone(),
            gpu_arch: self.arch(),
            detail,
        };
        match target {
            Some(target) if !target.runs_on(self.arch) => {
                return Err(arch_error(format!(
                    "{target} code does not run on {}",
                    self.arch()
                )));
            }
            None => return Err(arch_error("the PTX has no `.target sm_NN` line".to_owned())),
            Some(_) => {}
        }
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx))
            .map_err(|source| match source.0 {
                CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU
                | CUresult::CUDA_ERROR_INVALID_PTX
                | CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION
                | CUresult::CUDA_ERROR_INVALID_IMAGE => {
                    arch_error(format!("the driver could not load it ({source})"))
                }
                _ => Error::Cuda {
                    context: "loading the PTX module".to_owned(),
                    source,
                },
            })?;
        modules.insert(ptx.as_ptr() as usize, module.clone());
        Ok(module)
    }

    /// Function `name` of `code`.
    pub fn function(&self, code: impl Into<Code>, name: &str) -> Result<CudaFunction, Error> {
        self.module(code)?
            .load_function(name)
            .map_err(Error::cuda(format!("finding kernel `{name}` in the PTX")))
    }

    /// Runs `enqueue` (which queues work on the region stream) between two events, waits for the
    /// stream, and returns the time between the events. `what` names the work in errors.
    pub(crate) fn timed(
        &self,
        what: &str,
        enqueue: impl FnOnce() -> Result<(), Error>,
    ) -> Result<std::time::Duration, Error> {
        use cudarc::driver::sys::CUevent_flags;
        let event = || {
            self.ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(Error::cuda("creating an event"))
        };
        let (start, end) = (event()?, event()?);
        start
            .record(&self.stream)
            .map_err(Error::cuda("recording an event"))?;
        enqueue()?;
        end.record(&self.stream)
            .map_err(Error::cuda("recording an event"))?;
        self.stream
            .synchronize()
            .map_err(self.after_kernel(format!("running {what}")))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(Error::cuda(format!("timing {what}")))?;
        Ok(std::time::Duration::from_secs_f64(f64::from(ms) / 1e3))
    }
}

/// Whether a driver error means the context is lost for good: the errors a faulting kernel leaves.
fn is_sticky(code: CUresult) -> bool {
    matches!(
        code,
        CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
            | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
            | CUresult::CUDA_ERROR_ASSERT
            | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
            | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
            | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | CUresult::CUDA_ERROR_INVALID_PC
            | CUresult::CUDA_ERROR_LAUNCH_FAILED
    )
}

/// Describes an error record for humans: code, message, location, array and index.
pub fn describe(record: &ErrorRecord) -> String {
    use taskweave_device::error::*;
    let message = ErrorRecord::text(&record.message);
    let file = ErrorRecord::text(&record.file);
    match record.code {
        CODE_PANIC if file.is_empty() => format!("panicked: {message}"),
        CODE_PANIC => format!(
            "panicked at {file}:{}:{}: {message}",
            record.line, record.column
        ),
        CODE_OUT_OF_RANGE => format!(
            "{message}: index {} of array slot {}",
            record.index, record.array
        ),
        CODE_ABORTED => "aborted".to_owned(),
        code => format!("device error code {code}"),
    }
}
