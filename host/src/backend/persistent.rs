//! The persistent backend: one launch of the region's kernel, whose worker blocks run the whole DAG
//! with the in-GPU scheduler.
//!
//! 1. Size the grid from the occupancy of the compiled kernel: SMs × resident blocks per SM, so all
//!    workers are resident at once and spinning on a queue can never starve an unlaunched block.
//!    With SM-aware workers (`crate::sm`) every block that fits is launched, and each claims a
//!    worker on its SM or retreats at kernel entry.
//! 2. Stage the arrays and tables (`Staged`) and launch. A plan that runs again keeps all of it
//!    (`Prepared`): its next call copies its host arrays in and replays one CUDA graph (`replay`)
//!    of the kernel between its timing events. The workers themselves put the tables back as they
//!    started at the end of the run and leave the error record and their statistics in mapped
//!    host memory (`taskweave_device::sched::finish`); where they cannot (a traced run, SM-aware
//!    workers, or `Plan::reset_on_device(false)`), the graph resets the tables before the kernel
//!    and copies the record and statistics back after it. With `Plan::replay(false)` the call
//!    issues those operations one by one.
//! 3. While it runs, the host watches the completed-task counter through the control stream; when
//!    it stops moving for the watchdog timeout the host raises the abort flag (`watch`).
//! 4. `Staged::finish`: a faulting task becomes an error naming it, with the host arrays left
//!    untouched; otherwise the writable arrays come back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaFunction, LaunchConfig, PushKernelArg, result};
use taskweave_device::abi::RegionDesc;

use super::Kept;
use super::replay::{Replay, Sequence};
use super::stage::{Keep, Staged};
use super::watch::{self, Launched, Running, peek, watch};
use crate::call::{Call, Prestaged};
use crate::error::Error;
use crate::gpu::kernels::Picked;
use crate::gpu::{Gpu, GpuShared};
use crate::options::{Backend, Policy};
use crate::report::Report;
use crate::sm::SmLayout;

/// The worker count when the region sets none: the DAG's widest level in whole SMs' worth of
/// workers (rounded to the nearest, at least one per SM), at most `resident`. Workers beyond what
/// the DAG can feed only share SMs with the busy ones: on the H100, LU at 15×15 tiles (widest
/// level 196) ran in 1.16 ms with 132 workers, 1.51 ms with 264 and 1.52 ms with 528, while a
/// 512-wide wavefront wants 4 per SM (`bench/results/scheduler-tuning-h100.md`).
pub(crate) fn default_workers(resident: u32, sms: u32, widest_level: usize) -> u32 {
    let sms = u64::from(sms.max(1));
    let per_sm = ((widest_level as u64 + sms / 2) / sms).max(1);
    u32::try_from(per_sm * sms).map_or(resident, |w| w.min(resident))
}

/// SM-aware workers: the kernel to launch (the uncapped twin when `per_sm` of its blocks fit on
/// every SM), the layout, and how many blocks to launch: every one that fits at once, so that each
/// SM gets its share before any retreats.
fn on_sms(gpu: &Gpu, call: &Call<'_, '_>, widest: usize) -> Result<(Picked, SmLayout), Error> {
    let (meta, options) = (call.work.meta(), call.work.options());
    let sms = gpu.sm_count();
    let mut layout = Ok(None);
    let picked = gpu.pick(meta, options, meta.kernel, |resident| {
        let occupancy = resident / sms.max(1);
        layout = SmLayout::resolve(
            meta.name,
            options,
            sms,
            Some(occupancy),
            // As without the option: the widest level, in whole SMs' worth of workers.
            |set| default_workers(occupancy * set, set, widest) / set.max(1),
        );
        match &layout {
            Ok(Some(l)) => l.per_sm * sms,
            _ => resident,
        }
    })?;
    let layout = layout?.expect("the region asks for SM-aware workers");
    Ok((picked, layout))
}

/// What the persistent backend keeps in a plan that runs again, for one GPU: the kernel it chose,
/// the launch's shape and the staged tables, so that the next call only resets the tables on the
/// device, copies its host arrays in and launches.
pub(super) struct Prepared {
    /// The calls replayed as CUDA graphs, one per descriptor (set of arrays), oldest first.
    /// First, so that they are dropped first: their nodes use the kernel, the tables, the pinned
    /// read-back buffer and the events below.
    replays: Vec<Replay>,
    /// The GPU it was made for ([`Gpu::device_id`]).
    device: usize,
    function: CudaFunction,
    /// Shared memory per block.
    shared: u32,
    /// Workers, and blocks to launch (every block that fits, for SM-aware workers).
    workers: u32,
    blocks: u32,
    /// Blocks of `function` resident at once on the whole GPU.
    resident: u32,
    layout: Option<SmLayout>,
    /// The policy its tables were built for: a plan that moves to another (the default policy's
    /// upgrade to the static plan) stages again.
    policy: Policy,
    staged: Staged,
    /// What choosing and loading the kernel took; zero once reported.
    load_time: Duration,
    /// Recorded around each launch.
    start: Arc<CudaEvent>,
    end: Arc<CudaEvent>,
    /// The device, kept until everything above is dropped, also when the plan outlives the
    /// runtime ([`Gpu::shared`]). Its address is `device`, which it keeps from being reused.
    _gpu: Arc<GpuShared>,
}

/// Graphs kept for the descriptors a plan runs on, as many as the descriptors [`Staged`] keeps.
const REPLAYS: usize = 8;

/// Chooses the kernel and the launch's shape for the call, and stages it; `keep` when the plan
/// runs again.
fn prepare(
    gpu: &Gpu,
    call: &Call<'_, '_>,
    keep: bool,
    prestaged: Option<Prestaged>,
) -> Result<Prepared, Error> {
    let (meta, options) = (call.work.meta(), call.work.options());
    let widest = call.work.widest_level();
    let sms = gpu.sm_count();
    let loading = Instant::now();
    // Never more workers than can be resident at once (`pick` clamps): a non-resident worker
    // would deadlock the rest.
    let (picked, layout) = if options.sm_aware() {
        let (picked, layout) = on_sms(gpu, call, widest)?;
        (picked, Some(layout))
    } else {
        let picked = gpu.pick(meta, options, meta.kernel, |resident| {
            options.workers.unwrap_or_else(|| {
                default_workers(resident, sms, widest).max(super::gang_floor(call.work))
            })
        })?;
        (picked, None)
    };
    // SM-aware workers launch every block that fits, so that each SM gets its share; the others
    // launch one block per worker.
    let (workers, blocks) = match &layout {
        Some(l) => (l.workers(), picked.resident),
        None => (picked.blocks, picked.blocks),
    };
    super::check_gangs(call.work, workers)?;
    let load_time = loading.elapsed();
    let event = || {
        gpu.context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map(Arc::new)
            .map_err(Error::cuda("creating an event"))
    };
    let (start, end) = (event()?, event()?);
    // The workers reset a kept plan's tables themselves, unless the host must read what they
    // write after the run (the trace), or blocks beyond the workers may still start after the
    // workers are done (SM-aware launches, whose surplus blocks claim their rank from the SM
    // slots that the reset would clear).
    let keep = match keep {
        false => Keep::No,
        true if call.work.reset_on_device && !options.trace && layout.is_none() => Keep::OnDevice,
        true => Keep::OnHost,
    };
    let staged = Staged::new(gpu, call, workers, layout.as_ref(), keep, prestaged)?;
    Ok(Prepared {
        _gpu: gpu.shared(),
        device: gpu.device_id(),
        function: picked.function,
        shared: picked.shared,
        workers,
        blocks,
        resident: picked.resident,
        layout,
        policy: options.run_policy(),
        staged,
        start,
        end,
        replays: Vec::new(),
        load_time,
    })
}

/// Runs the call's DAG on `gpu` with the persistent scheduler. A plan that runs again keeps the
/// kernel, the launch's shape and the staged tables (see [`Prepared`]).
pub(super) fn execute(
    gpu: &Gpu,
    call: &mut Call<'_, '_>,
    kept: &mut Kept,
) -> Result<Report, Error> {
    let prepared = kept
        .persistent
        .take()
        .filter(|p| p.device == gpu.device_id() && p.policy == call.work.options().run_policy());
    // A plan that runs again replays its calls as CUDA graphs, which reset the tables themselves.
    let replay = call.reused && call.work.replay;
    let mut prepared = match prepared {
        Some(mut prepared) => {
            prepared.staged.restage(gpu, call, !replay)?;
            prepared
        }
        // A plan's first call, or a region run once: the tables get a pristine copy only when
        // the plan runs again.
        None => {
            let prestaged = call.prestaged.take();
            prepare(gpu, call, call.reused, prestaged)?
        }
    };
    let outcome = launch(gpu, call, &mut prepared, call.reused, replay);
    match outcome {
        Err(Launched::Stuck(error)) => {
            // A task body ignores the abort flag and never returns: the kernel still uses the
            // staged memory, so it must not be freed, and the stream stays blocked.
            prepared.staged.abandon();
            gpu.mark_stuck(&error);
            Err(error)
        }
        Err(Launched::Failed(error)) => Err(error),
        Ok(kernel_time) => {
            let finished = prepared.staged.finish(gpu, call);
            let report = finished.map(|finished| {
                let download = finished.download_time;
                let mut report = Report::new(
                    call,
                    Backend::Persistent,
                    prepared.workers,
                    call.work.options().threads,
                    Duration::ZERO,
                    kernel_time.kernel,
                    finished.stats,
                    finished.trace,
                );
                prepared.staged.fill(&mut report, download);
                report.phases.load = std::mem::take(&mut prepared.load_time);
                report.phases.launch = kernel_time.launch;
                report.phases.wait = kernel_time.wait;
                report
            });
            if call.reused {
                kept.persistent = Some(prepared);
            }
            report
        }
    }
}

/// What a launch took: the kernel on the device, and on the host, queueing it (after the runs it
/// follows) and waiting for its end.
struct Timed {
    kernel: Duration,
    launch: Duration,
    wait: Duration,
}

/// Launches the prepared kernel after the runs the call follows, watches it, and returns its
/// times.
/// A plan that runs again (`keep`) has the error record and statistics copied into pinned memory
/// right after the kernel; with `replay`, the tables' reset, the events, the kernel and that copy
/// are one CUDA graph ([`replay`]).
fn launch(
    gpu: &Gpu,
    call: &Call<'_, '_>,
    prepared: &mut Prepared,
    keep: bool,
    replay: bool,
) -> Result<Timed, Launched> {
    let (meta, options) = (call.work.meta(), call.work.options());
    if call.work.inspection().task_count() == 0 {
        return Ok(Timed {
            kernel: Duration::ZERO,
            launch: Duration::ZERO,
            wait: Duration::ZERO,
        });
    }
    let launching = Instant::now();
    let sms = gpu.sm_count();
    // A submitted call follows the kernels of the runs it conflicts with on the device: its
    // stream waits for their end events (its staging, done by now, overlapped them). They are
    // taken before the residency below, which an earlier run may still need for its own launch.
    let earlier_kernels: Vec<_> = call
        .order
        .iter()
        .flat_map(|order| order.after.iter().filter_map(|d| d.wait_launched()))
        .collect();
    // Every worker must be resident: the launch waits until it fits beside the other kernels of
    // that kind running now (regions submitted without waiting, on other handles). SM-aware
    // launches count only the workers they keep: the blocks beyond their set and share retreat
    // once the set is claimed, so two regions on disjoint sets run side by side.
    let _admitted = gpu
        .residency
        .reserve(sms, prepared.workers, prepared.resident / sms.max(1));
    let config = LaunchConfig {
        grid_dim: (prepared.blocks, 1, 1),
        block_dim: (options.threads, 1, 1),
        shared_mem_bytes: prepared.shared,
    };
    for end in &earlier_kernels {
        gpu.stream()
            .wait(end)
            .map_err(Error::cuda("ordering a region after an earlier one"))?;
    }
    let desc = prepared.staged.desc();
    let desc_ptr = prepared.staged.desc_ptr();
    // SM-aware launches fill one at a time: a launch's blocks must reach every SM of its set
    // before they run out, which another filling launch churning through the same SMs could
    // prevent.
    let filling = prepared.layout.as_ref().map(|_| gpu.filling());
    prepared.staged.arm();
    if replay {
        replay_call(gpu, prepared, config, desc_ptr)?;
    } else {
        prepared
            .start
            .record(gpu.stream())
            .map_err(Error::cuda("recording an event"))?;
        let mut builder = gpu.stream().launch_builder(&prepared.function);
        builder.arg(&desc_ptr);
        // SAFETY: the kernel's one parameter is `*const RegionDesc`; `desc_ptr` points at a
        // staged descriptor whose tables live until `prepared` is dropped or abandoned.
        unsafe { builder.launch(config) }
            .map_err(Error::cuda(format!("launching region `{}`", meta.name)))?;
        prepared
            .end
            .record(gpu.stream())
            .map_err(Error::cuda("recording an event"))?;
        if keep && !prepared.staged.resets_itself() {
            prepared.staged.read_back_after_kernel(gpu)?;
        }
    }
    let launch = launching.elapsed();
    let waiting_since = Instant::now();
    let (start, end) = (&prepared.start, &prepared.end);
    if filling.is_some() {
        wait_filled(gpu, end, &desc, options.watchdog);
    }
    drop(filling);
    if let Some(order) = call.order {
        order.done.launched(end.clone());
    }
    // While the kernel waits for earlier runs that are still going, the watchdog waits too.
    let waiting = || {
        !start.is_complete()
            && call
                .order
                .is_some_and(|order| order.after.iter().any(|d| !d.is_set()))
    };
    if let Some(stall) = watch(gpu, end, &desc, Running::Workers, options.watchdog, waiting) {
        return Err(watch::finish(stall, call.work.inspection(), end));
    }
    // When the end event is the last work of the call and it completed without an error, the
    // stream has nothing left to wait for; otherwise the synchronization waits for the read-back
    // queued after the kernel, or turns the kernel's fault into an error.
    let end_is_last = !keep || prepared.staged.resets_itself();
    if !(end_is_last && end.try_is_complete() == Ok(true)) {
        gpu.stream()
            .synchronize()
            .map_err(gpu.after_kernel(format!("running region `{}`", meta.name)))?;
    }
    let wait = waiting_since.elapsed();
    // SAFETY: both events are live, of the bound context, recorded and complete.
    let ms = unsafe { result::event::elapsed(start.cu_event(), end.cu_event()) }
        .map_err(Error::cuda("timing the kernel"))?;
    Ok(Timed {
        kernel: Duration::from_secs_f64(f64::from(ms) / 1e3),
        launch,
        wait,
    })
}

/// Replays the call as the CUDA graph of its descriptor, built on the descriptor's first call:
/// the tables' reset, the start event, the kernel, the end event and the read-back of the error
/// record and statistics.
fn replay_call(
    gpu: &Gpu,
    prepared: &mut Prepared,
    config: LaunchConfig,
    desc_ptr: u64,
) -> Result<(), Error> {
    let at = match prepared.replays.iter().position(|r| r.desc_ptr == desc_ptr) {
        Some(at) => at,
        None => {
            // The workers that reset their own tables leave the record and statistics in mapped
            // memory: the graph is then only the kernel between its events.
            let own = prepared.staged.resets_itself();
            let read_back = match own {
                true => None,
                false => Some(prepared.staged.read_back_copy(gpu)?),
            };
            let built = Replay::build(
                gpu,
                &Sequence {
                    reset: (!own).then(|| prepared.staged.reset_copy()),
                    start: &prepared.start,
                    function: &prepared.function,
                    config,
                    desc_ptr,
                    end: &prepared.end,
                    read_back,
                },
            )?;
            if prepared.replays.len() == REPLAYS {
                prepared.replays.remove(0);
            }
            prepared.replays.push(built);
            prepared.replays.len() - 1
        }
    };
    // SAFETY: the graph's addresses are the kept tables and pinned memory, and a descriptor of
    // this plan (a graph outlives its descriptor only when the address is reused by another of
    // this plan's descriptors, which the graph then passes: the kernel reads the address alone).
    unsafe { prepared.replays[at].launch(gpu) }?;
    if !prepared.staged.resets_itself() {
        prepared.staged.expect_read_back();
    }
    Ok(())
}

/// Waits until every SM of an SM-aware launch's set has its workers (each slot counter has reached
/// `per_sm`), the kernel has ended, or `timeout` has passed (the watchdog then reports the stall).
fn wait_filled(gpu: &Gpu, end: &CudaEvent, desc: &RegionDesc, timeout: Duration) {
    let start = Instant::now();
    let set = desc.sm_first as usize..(desc.sm_first + desc.sm_len) as usize;
    while !end.is_complete() && start.elapsed() < timeout {
        let Some(slots) = peek(gpu, desc.sm_slots, desc.sm_count as usize) else {
            return;
        };
        if slots
            .get(set.clone())
            .is_some_and(|s| s.iter().all(|&n| n >= desc.per_sm))
        {
            return;
        }
        std::thread::sleep(Duration::from_micros(20));
    }
}

#[cfg(test)]
mod tests {
    use super::default_workers;

    #[test]
    fn default_workers_cover_the_widest_level_in_whole_sms() {
        assert_eq!(default_workers(528, 132, 1), 132);
        assert_eq!(default_workers(528, 132, 132), 132);
        assert_eq!(default_workers(528, 132, 196), 132);
        assert_eq!(default_workers(528, 132, 199), 264);
        assert_eq!(default_workers(528, 132, 512), 528);
        assert_eq!(default_workers(528, 132, 1_000_000), 528);
        assert_eq!(default_workers(100, 132, 0), 100);
    }
}
