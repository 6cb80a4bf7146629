//! Errors, each with the context a user can act on: the task (index, kind, arguments, where it was
//! spawned), the array and range, the worker.

use std::fmt;
use std::ops::Range;
use std::panic::Location;
use std::time::Duration;

use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaContext, DriverError};

/// One task, as errors name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskRef {
    /// Index in spawn order.
    pub index: u32,
    /// The task function's name.
    pub kind: &'static str,
    /// Its arguments as the spawn wrote them, arrays by the region's name for them and scalars by
    /// value (`a, 60, 70, 2.0`).
    pub args: String,
    /// Where the region spawned it.
    pub location: &'static Location<'static>,
}

impl fmt::Display for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task #{} `{}({})` spawned at {}",
            self.index, self.kind, self.args, self.location
        )
    }
}

/// Everything that can go wrong in a region, from inspection to the GPU.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A declared range ends past its array.
    #[error(
        "{task}: range {range:?} of array `{array}` (parameter `{param}`) is out of bounds: the array has {len} elements"
    )]
    OutOfBounds {
        /// The task.
        task: TaskRef,
        /// The region's name for the array.
        array: &'static str,
        /// The task's parameter name for it.
        param: &'static str,
        /// The declared range.
        range: Range<usize>,
        /// The array's length.
        len: usize,
    },
    /// A declared range has `lo > hi`.
    #[error(
        "{task}: range {range:?} of array `{array}` (parameter `{param}`) is reversed: its start is past its end"
    )]
    ReversedRange {
        /// The task.
        task: TaskRef,
        /// The region's name for the array.
        array: &'static str,
        /// The task's parameter name for it.
        param: &'static str,
        /// The declared range.
        range: Range<usize>,
    },
    /// A task reads an element of an `#[output]` array that no earlier task declares written: the
    /// array's host contents are not copied to the device, so the read would see none of them.
    #[error(
        "{task}: reads range {range:?} of array `{array}` (parameter `{param}`), but no earlier task writes its element {element}, and `{array}` is an `#[output]` of the region, whose host contents are not copied to the GPU: write every element before a task reads it, or drop `#[output]` to copy the array"
    )]
    UnwrittenOutput {
        /// The task.
        task: TaskRef,
        /// The region's name for the array.
        array: &'static str,
        /// The task's parameter name for it.
        param: &'static str,
        /// The declared read range.
        range: Range<usize>,
        /// The first element of it that no earlier task writes.
        element: usize,
    },
    /// A task got one array through two parameters, at least one of them `&mut [T]`. Its views
    /// of the array would alias: safe code in the body could then hold a reference into the
    /// array while writing the same element through the other view.
    #[error(
        "{task}: array `{array}` is passed to both `{first}` ({}) and `{second}` ({}), and a task may take an array through several parameters only when none of them is `&mut`: pass it once and declare all its ranges on that parameter",
        mode(*.first_writable),
        mode(*.second_writable)
    )]
    AliasedArray {
        /// The task.
        task: TaskRef,
        /// The region's name for the array.
        array: &'static str,
        /// The first of the two parameters, in the task's order.
        first: &'static str,
        /// Whether `first` is `&mut [T]`.
        first_writable: bool,
        /// The second.
        second: &'static str,
        /// Whether `second` is `&mut [T]`.
        second_writable: bool,
    },
    /// The region spawned more tasks, argument words, dependence edges (or, under the affinity
    /// policy, access ranges) than its `u32` indices can address.
    #[error("region `{region}` is too large: more than {limit} {what}")]
    TooLarge {
        /// The region.
        region: &'static str,
        /// What overflowed.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// A wide task (`#[task(blocks = K)]`) asks for more blocks than the run has workers: a gang
    /// runs its blocks at once.
    #[error(
        "region `{region}`: task `{task}` runs on {blocks} blocks (`#[task(blocks = {blocks})]`), but the run has {workers} workers; a gang needs its blocks at once: give the region at least {blocks} workers, or lower `blocks`"
    )]
    GangTooWide {
        /// The region.
        region: &'static str,
        /// The widest task function.
        task: &'static str,
        /// Its blocks.
        blocks: u32,
        /// The run's workers.
        workers: u32,
    },
    /// A wide task (`#[task(blocks = K)]`) on a backend that does not launch a gang's blocks
    /// together (grid barrier, graph, streams).
    #[error(
        "region `{region}`: task `{task}` runs on {blocks} blocks (`#[task(blocks = {blocks})]`), which the `{backend}` backend cannot run: it does not launch a gang's blocks together; run the region on the persistent, the barrier or the CPU backend"
    )]
    GangsUnsupported {
        /// The region.
        region: &'static str,
        /// The widest task function.
        task: &'static str,
        /// Its blocks.
        blocks: u32,
        /// The backend.
        backend: &'static str,
    },
    /// A task panicked (CPU backend), or indexed outside its declared ranges in checked mode.
    #[error("{task} panicked: {message}{}", restored_note(*.restored))]
    TaskPanicked {
        /// The task.
        task: TaskRef,
        /// The panic message.
        message: String,
        /// Whether the host arrays were restored to their state before the region.
        restored: bool,
    },
    /// A task faulted on the GPU: its error record.
    #[error("{task} failed on the GPU (worker {worker}, thread {thread}): {message}{}", restored_note(*.restored))]
    TaskFault {
        /// The task.
        task: TaskRef,
        /// What the device reported.
        message: String,
        /// The worker block.
        worker: u32,
        /// The thread in the block.
        thread: u32,
        /// Whether the host arrays were left untouched.
        restored: bool,
    },
    /// No task completed for longer than the watchdog allows.
    #[error(
        "region `{region}` stalled: no task completed in {waited:?}; {unfinished} of {tasks} tasks unfinished, first: {}",
        first.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
    )]
    Stalled {
        /// The region.
        region: &'static str,
        /// How long the watchdog waited.
        waited: Duration,
        /// Tasks not finished.
        unfinished: usize,
        /// Tasks in the region.
        tasks: usize,
        /// The first few unfinished tasks.
        first: Vec<TaskRef>,
    },
    /// SM-aware workers ([`Region::workers_per_sm`](crate::Region::workers_per_sm),
    /// [`Region::sms`](crate::Region::sms)) that the device cannot place: more workers per SM
    /// than fit, SMs it does not have, an empty set, or a fixed worker count as well.
    #[error("region `{region}`: `{option}` {reason}")]
    SmOptions {
        /// The region.
        region: &'static str,
        /// The option as set, such as `workers_per_sm(9)`.
        option: String,
        /// Why it cannot be met.
        reason: String,
    },
    /// Task costs ([`Region::task_costs`](crate::Region::task_costs)) that the region cannot
    /// plan with: under a policy other than static, naming a task the region does not have, or
    /// leaving one of its tasks without a cost.
    #[error("region `{region}`: `task_costs` {reason}")]
    TaskCosts {
        /// The region.
        region: &'static str,
        /// Why they cannot be used.
        reason: String,
    },
    /// A `DeviceArray` bound to a region lives where the region's backend cannot reach it.
    #[error("array `{array}` of region `{region}` {detail}")]
    ArrayElsewhere {
        /// The region.
        region: &'static str,
        /// The array.
        array: &'static str,
        /// Where it is and where it would have to be.
        detail: &'static str,
    },
    /// A cudarc allocation handed to [`Runtime::adopt`](crate::Runtime::adopt) that the runtime
    /// cannot take: it belongs to another context, or the runtime is the CPU backend.
    #[error("cannot adopt the CUDA array: {reason}")]
    ForeignArray {
        /// Why.
        reason: String,
    },
    /// There is no usable GPU or driver.
    #[error("no GPU: {reason}")]
    NoGpu {
        /// What was missing.
        reason: String,
    },
    /// The crate was built without its device half.
    #[error(
        "region `{region}` has no PTX: its crate was built without a device build; add a build.rs that calls `taskweave_build::Builder::new(\".\").build()`"
    )]
    NoPtx {
        /// The region.
        region: &'static str,
    },
    /// The crate's kernel bundle cannot be read.
    #[error("the kernels crate's device code cannot be read: {reason}")]
    BadBundle {
        /// Why.
        reason: String,
    },
    /// A kernel is not in the crate's build (a build with `TASKWEAVE_REGIONS` keeps only some).
    #[error(
        "kernel `{kernel}` is not in this build of its crate: was it built with `{}` naming other regions?",
        taskweave_names::env::REGIONS
    )]
    MissingKernel {
        /// The kernel.
        kernel: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA error while {context}: {source}")]
    Cuda {
        /// What the runtime was doing.
        context: String,
        /// The driver's error.
        source: cudarc::driver::DriverError,
    },
    /// The region's data does not fit in device memory: found before anything was copied.
    #[error(
        "region `{region}` needs {needed} bytes of device memory; {free} are free: nothing was copied or run"
    )]
    DeviceOutOfMemory {
        /// The region.
        region: &'static str,
        /// Bytes needed.
        needed: u64,
        /// Bytes free.
        free: u64,
    },
    /// The driver refused a device allocation. Whatever was allocated before is freed again; no
    /// host array was written.
    #[error("device out of memory while {what}: {bytes} bytes asked for, {free} free")]
    OutOfMemory {
        /// What the runtime was allocating for.
        what: String,
        /// The size of the allocation that failed.
        bytes: u64,
        /// Free device memory just after the failure.
        free: u64,
    },
    /// The PTX targets a newer architecture than the GPU has, or the driver rejected it.
    #[error(
        "the PTX is built for {ptx_arch} and the GPU ({gpu}) is {gpu_arch}: {detail}; rebuild with `{}={gpu_arch}` (then `cargo build` again), or run on the CPU backend",
        taskweave_names::env::TARGET_CPU
    )]
    PtxArch {
        /// The `.target` the PTX names, such as `sm_100`.
        ptx_arch: String,
        /// The GPU's name.
        gpu: String,
        /// The GPU's architecture, such as `sm_90`.
        gpu_arch: String,
        /// What went wrong: the check before loading, or the driver's error.
        detail: String,
    },
    /// A task of an earlier region never finished, and the GPU still runs it: its region ended
    /// with [`Error::Stalled`], and no region can run on the GPU until that task ends. Nothing in
    /// CUDA stops a running kernel short of the end of the process.
    #[error(
        "the GPU is still running a task that never finished ({reason}); no region can run on this GPU until it ends, and only the end of the process stops it: restart the program, or run on the CPU backend"
    )]
    GpuStuck {
        /// The stall that left it running.
        reason: String,
    },
    /// The CUDA context is lost: a task trapped or used an illegal address, which poisons the
    /// context for the rest of the process.
    #[error(
        "the CUDA context is lost ({reason}); every later region on this GPU fails: restart the process"
    )]
    ContextLost {
        /// What lost it.
        reason: String,
    },

    /// A plan was run with a call it was not made for: another region, arrays of other shapes,
    /// options of its own, or (when the plan verifies) scalars that build another DAG.
    #[error("region `{region}` does not match its plan: {detail}")]
    PlanMismatch {
        /// The plan's region.
        region: &'static str,
        /// What differs.
        detail: String,
    },

    /// A region submitted without waiting could not run: its helper thread failed outside any
    /// task (a bug in taskweave), or the runtime was shutting down.
    #[error("region `{region}` submitted without waiting did not run: {reason}")]
    NotRun {
        /// The region.
        region: &'static str,
        /// Why.
        reason: String,
    },
}

/// How a task takes an array parameter.
fn mode(writable: bool) -> &'static str {
    if writable { "`&mut`" } else { "`&`" }
}

fn restored_note(restored: bool) -> &'static str {
    if restored {
        " (host arrays restored to their state before the region)"
    } else {
        ""
    }
}

impl Error {
    /// A CUDA error with what was being done.
    pub(crate) fn cuda(
        context: impl Into<String>,
    ) -> impl FnOnce(cudarc::driver::DriverError) -> Self {
        let context = context.into();
        move |source| Self::Cuda { context, source }
    }

    /// The error of an allocation of `bytes` for `what` in `ctx`: [`Error::OutOfMemory`] when the
    /// device is full, else [`Error::Cuda`].
    pub(crate) fn alloc(
        ctx: &CudaContext,
        what: impl Into<String>,
        bytes: usize,
    ) -> impl FnOnce(DriverError) -> Self + '_ {
        let what = what.into();
        move |source| {
            if source.0 != CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                return Self::Cuda {
                    context: what,
                    source,
                };
            }
            Self::OutOfMemory {
                what,
                bytes: bytes as u64,
                free: ctx.mem_get_info().map_or(0, |(free, _)| free as u64),
            }
        }
    }
}
