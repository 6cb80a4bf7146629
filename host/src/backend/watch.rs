//! The watchdog of every GPU backend: a kernel that stops making progress ends the call with
//! [`Error::Stalled`], within the region's watchdog time and a short grace.
//!
//! 1. Every kernel counts the tasks it completes in the region's counters, and marks the task each
//!    block runs: the persistent workers in their `current` words, the one-task and level kernels
//!    in the task's `pending` word ([`TASK_RUNNING`] while its body runs).
//! 2. [`watch`] polls the end event and, at growing intervals, the completed count through the
//!    control stream, which does not wait for the kernel. When the count has not moved for the
//!    watchdog time, it reads which tasks are running and raises the abort flag: workers and
//!    level kernels leave at the next task, and a task that polls nothing goes on.
//! 3. [`finish`] waits a short grace for the kernel to end. A kernel that does not is still using
//!    its memory and its stream, and nothing in CUDA stops a running kernel short of the end of
//!    the process (`bench/results/stall-probe-h200/`: `cuCtxDestroy`, `cuDevicePrimaryCtxReset`
//!    and a trapping kernel on another stream all waited for it): the call returns
//!    [`Launched::Stuck`], its backend leaves the memory allocated, and the GPU refuses further
//!    regions until that kernel ends ([`Gpu::mark_stuck`]), while the process can still exit.

use std::time::{Duration, Instant};

use cudarc::driver::{CudaEvent, result};
use taskweave_device::abi::{RegionDesc, TASK_RUNNING};

use super::stage::Staged;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::inspect::Inspection;

/// How long a kernel may take to leave after the abort flag is raised before it counts as stuck:
/// workers and level kernels see the flag within microseconds of finishing their task.
pub(crate) const GRACE: Duration = Duration::from_millis(500);

/// How a launch went wrong.
pub(crate) enum Launched {
    /// The run failed, and the GPU is done with its memory.
    Failed(Error),
    /// A kernel outlived the watchdog and its grace period: it may still use the memory.
    Stuck(Error),
}

impl From<Error> for Launched {
    fn from(error: Error) -> Self {
        Self::Failed(error)
    }
}

/// Where the running tasks are found when a run stalls.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Running {
    /// In the workers' `current` words (the persistent scheduler).
    Workers,
    /// In the tasks' `pending` words, [`TASK_RUNNING`] while their body runs (one-task and level
    /// kernels).
    Tasks,
}

/// What the watchdog saw when it gave up.
pub(crate) struct Stall {
    waited: Duration,
    completed: u32,
    running: Vec<u32>,
}

impl Stall {
    /// The error naming the tasks the kernel was running.
    pub(crate) fn into_error(self, ins: &Inspection) -> Error {
        let n = ins.task_count();
        Error::Stalled {
            region: ins.region,
            waited: self.waited,
            unfinished: n.saturating_sub(self.completed as usize),
            tasks: n,
            first: self
                .running
                .into_iter()
                .filter(|&t| (t as usize) < n)
                .take(8)
                .map(|t| ins.task_ref(t))
                .collect(),
        }
    }
}

/// Copies `words` 32-bit words from device address `src` on the control stream, which does not
/// wait for the running kernel.
pub(crate) fn peek(gpu: &Gpu, src: u64, words: usize) -> Option<Vec<u32>> {
    let mut out = vec![0u32; words];
    // SAFETY: `src` is a live staged device allocation of at least `words` words.
    unsafe { result::memcpy_dtoh_async(&mut out, src, gpu.control().cu_stream()) }.ok()?;
    gpu.control().synchronize().ok()?;
    Some(out)
}

/// Polls the completed counter through the control stream until `end` completes; raises the
/// abort flag when it stops moving for `timeout` (not counting the time while `waiting()`: the
/// kernel is queued behind earlier runs still going), and then reads which tasks are running.
pub(crate) fn watch(
    gpu: &Gpu,
    end: &CudaEvent,
    desc: &RegionDesc,
    running: Running,
    timeout: Duration,
    waiting: impl Fn() -> bool,
) -> Option<Stall> {
    let mut last = u32::MAX;
    let mut since = Instant::now();
    // Watch the end event the way the CUDA runtime's default synchronization does while a core is
    // free: poll it, yielding the core between polls, for the first `SPIN`. A sleep lasts at least
    // the thread's timer slack (50 us on Linux) and so sees the end of a kernel up to one nap
    // late: a planned call of 100,000 tasks, whose 208 us kernel outlived the 200 us of polling
    // this loop used to do before napping, came back 105 us after its kernel.
    //
    // Beyond `SPIN` it sleeps in short naps (about 60 us with the slack), and it reads the
    // progress counter only at doubling intervals from 1 ms up to 10 ms: the watchdog needs no
    // more, and each read is a copy and a wait on the control stream, during which the end would
    // go unseen.
    const SPIN: Duration = Duration::from_millis(20);
    let nap = Duration::from_micros(20);
    let mut every = Duration::from_millis(1);
    let (start, mut peeked) = (Instant::now(), Instant::now());
    loop {
        if end.is_complete() {
            return None;
        }
        if start.elapsed() < SPIN {
            std::thread::yield_now();
        } else {
            std::thread::sleep(nap);
        }
        if peeked.elapsed() < every {
            continue;
        }
        peeked = Instant::now();
        every = (every * 2).min(Duration::from_millis(10));
        let completed = peek(gpu, desc.counters, 1)?[0];
        if completed != last || waiting() {
            last = completed;
            since = Instant::now();
        } else if since.elapsed() > timeout {
            let running = match running {
                Running::Workers => {
                    peek(gpu, desc.current, desc.n_workers as usize).unwrap_or_default()
                }
                Running::Tasks => peek(gpu, desc.pending, desc.n_tasks as usize)
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                    .filter(|&(_, state)| state == TASK_RUNNING)
                    .map(|(t, _)| t as u32)
                    .collect(),
            };
            // SAFETY: `abort` is a live 8-byte device allocation the kernels poll.
            let _ = unsafe {
                result::memcpy_htod_async(desc.abort, &[1u32][..], gpu.control().cu_stream())
            };
            let _ = gpu.control().synchronize();
            return Some(Stall {
                waited: since.elapsed(),
                completed,
                running,
            });
        }
    }
}

/// After [`watch`] saw a stall: the error, as [`Launched::Failed`] when the kernel ended within
/// [`GRACE`] of the abort, else [`Launched::Stuck`].
pub(crate) fn finish(stall: Stall, ins: &Inspection, end: &CudaEvent) -> Launched {
    let error = stall.into_error(ins);
    match wait_done(end, GRACE) {
        true => Launched::Failed(error),
        false => Launched::Stuck(error),
    }
}

/// The error of a launch that went wrong, after dealing with its memory: a stuck kernel keeps
/// `staged` allocated for good and marks the GPU stuck ([`Gpu::mark_stuck`]).
pub(crate) fn settle(gpu: &Gpu, staged: Staged, launched: Launched) -> Error {
    match launched {
        Launched::Failed(error) => error,
        Launched::Stuck(error) => {
            staged.abandon();
            gpu.mark_stuck(&error);
            error
        }
    }
}

/// Waits up to `grace` for `end` to complete.
pub(crate) fn wait_done(end: &CudaEvent, grace: Duration) -> bool {
    let start = Instant::now();
    while !end.is_complete() {
        if start.elapsed() > grace {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// Runs `enqueue` (which queues the call's kernels on the region stream) between two events and
/// watches it ([`watch`]): the time between the events, or how it went wrong. A stream that
/// synchronizes with an error turns the kernel's fault into one ([`Gpu::after_kernel`]).
pub(crate) fn timed(
    gpu: &Gpu,
    what: &str,
    ins: &Inspection,
    desc: &RegionDesc,
    running: Running,
    timeout: Duration,
    enqueue: impl FnOnce() -> Result<(), Error>,
) -> Result<Duration, Launched> {
    use cudarc::driver::sys::CUevent_flags;
    let event = || {
        gpu.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(Error::cuda("creating an event"))
    };
    let (start, end) = (event()?, event()?);
    start
        .record(gpu.stream())
        .map_err(Error::cuda("recording an event"))?;
    enqueue()?;
    end.record(gpu.stream())
        .map_err(Error::cuda("recording an event"))?;
    if let Some(stall) = watch(gpu, &end, desc, running, timeout, || false) {
        return Err(finish(stall, ins, &end));
    }
    gpu.stream()
        .synchronize()
        .map_err(gpu.after_kernel(format!("running {what}")))?;
    let ms = start
        .elapsed_ms(&end)
        .map_err(Error::cuda(format!("timing {what}")))?;
    Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
}
