//! What the two global-barrier backends share: the DAG run level by level, as classic CUDA code
//! runs dependent kernels. These are the baselines the persistent scheduler must beat.
//!
//! 1. [`Strategy::Launches`] (the `barrier` backend): one launch per topological level, one block
//!    per task; the kernel boundary is the barrier (Juggler's "global barriers" baseline).
//! 2. [`Strategy::GridBarrier`] (the `grid-barrier` backend): one persistent launch, blocks
//!    striding over each level, a software grid barrier between levels (`grid.sync()` style).

use std::time::Duration;

use cudarc::driver::{LaunchConfig, PushKernelArg};
use taskweave_device::abi::{LISTED_RANK_SHIFT, ListedTask};

use super::layout;
use super::stage::{Keep, Staged, bytes_of};
use super::watch::{self, Running};
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::inspect::Inspection;
use crate::options::Backend;
use crate::report::Report;
use crate::symbols;

/// How the levels are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Strategy {
    /// One kernel launch per level.
    Launches,
    /// One launch, a grid barrier between levels.
    GridBarrier,
}

/// Tasks grouped by topological level: `tasks[offsets[l]..offsets[l + 1]]` is level `l`, in spawn
/// order within a level.
pub(super) fn level_lists(ins: &Inspection) -> (Vec<u32>, Vec<u32>) {
    let levels = ins.dag.levels();
    let count = levels.iter().max().map_or(0, |&l| l as usize + 1);
    let mut offsets = vec![0u32; count + 1];
    for &l in &levels {
        offsets[l as usize + 1] += 1;
    }
    for l in 0..count {
        offsets[l + 1] += offsets[l];
    }
    let mut fill = offsets.clone();
    let mut tasks = vec![0u32; levels.len()];
    for (t, &l) in levels.iter().enumerate() {
        tasks[fill[l as usize] as usize] = t as u32;
        fill[l as usize] += 1;
    }
    (offsets, tasks)
}

/// The one-task kernels' entries for the levels `tasks[offsets[l]..offsets[l + 1]]`, and each
/// launch's first entry and blocks, in launch order ([`cut_launches`]). A wide task
/// (`#[task(blocks = K)]`) has one entry per block of its gang, its rank in the entry
/// ([`ListedTask::rank`]).
pub(super) fn listed_launches(
    ins: &Inspection,
    offsets: &[u32],
    tasks: &[u32],
    fit: u32,
) -> (Vec<ListedTask>, Vec<(u32, u32)>) {
    let widths = ins.task_widths();
    let listed = layout::listed(ins, tasks.iter().copied());
    let launches = cut_launches(offsets, tasks, &widths, fit);
    if widths.is_empty() {
        return (listed, launches);
    }
    let width = |t: u32| widths[t as usize];
    let mut entries = Vec::with_capacity(tasks.len());
    for entry in listed {
        debug_assert!(
            entry.kind < 1 << LISTED_RANK_SHIFT,
            "a kind past the rank's bits"
        );
        for rank in 0..width(entry.task) {
            entries.push(ListedTask {
                kind: entry.kind | rank << LISTED_RANK_SHIFT,
                ..entry
            });
        }
    }
    (entries, launches)
}

/// Each launch's first entry and blocks for the levels `tasks[offsets[l]..offsets[l + 1]]`, where
/// task `t` has `widths[t]` entries (`widths` empty: one each). Without wide tasks each level is
/// one launch, whatever its size. With them, a gang's entries are all in one launch, and no launch
/// holds more than `fit` blocks, so that every block of it is resident at once and a gang's
/// barrier cannot wait for a block that no SM has room for. `fit` must be at least the widest
/// gang.
pub(super) fn cut_launches(
    offsets: &[u32],
    tasks: &[u32],
    widths: &[u32],
    fit: u32,
) -> Vec<(u32, u32)> {
    let width = |t: u32| widths.get(t as usize).copied().unwrap_or(1);
    let mut launches = Vec::with_capacity(offsets.len());
    let mut next = 0u32;
    for level in offsets.windows(2) {
        let (mut first, mut blocks) = (next, 0u32);
        for &t in &tasks[level[0] as usize..level[1] as usize] {
            let w = width(t);
            if !widths.is_empty() && blocks + w > fit {
                launches.push((first, blocks));
                (first, blocks) = (next, 0);
            }
            blocks += w;
            next += w;
        }
        if blocks > 0 {
            launches.push((first, blocks));
        }
    }
    launches
}

/// Runs the call's DAG level by level on `gpu`.
pub(super) fn execute(
    gpu: &Gpu,
    call: &mut Call<'_, '_>,
    strategy: Strategy,
) -> Result<Report, Error> {
    let (meta, options) = (call.work.meta(), call.work.options());
    let ins = call.work.inspection();
    let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
    let (offsets, tasks) = level_lists(ins);
    let levels = offsets.len() - 1;
    let widest = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(1);
    let mut launches = Vec::new();
    let mut listed_entries = Vec::new();
    let (function, shared) = match strategy {
        Strategy::Launches => {
            let picked = gpu.listed_kernel(meta, options, widest)?;
            // A gang's blocks must all be resident at once: no launch with one is larger.
            super::check_gangs(call.work, picked.resident)?;
            let (listed, cut) = listed_launches(ins, &offsets, &tasks, picked.resident);
            launches = cut;
            listed_entries = listed;
            (picked.function, picked.shared)
        }
        Strategy::GridBarrier => {
            let name = gpu.variant(code, options.checked, &symbols::levels(meta.kernel));
            let function = gpu.function(code, &name)?;
            let shared = gpu.scratch(meta, options, &name, &function)?;
            (function, shared)
        }
    };
    // The grid barrier needs every block resident: its launch is admitted beside the others only
    // when they all fit (see `Residency`). One launch per level needs no such guarantee.
    let (workers, _admitted) = match strategy {
        Strategy::Launches => (launches.iter().map(|l| l.1).max().unwrap_or(1), None),
        Strategy::GridBarrier => {
            let resident = gpu.resident_blocks(&function, meta.name, options, shared)?;
            let workers = options.workers.unwrap_or(resident).clamp(1, resident);
            let sms = gpu.sm_count();
            let reservation = gpu.residency.reserve(sms, workers, resident / sms.max(1));
            (workers, Some(reservation))
        }
    };
    let prestaged = call.prestaged.take();
    let mut staged = Staged::new(gpu, call, workers, None, Keep::No, prestaged)?;
    let offsets_ptr = staged.put(gpu, bytes_of(&offsets), "the level offsets")?;
    let tasks_ptr = match strategy {
        // One-task kernels read each task's record from its list entry.
        Strategy::Launches => staged.put(gpu, bytes_of(&listed_entries), "the level lists")?,
        Strategy::GridBarrier => staged.put(gpu, bytes_of(&tasks), "the level lists")?,
    };
    let barrier_ptr = staged.put(gpu, &[0u8; 8], "the grid barrier")?;
    let desc_ptr = staged.desc_ptr();
    gpu.stream()
        .synchronize()
        .map_err(Error::cuda("uploading the level lists"))?;

    let mut kernel_time = Duration::ZERO;
    if !tasks.is_empty() {
        let block = (options.threads, 1, 1);
        let what = format!("region `{}` level by level", meta.name);
        let desc = staged.desc();
        let outcome = watch::timed(
            gpu,
            &what,
            ins,
            &desc,
            Running::Tasks,
            options.watchdog,
            || {
                match strategy {
                    Strategy::Launches => {
                        for (i, &(first, size)) in launches.iter().enumerate() {
                            let list = tasks_ptr + u64::from(first) * layout::LISTED;
                            let mut launch = gpu.stream().launch_builder(&function);
                            launch.arg(&desc_ptr).arg(&list);
                            let config = LaunchConfig {
                                grid_dim: (size, 1, 1),
                                block_dim: block,
                                shared_mem_bytes: shared,
                            };
                            // SAFETY: the kernel takes `(*const RegionDesc, *const ListedTask)`; `list`
                            // points at `size` staged entries.
                            unsafe { launch.launch(config) }.map_err(Error::cuda(format!(
                                "launching the levels' launch {i}"
                            )))?;
                        }
                    }
                    Strategy::GridBarrier => {
                        let count = levels as u32;
                        let mut launch = gpu.stream().launch_builder(&function);
                        launch
                            .arg(&desc_ptr)
                            .arg(&offsets_ptr)
                            .arg(&tasks_ptr)
                            .arg(&count)
                            .arg(&barrier_ptr);
                        let config = LaunchConfig {
                            grid_dim: (workers, 1, 1),
                            block_dim: block,
                            shared_mem_bytes: shared,
                        };
                        // SAFETY: the kernel takes `(desc, offsets, tasks, levels, barrier)`, all staged; the
                        // grid is no larger than what is resident at once.
                        unsafe { launch.launch(config) }
                            .map_err(Error::cuda("launching the level kernel"))?;
                    }
                }
                Ok(())
            },
        );
        kernel_time = match outcome {
            Ok(time) => time,
            Err(launched) => return Err(watch::settle(gpu, staged, launched)),
        };
    }
    let finished = staged.finish(gpu, call)?;
    let download = finished.download_time;
    let backend = match strategy {
        Strategy::Launches => Backend::Barrier,
        Strategy::GridBarrier => Backend::GridBarrier,
    };
    let mut report = Report::new(
        call,
        backend,
        workers,
        options.threads,
        Duration::ZERO,
        kernel_time,
        finished.stats,
        finished.trace,
    );
    staged.fill(&mut report, download);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::cut_launches;

    #[test]
    fn a_level_without_gangs_is_one_launch_of_any_size() {
        let tasks: Vec<u32> = (0..10).collect();
        assert_eq!(cut_launches(&[0, 7, 10], &tasks, &[], 4), [(0, 7), (7, 3)]);
    }

    #[test]
    fn a_gang_stays_in_one_launch_and_no_launch_passes_the_fit() {
        // Level 0: tasks 0 (1 block), 1 (4), 2 (1), 3 (4); level 1: task 4 (2).
        let widths = [1, 4, 1, 4, 2];
        let tasks = [0, 1, 2, 3, 4];
        let launches = cut_launches(&[0, 4, 5], &tasks, &widths, 6);
        assert_eq!(launches, [(0, 6), (6, 4), (10, 2)]);
        // Every entry is launched once, in order.
        let mut next = 0;
        for &(first, blocks) in &launches {
            assert_eq!(first, next);
            assert!(blocks <= 6);
            next += blocks;
        }
        assert_eq!(next, widths.iter().sum::<u32>());
        // A fit of exactly the widest gang still launches each gang whole.
        assert_eq!(
            cut_launches(&[0, 4, 5], &tasks, &widths, 4),
            [(0, 1), (1, 4), (5, 1), (6, 4), (10, 2)]
        );
    }
}
