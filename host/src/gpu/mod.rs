//! The GPU plumbing, over cudarc's driver API.
//!
//! 1. [`Gpu::new`] opens a device: it loads `libcuda` at run time, so a machine without a driver or
//!    GPU gets [`Error::NoGpu`], never a panic or a link error.
//! 2. [`Gpu::module`] loads a kernels crate's module once and caches it: from the cubin the builder
//!    assembled, when it has one for this GPU, else from the PTX, after checking that the PTX's
//!    `.target` runs on this GPU.
//! 3. The persistent backend ([`persistent`]) runs a region's DAG with the in-GPU scheduler. Each
//!    launch has its own error record and abort flag; regions on one `Gpu` take turns on its
//!    stream, and the helper threads of asynchronous regions have streams of their own
//!    ([`Gpu::lane`]).
//! 4. A fault the device layer cannot catch (a trap, an illegal address) poisons the CUDA context:
//!    the `Gpu` remembers it and every later region fails fast with [`Error::ContextLost`].

pub mod graph;
pub mod levels;
pub mod persistent;
mod stage;
pub mod streams;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

pub use cudarc;
use cudarc::driver::sys::{CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DriverError};
use cudarc::nvrtc::Ptx;
use taskweave_device::error::ErrorRecord;

use taskweave_names::{Entry, Kernel};

use crate::error::Error;

/// What every [`Gpu`] handle of one device shares: the context, loaded modules, what is known
/// about the device, and the state that outlives one region (a lost context, a stuck kernel, the
/// graph cache, the residency in use).
pub struct Device {
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
    /// Instantiated CUDA graphs, for regions run again with the same DAG.
    pub(crate) graphs: graph::GraphCache,
    /// The share of the GPU held by running kernels whose blocks must all be resident.
    pub(crate) residency: Residency,
    /// Held by an SM-aware launch until its blocks have filled their SMs: see
    /// [`Gpu::filling`].
    filling: Mutex<()>,
}

/// One GPU as one region run sees it: the shared [`Device`], the stream its regions run on, and a
/// control stream that reads counters without waiting for the kernel. [`Gpu::lane`] makes another
/// handle with its own streams, so regions submitted without waiting run side by side.
pub struct Gpu {
    device: Arc<Device>,
    stream: Arc<CudaStream>,
    control: Arc<CudaStream>,
    /// Held by the region running on this handle's stream: see [`Gpu::stream_turn`].
    turn: Mutex<()>,
}

impl std::ops::Deref for Gpu {
    type Target = Device;
    fn deref(&self) -> &Device {
        &self.device
    }
}

/// Admission of kernels whose blocks must all be resident at once (the persistent scheduler, the
/// grid barrier). Two such kernels that do not fit together could each hold half the GPU while
/// waiting for blocks of their own that cannot start: each launch reserves its blocks' share of
/// the SMs (blocks / blocks per SM) and waits while the reservations in force leave too little.
#[derive(Default)]
pub(crate) struct Residency {
    /// Reserved, in millionths of an SM.
    used: Mutex<u64>,
    freed: std::sync::Condvar,
}

/// A share of the GPU held until dropped.
pub(crate) struct Reservation<'a> {
    residency: &'a Residency,
    amount: u64,
}

impl Residency {
    const UNIT: u64 = 1_000_000;

    /// Waits until `blocks` blocks of a kernel with `per_sm` resident blocks per SM fit beside the
    /// kernels already admitted on `sms` SMs, and reserves them.
    pub(crate) fn reserve(&self, sms: u32, blocks: u32, per_sm: u32) -> Reservation<'_> {
        let capacity = u64::from(sms) * Self::UNIT;
        let amount = (u64::from(blocks) * Self::UNIT)
            .div_ceil(u64::from(per_sm.max(1)))
            .min(capacity);
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        while *used + amount > capacity {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *used += amount;
        Reservation {
            residency: self,
            amount,
        }
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        let mut used = self
            .residency
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *used -= self.amount;
        self.residency.freed.notify_all();
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
            device: Arc::new(Device {
                ctx,
                modules: Mutex::new(HashMap::new()),
                name,
                sms,
                arch,
                running: Mutex::new(()),
                lost: Mutex::new(None),
                stuck: Mutex::new(None),
                graphs: graph::GraphCache::default(),
                residency: Residency::default(),
                filling: Mutex::new(()),
            }),
            stream,
            control,
            turn: Mutex::new(()),
        })
    }

    /// Another handle on the same device with streams of its own: regions run on it go side by
    /// side with those on `self`.
    pub fn lane(&self) -> Result<Self, Error> {
        self.ctx
            .bind_to_thread()
            .map_err(Error::cuda("binding the CUDA context"))?;
        Ok(Self {
            device: self.device.clone(),
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

    /// The right to run a region on this handle's stream, until the guard drops. Regions from
    /// several host threads on one handle take turns: on one stream a kernel would queue behind
    /// another's, and its watchdog would fire on a region that has not started. (Submitted
    /// regions run on helper lanes, each with its own stream, and overlap.)
    pub(crate) fn stream_turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The right to launch an SM-aware region and let its blocks fill their SMs, until the guard
    /// drops: launches that fill at once churn through each other's SMs, and one of them can run
    /// out of blocks before its set is filled.
    pub(crate) fn filling(&self) -> MutexGuard<'_, ()> {
        self.device
            .filling
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The right to run a region on this GPU alone, until the guard drops: for the backends whose
    /// state outlives a run (the graph cache, the streams backend's pool). The others need no turn:
    /// each launch has its own error record and abort flag, each [`Gpu::lane`] its own streams,
    /// and [`Residency`] admits the kernels whose blocks must all be resident.
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
        alloc_error(&self.ctx, what, bytes)
    }

    /// The CUDA context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream regions run on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
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

    /// The one-task kernel of `region` (block `b` runs task `list[b]`), with the context bound to
    /// the calling thread for the driver calls that follow: the uncapped variant when `widest`
    /// blocks of it fit on the GPU at once (see [`Gpu::pick`]).
    pub(crate) fn listed_kernel(
        &self,
        region: &crate::Region<'_>,
        widest: u32,
    ) -> Result<CudaFunction, Error> {
        let name = sibling(region, Entry::Listed);
        let function = self.pick(region, &name, |_| widest)?.function;
        self.ctx
            .bind_to_thread()
            .map_err(Error::cuda("binding the CUDA context"))?;
        Ok(function)
    }

    /// Kernel `name`, or its `<name>__unchecked` variant for a run with index checks off when the
    /// PTX has one: the same kernel without the checked task bodies, whose registers would
    /// otherwise count for unchecked runs too (a kernel's register count, which bounds how many
    /// of its blocks an SM holds, is that of its heaviest path).
    pub(crate) fn variant(&self, region: &crate::Region<'_>, code: Code, name: &str) -> String {
        if !region.options.checked
            && let Some(unchecked) = Kernel::parse(name).map(|k| k.unchecked().to_string())
            && self.function(code, &unchecked).is_ok()
        {
            unchecked
        } else {
            name.to_owned()
        }
    }

    /// Kernel `name` of `region`, or its uncapped twin, and how many blocks to launch: the ones
    /// `wanted` asks for, at least one and at most what fits on the GPU at once. The builder caps
    /// the scheduler kernels' registers, which buys resident blocks with spills in the task bodies,
    /// and adds an uncapped twin of each (`<name>__uncapped`). `wanted` gets the capped kernel's
    /// residency; when that many blocks of the twin fit, the twin runs. An unchecked run takes
    /// the [`Gpu::variant`] without checked bodies, and its twin.
    pub(crate) fn pick(
        &self,
        region: &crate::Region<'_>,
        name: &str,
        wanted: impl FnOnce(u32) -> u32,
    ) -> Result<Picked, Error> {
        let code = region.meta.code().ok_or(Error::NoPtx {
            region: region.meta.name,
        })?;
        // The occupancy queries need the context current on this thread, which may be new.
        self.ctx
            .bind_to_thread()
            .map_err(Error::cuda("binding the CUDA context"))?;
        let name = &self.variant(region, code, name);
        let capped = self.function(code, name)?;
        let resident = persistent::resident_blocks(self, &capped, region)?;
        let wanted = wanted(resident);
        // A PTX without twins (built with an older builder) simply has none.
        if let Some(twin) = Kernel::parse(name)
            && let Ok(twin) = self.function(code, &twin.uncapped().to_string())
            && let Ok(twin_resident) = persistent::resident_blocks(self, &twin, region)
            && wanted <= twin_resident
        {
            return Ok(Picked {
                function: twin,
                blocks: wanted.max(1),
                resident: twin_resident,
            });
        }
        Ok(Picked {
            function: capped,
            blocks: wanted.clamp(1, resident),
            resident,
        })
    }
}

/// The kernel of `region` at `entry`, named after its persistent kernel.
pub(crate) fn sibling(region: &crate::Region<'_>, entry: Entry) -> String {
    Kernel::parse(region.meta.kernel).map_or_else(
        || region.meta.kernel.to_owned(),
        |k| k.at(entry).to_string(),
    )
}

/// What [`Gpu::pick`] chose.
pub(crate) struct Picked {
    /// The kernel to launch.
    pub function: CudaFunction,
    /// The blocks to launch: the ones asked for, at least one and at most `resident`.
    pub blocks: u32,
    /// Blocks of `function` that fit on the whole GPU at once.
    pub resident: u32,
}

/// [`Gpu::alloc_error`] for a context without its `Gpu`.
pub(crate) fn alloc_error(
    ctx: &CudaContext,
    what: impl Into<String>,
    bytes: usize,
) -> impl FnOnce(DriverError) -> Error + '_ {
    let what = what.into();
    move |source| {
        if source.0 != CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return Error::Cuda {
                context: what,
                source,
            };
        }
        Error::OutOfMemory {
            what,
            bytes: bytes as u64,
            free: ctx.mem_get_info().map_or(0, |(free, _)| free as u64),
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

/// A kernels crate's device code: its PTX, and the cubin the builder assembled from it (empty
/// without a `ptxas` at build time). A bare `&'static str` is PTX alone.
#[derive(Clone, Copy, Debug)]
pub struct Code {
    /// The PTX; its address also names the module once loaded.
    pub ptx: &'static str,
    /// The cubin, for the PTX's own target.
    pub cubin: &'static [u8],
}

impl From<&'static str> for Code {
    fn from(ptx: &'static str) -> Self {
        Self { ptx, cubin: &[] }
    }
}

/// The architecture a PTX module targets: its `.target sm_NN[a|f]` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PtxTarget {
    /// `10 * major + minor` of the compute capability: 90 for `sm_90`, 100 for `sm_100`.
    pub sm: u32,
    /// The suffix: `a` (this exact architecture only), `f` (this family), or none.
    pub suffix: Option<char>,
}

impl PtxTarget {
    /// The target of `ptx`, from the first `.target` directive.
    pub fn of(ptx: &str) -> Option<Self> {
        let line = ptx
            .lines()
            .map(str::trim_start)
            .find(|l| l.starts_with(".target"))?;
        let arch = line[".target".len()..]
            .split(|c: char| c == ',' || c.is_whitespace())
            .find(|w| !w.is_empty())?;
        let rest = arch.strip_prefix("sm_")?;
        let digits = rest.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let suffix = rest[digits.len()..].chars().next();
        Some(Self {
            sm: digits.parse().ok()?,
            suffix,
        })
    }

    /// Whether code for this target runs on a GPU of compute capability `gpu` (`10 * major + minor`):
    /// plain targets run on the same or a newer GPU, `a` targets only on that architecture, `f`
    /// targets on the same family (major version) from that minor version on.
    pub fn runs_on(self, gpu: u32) -> bool {
        match self.suffix {
            Some('a') => gpu == self.sm,
            Some('f') => gpu / 10 == self.sm / 10 && gpu >= self.sm,
            _ => gpu >= self.sm,
        }
    }
}

impl std::fmt::Display for PtxTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sm_{}", self.sm)?;
        match self.suffix {
            Some(c) => write!(f, "{c}"),
            None => Ok(()),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::PtxTarget;

    #[test]
    fn ptx_targets_are_read_from_the_target_line() {
        let ptx = "//\n// Generated by LLVM NVPTX Back-End\n//\n\n.version 7.8\n.target sm_90\n.address_size 64\n";
        assert_eq!(
            PtxTarget::of(ptx),
            Some(PtxTarget {
                sm: 90,
                suffix: None
            })
        );
        let t = PtxTarget::of(".version 8.7\n  .target sm_100a, debug\n").unwrap();
        assert_eq!(
            (t.sm, t.suffix, t.to_string()),
            (100, Some('a'), "sm_100a".to_owned())
        );
        assert_eq!(PtxTarget::of(".version 7.8\n.address_size 64\n"), None);
        assert_eq!(PtxTarget::of(".target compute_90\n"), None);
    }

    #[test]
    fn newer_targets_do_not_run_on_older_gpus() {
        let plain = |sm| PtxTarget { sm, suffix: None };
        assert!(plain(90).runs_on(90));
        assert!(plain(80).runs_on(90));
        assert!(!plain(100).runs_on(90));
        assert!(!plain(120).runs_on(100));
        let exact = PtxTarget {
            sm: 90,
            suffix: Some('a'),
        };
        assert!(exact.runs_on(90) && !exact.runs_on(100) && !exact.runs_on(89));
        let family = PtxTarget {
            sm: 100,
            suffix: Some('f'),
        };
        assert!(family.runs_on(103) && !family.runs_on(120) && !family.runs_on(90));
    }
}
