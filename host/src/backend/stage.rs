//! Staging a call on the GPU: its host arrays copied to device buffers, the scheduler's tables
//! uploaded ([`DeviceTables`]), a descriptor for its arrays, and after the run the error record
//! checked and the results copied back.
//!
//! 1. Every GPU backend runs between [`Staged::new`] and [`Staged::finish`].
//! 2. The persistent backend keeps its `Staged` in a plan that runs again: for the next call,
//!    [`Staged::restage`] puts the tables back as they started with one device-to-device copy
//!    (unless the workers did it at the end of the run, [`Keep::OnDevice`]), copies the call's
//!    host arrays into the same buffers, and picks the descriptor of the call's arrays (one per
//!    set of arrays seen, so ping-pong buffers cost nothing after the first round).

use std::ops::Range;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr, PinnedHostSlice, result};
use taskweave_device::abi::{ArrayDesc, RegionDesc, TraceRecord, WorkerStats};
use taskweave_device::error::{CODE_ABORTED, CODE_NONE, ErrorRecord};

use super::arena::{DeviceTables, staging_bytes};
pub(crate) use super::layout::Keep;
pub(crate) use super::layout::bytes_of;
use super::layout::{DescSlot, records};
use super::replay::Copy;
use crate::call::{Binding, Call, Prestaged};
use crate::error::{Error, TaskRef};
use crate::gpu::transfer::Piece;
use crate::gpu::{Gpu, describe};
use crate::inspect::Footprint;
use crate::report::Report;
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
    readback: Option<(PinnedHostSlice<u8>, usize)>,
    read_back: bool,
    /// The tables need the host's reset before the next call: their workers reset them
    /// themselves, but the last run ended before they could (a fault, or the watchdog).
    dirty: bool,
    /// Time the last staging took, building the tables left out.
    pub upload_time: Duration,
    /// Time building the tables took (the static policy's plan among it); zero when a kept
    /// plan's tables were put back instead.
    pub setup_time: Duration,
    /// Of `setup_time`, the policy's tables (the static plan among them).
    pub plan_time: Duration,
}

/// What [`Staged::finish`] read back.
pub(crate) struct Finished {
    pub stats: Vec<WorkerStats>,
    pub trace: Option<Vec<TraceRecord>>,
    pub download_time: Duration,
}

impl Staged {
    /// Puts this staging's times and the read-back's (`download`) in `report`: its transfer and
    /// set-up times, and the phases they cover.
    pub fn fill(&self, report: &mut Report, download: Duration) {
        report.transfer_time = self.upload_time + download;
        report.setup_time += self.setup_time;
        report.phases.plan = self.plan_time;
        report.phases.tables = self.setup_time.saturating_sub(self.plan_time);
        report.phases.upload = self.upload_time;
        report.phases.download = download;
    }

    /// Uploads the call's arrays and tables for `workers` workers, placed by `sms` when the
    /// workers are SM-aware. When kept, the tables can be [`Staged::restage`]d for another call.
    ///
    /// Host arrays already uploaded while the region was inspected (`prestaged`) are not copied
    /// again.
    pub fn new(
        gpu: &Gpu,
        call: &Call<'_, '_>,
        workers: u32,
        sms: Option<&SmLayout>,
        keep: Keep,
        prestaged: Option<Prestaged>,
    ) -> Result<Self, Error> {
        let meta = call.work.meta();
        gpu.check_usable()?;
        let code = meta.code().ok_or(Error::NoPtx { region: meta.name })?;
        // The code must have something this GPU runs before anything is allocated.
        gpu.check_code(code)?;
        // Checked before anything is allocated, so a region that cannot fit fails with nothing
        // copied. The driver rounds allocations up, so staging may still run out near the limit:
        // that is an `Error::OutOfMemory`, and dropping what was staged frees it.
        // Host arrays uploaded during inspection hold their memory already.
        let needed = staging_bytes(call, workers, sms, keep, prestaged.is_some());
        let free = gpu.free_memory()?;
        if needed > free {
            return Err(Error::DeviceOutOfMemory {
                region: meta.name,
                needed,
                free,
            });
        }
        let start = Instant::now();
        let uploaded = prestaged.is_some();
        let copies = match prestaged {
            Some(prestaged) => prestaged.copies,
            None => call
                .arrays
                .iter()
                .map(|b| match b.device {
                    Some(_) => Ok(None),
                    None => allocate(gpu, b.bytes, b.info.name).map(Some),
                })
                .collect::<Result<_, _>>()?,
        };
        let arrays = upload_arrays(gpu, call, &copies, !uploaded)?;
        let (tables, slot, (setup_time, plan_time)) =
            DeviceTables::upload(gpu, call, workers, sms, &arrays, keep)?;
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
            dirty: false,
            upload_time: start.elapsed().saturating_sub(setup_time),
            setup_time,
            plan_time,
        })
    }

    /// Stages the next call of a kept plan (same shapes): the tables put back as they started
    /// (unless the caller does it, `reset` false, or the workers did it at the end of the last
    /// run), the call's host arrays copied into the buffers of the last call, and the descriptor
    /// of the call's arrays picked (made when they are new).
    pub fn restage(&mut self, gpu: &Gpu, call: &Call<'_, '_>, reset: bool) -> Result<(), Error> {
        let start = Instant::now();
        if (reset && !self.resets_itself()) || std::mem::take(&mut self.dirty) {
            self.tables.reset(gpu)?;
        }
        for (binding, copy) in call.arrays.iter().zip(&mut self.copies) {
            if binding.device.is_none() && copy.is_none() {
                // A host array where the plan's first call had a resident one.
                *copy = Some(allocate(gpu, binding.bytes, binding.info.name)?);
            }
        }
        let arrays = upload_arrays(gpu, call, &self.copies, true)?;
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
        self.setup_time = Duration::ZERO;
        self.plan_time = Duration::ZERO;
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

    /// Whether the workers put the tables back as they started at the end of each run, and
    /// leave the error record and their statistics in mapped host memory ([`Keep::OnDevice`]):
    /// the call then needs no copy before or after its kernel.
    pub fn resets_itself(&self) -> bool {
        self.tables.mailbox.is_some()
    }

    /// Readies the mapped host memory the workers finish a run in, before a launch.
    pub fn arm(&self) {
        if let Some(mailbox) = &self.tables.mailbox {
            mailbox.arm();
        }
    }

    /// The range of the tables that holds the error record and the statistics (adjacent).
    fn record_and_stats(&self) -> (usize, usize) {
        let (error_at, _) = self.tables.error;
        let (stats_at, stats_len) = self.tables.stats;
        (error_at, stats_at + stats_len - error_at)
    }

    /// The copy that resets the tables (see [`Staged::restage`]): the pristine tables over the
    /// written ones.
    pub fn reset_copy(&self) -> Copy {
        self.tables.reset_copy()
    }

    /// The copy of the error record and statistics into pinned host memory (allocated on the first
    /// call), for [`Staged::read_back_after_kernel`] or a graph node that does it. The caller
    /// must have it done after the kernel and call [`Staged::expect_read_back`].
    pub fn read_back_copy(&mut self, gpu: &Gpu) -> Result<Copy, Error> {
        let (offset, len) = self.record_and_stats();
        let base = match &mut self.readback {
            Some((_, base)) => *base,
            slot @ None => {
                // SAFETY: the copy writes every byte before anything reads them.
                let mut pinned = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(len, 0) }
                    .map_err(gpu.alloc_error("allocating pinned host memory", len))?;
                let base = pinned
                    .as_mut_ptr()
                    .map_err(Error::cuda("reaching pinned host memory"))?
                    as usize;
                slot.insert((pinned, base)).1
            }
        };
        Ok(Copy {
            dst: base as u64,
            src: self.tables.address(offset),
            len,
        })
    }

    /// Says that the copy of [`Staged::read_back_copy`] is queued after the kernel, so that
    /// [`Staged::finish`] reads the pinned memory instead of copying.
    pub fn expect_read_back(&mut self) {
        self.read_back = true;
    }

    /// Queues, after the kernel, the copy of the error record and statistics into pinned host
    /// memory, so that [`Staged::finish`] finds them there when the stream is done: no copy of its
    /// own, and no wait for one, after the kernel.
    pub fn read_back_after_kernel(&mut self, gpu: &Gpu) -> Result<(), Error> {
        let copy = self.read_back_copy(gpu)?;
        // One raw copy: the pinned memory is this call's alone, and `finish` reads it only after
        // the stream is synchronized.
        // SAFETY: `copy.dst` holds `copy.len` bytes of pinned memory; the source is that range
        // of the tables' allocation, which lives as long as `self`.
        unsafe {
            let into = std::slice::from_raw_parts_mut(copy.dst as usize as *mut u8, copy.len);
            result::memcpy_dtoh_async(into, copy.src, gpu.stream().cu_stream())
        }
        .map_err(Error::cuda("reading the error record and statistics"))?;
        self.expect_read_back();
        Ok(())
    }

    /// Leaves the device memory allocated for good: for a kernel that may still be using it.
    pub fn abandon(self) {
        std::mem::forget(self);
    }

    /// After the kernel ended: the error record turned into an error naming the task, or the
    /// writable host arrays copied back and the statistics and trace read.
    ///
    /// It must follow a synchronization of the region stream, which ends the copy
    /// [`Staged::read_back_after_kernel`] queued.
    pub fn finish(&mut self, gpu: &Gpu, call: &Call<'_, '_>) -> Result<Finished, Error> {
        let ins = call.work.inspection();
        // The record and the statistics are adjacent: one copy reads both, unless it was queued
        // after the kernel.
        let (error_at, error_len) = self.tables.error;
        let (stats_at, _) = self.tables.stats;
        let read;
        let queued = std::mem::take(&mut self.read_back);
        let both: &[u8] = match (&self.tables.mailbox, &self.readback) {
            (Some(mailbox), _) if mailbox.done() => mailbox.record_and_stats(),
            (Some(mailbox), _) => {
                // The workers did not finish the run (a task faulted, or the watchdog raised the
                // abort flag): the record is still in the tables, which the next call resets.
                self.dirty = true;
                let mut bytes = self
                    .tables
                    .read(gpu, (error_at, error_len), "the error record")?;
                bytes.resize(stats_at - error_at, 0);
                bytes.extend_from_slice(&mailbox.record_and_stats()[stats_at - error_at..]);
                read = bytes;
                &read
            }
            (None, Some((_, base))) if queued => {
                // SAFETY: the queued copy wrote these bytes, and the stream has been synchronized.
                unsafe { std::slice::from_raw_parts(*base as *const u8, self.record_and_stats().1) }
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
        if let Some(error) = fault(&record, ins, call.work.meta().location) {
            return Err(error);
        }
        let start = Instant::now();
        // Only what the tasks declared they write comes back (resident arrays, with no copy, were
        // written in place).
        let footprints = &call.work.inspection().footprints;
        let pieces: Vec<Piece> = call
            .arrays
            .iter()
            .zip(&self.copies)
            .zip(footprints)
            .filter_map(|((binding, copy), footprint)| {
                let copy = copy.as_ref().filter(|_| binding.info.writable)?;
                let span = bytes_of_span(footprint.write.as_ref(), binding)?;
                Some(Piece {
                    host: binding.ptr as usize + span.start,
                    device: copy.device_ptr(gpu.stream()).0 + span.start as u64,
                    len: span.len(),
                })
            })
            .collect();
        // SAFETY: each host range lies in a writable array the call borrows mutably, the device
        // ranges in its copies, and the kernel has ended.
        unsafe { gpu.download(&pieces) }?;
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

/// The error a run's error `record` reports, if any: a task's fault, named by its task in `ins`
/// (the region's code at `location` when the fault was outside any task). An aborted run's
/// record reports none: the watchdog or the host names what stopped it.
pub(crate) fn fault(
    record: &ErrorRecord,
    ins: &crate::inspect::Inspection,
    location: &'static std::panic::Location<'static>,
) -> Option<Error> {
    if record.code == CODE_NONE || record.code == CODE_ABORTED {
        return None;
    }
    let task = if (record.task as usize) < ins.task_count() {
        ins.task_ref(record.task)
    } else {
        TaskRef {
            index: record.task,
            kind: "(outside any task)",
            args: String::new(),
            location,
        }
    };
    Some(Error::TaskFault {
        task,
        message: describe(record, &ins.arrays),
        worker: record.worker,
        thread: record.thread,
        restored: true,
    })
}

/// A device buffer for `bytes` bytes of array `what` (at least 8, so that an empty array still
/// has an address), not initialized: only what the tasks use of it is uploaded.
fn allocate(gpu: &Gpu, bytes: usize, what: &str) -> Result<CudaSlice<u8>, Error> {
    let bytes = bytes.max(8);
    // SAFETY: the tasks read only their declared ranges, which lie in what is uploaded.
    unsafe { gpu.stream().alloc::<u8>(bytes) }
        .map_err(gpu.alloc_error(format!("allocating {what}"), bytes))
}

/// The bytes of `binding`'s array that the element range `span` covers, if any.
fn bytes_of_span(span: Option<&Range<usize>>, binding: &Binding<'_>) -> Option<Range<usize>> {
    let span = span.filter(|s| !s.is_empty())?;
    let size = binding.info.elem_bytes;
    Some(span.start * size..span.end * size)
}

/// The elements the tasks read or write of an array: the span of both spans. A written span is
/// uploaded too: elements of it that no task writes must come back as they were.
fn touched(footprint: &Footprint) -> Option<Range<usize>> {
    let nonempty = |r: &Option<Range<usize>>| r.clone().filter(|r| !r.is_empty());
    match (nonempty(&footprint.read), nonempty(&footprint.write)) {
        (Some(r), Some(w)) => Some(r.start.min(w.start)..r.end.max(w.end)),
        (r, w) => r.or(w),
    }
}

/// The most pieces an output's unwritten gaps are copied up in; past it, its whole written span
/// is (so that a region writing every other element does not queue a copy per element).
const MOST_GAPS: usize = 256;

/// What to do with one host array's device copy before the kernel: the element ranges to copy
/// up, and the one to zero first (an output's written span).
#[derive(Debug, Default, PartialEq, Eq)]
struct Fill {
    zero: Option<Range<usize>>,
    copy: Vec<Range<usize>>,
}

/// The [`Fill`] of an array with this footprint: an input or in-out array gets the span of its
/// reads and writes copied (the rest is never touched); an `#[output]` array (`unwritten` set)
/// gets its written span zeroed and only the gaps no task writes copied, which must come back as
/// they were. `inputs` false: the array's host contents are on the device already, unless it
/// is an output.
fn fill(footprint: &Footprint, inputs: bool) -> Fill {
    let nonempty = |r: &Range<usize>| !r.is_empty();
    match (
        &footprint.unwritten,
        footprint.write.clone().filter(nonempty),
    ) {
        (Some(gaps), Some(span)) => Fill {
            copy: if gaps.len() <= MOST_GAPS {
                gaps.iter().filter(|g| nonempty(g)).cloned().collect()
            } else {
                vec![span.clone()]
            },
            zero: Some(span),
        },
        // An output no task writes: nothing to copy, and nothing comes back.
        (Some(_), None) => Fill::default(),
        (None, _) if inputs => Fill {
            zero: None,
            copy: touched(footprint).into_iter().collect(),
        },
        (None, _) => Fill::default(),
    }
}

/// Fills, into `copies`, what the call's tasks use of each host array (see [`fill`]; `inputs`
/// false: the arrays that are not outputs were uploaded whole already), and returns the array
/// table: each array's device address, its copy's or its own.
fn upload_arrays(
    gpu: &Gpu,
    call: &Call<'_, '_>,
    copies: &[Option<CudaSlice<u8>>],
    inputs: bool,
) -> Result<Vec<ArrayDesc>, Error> {
    let footprints = &call.work.inspection().footprints;
    let mut arrays = Vec::with_capacity(call.arrays.len());
    let mut pieces = Vec::new();
    for ((binding, copy), footprint) in call.arrays.iter().zip(copies).zip(footprints) {
        let ptr = match (binding.device, copy) {
            (Some(address), _) => address,
            (None, Some(copy)) => {
                let device = copy.device_ptr(gpu.stream()).0;
                let Fill { zero, copy } = fill(footprint, inputs);
                if let Some(span) = bytes_of_span(zero.as_ref(), binding) {
                    // SAFETY: the span lies in the copy, which no kernel uses yet.
                    unsafe {
                        result::memset_d8_async(
                            device + span.start as u64,
                            0,
                            span.len(),
                            gpu.stream().cu_stream(),
                        )
                    }
                    .map_err(Error::cuda("clearing an output array"))?;
                }
                for span in copy.iter().filter_map(|c| bytes_of_span(Some(c), binding)) {
                    pieces.push(Piece {
                        host: binding.ptr as usize + span.start,
                        device: device + span.start as u64,
                        len: span.len(),
                    });
                }
                device
            }
            (None, None) => unreachable!("every host array has a copy"),
        };
        arrays.push(ArrayDesc {
            ptr,
            len: binding.info.len as u64,
        });
    }
    // SAFETY: each host range lies in an array the call borrows, each device range in its copy,
    // which no kernel uses yet.
    unsafe { gpu.upload(&pieces) }?;
    Ok(arrays)
}

/// `bytes` (at least 8, so that an empty table still has an address) in a new device buffer.
fn upload(gpu: &Gpu, bytes: &[u8], what: &str) -> Result<CudaSlice<u8>, Error> {
    let padded = [0u8; 8];
    let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
    gpu.stream()
        .clone_htod(bytes)
        .map_err(gpu.alloc_error(format!("uploading {what}"), bytes.len()))
}

#[cfg(test)]
// A `Fill` copies a list of ranges, often of one.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::{Fill, Footprint, MOST_GAPS, fill, touched};

    #[test]
    fn what_is_uploaded_spans_the_reads_and_the_writes() {
        let f = |read: Option<std::ops::Range<usize>>, write| Footprint {
            read,
            write,
            unwritten: None,
        };
        assert_eq!(touched(&f(Some(10..20), Some(40..50))), Some(10..50));
        assert_eq!(touched(&f(Some(30..60), Some(40..50))), Some(30..60));
        assert_eq!(touched(&f(None, Some(5..6))), Some(5..6));
        assert_eq!(touched(&f(Some(5..6), None)), Some(5..6));
        assert_eq!(touched(&f(Some(7..7), Some(9..9))), None);
        assert_eq!(touched(&f(None, None)), None);
    }

    #[test]
    fn an_output_is_zeroed_and_only_its_unwritten_gaps_are_copied_up() {
        let output =
            |write: Option<std::ops::Range<usize>>, gaps: Vec<std::ops::Range<usize>>| Footprint {
                read: Some(10..90),
                write,
                unwritten: Some(gaps),
            };
        // Every element written: nothing goes up, whether or not the inputs were uploaded.
        for inputs in [true, false] {
            assert_eq!(
                fill(&output(Some(0..100), vec![]), inputs),
                Fill {
                    zero: Some(0..100),
                    copy: vec![]
                }
            );
        }
        // The gaps come up, so that they come back as they were.
        assert_eq!(
            fill(&output(Some(0..100), vec![20..30, 60..61]), true),
            Fill {
                zero: Some(0..100),
                copy: vec![20..30, 60..61]
            }
        );
        // Too many gaps: the whole written span comes up instead.
        let many = (0..=MOST_GAPS).map(|i| 2 * i..2 * i + 1).collect();
        assert_eq!(fill(&output(Some(0..1000), many), true).copy, vec![0..1000]);
        // No task writes it: nothing at all.
        assert_eq!(fill(&output(None, vec![]), true), Fill::default());
    }

    #[test]
    fn other_arrays_are_copied_over_what_the_tasks_touch_unless_uploaded_already() {
        let array = Footprint {
            read: Some(10..20),
            write: Some(40..50),
            unwritten: None,
        };
        assert_eq!(
            fill(&array, true),
            Fill {
                zero: None,
                copy: vec![10..50]
            }
        );
        assert_eq!(fill(&array, false), Fill::default());
    }
}
