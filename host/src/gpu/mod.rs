//! The GPU plumbing, over cudarc's driver API. The backends that run regions on it are in the
//! `backend` module; this one knows nothing of regions or plans.
//!
//! 1. [`Gpu::new`] opens a device: it loads `libcuda` at run time, so a machine without a driver or
//!    GPU gets [`Error::NoGpu`], never a panic or a link error. [`Gpu::on_stream`] uses a stream
//!    the caller already has (cudarc's [`CudaStream`]), so that regions run in order with the
//!    caller's own work on it.
//! 2. [`Gpu::function`] loads a kernel's module on first use and keeps it: the cubin of the
//!    kernel's region that the builder assembled for this GPU, else the kernel's PTX, which the
//!    driver compiles (see `code`).
//! 3. Each launch has its own error record and abort flag; regions on one `Gpu` take turns on its
//!    stream, and the helper threads of asynchronous regions have streams of their own
//!    ([`Gpu::with_own_streams`]).
//! 4. A fault the device layer cannot catch (a trap, an illegal address) poisons the CUDA context:
//!    the `Gpu` remembers it and every later region fails fast with [`Error::ContextLost`].

pub mod code;
pub(crate) mod kernels;
mod ptx;
pub(crate) mod residency;
pub(crate) mod transfer;

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use cudarc;
use cudarc::driver::sys::{self, CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, CudaModule, CudaStream, DriverError};
use taskweave_device::error::ErrorRecord;

pub use self::ptx::PtxTarget;
pub(crate) use self::residency::Residency;
use crate::error::Error;
pub use crate::meta::Code;
use crate::options::Backend;
pub use taskweave_names::bundle;

/// What every [`Gpu`] handle of one device shares: the context, loaded modules, what is known
/// about the device, and the state that outlives one region (a lost context, a stuck kernel, the
/// backends' caches, the residency in use).
pub struct GpuShared {
    ctx: Arc<CudaContext>,
    modules: Mutex<HashMap<code::ModuleKey, Arc<CudaModule>>>,
    /// What was loaded, for [`Gpu::loads`].
    loads: Mutex<Vec<code::Load>>,
    /// The regions (and whether checked) whose persistent kernel [`Gpu::preload`] loaded.
    preloaded: Mutex<std::collections::HashSet<(&'static str, bool)>>,
    name: String,
    sms: u32,
    /// Compute capability as `10 * major + minor` (90 for an H100).
    arch: u32,
    /// The most shared memory a block may have, opting in (227 KiB on the H100).
    shared_optin: u32,
    /// Held by a region run by a backend that shares state between runs: see [`Gpu::exclusive`].
    running: Mutex<()>,
    /// Set when a kernel poisoned the context (see [`Gpu::after_kernel`]).
    lost: Mutex<Option<String>>,
    /// Set when a kernel outlived the watchdog and its grace period: it still runs, so its stream
    /// is blocked and the memory it uses cannot be freed. The reason, and an event recorded after
    /// the kernel on its stream, which completes when the kernel ends. Later regions fail fast
    /// with the reason until then.
    stuck: Mutex<Option<(String, Option<cudarc::driver::CudaEvent>)>>,
    /// Whether this device's state was leaked on purpose, so that it is never torn down (see
    /// [`Gpu::mark_stuck`]).
    kept_alive: std::sync::atomic::AtomicBool,
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
        let shared_optin = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            .map_err(Error::cuda("reading the shared memory per block"))?
            as u32;
        Ok(Self {
            shared: Arc::new(GpuShared {
                ctx,
                shared_optin,
                modules: Mutex::new(HashMap::new()),
                loads: Mutex::new(Vec::new()),
                preloaded: Mutex::default(),
                name,
                sms,
                arch,
                running: Mutex::new(()),
                lost: Mutex::new(None),
                stuck: Mutex::new(None),
                kept_alive: std::sync::atomic::AtomicBool::new(false),
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

    /// Records that a kernel on this handle's stream outlived the watchdog and its grace period
    /// (`error` says which region and tasks): later regions on this device fail fast with
    /// [`Error::GpuStuck`] until it ends.
    ///
    /// Nothing may tear the device down while the kernel runs: destroying the context, unloading
    /// a module or freeing pinned memory waits for it (`bench/results/stall-probe-h200/`), and
    /// the program could then not exit. So the device's shared state is kept alive until the
    /// process ends, which ends the kernel too.
    pub(crate) fn mark_stuck(&self, error: &Error) {
        let after = self.stream.record_event(None).ok();
        *self.stuck.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((error.to_string(), after));
        if !self
            .kept_alive
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            std::mem::forget(self.shared.clone());
        }
    }

    /// Fails when an earlier kernel poisoned the context, or is still stuck on the GPU.
    pub(crate) fn check_usable(&self) -> Result<(), Error> {
        if let Some(reason) = &*self.lost.lock().unwrap_or_else(PoisonError::into_inner) {
            return Err(Error::ContextLost {
                reason: reason.clone(),
            });
        }
        let mut stuck = self.stuck.lock().unwrap_or_else(PoisonError::into_inner);
        match &*stuck {
            // The kernel ended after all: its memory stays allocated, and the GPU is free again.
            Some((_, Some(after))) if after.is_complete() => {
                *stuck = None;
                Ok(())
            }
            Some((reason, _)) => Err(Error::GpuStuck {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
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

/// Describes an error record for humans: code, message, location, and the array (by the name the
/// region gives it; `arrays` are the region's, by slot) and index.
pub fn describe(record: &ErrorRecord, arrays: &[crate::inspect::ArrayInfo]) -> String {
    use taskweave_device::error::*;
    let message = ErrorRecord::text(&record.message);
    let file = ErrorRecord::text(&record.file);
    match record.code {
        CODE_PANIC if file.is_empty() => format!("panicked: {message}"),
        CODE_PANIC => format!(
            "panicked at {file}:{}:{}: {message}",
            record.line, record.column
        ),
        CODE_OUT_OF_RANGE => match arrays.get(record.array as usize) {
            Some(array) => format!(
                "{message}: index {} of array `{}` ({} elements)",
                record.index, array.name, array.len
            ),
            None => format!(
                "{message}: index {} of array slot {}",
                record.index, record.array
            ),
        },
        CODE_ABORTED => "aborted".to_owned(),
        code => format!("device error code {code}"),
    }
}
