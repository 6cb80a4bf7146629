//! The GPU plumbing, over cudarc's driver API.
//!
//! 1. [`Gpu::new`] opens a device: it loads `libcuda` at run time, so a machine without a driver or
//!    GPU gets [`Error::NoGpu`](crate::Error::NoGpu), never a panic or a link error.
//! 2. [`Gpu::module`] loads a PTX module once and caches it; [`Gpu::error_record`] and
//!    [`Gpu::reset_error_record`] read and clear the device layer's error record in a module.
//! 3. The persistent backend ([`persistent`]) runs a region's DAG with the in-GPU scheduler.

pub mod graph;
pub mod levels;
pub mod persistent;
mod stage;
pub mod streams;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

pub use cudarc;
use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use taskweave_device::error::ErrorRecord;

use crate::error::Error;

/// One GPU: its context, the stream regions run on, a control stream, and loaded modules.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    control: Arc<CudaStream>,
    modules: Mutex<HashMap<usize, Arc<CudaModule>>>,
    name: String,
    sms: u32,
    /// Set when a kernel outlived the watchdog and its grace period: it still runs, so the stream
    /// is blocked and the memory it uses cannot be freed. Later regions fail fast with this reason.
    stuck: Mutex<Option<String>>,
    /// Instantiated CUDA graphs, for regions run again with the same DAG.
    pub(crate) graphs: graph::GraphCache,
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
        Ok(Self {
            ctx,
            stream,
            control,
            modules: Mutex::new(HashMap::new()),
            name,
            sms,
            stuck: Mutex::new(None),
            graphs: graph::GraphCache::default(),
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

    /// Fails when an earlier kernel is stuck on the GPU.
    pub(crate) fn check_usable(&self) -> Result<(), Error> {
        match &*self.stuck.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(reason) => Err(Error::NoGpu {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The module of `ptx`, loaded on first use.
    pub fn module(&self, ptx: &'static str) -> Result<Arc<CudaModule>, Error> {
        let mut modules = self.modules.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(module) = modules.get(&(ptx.as_ptr() as usize)) {
            return Ok(module.clone());
        }
        let module = self.ctx.load_module(Ptx::from_src(ptx)).map_err(Error::cuda(
            "loading the PTX module (was it built for a newer architecture than this GPU's? see TASKWEAVE_TARGET_CPU)",
        ))?;
        modules.insert(ptx.as_ptr() as usize, module.clone());
        Ok(module)
    }

    /// Function `name` of `ptx`.
    pub fn function(&self, ptx: &'static str, name: &str) -> Result<CudaFunction, Error> {
        self.module(ptx)?
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
            .map_err(Error::cuda(format!("running {what}")))?;
        let ms = start
            .elapsed_ms(&end)
            .map_err(Error::cuda(format!("timing {what}")))?;
        Ok(std::time::Duration::from_secs_f64(f64::from(ms) / 1e3))
    }

    /// The one-task kernel of `region` (block `b` runs task `list[b]`), with the context bound to
    /// the calling thread for the driver calls that follow.
    pub(crate) fn listed_kernel(
        &self,
        region: &crate::region::RegionMeta,
    ) -> Result<CudaFunction, Error> {
        let ptx = region.ptx.ok_or(Error::NoPtx {
            region: region.name,
        })?;
        let function = self.function(ptx, &format!("taskweave_listed_{}", region.name))?;
        self.ctx
            .bind_to_thread()
            .map_err(Error::cuda("binding the CUDA context"))?;
        Ok(function)
    }

    /// Clears the module's error record and abort flag before a launch.
    pub fn reset_error_record(&self, module: &Arc<CudaModule>) -> Result<(), Error> {
        let mut record = module
            .get_global("TASKWEAVE_ERROR", &self.stream)
            .map_err(Error::cuda("finding TASKWEAVE_ERROR in the module"))?;
        let empty = record_bytes(&ErrorRecord::EMPTY);
        self.stream
            .memcpy_htod(&empty[..], &mut record)
            .map_err(Error::cuda("clearing the error record"))?;
        let mut abort = module
            .get_global("TASKWEAVE_ABORT", &self.stream)
            .map_err(Error::cuda("finding TASKWEAVE_ABORT in the module"))?;
        self.stream
            .memcpy_htod(&[0u8; 4][..], &mut abort)
            .map_err(Error::cuda("clearing the abort flag"))?;
        Ok(())
    }

    /// The module's error record, after the stream has finished.
    pub fn error_record(&self, module: &Arc<CudaModule>) -> Result<ErrorRecord, Error> {
        let record = module
            .get_global("TASKWEAVE_ERROR", &self.stream)
            .map_err(Error::cuda("finding TASKWEAVE_ERROR in the module"))?;
        let bytes = self
            .stream
            .clone_dtoh(&record)
            .map_err(Error::cuda("reading the error record"))?;
        assert_eq!(
            bytes.len(),
            size_of::<ErrorRecord>(),
            "the device's ErrorRecord has another layout"
        );
        // SAFETY: `ErrorRecord` is `repr(C)` plain data of exactly this size (asserted above).
        Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<ErrorRecord>()) })
    }
}

fn record_bytes(record: &ErrorRecord) -> Vec<u8> {
    // SAFETY: `ErrorRecord` is `repr(C)` plain data with no padding-sensitive invariants.
    unsafe {
        std::slice::from_raw_parts(
            (record as *const ErrorRecord).cast::<u8>(),
            size_of::<ErrorRecord>(),
        )
    }
    .to_vec()
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
