//! The persistent backend: one launch of the region's kernel, whose worker blocks run the whole DAG
//! with the in-GPU scheduler.
//!
//! 1. Size the grid from the occupancy of the compiled kernel: SMs × resident blocks per SM, so all
//!    workers are resident at once and spinning on a queue can never starve an unlaunched block.
//! 2. Upload the arrays and the scheduler's tables, clear the module's error record, launch.
//! 3. While it runs, the host watches the completed-task counter through the control stream; when
//!    it stops moving for the watchdog timeout the host raises the abort flag.
//! 4. Read the error record: a faulting task becomes an error naming it, and the host arrays are
//!    left untouched. Otherwise copy the writable arrays back and read statistics and trace.

use std::time::{Duration, Instant};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, DevicePtr, LaunchConfig, PushKernelArg, result};
use taskweave_device::abi::{
    ArrayDesc, FLAG_CHECKED, FLAG_TRACE, RegionDesc, TraceRecord, WorkerStats,
};
use taskweave_device::error::CODE_NONE;

use super::{Gpu, describe};
use crate::error::Error;
use crate::inspect::Inspection;
use crate::region::Region;
use crate::report::Report;
use crate::tables::Tables;

/// The bytes of a slice of plain `repr(C)` records.
fn bytes_of<T: Copy>(data: &[T]) -> &[u8] {
    // SAFETY: `T: Copy` records of the ABI have no padding the device could misread; the length
    // covers exactly the slice.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Device memory of one run; the device addresses go into the region descriptor.
struct Uploads {
    buffers: Vec<CudaSlice<u8>>,
}

impl Uploads {
    /// Uploads `bytes` (at least 8, so that empty tables still get an address) and returns the
    /// device address.
    /// The buffer uploaded last.
    fn last(&self) -> usize {
        self.buffers.len() - 1
    }

    fn put(&mut self, gpu: &Gpu, bytes: &[u8], what: &str) -> Result<u64, Error> {
        let padded = [0u8; 8];
        let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
        let buffer = gpu
            .stream
            .clone_htod(bytes)
            .map_err(Error::cuda(format!("uploading {what}")))?;
        let ptr = buffer.device_ptr(&gpu.stream).0;
        self.buffers.push(buffer);
        Ok(ptr)
    }
}

/// Runs `inspection`'s DAG on `gpu` with the persistent scheduler.
pub(crate) fn execute(
    gpu: &Gpu,
    region: &Region<'_>,
    inspection: &Inspection,
) -> Result<Report, Error> {
    let meta = &region.meta;
    let options = &region.options;
    let n = inspection.task_count();
    let ptx = meta.ptx.ok_or(Error::NoPtx { region: meta.name })?;
    let module = gpu.module(ptx)?;
    let function = gpu.function(ptx, meta.kernel)?;

    let per_sm = function
        .occupancy_max_active_blocks_per_multiprocessor(
            options.threads,
            options.shared_bytes as usize,
            None,
        )
        .map_err(Error::cuda("computing the kernel's occupancy"))?;
    if per_sm == 0 {
        return Err(Error::Cuda {
            context: format!(
                "sizing region `{}`: no block of {} threads with {} bytes of shared memory fits on an SM",
                meta.name, options.threads, options.shared_bytes
            ),
            source: result::DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_INVALID_VALUE),
        });
    }
    let resident = per_sm * gpu.sms;
    // Never more workers than can be resident at once: a non-resident worker would deadlock the rest.
    let workers = options.workers.unwrap_or(resident).clamp(1, resident);

    let needed: u64 = region.arrays.iter().map(|b| b.bytes as u64).sum::<u64>()
        + (inspection.args.len() * 8
            + inspection.tasks.len() * 8
            + inspection.dag.children.len() * 4
            + n * 20) as u64
        + u64::from(workers) * 64;
    let (free, _) = gpu
        .ctx
        .mem_get_info()
        .map_err(Error::cuda("querying free device memory"))?;
    if needed > free as u64 {
        return Err(Error::DeviceOutOfMemory {
            region: meta.name,
            needed,
            free: free as u64,
        });
    }

    let transfer_start = Instant::now();
    let mut up = Uploads {
        buffers: Vec::new(),
    };
    let mut arrays = Vec::with_capacity(region.arrays.len());
    let mut array_slots = Vec::with_capacity(region.arrays.len());
    for binding in &region.arrays {
        let ptr = up.put(gpu, binding.bytes(), binding.info.name)?;
        array_slots.push(up.buffers.len() - 1);
        arrays.push(ArrayDesc {
            ptr,
            len: binding.info.len as u64,
        });
    }
    let mut tables = Tables::new(inspection, workers, options.policy);
    let host_desc = tables.desc();
    let dag = &inspection.dag;
    let stats_bytes = vec![0u8; workers as usize * size_of::<WorkerStats>()];
    let current = vec![u32::MAX; workers as usize];
    let trace_bytes = vec![
        0u8;
        if options.trace {
            n * size_of::<TraceRecord>()
        } else {
            0
        }
    ];
    let desc = RegionDesc {
        n_tasks: n as u32,
        n_workers: workers,
        policy: options.policy.abi(),
        flags: if options.checked { FLAG_CHECKED } else { 0 }
            | if options.trace { FLAG_TRACE } else { 0 },
        scratch_bytes: options.shared_bytes,
        n_arrays: arrays.len() as u32,
        tasks: up.put(gpu, bytes_of(&inspection.tasks), "the task table")?,
        args: up.put(gpu, bytes_of(&inspection.args), "the argument table")?,
        arrays: up.put(gpu, bytes_of(&arrays), "the array table")?,
        offsets: up.put(gpu, bytes_of(&dag.offsets), "the CSR offsets")?,
        children: up.put(gpu, bytes_of(&dag.children), "the CSR children")?,
        pending: up.put(gpu, bytes_of(&tables.pending), "the dependence counters")?,
        rank: up.put(gpu, bytes_of(&dag.rank), "the ranks")?,
        next: up.put(gpu, bytes_of(&tables.next), "the queue links")?,
        head: up.put(gpu, bytes_of(&tables.head), "the queue heads")?,
        tail: up.put(gpu, bytes_of(&tables.tail), "the queue tails")?,
        lock: up.put(gpu, bytes_of(&tables.lock), "the queue locks")?,
        counters: up.put(gpu, bytes_of(&counter_words(&tables)), "the counters")?,
        abort: up.put(gpu, &[0u8; 8], "the abort flag")?,
        ..host_desc
    };
    let desc = RegionDesc {
        stats: up.put(gpu, &stats_bytes, "the worker statistics")?,
        ..desc
    };
    let stats_at = up.last();
    let desc = RegionDesc {
        current: up.put(gpu, bytes_of(&current), "the current-task words")?,
        ..desc
    };
    let current_at = up.last();
    let desc = RegionDesc {
        trace: if options.trace {
            up.put(gpu, &trace_bytes, "the trace")?
        } else {
            0
        },
        ..desc
    };
    let trace_at = up.last();
    let desc_ptr = up.put(
        gpu,
        bytes_of(std::slice::from_ref(&desc)),
        "the region descriptor",
    )?;
    gpu.reset_error_record(&module)?;
    gpu.stream
        .synchronize()
        .map_err(Error::cuda("uploading the region"))?;
    let upload_time = transfer_start.elapsed();

    let mut stalled = None;
    let mut kernel_time = Duration::ZERO;
    if n > 0 {
        let config = LaunchConfig {
            grid_dim: (workers, 1, 1),
            block_dim: (options.threads, 1, 1),
            shared_mem_bytes: options.shared_bytes,
        };
        let mut launch = gpu.stream.launch_builder(&function);
        launch.arg(&desc_ptr);
        launch.record_kernel_launch(CUevent_flags::CU_EVENT_DEFAULT);
        // SAFETY: the kernel's one parameter is `*const RegionDesc`, and `desc_ptr` points at a
        // descriptor whose tables were all uploaded above and live until after the stream syncs.
        let events = unsafe { launch.launch(config) }
            .map_err(Error::cuda(format!("launching region `{}`", meta.name)))?;
        let (start, end) = events.expect("launch events were requested");
        stalled = watch(gpu, &end, desc.counters, desc.abort, options.watchdog);
        if stalled.is_some() && !wait_done(&end, Duration::from_secs(5)) {
            // A task body ignores the abort flag and never returns: the kernel still uses our buffers.
            std::mem::forget(up);
            return Err(stall_error(inspection, stalled.unwrap_or_default(), None));
        }
        gpu.stream.synchronize().map_err(Error::cuda(format!(
            "running region `{}` (a task faulted in a way the device layer could not catch, e.g. an illegal address or a trap)",
            meta.name
        )))?;
        kernel_time = Duration::from_secs_f64(
            f64::from(
                start
                    .elapsed_ms(&end)
                    .map_err(Error::cuda("timing the kernel"))?,
            ) / 1e3,
        );
    }

    let record = gpu.error_record(&module)?;
    if record.code != CODE_NONE && record.code != taskweave_device::error::CODE_ABORTED {
        let task = if (record.task as usize) < n {
            inspection.task_ref(record.task)
        } else {
            inspection_unknown(inspection)
        };
        return Err(Error::TaskFault {
            task,
            message: describe(&record),
            worker: record.worker,
            thread: record.thread,
            restored: true,
        });
    }
    if let Some(waited) = stalled {
        let running = gpu
            .stream
            .clone_dtoh(&up.buffers[current_at])
            .ok()
            .map(|b| records::<u32>(&b));
        return Err(stall_error(inspection, waited, running));
    }

    let download_start = Instant::now();
    for (binding, &slot) in region.arrays.iter().zip(&array_slots) {
        if binding.info.writable {
            let data = gpu
                .stream
                .clone_dtoh(&up.buffers[slot])
                .map_err(Error::cuda(format!(
                    "copying array `{}` back",
                    binding.info.name
                )))?;
            // SAFETY: the array is writable and the kernel has finished.
            unsafe { binding.write(&data[..binding.bytes]) };
        }
    }
    let stats = records::<WorkerStats>(
        &gpu.stream
            .clone_dtoh(&up.buffers[stats_at])
            .map_err(Error::cuda("reading statistics"))?,
    );
    let trace = if options.trace {
        let bytes = gpu
            .stream
            .clone_dtoh(&up.buffers[trace_at])
            .map_err(Error::cuda("reading the trace"))?;
        Some(records::<TraceRecord>(&bytes))
    } else {
        None
    };
    gpu.stream
        .synchronize()
        .map_err(Error::cuda("copying the arrays back"))?;
    let transfer_time = upload_time + download_start.elapsed();

    Ok(Report {
        region: meta.name,
        backend: "persistent",
        policy: options.policy,
        tasks: n,
        edges: dag.edge_count(),
        critical_path: dag.critical_path(),
        workers,
        threads: options.threads,
        inspect_time: inspection.time,
        transfer_time,
        execute_time: kernel_time,
        worker_stats: stats,
        trace,
    })
}

fn inspection_unknown(inspection: &Inspection) -> crate::error::TaskRef {
    crate::error::TaskRef {
        index: u32::MAX,
        kind: "runtime",
        args: String::new(),
        location: inspection
            .locations
            .first()
            .copied()
            .unwrap_or(std::panic::Location::caller()),
    }
}

fn counter_words(tables: &Tables<'_>) -> Vec<u32> {
    tables
        .counters
        .0
        .iter()
        .map(|w| w.load(std::sync::atomic::Ordering::Relaxed))
        .collect()
}

fn records<T: Copy + Default>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(size_of::<T>())
        // SAFETY: `T` is a plain `repr(C)` ABI record and each chunk holds exactly one.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect()
}

/// Polls the completed counter through the control stream until the kernel ends; raises the abort
/// flag when it stops moving for `timeout`. Returns how long it waited if it aborted.
fn watch(
    gpu: &Gpu,
    end: &cudarc::driver::CudaEvent,
    counters: u64,
    abort: u64,
    timeout: Duration,
) -> Option<Duration> {
    let mut last = u32::MAX;
    let mut since = Instant::now();
    let mut tick = Duration::from_micros(20);
    while !end.is_complete() {
        std::thread::sleep(tick);
        tick = (tick * 2).min(Duration::from_millis(10));
        let mut completed = [0u32];
        // SAFETY: `counters` is a live device allocation of at least 4 bytes; the copy reads it on the
        // control stream, which does not wait for the kernel.
        let copied =
            unsafe { result::memcpy_dtoh_async(&mut completed, counters, gpu.control.cu_stream()) };
        if copied.is_err() || gpu.control.synchronize().is_err() {
            return None;
        }
        if completed[0] != last {
            last = completed[0];
            since = Instant::now();
        } else if since.elapsed() > timeout {
            // SAFETY: `abort` is a live 8-byte device allocation the workers poll.
            let _ =
                unsafe { result::memcpy_htod_async(abort, &[1u32][..], gpu.control.cu_stream()) };
            let _ = gpu.control.synchronize();
            return Some(since.elapsed());
        }
    }
    None
}

fn wait_done(end: &cudarc::driver::CudaEvent, grace: Duration) -> bool {
    let start = Instant::now();
    while !end.is_complete() {
        if start.elapsed() > grace {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

/// The watchdog's error, naming the tasks the workers were running.
fn stall_error(inspection: &Inspection, waited: Duration, running: Option<Vec<u32>>) -> Error {
    let n = inspection.task_count();
    let running: Vec<u32> = running
        .unwrap_or_default()
        .into_iter()
        .filter(|&t| (t as usize) < n)
        .collect();
    Error::Stalled {
        region: inspection.region,
        waited,
        unfinished: running.len(),
        tasks: n,
        first: running
            .into_iter()
            .take(8)
            .map(|t| inspection.task_ref(t))
            .collect(),
    }
}
