//! The global-barrier backends: the DAG run level by level, as classic CUDA code runs dependent
//! kernels. These are the baselines the persistent scheduler must beat.
//!
//! 1. [`Strategy::Launches`]: one launch per topological level, one block per task; the kernel
//!    boundary is the barrier (Juggler's "global barriers" baseline).
//! 2. [`Strategy::GridBarrier`]: one persistent launch, blocks striding over each level, a software
//!    grid barrier between levels (`grid.sync()` style).

use std::time::Duration;

use cudarc::driver::{LaunchConfig, PushKernelArg};

use taskweave_names::Entry;

use super::Gpu;
use super::persistent::resident_blocks;
use super::stage::{Staged, bytes_of};
use crate::error::Error;
use crate::inspect::Inspection;
use crate::region::Region;
use crate::report::Report;

/// How the levels are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One kernel launch per level.
    Launches,
    /// One launch, a grid barrier between levels.
    GridBarrier,
}

/// Tasks grouped by topological level: `tasks[offsets[l]..offsets[l + 1]]` is level `l`, in spawn
/// order within a level.
pub fn level_lists(ins: &Inspection) -> (Vec<u32>, Vec<u32>) {
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

/// Runs `ins`'s DAG level by level on `gpu`.
pub(crate) fn execute(
    gpu: &Gpu,
    region: &Region<'_>,
    ins: &Inspection,
    strategy: Strategy,
) -> Result<Report, Error> {
    let meta = &region.meta;
    let options = &region.options;
    let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
    let (offsets, tasks) = level_lists(ins);
    let levels = offsets.len() - 1;
    let widest = offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(1);
    let function = match strategy {
        Strategy::Launches => gpu.listed_kernel(region, widest)?,
        Strategy::GridBarrier => {
            let name = gpu.variant(region, code, &super::sibling(region, Entry::Levels));
            gpu.function(code, &name)?
        }
    };
    // The grid barrier needs every block resident: its launch is admitted beside the others only
    // when they all fit (see `Residency`). One launch per level needs no such guarantee.
    let (workers, _admitted) = match strategy {
        Strategy::Launches => (widest, None),
        Strategy::GridBarrier => {
            let resident = resident_blocks(gpu, &function, region)?;
            let workers = options.workers.unwrap_or(resident).clamp(1, resident);
            let reservation = gpu
                .residency
                .reserve(gpu.sms, workers, resident / gpu.sms.max(1));
            (workers, Some(reservation))
        }
    };
    let mut staged = Staged::new(gpu, region, ins, workers)?;
    let (offsets_ptr, _) = staged.put(bytes_of(&offsets), "the level offsets")?;
    let (tasks_ptr, _) = staged.put(bytes_of(&tasks), "the level lists")?;
    let (barrier_ptr, _) = staged.put(&[0u8; 8], "the grid barrier")?;
    gpu.stream
        .synchronize()
        .map_err(Error::cuda("uploading the level lists"))?;

    let mut kernel_time = Duration::ZERO;
    if !tasks.is_empty() {
        let block = (options.threads, 1, 1);
        let shared = options.shared_bytes;
        let what = format!("region `{}` level by level", meta.name);
        kernel_time = gpu.timed(&what, || {
            match strategy {
                Strategy::Launches => {
                    for level in 0..levels {
                        let size = offsets[level + 1] - offsets[level];
                        let list = tasks_ptr + u64::from(offsets[level]) * 4;
                        let mut launch = gpu.stream.launch_builder(&function);
                        launch.arg(&staged.desc_ptr).arg(&list);
                        let config = LaunchConfig {
                            grid_dim: (size, 1, 1),
                            block_dim: block,
                            shared_mem_bytes: shared,
                        };
                        // SAFETY: the kernel takes `(*const RegionDesc, *const u32)`; `list` points at
                        // `size` staged task indices.
                        unsafe { launch.launch(config) }
                            .map_err(Error::cuda(format!("launching level {level}")))?;
                    }
                }
                Strategy::GridBarrier => {
                    let count = levels as u32;
                    let mut launch = gpu.stream.launch_builder(&function);
                    launch
                        .arg(&staged.desc_ptr)
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
        })?;
    }
    let upload_time = staged.upload_time;
    let finished = staged.finish(region, ins)?;
    let backend = match strategy {
        Strategy::Launches => "barrier",
        Strategy::GridBarrier => "grid-barrier",
    };
    Ok(Report::new(
        region,
        ins,
        backend,
        workers,
        options.threads,
        upload_time + finished.download_time,
        kernel_time,
        finished.stats,
        finished.trace,
    ))
}
