//! Staging a region on the GPU: its arrays and the scheduler's tables uploaded, the descriptor
//! written, and after the run the error record checked and the results copied back. Every GPU
//! backend runs between [`Staged::new`] and [`Staged::finish`].

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr};
use taskweave_device::abi::{ArrayDesc, RegionDesc, TraceRecord, WorkerStats};
use taskweave_device::error::{CODE_ABORTED, CODE_NONE, ErrorRecord};

use super::{Gpu, describe};
use crate::error::{Error, TaskRef};
use crate::inspect::Inspection;
use crate::region::Region;
use crate::tables::Tables;

/// The bytes of a slice of plain `repr(C)` records.
pub(crate) fn bytes_of<T: Copy>(data: &[T]) -> &[u8] {
    // SAFETY: the ABI's `T: Copy` records are plain data; the length covers exactly the slice.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// Plain `repr(C)` records back from bytes.
pub(crate) fn records<T: Copy>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(size_of::<T>())
        // SAFETY: `T` is a plain `repr(C)` ABI record and each chunk holds exactly one.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<T>()) })
        .collect()
}

/// The bytes [`Staged::new`] allocates for `region` with `workers` workers: one buffer per array
/// copied to the device and per table, each at least 8 bytes, as [`Staged::put`] pads them.
pub(crate) fn staging_bytes(region: &Region<'_>, ins: &Inspection, workers: u32) -> u64 {
    let (n, w) = (ins.task_count(), workers as usize);
    let arrays = region
        .arrays
        .iter()
        .filter(|b| b.device.is_none())
        .map(|b| b.bytes);
    let tables = [
        w * size_of::<WorkerStats>(),
        w * 4,
        if region.options.trace {
            n * size_of::<TraceRecord>()
        } else {
            0
        },
        size_of_val(ins.tasks.as_slice()),
        size_of_val(ins.args.as_slice()),
        region.arrays.len() * size_of::<ArrayDesc>(),
        size_of_val(ins.dag.offsets.as_slice()),
        size_of_val(ins.dag.children.as_slice()),
        n * 4,
        size_of_val(ins.dag.rank.as_slice()),
        (n + w) * 4,
        w * 4,
        w * 4,
        w * 4,
        size_of::<crate::tables::CounterWords>(),
        8,
        size_of::<ErrorRecord>(),
        size_of::<RegionDesc>(),
    ];
    arrays.chain(tables).map(|bytes| bytes.max(8) as u64).sum()
}

/// A buffer index in [`Staged`].
#[derive(Clone, Copy)]
pub(crate) struct Buf(usize);

/// One region's device memory and descriptor.
pub(crate) struct Staged<'g> {
    pub gpu: &'g Gpu,
    buffers: Vec<CudaSlice<u8>>,
    /// The staged copy of each array; `None` for arrays resident on the device.
    arrays: Vec<Option<Buf>>,
    stats: Buf,
    trace: Option<Buf>,
    error: Buf,
    /// The descriptor, as uploaded.
    pub desc: RegionDesc,
    /// The device address of the descriptor.
    pub desc_ptr: u64,
    /// Time spent uploading.
    pub upload_time: Duration,
}

impl<'g> Staged<'g> {
    /// Uploads `region`'s arrays and tables for `workers` workers.
    pub fn new(
        gpu: &'g Gpu,
        region: &Region<'_>,
        ins: &Inspection,
        workers: u32,
    ) -> Result<Self, Error> {
        let meta = &region.meta;
        let options = &region.options;
        gpu.check_usable()?;
        let ptx = meta.ptx.ok_or(Error::NoPtx { region: meta.name })?;
        // Loading checks the PTX's architecture before anything is allocated.
        gpu.module(ptx)?;
        let n = ins.task_count();
        // Checked before anything is allocated, so a region that cannot fit fails with nothing
        // copied. The driver rounds allocations up, so staging may still run out near the limit:
        // `put` reports that as `Error::OutOfMemory`, and dropping `staged` frees what it got.
        let needed = staging_bytes(region, ins, workers);
        let free = gpu.free_memory()?;
        if needed > free {
            return Err(Error::DeviceOutOfMemory {
                region: meta.name,
                needed,
                free,
            });
        }

        let start = Instant::now();
        let mut staged = Self {
            gpu,
            buffers: Vec::new(),
            arrays: Vec::new(),
            stats: Buf(0),
            trace: None,
            error: Buf(0),
            desc: RegionDesc::default(),
            desc_ptr: 0,
            upload_time: Duration::ZERO,
        };
        let mut arrays = Vec::with_capacity(region.arrays.len());
        for binding in &region.arrays {
            let ptr = match binding.device {
                Some(address) => {
                    staged.arrays.push(None);
                    address
                }
                None => {
                    let (ptr, buf) = staged.put(binding.bytes(), binding.info.name)?;
                    staged.arrays.push(Some(buf));
                    ptr
                }
            };
            arrays.push(ArrayDesc {
                ptr,
                len: binding.info.len as u64,
            });
        }
        let mut tables = Tables::new(ins, workers, options.policy);
        let host = tables.desc(options.desc(workers, arrays.len()));
        let dag = &ins.dag;
        let counters: Vec<u32> = tables
            .counters
            .0
            .iter()
            .map(|w| w.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        let (stats, stats_buf) = staged.put(
            &vec![0u8; workers as usize * size_of::<WorkerStats>()],
            "statistics",
        )?;
        let (current, _) =
            staged.put(bytes_of(&vec![u32::MAX; workers as usize]), "current tasks")?;
        staged.stats = stats_buf;
        let trace = if options.trace {
            let (ptr, buf) = staged.put(&vec![0u8; n * size_of::<TraceRecord>()], "the trace")?;
            staged.trace = Some(buf);
            ptr
        } else {
            0
        };
        let desc = RegionDesc {
            tasks: staged.put(bytes_of(&ins.tasks), "the task table")?.0,
            args: staged.put(bytes_of(&ins.args), "the argument table")?.0,
            arrays: staged.put(bytes_of(&arrays), "the array table")?.0,
            offsets: staged.put(bytes_of(&dag.offsets), "the CSR offsets")?.0,
            children: staged
                .put(bytes_of(&tables.children), "the CSR children")?
                .0,
            pending: staged
                .put(bytes_of(&tables.pending), "the dependence counters")?
                .0,
            rank: staged.put(bytes_of(&dag.rank), "the ranks")?.0,
            next: staged.put(bytes_of(&tables.next), "the queue links")?.0,
            head: staged.put(bytes_of(&tables.head), "the queue heads")?.0,
            tail: staged.put(bytes_of(&tables.tail), "the queue tails")?.0,
            lock: staged.put(bytes_of(&tables.lock), "the queue locks")?.0,
            counters: staged.put(bytes_of(&counters), "the counters")?.0,
            abort: staged.put(&[0u8; 8], "the abort flag")?.0,
            error: {
                let (ptr, buf) = staged.put(
                    bytes_of(std::slice::from_ref(&ErrorRecord::EMPTY)),
                    "the error record",
                )?;
                staged.error = buf;
                ptr
            },
            stats,
            current,
            trace,
            ..host
        };
        staged.desc_ptr = staged
            .put(
                bytes_of(std::slice::from_ref(&desc)),
                "the region descriptor",
            )?
            .0;
        staged.desc = desc;
        gpu.stream
            .synchronize()
            .map_err(Error::cuda("uploading the region"))?;
        staged.upload_time = start.elapsed();
        Ok(staged)
    }

    /// Uploads `bytes` (at least 8, so that an empty table still has an address).
    pub fn put(&mut self, bytes: &[u8], what: &str) -> Result<(u64, Buf), Error> {
        let padded = [0u8; 8];
        let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
        let buffer = self.gpu.stream.clone_htod(bytes).map_err(
            self.gpu
                .alloc_error(format!("uploading {what}"), bytes.len()),
        )?;
        let ptr = buffer.device_ptr(&self.gpu.stream).0;
        self.buffers.push(buffer);
        Ok((ptr, Buf(self.buffers.len() - 1)))
    }

    fn read(&self, buf: Buf, what: &str) -> Result<Vec<u8>, Error> {
        self.gpu
            .stream
            .clone_dtoh(&self.buffers[buf.0])
            .map_err(Error::cuda(format!("reading {what}")))
    }

    /// Leaves the device memory allocated for good: for a kernel that may still be using it.
    pub fn abandon(self) {
        std::mem::forget(self.buffers);
    }

    /// After the kernel ended: the error record turned into an error naming the task, or the
    /// writable arrays copied back and the statistics and trace read.
    pub fn finish(self, region: &Region<'_>, ins: &Inspection) -> Result<Finished, Error> {
        let record = records::<ErrorRecord>(&self.read(self.error, "the error record")?)[0];
        if record.code != CODE_NONE && record.code != CODE_ABORTED {
            let task = if (record.task as usize) < ins.task_count() {
                ins.task_ref(record.task)
            } else {
                TaskRef {
                    index: record.task,
                    kind: "(outside any task)",
                    args: String::new(),
                    location: region.meta.location,
                }
            };
            return Err(Error::TaskFault {
                task,
                message: describe(&record),
                worker: record.worker,
                thread: record.thread,
                restored: true,
            });
        }
        let start = Instant::now();
        for (binding, &buf) in region.arrays.iter().zip(&self.arrays) {
            // Resident arrays (no staged buffer) were written in place.
            if let (true, Some(buf)) = (binding.info.writable, buf) {
                let data = self.read(buf, binding.info.name)?;
                // SAFETY: the array is writable and the kernel has finished.
                unsafe { binding.write(&data[..binding.bytes]) };
            }
        }
        let stats = records::<WorkerStats>(&self.read(self.stats, "statistics")?);
        let trace = match self.trace {
            Some(buf) => Some(records::<TraceRecord>(&self.read(buf, "the trace")?)),
            None => None,
        };
        Ok(Finished {
            stats,
            trace,
            download_time: start.elapsed(),
        })
    }
}

/// What [`Staged::finish`] read back.
pub(crate) struct Finished {
    pub stats: Vec<WorkerStats>,
    pub trace: Option<Vec<TraceRecord>>,
    pub download_time: Duration,
}
