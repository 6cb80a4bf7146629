//! The `streams` backend: the DAG scheduled from the host onto a pool of CUDA streams, as
//! GrCUDA and LLVM's OpenMP hidden helper threads do.
//!
//! 1. Tasks are visited in spawn (topological) order and placed by [`assign`]: a task takes the
//!    stream of its first parent that has not passed its stream on yet (so a chain stays on one
//!    stream and needs no event), and otherwise the next stream of its priority class.
//! 2. A task waits, with `cuStreamWaitEvent`, on the event of every parent on another stream, runs
//!    as one block of the region's one-task kernel, and records its own event.
//! 3. Streams come in two priority classes: tasks whose critical-path rank is in the top quarter
//!    go to high-priority streams.
//! 4. `execute_time` is host wall time from the first launch to the last stream's completion: the
//!    host-side scheduling cost is the point of the comparison.

use std::time::{Duration, Instant};

use cudarc::driver::sys::{self, CUevent_flags};
use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::Kept;
use super::layout::{self, LISTED};
use super::stage::{Keep, Staged, bytes_of};
use super::watch::{self, Running};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::graph::Dag;
use crate::options::Backend;
use crate::report::Report;

/// Streams per priority class.
pub(super) const STREAMS_PER_CLASS: usize = 8;

/// Where one task runs and whom it waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Placement {
    /// Index into the pool: `0..STREAMS_PER_CLASS` high priority, then normal.
    pub stream: usize,
    /// Parents on other streams, whose events the task waits on.
    pub waits: Vec<u32>,
}

/// Places every task of `dag` on a pool of `2 * per_class` streams (see the module docs).
pub(super) fn assign(dag: &Dag, per_class: usize) -> Vec<Placement> {
    let n = dag.task_count();
    let parents = dag.parents();
    let mut sorted_ranks = dag.rank.clone();
    sorted_ranks.sort_unstable();
    let high_rank = sorted_ranks.get(n - n / 4).copied().unwrap_or(u32::MAX);
    let mut handed_on = vec![false; n];
    let mut next = [0usize; 2];
    let mut placement: Vec<Placement> = Vec::with_capacity(n);
    for (t, &rank) in dag.rank.iter().enumerate() {
        let inherited = parents
            .parents_of(t as u32)
            .iter()
            .copied()
            .find(|&p| !handed_on[p as usize]);
        let stream = match inherited {
            Some(p) => {
                handed_on[p as usize] = true;
                placement[p as usize].stream
            }
            None => {
                let class = usize::from(rank < high_rank);
                let s = class * per_class + next[class] % per_class;
                next[class] += 1;
                s
            }
        };
        let waits = parents
            .parents_of(t as u32)
            .iter()
            .copied()
            .filter(|&p| placement[p as usize].stream != stream)
            .collect();
        placement.push(Placement { stream, waits });
    }
    placement
}

/// Runs the call's DAG on a pool of streams on `gpu`.
pub(super) fn execute(gpu: &Gpu, call: &mut Call<'_, '_>, _: &mut Kept) -> Result<Report, Error> {
    let (meta, options) = (call.work.meta(), call.work.options());
    let picked = gpu.listed_kernel(meta, options, call.work.widest_level() as u32)?;
    let function = &picked.function;
    let ins = call.work.inspection();
    let prestaged = call.prestaged.take();
    let mut staged = Staged::new(gpu, call, 1, None, Keep::No, prestaged)?;
    let n = ins.task_count();
    let listed = layout::listed(ins, 0..n as u32);
    let list = staged.put(gpu, bytes_of(&listed), "the task list")?;
    let desc_ptr = staged.desc_ptr();
    gpu.stream()
        .synchronize()
        .map_err(Error::cuda("uploading the task list"))?;

    let (mut low, mut high) = (0, 0);
    // SAFETY: writes the context's priority range (least, greatest) into the two integers.
    unsafe { sys::cuCtxGetStreamPriorityRange(&mut low, &mut high) }
        .result()
        .map_err(Error::cuda("reading stream priorities"))?;
    let mut streams = Vec::with_capacity(2 * STREAMS_PER_CLASS);
    for class in [high, low] {
        for _ in 0..STREAMS_PER_CLASS {
            streams.push(
                gpu.context()
                    .new_stream_with_priority(class)
                    .map_err(Error::cuda("creating a stream"))?,
            );
        }
    }
    let placement = assign(&ins.dag, STREAMS_PER_CLASS);
    let has_waiters = {
        let mut w = vec![false; n];
        for p in &placement {
            for &parent in &p.waits {
                w[parent as usize] = true;
            }
        }
        w
    };
    let mut events = Vec::with_capacity(n);
    for &needed in &has_waiters {
        events.push(if needed {
            Some(
                gpu.context()
                    .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(Error::cuda("creating an event"))?,
            )
        } else {
            None
        });
    }

    let start = Instant::now();
    let desc = staged.desc();
    let what = format!("region `{}` on streams", meta.name);
    let outcome = watch::timed(
        gpu,
        &what,
        ins,
        &desc,
        Running::Tasks,
        options.watchdog,
        || {
            // The pool's streams follow the region stream's start event...
            let begun = gpu
                .stream()
                .record_event(None)
                .map_err(Error::cuda("recording an event"))?;
            for stream in &streams {
                stream
                    .wait(&begun)
                    .map_err(Error::cuda("ordering a stream after the region's start"))?;
            }
            for (t, p) in placement.iter().enumerate() {
                let stream = &streams[p.stream];
                for &parent in &p.waits {
                    let event = events[parent as usize]
                        .as_ref()
                        .expect("a waited-on parent has an event");
                    // SAFETY: both handles belong to this context; the event was recorded (earlier in
                    // this loop, since parents come first).
                    let waited =
                        unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), event.cu_event(), 0) };
                    waited
                        .result()
                        .map_err(Error::cuda("making a stream wait on an event"))?;
                }
                let task_list = list + t as u64 * LISTED;
                let mut launch = stream.launch_builder(function);
                launch.arg(&desc_ptr).arg(&task_list);
                let config = LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (options.threads, 1, 1),
                    shared_mem_bytes: picked.shared,
                };
                // SAFETY: the kernel takes `(*const RegionDesc, *const u32)`; both point at staged
                // memory that lives until the region stream, which waits for every stream, is done.
                unsafe { launch.launch(config) }
                    .map_err(Error::cuda(format!("launching task {t}")))?;
                if let Some(event) = &events[t] {
                    event
                        .record(stream)
                        .map_err(Error::cuda("recording an event"))?;
                }
            }
            // ...and the region stream's end event follows every stream's last task.
            for stream in &streams {
                let done = stream
                    .record_event(None)
                    .map_err(Error::cuda("recording an event"))?;
                gpu.stream()
                    .wait(&done)
                    .map_err(Error::cuda("ordering the region's end after a stream"))?;
            }
            Ok(())
        },
    );
    if let Err(launched) = outcome {
        return Err(watch::settle(gpu, staged, launched));
    }
    let execute_time = if n > 0 {
        start.elapsed()
    } else {
        Duration::ZERO
    };
    let finished = staged.finish(gpu, call)?;
    let download = finished.download_time;
    let mut report = Report::new(
        call,
        Backend::Streams,
        streams.len() as u32,
        options.threads,
        Duration::ZERO,
        execute_time,
        finished.stats,
        finished.trace,
    );
    staged.fill(&mut report, download);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Access, DepTracker};

    fn dag(tasks: &[&[(u32, std::ops::Range<usize>, Access)]]) -> Dag {
        let mut tracker = DepTracker::new(&[16, 16]);
        for accesses in tasks {
            tracker.add_task(accesses).unwrap();
        }
        tracker.finish().unwrap()
    }

    #[test]
    fn a_chain_stays_on_one_stream_with_no_waits() {
        let chain: Vec<[(u32, std::ops::Range<usize>, Access); 1]> =
            (0..5).map(|_| [(0, 0..1, Access::ReadWrite)]).collect();
        let refs: Vec<&[_]> = chain.iter().map(|a| &a[..]).collect();
        let placement = assign(&dag(&refs), 4);
        assert!(
            placement
                .iter()
                .all(|p| p.stream == placement[0].stream && p.waits.is_empty())
        );
    }

    #[test]
    fn a_join_waits_on_every_parent_on_another_stream() {
        // Two independent writers, then a reader of both.
        let w0 = [(0, 0..1, Access::Write)];
        let w1 = [(1, 0..1, Access::Write)];
        let join = [(0, 0..1, Access::Read), (1, 0..1, Access::Read)];
        let placement = assign(&dag(&[&w0, &w1, &join]), 4);
        assert_ne!(
            placement[0].stream, placement[1].stream,
            "independent tasks spread over streams"
        );
        // The join inherits its first parent's stream and waits for the other.
        assert_eq!(placement[2].stream, placement[0].stream);
        assert_eq!(placement[2].waits, vec![1]);
    }

    #[test]
    fn only_one_child_inherits_a_stream() {
        let root = [(0, 0..2, Access::Write)];
        let a = [(0, 0..1, Access::Read)];
        let b = [(0, 1..2, Access::Read)];
        let placement = assign(&dag(&[&root, &a, &b]), 4);
        assert_eq!(placement[1].stream, placement[0].stream);
        assert_ne!(placement[2].stream, placement[0].stream);
        assert_eq!(placement[2].waits, vec![0]);
    }
}
