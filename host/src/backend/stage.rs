//! Staging a call on the GPU: its host arrays copied to device buffers, the scheduler's tables
//! uploaded ([`DeviceTables`]), a descriptor for its arrays, and after the run the error record
//! checked and the results copied back.
//!
//! 1. Every GPU backend runs between [`Staged::new`] and [`Staged::finish`].
//! 2. The persistent backend keeps its `Staged` in a plan that runs again: for the next call,
//!    [`Staged::restage`] puts the tables back as they started with one device-to-device copy,
//!    copies the call's host arrays into the same buffers, and picks the descriptor of the call's
//!    arrays (one per set of arrays seen, so ping-pong buffers cost nothing after the first
//!    round).

use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr, PinnedHostSlice};
use taskweave_device::abi::{ArrayDesc, RegionDesc, TraceRecord, WorkerStats};
use taskweave_device::error::{CODE_ABORTED, CODE_NONE, ErrorRecord};

use super::arena::{DeviceTables, staging_bytes};
pub(crate) use super::layout::bytes_of;
use super::layout::{DescSlot, records};
use crate::call::Call;
use crate::error::{Error, TaskRef};
use crate::gpu::{Gpu, describe};
use crate::sm::SmLayout;

/// Descriptors kept for the sets of arrays a kept plan has run on; the oldest goes first.
const SLOTS: usize = 8;

/// One call's device memory and descriptor (see the module docs).
pub(crate) struct Staged {
    tables: DeviceTables,
    /// The device copy of each host array, by slot; `None` for arrays resident on the device.
    copies: Vec<Option<CudaSlice<u8>>>,
    /// Descriptors for the sets of arrays seen so far, and the current call's.
    slots: Vec<DescSlot>,
    slot: usize,
    /// Further buffers a backend uploaded ([`Staged::put`]).
    extra: Vec<CudaSlice<u8>>,
    /// Pinned host memory the error record and statistics are copied into right after the
    /// kernel (see [`Staged::read_back_after_kernel`]), and whether that copy is queued.
    readback: Option<PinnedHostSlice<u8>>,
    read_back: bool,
    /// Time the last staging took.
    pub upload_time: Duration,
}

/// What [`Staged::finish`] read back.
pub(crate) struct Finished {
    pub stats: Vec<WorkerStats>,
    pub trace: Option<Vec<TraceRecord>>,
    pub download_time: Duration,
}

impl Staged {
    /// Uploads the call's arrays and tables for `workers` workers, placed by `sms` when the
    /// workers are SM-aware. With `keep`, the tables can be [`Staged::restage`]d for another call.
    pub fn new(
        gpu: &Gpu,
        call: &Call<'_, '_>,
        workers: u32,
        sms: Option<&SmLayout>,
        keep: bool,
    ) -> Result<Self, Error> {
        let meta = call.plan.meta();
        gpu.check_usable()?;
        let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
        // Loading checks the PTX's architecture before anything is allocated.
        gpu.module(code)?;
        // Checked before anything is allocated, so a region that cannot fit fails with nothing
        // copied. The driver rounds allocations up, so staging may still run out near the limit:
        // that is an `Error::OutOfMemory`, and dropping what was staged frees it.
        let needed = staging_bytes(call, workers, sms, keep);
        let free = gpu.free_memory()?;
        if needed > free {
            return Err(Error::DeviceOutOfMemory {
                region: meta.name,
                needed,
                free,
            });
        }
        let start = Instant::now();
        let mut copies = Vec::with_capacity(call.arrays.len());
        let mut arrays = Vec::with_capacity(call.arrays.len());
        for binding in call.arrays {
            let ptr = match binding.device {
                Some(address) => {
                    copies.push(None);
                    address
                }
                None => {
                    let buffer = upload(gpu, binding.bytes(), binding.info.name)?;
                    let ptr = buffer.device_ptr(gpu.stream()).0;
                    copies.push(Some(buffer));
                    ptr
                }
            };
            arrays.push(ArrayDesc {
                ptr,
                len: binding.info.len as u64,
            });
        }
        let (tables, slot) = DeviceTables::upload(gpu, call, workers, sms, &arrays, keep)?;
        gpu.stream()
            .synchronize()
            .map_err(Error::cuda("uploading the region"))?;
        Ok(Self {
            tables,
            copies,
            slots: vec![slot],
            slot: 0,
            extra: Vec::new(),
            readback: None,
            read_back: false,
            upload_time: start.elapsed(),
        })
    }

    /// Stages the next call of a kept plan (same shapes): the tables put back as they started,
    /// the call's host arrays copied into the buffers of the last call, and the descriptor of the
    /// call's arrays picked (made when they are new).
    pub fn restage(&mut self, gpu: &Gpu, call: &Call<'_, '_>) -> Result<(), Error> {
        let start = Instant::now();
        self.tables.reset(gpu)?;
        let mut arrays = Vec::with_capacity(call.arrays.len());
        for (binding, copy) in call.arrays.iter().zip(&mut self.copies) {
            let ptr = match (binding.device, copy) {
                (Some(address), _) => address,
                (None, Some(buffer)) => {
                    if !binding.bytes().is_empty() {
                        gpu.stream()
                            .memcpy_htod(binding.bytes(), &mut buffer.slice_mut(..binding.bytes))
                            .map_err(Error::cuda(format!("uploading {}", binding.info.name)))?;
                    }
                    buffer.device_ptr(gpu.stream()).0
                }
                (None, copy @ None) => {
                    // A host array where the plan's first call had a resident one.
                    let buffer = upload(gpu, binding.bytes(), binding.info.name)?;
                    let ptr = buffer.device_ptr(gpu.stream()).0;
                    *copy = Some(buffer);
                    ptr
                }
            };
            arrays.push(ArrayDesc {
                ptr,
                len: binding.info.len as u64,
            });
        }
        let same = |slot: &DescSlot| slot.addresses.iter().eq(arrays.iter().map(|a| &a.ptr));
        self.slot = match self.slots.iter().position(same) {
            Some(at) => at,
            None => {
                if self.slots.len() == SLOTS {
                    self.slots.remove(0);
                }
                self.slots.push(self.tables.new_slot(gpu, &arrays)?);
                self.slots.len() - 1
            }
        };
        self.upload_time = start.elapsed();
        Ok(())
    }

    /// The device address of the current call's descriptor.
    pub fn desc_ptr(&self) -> u64 {
        self.slots[self.slot].desc_ptr
    }

    /// The current call's descriptor, as uploaded.
    pub fn desc(&self) -> RegionDesc {
        RegionDesc {
            arrays: self.slots[self.slot].arrays_ptr,
            ..self.tables.desc
        }
    }

    /// Uploads `bytes` (at least 8, so that an empty table still has an address) into a buffer
    /// of its own; returns its device address.
    pub fn put(&mut self, gpu: &Gpu, bytes: &[u8], what: &str) -> Result<u64, Error> {
        let buffer = upload(gpu, bytes, what)?;
        let ptr = buffer.device_ptr(gpu.stream()).0;
        self.extra.push(buffer);
        Ok(ptr)
    }

    /// The range of the tables that holds the error record and the statistics (adjacent).
    fn record_and_stats(&self) -> (usize, usize) {
        let (error_at, _) = self.tables.error;
        let (stats_at, stats_len) = self.tables.stats;
        (error_at, stats_at + stats_len - error_at)
    }

    /// Queues, after the kernel, the copy of the error record and statistics into pinned host
    /// memory (allocated on the first call), so that [`Staged::finish`] finds them there when the
    /// stream is done: no copy of its own, and no wait for one, after the kernel.
    pub fn read_back_after_kernel(&mut self, gpu: &Gpu) -> Result<(), Error> {
        let range = self.record_and_stats();
        let readback = match &mut self.readback {
            Some(readback) => readback,
            slot @ None => {
                // SAFETY: the copy below writes every byte before anything reads them.
                let pinned = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(range.1, 0) }
                    .map_err(gpu.alloc_error("allocating pinned host memory", range.1))?;
                slot.insert(pinned)
            }
        };
        self.tables.read_into(gpu, range, readback)?;
        self.read_back = true;
        Ok(())
    }

    /// Leaves the device memory allocated for good: for a kernel that may still be using it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }

    /// After the kernel ended: the error record turned into an error naming the task, or the
    /// writable host arrays copied back and the statistics and trace read.
    pub fn finish(&mut self, gpu: &Gpu, call: &Call<'_, '_>) -> Result<Finished, Error> {
        let ins = call.plan.inspection();
        // The record and the statistics are adjacent: one copy reads both, unless it was queued
        // after the kernel.
        let (error_at, error_len) = self.tables.error;
        let (stats_at, _) = self.tables.stats;
        let queued;
        let read;
        let both: &[u8] = match (&self.readback, std::mem::take(&mut self.read_back)) {
            (Some(readback), true) => {
                queued = readback;
                queued
                    .as_slice()
                    .map_err(Error::cuda("reading the error record and statistics"))?
            }
            _ => {
                read = self.tables.read(
                    gpu,
                    self.record_and_stats(),
                    "the error record and statistics",
                )?;
                &read
            }
        };
        let record = records::<ErrorRecord>(&both[..error_len])[0];
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
        for (binding, copy) in call.arrays.iter().zip(&self.copies) {
            // Resident arrays (no copy) were written in place.
            if let (true, Some(copy)) = (binding.info.writable, copy) {
                let data = gpu
                    .stream()
                    .clone_dtoh(copy)
                    .map_err(Error::cuda(format!("reading {}", binding.info.name)))?;
                // SAFETY: the array is writable and the kernel has finished.
                unsafe { binding.write(&data[..binding.bytes]) };
            }
        }
        let stats = records::<WorkerStats>(&both[stats_at - error_at..]);
        let trace = match self.tables.trace {
            Some(t) => Some(records::<TraceRecord>(&self.tables.read(
                gpu,
                t,
                "the trace",
            )?)),
            None => None,
        };
        Ok(Finished {
            stats,
            trace,
            download_time: start.elapsed(),
        })
    }
}

/// `bytes` (at least 8, so that an empty array still has an address) in a new device buffer.
fn upload(gpu: &Gpu, bytes: &[u8], what: &str) -> Result<CudaSlice<u8>, Error> {
    let padded = [0u8; 8];
    let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
    gpu.stream()
        .clone_htod(bytes)
        .map_err(gpu.alloc_error(format!("uploading {what}"), bytes.len()))
}
