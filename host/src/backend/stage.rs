//! Staging a region on the GPU: its arrays and the scheduler's tables uploaded, the descriptor
//! written, and after the run the error record checked and the results copied back. Every GPU
//! backend runs between [`Staged::new`] and [`Staged::finish`].

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr};
use taskweave_device::abi::{ArrayDesc, RegionDesc, TraceRecord, WorkerStats};
use taskweave_device::error::{CODE_ABORTED, CODE_NONE, ErrorRecord};

use crate::call::Call;
use crate::error::{Error, TaskRef};
use crate::gpu::{Gpu, describe};
use crate::options::Policy;
use crate::sm::SmLayout;
use crate::tables::{CounterWords, Tables};

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

/// The bytes [`Staged::with_sms`] allocates for `call` with `workers` workers (placed by `sms`),
/// at most: one buffer per array copied to the device, at least 8 bytes as [`Staged::put`] pads
/// it, and the tables packed into one [`Arena`], each padded to its alignment.
pub(crate) fn staging_bytes(call: &Call<'_, '_>, workers: u32, sms: Option<&SmLayout>) -> u64 {
    let (ins, options) = (call.plan.inspection(), call.plan.options());
    let (n, w) = (ins.task_count(), workers as usize);
    let arrays = call
        .arrays
        .iter()
        .filter(|b| b.device.is_none())
        .map(|b| b.bytes);
    let tables = [
        w * size_of::<WorkerStats>(),
        w * 4,
        if options.trace {
            n * size_of::<TraceRecord>()
        } else {
            0
        },
        size_of_val(ins.tasks.as_slice()),
        size_of_val(ins.args.as_slice()),
        call.arrays.len() * size_of::<ArrayDesc>(),
        size_of_val(ins.dag.offsets.as_slice()),
        size_of_val(ins.dag.children.as_slice()),
        n * 4,
        size_of_val(ins.dag.rank.as_slice()),
        (n + w) * 4,
        w * 4,
        w * 4,
        w * 4,
        size_of::<CounterWords>(),
        8,
        size_of::<ErrorRecord>(),
        size_of::<RegionDesc>(),
    ];
    // The affinity policy's tables (`affine`, `ran_by`), and SM-aware workers' slot counters.
    let affinity = options.policy == Policy::Affinity && n > 0;
    let optional = [
        if affinity { n * 4 } else { 0 },
        if affinity { n * 4 } else { 0 },
        sms.map_or(0, |plan| (plan.sm_count as usize + 1) * 4),
    ];
    let arena: u64 = tables
        .iter()
        .map(|&b| Arena::padded(b) as u64)
        .chain(
            optional
                .iter()
                .filter(|&&b| b > 0)
                .map(|&b| Arena::padded(b) as u64),
        )
        .sum();
    arrays.map(|bytes| bytes.max(8) as u64).sum::<u64>() + arena
}

/// The scheduler's tables of one run, packed into one device allocation and uploaded with one
/// copy: a region costs two driver calls for its tables instead of two per table.
#[derive(Default)]
struct Arena {
    /// The host image of the allocation.
    image: Vec<u8>,
}

impl Arena {
    /// Every table starts on its own 128-byte line (the `Counters` record needs that alignment,
    /// and it keeps tables the workers write off each other's lines).
    const ALIGN: usize = 128;

    /// The most bytes a table of `bytes` takes in the arena.
    fn padded(bytes: usize) -> usize {
        bytes.max(8).next_multiple_of(Self::ALIGN)
    }

    /// Appends `bytes` (at least 8, so that an empty table still has an address of its own);
    /// returns its offset.
    fn put(&mut self, bytes: &[u8]) -> usize {
        let offset = self.image.len().next_multiple_of(Self::ALIGN);
        self.image.resize(offset + bytes.len().max(8), 0);
        self.image[offset..offset + bytes.len()].copy_from_slice(bytes);
        offset
    }

    /// Appends `bytes` zeroed bytes; returns the offset.
    fn zeros(&mut self, bytes: usize) -> usize {
        let offset = self.image.len().next_multiple_of(Self::ALIGN);
        self.image.resize(offset + bytes.max(8), 0);
        offset
    }
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
    /// The allocation holding every table.
    arena: Option<Buf>,
    /// Where the statistics, the trace and the error record are in it: offset and length.
    stats: (usize, usize),
    trace: Option<(usize, usize)>,
    error: (usize, usize),
    /// The descriptor, as uploaded.
    pub desc: RegionDesc,
    /// The device address of the descriptor.
    pub desc_ptr: u64,
    /// Time spent uploading.
    pub upload_time: Duration,
}

impl<'g> Staged<'g> {
    /// Uploads the call's arrays and tables for `workers` workers.
    pub fn new(gpu: &'g Gpu, call: &Call<'_, '_>, workers: u32) -> Result<Self, Error> {
        Self::with_sms(gpu, call, workers, None)
    }

    /// [`Staged::new`] with SM-aware workers placed by `sms`: its descriptor fields and a zeroed
    /// slot counter per SM.
    pub fn with_sms(
        gpu: &'g Gpu,
        call: &Call<'_, '_>,
        workers: u32,
        sms: Option<&SmLayout>,
    ) -> Result<Self, Error> {
        let (meta, options) = (call.plan.meta(), call.plan.options());
        let ins = call.plan.inspection();
        gpu.check_usable()?;
        let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
        // Loading checks the PTX's architecture before anything is allocated.
        gpu.module(code)?;
        let n = ins.task_count();
        // Checked before anything is allocated, so a region that cannot fit fails with nothing
        // copied. The driver rounds allocations up, so staging may still run out near the limit:
        // `put` reports that as `Error::OutOfMemory`, and dropping `staged` frees what it got.
        let needed = staging_bytes(call, workers, sms);
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
            arena: None,
            stats: (0, 0),
            trace: None,
            error: (0, 0),
            desc: RegionDesc::default(),
            desc_ptr: 0,
            upload_time: Duration::ZERO,
        };
        let mut arrays = Vec::with_capacity(call.arrays.len());
        for binding in call.arrays {
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
        let host = sms.map_or(host, |layout| layout.desc(host));
        let dag = &ins.dag;
        let counters: Vec<u32> = tables
            .counters
            .0
            .iter()
            .map(|w| w.load(std::sync::atomic::Ordering::Relaxed))
            .collect();
        let mut arena = Arena::default();
        // The error record and the statistics side by side: `finish` reads both with one copy.
        let error_len = size_of::<ErrorRecord>();
        let error = arena.put(bytes_of(std::slice::from_ref(&ErrorRecord::EMPTY)));
        let stats_len = workers as usize * size_of::<WorkerStats>();
        let stats = arena.zeros(stats_len);
        let current = arena.put(bytes_of(&vec![u32::MAX; workers as usize]));
        let trace_len = n * size_of::<TraceRecord>();
        let trace = options.trace.then(|| arena.zeros(trace_len));
        let offsets = [
            arena.put(bytes_of(&ins.tasks)),
            arena.put(bytes_of(&ins.args)),
            arena.put(bytes_of(&arrays)),
            arena.put(bytes_of(&dag.offsets)),
            arena.put(bytes_of(&tables.children)),
            arena.put(bytes_of(&tables.pending)),
            arena.put(bytes_of(&dag.rank)),
            arena.put(bytes_of(&tables.next)),
            arena.put(bytes_of(&tables.head)),
            arena.put(bytes_of(&tables.tail)),
            arena.put(bytes_of(&tables.lock)),
            arena.put(bytes_of(&counters)),
            arena.zeros(8),
        ];
        // The affinity policy's tables and SM-aware workers' slot counters, when the run has them.
        let affine = (!tables.affine.is_empty()).then(|| arena.put(bytes_of(tables.affine)));
        let ran_by = (!tables.ran_by.is_empty()).then(|| arena.put(bytes_of(&tables.ran_by)));
        // One counter per SM, then the count of workers claimed (see `sched::sm`).
        let sm_slots = sms.map(|layout| arena.zeros((layout.sm_count as usize + 1) * 4));
        let desc_at = arena.zeros(size_of::<RegionDesc>());
        // SAFETY: every byte of the allocation is written by the copy below before any kernel
        // reads it.
        let mut buffer = unsafe { gpu.stream().alloc::<u8>(arena.image.len()) }
            .map_err(gpu.alloc_error("allocating the region's tables", arena.image.len()))?;
        let base = buffer.device_ptr(gpu.stream()).0;
        let at = |offset: usize| base + offset as u64;
        let [
            tasks,
            args,
            array_table,
            csr_offsets,
            children,
            pending,
            rank,
            next,
            head,
            tail,
            lock,
            counters_at,
            abort,
        ] = offsets.map(at);
        let desc = RegionDesc {
            tasks,
            args,
            arrays: array_table,
            offsets: csr_offsets,
            children,
            pending,
            rank,
            next,
            head,
            tail,
            lock,
            counters: counters_at,
            abort,
            error: at(error),
            stats: at(stats),
            current: at(current),
            trace: trace.map_or(0, at),
            affine: affine.map_or(0, at),
            ran_by: ran_by.map_or(0, at),
            sm_slots: sm_slots.map_or(0, at),
            ..host
        };
        arena.image[desc_at..desc_at + size_of::<RegionDesc>()]
            .copy_from_slice(bytes_of(std::slice::from_ref(&desc)));
        gpu.stream()
            .memcpy_htod(&arena.image[..], &mut buffer)
            .map_err(Error::cuda("uploading the region's tables"))?;
        staged.buffers.push(buffer);
        staged.arena = Some(Buf(staged.buffers.len() - 1));
        staged.stats = (stats, stats_len);
        staged.trace = trace.map(|t| (t, trace_len));
        staged.error = (error, error_len);
        staged.desc_ptr = at(desc_at);
        staged.desc = desc;
        gpu.stream()
            .synchronize()
            .map_err(Error::cuda("uploading the region"))?;
        staged.upload_time = start.elapsed();
        Ok(staged)
    }

    /// Uploads `bytes` (at least 8, so that an empty table still has an address).
    pub fn put(&mut self, bytes: &[u8], what: &str) -> Result<(u64, Buf), Error> {
        let padded = [0u8; 8];
        let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
        let buffer = self.gpu.stream().clone_htod(bytes).map_err(
            self.gpu
                .alloc_error(format!("uploading {what}"), bytes.len()),
        )?;
        let ptr = buffer.device_ptr(self.gpu.stream()).0;
        self.buffers.push(buffer);
        Ok((ptr, Buf(self.buffers.len() - 1)))
    }

    fn read(&self, buf: Buf, what: &str) -> Result<Vec<u8>, Error> {
        self.gpu
            .stream()
            .clone_dtoh(&self.buffers[buf.0])
            .map_err(Error::cuda(format!("reading {what}")))
    }

    /// `len` bytes at `offset` of the tables.
    fn read_table(&self, (offset, len): (usize, usize), what: &str) -> Result<Vec<u8>, Error> {
        let arena = &self.buffers[self.arena.expect("the tables are staged").0];
        self.gpu
            .stream()
            .clone_dtoh(&arena.slice(offset..offset + len))
            .map_err(Error::cuda(format!("reading {what}")))
    }

    /// Leaves the device memory allocated for good: for a kernel that may still be using it.
    pub fn abandon(self) {
        std::mem::forget(self.buffers);
    }

    /// After the kernel ended: the error record turned into an error naming the task, or the
    /// writable arrays copied back and the statistics and trace read.
    pub fn finish(self, call: &Call<'_, '_>) -> Result<Finished, Error> {
        let ins = call.plan.inspection();
        // The record and the statistics are adjacent (see `new`): one copy reads both.
        let (error_at, stats_at) = (self.error.0, self.stats.0);
        let both = self.read_table(
            (error_at, stats_at + self.stats.1 - error_at),
            "the error record and statistics",
        )?;
        let record = records::<ErrorRecord>(&both[..self.error.1])[0];
        if record.code != CODE_NONE && record.code != CODE_ABORTED {
            let task = if (record.task as usize) < ins.task_count() {
                ins.task_ref(record.task)
            } else {
                TaskRef {
                    index: record.task,
                    kind: "(outside any task)",
                    args: String::new(),
                    location: call.plan.meta().location,
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
        for (binding, &buf) in call.arrays.iter().zip(&self.arrays) {
            // Resident arrays (no staged buffer) were written in place.
            if let (true, Some(buf)) = (binding.info.writable, buf) {
                let data = self.read(buf, binding.info.name)?;
                // SAFETY: the array is writable and the kernel has finished.
                unsafe { binding.write(&data[..binding.bytes]) };
            }
        }
        let stats = records::<WorkerStats>(&both[stats_at - error_at..]);
        let trace = match self.trace {
            Some(t) => Some(records::<TraceRecord>(&self.read_table(t, "the trace")?)),
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
