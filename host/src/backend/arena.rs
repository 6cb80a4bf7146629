//! The scheduler's tables of a run on the GPU, in one device allocation ([`DeviceTables`]) laid
//! out by [`Layout`]: built and uploaded with one copy, and, for a plan that runs again, put back
//! as they started with one device-to-device copy ([`DeviceTables::reset`]).

use std::ops::Range;
use std::time::{Duration, Instant};

use cudarc::driver::{CudaSlice, DevicePtr, PinnedHostSlice, sys};
use taskweave_device::abi::{ArrayDesc, RegionDesc};

use super::layout::{DescSlot, Keep, Layout, slot_bytes, tables_bytes, write_slot};
use super::replay::Copy;
use crate::call::Call;
use crate::error::Error;
use crate::gpu::Gpu;
use crate::gpu::transfer::Piece;
use crate::policy::StartOf;
use crate::sm::SmLayout;

/// The bytes staging `call` with `workers` workers (placed by `sms`) allocates, at most: one
/// buffer per array copied to the device (at least 8 bytes), unless they are `copied` already,
/// and the tables (see [`tables_bytes`]).
pub(crate) fn staging_bytes(
    call: &Call<'_, '_>,
    workers: u32,
    sms: Option<&SmLayout>,
    keep: Keep,
    copied: bool,
) -> u64 {
    let arrays = call
        .arrays
        .iter()
        .filter(|b| b.device.is_none() && !copied)
        .map(|b| b.bytes.max(8) as u64);
    let (ins, options) = (call.work.inspection(), call.work.options());
    arrays.sum::<u64>() + tables_bytes(ins, options, workers, sms, call.arrays.len(), keep)
}

/// The scheduler's tables of a run in one device allocation (see the module docs).
pub(crate) struct DeviceTables {
    buffer: CudaSlice<u8>,
    /// Its device address.
    base: u64,
    /// The descriptor with every table's address; `arrays` is each slot's own.
    pub desc: RegionDesc,
    /// Where the error record, the statistics and the trace are: offset and length. The error
    /// record and the statistics are adjacent, so that one copy reads both.
    pub error: (usize, usize),
    pub stats: (usize, usize),
    pub trace: Option<(usize, usize)>,
    /// The tables the workers write, and where their pristine copy starts (when kept).
    written: Range<usize>,
    pristine: Option<usize>,
    /// Where the workers leave the error record and their statistics when they reset the tables
    /// themselves ([`Keep::OnDevice`]).
    pub mailbox: Option<Mailbox>,
}

/// Pinned host memory, mapped into the device's address space, that the workers of a run that
/// resets its own tables write into (`sched::finish`): the done word on its own line, then the
/// error record and the statistics, laid out as in the tables, so that one slice holds both.
pub(crate) struct Mailbox {
    _memory: PinnedHostSlice<u8>,
    /// Its host address, and its address on the device.
    base: usize,
    device: u64,
    /// The bytes of the record and statistics.
    len: usize,
}

impl Mailbox {
    /// Where the error record starts.
    const RECORD: usize = 128;

    /// Pinned, mapped memory for a done word and `len` bytes of record and statistics.
    fn new(gpu: &Gpu, len: usize) -> Result<Self, Error> {
        let bytes = Self::RECORD + len;
        // SAFETY: zeroed below before the device or the host reads it.
        let mut memory = unsafe {
            gpu.context()
                .alloc_pinned_with_flags::<u8>(bytes, sys::CU_MEMHOSTALLOC_DEVICEMAP)
        }
        .map_err(gpu.alloc_error("allocating mapped pinned host memory", bytes))?;
        let host = memory
            .as_mut_ptr()
            .map_err(Error::cuda("reaching pinned host memory"))?;
        let mut device = 0;
        // SAFETY: `host` is the start of a live pinned allocation mapped with DEVICEMAP.
        let mapped = unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) };
        mapped
            .result()
            .map_err(Error::cuda("mapping pinned host memory"))?;
        // SAFETY: `bytes` bytes of the allocation, which nothing else uses yet.
        unsafe { std::ptr::write_bytes(host, 0, bytes) };
        Ok(Self {
            _memory: memory,
            base: host as usize,
            device,
            len,
        })
    }

    /// The device address of the done word.
    pub fn done_ptr(&self) -> u64 {
        self.device
    }

    /// The device address of byte `offset` of the record and statistics.
    pub fn at(&self, offset: usize) -> u64 {
        self.device + (Self::RECORD + offset) as u64
    }

    /// Clears the done word for the next launch. Call only while no kernel of the plan runs.
    pub fn arm(&self) {
        // SAFETY: the done word is the allocation's first, written by the device only during a
        // launch of the plan, which the caller rules out.
        unsafe { (self.base as *mut u32).write_volatile(0) };
    }

    /// Whether the last run's workers finished it themselves. Read only after the kernel's end.
    pub fn done(&self) -> bool {
        // SAFETY: as in `arm`; the kernel has ended, which orders its writes before this read.
        unsafe { (self.base as *const u32).read_volatile() == 1 }
    }

    /// The record and statistics as the last run's workers left them. Read only after the
    /// kernel's end.
    pub fn record_and_stats(&self) -> &[u8] {
        // SAFETY: `len` bytes from `RECORD` lie in the allocation; the kernel has ended.
        unsafe { std::slice::from_raw_parts((self.base + Self::RECORD) as *const u8, self.len) }
    }
}

impl DeviceTables {
    /// Builds the tables of `call` for `workers` workers (placed by `sms`) and uploads them with
    /// one copy, with the array table and descriptor for `arrays` (the arrays' device
    /// addresses); with `keep`, a pristine copy of the tables the workers write goes along, for
    /// [`DeviceTables::reset`]. Also returns the time building them took, and of it, the
    /// policy's tables (the static plan among them).
    pub fn upload(
        gpu: &Gpu,
        call: &Call<'_, '_>,
        workers: u32,
        sms: Option<&SmLayout>,
        arrays: &[ArrayDesc],
        keep: Keep,
    ) -> Result<(Self, DescSlot, (Duration, Duration)), Error> {
        let (ins, options) = (call.work.inspection(), call.work.options());
        let start = Instant::now();
        let planned = |of: &StartOf<'_>| call.work.planned_start(of);
        let mut layout = Layout::new(ins, options, workers, sms, arrays.len(), keep, planned);
        let built = start.elapsed();
        let layout_plan = layout.plan_time;
        let len = layout.image.bytes.len();
        // SAFETY: every byte of the allocation is written by the copy below before any kernel
        // reads it.
        let buffer = unsafe { gpu.stream().alloc::<u8>(len) }
            .map_err(gpu.alloc_error("allocating the region's tables", len))?;
        let base = buffer.device_ptr(gpu.stream()).0;
        let mut desc = layout.desc(base);
        let o = layout.offsets;
        // The record and the statistics, which the workers that reset their own tables leave in
        // mapped host memory, laid out as in the tables.
        let record_and_stats = o.stats + layout.stats_len - o.error;
        let mailbox = match keep {
            Keep::OnDevice => {
                let mailbox = Mailbox::new(gpu, record_and_stats)?;
                desc.error_out = mailbox.at(0);
                desc.stats = mailbox.at(o.stats - o.error);
                desc.done_out = mailbox.done_ptr();
                Some(mailbox)
            }
            Keep::No | Keep::OnHost => None,
        };
        let slot_at = layout.slot_at;
        let slot = write_slot(
            &mut layout.image.bytes[slot_at..],
            &desc,
            arrays,
            base + slot_at as u64,
        );
        // Through the pinned staging ring: a large region's tables (tens of megabytes for
        // hundreds of thousands of tasks) would cross the link at a pageable copy's speed.
        let piece = Piece {
            host: layout.image.bytes.as_ptr() as usize,
            device: base,
            len,
        };
        // SAFETY: the piece is the image, which lives until the copy is done (`upload` returns
        // then), and the allocation it fills, which no kernel uses yet.
        unsafe { gpu.upload(&[piece]) }?;
        let tables = Self {
            buffer,
            base,
            desc,
            error: (o.error, layout.error_len),
            stats: (o.stats, layout.stats_len),
            trace: o.trace.map(|t| (t, layout.trace_len)),
            written: layout.written,
            pristine: layout.pristine,
            mailbox,
        };
        layout.image.keep(ins.region);
        Ok((tables, slot, (built, layout_plan)))
    }

    /// A slot of its own for `arrays` (for a call whose arrays live elsewhere than those of the
    /// slots made so far), uploaded on the region stream.
    pub fn new_slot(&self, gpu: &Gpu, arrays: &[ArrayDesc]) -> Result<DescSlot, Error> {
        let mut bytes = vec![0u8; slot_bytes(arrays.len())];
        // SAFETY: every byte is written by the copy below before any kernel reads it.
        let mut buffer = unsafe { gpu.stream().alloc::<u8>(bytes.len()) }
            .map_err(gpu.alloc_error("allocating an array table", bytes.len()))?;
        let address = buffer.device_ptr(gpu.stream()).0;
        let mut slot = write_slot(&mut bytes, &self.desc, arrays, address);
        gpu.stream()
            .memcpy_htod(&bytes[..], &mut buffer)
            .map_err(Error::cuda("uploading an array table"))?;
        slot.buffer = Some(buffer);
        Ok(slot)
    }

    /// Queues, on the region stream, the copy that puts the tables the workers write back as they
    /// started. Only tables uploaded with `keep` have the pristine copy to do it from.
    pub fn reset(&self, gpu: &Gpu) -> Result<(), Error> {
        let from = self
            .pristine
            .expect("tables that are reset keep a pristine copy");
        let len = self.written.len();
        // SAFETY: both ranges lie inside the allocation, apart (the copy follows the tables the
        // workers write); the stream orders the copy after the last run and before the next.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(
                self.base + self.written.start as u64,
                self.base + from as u64,
                len,
                gpu.stream().cu_stream(),
            )
        }
        .map_err(Error::cuda("resetting the region's tables"))
    }

    /// The copy [`DeviceTables::reset`] queues, for a graph node.
    pub fn reset_copy(&self) -> Copy {
        let from = self
            .pristine
            .expect("tables that are reset keep a pristine copy");
        Copy {
            dst: self.base + self.written.start as u64,
            src: self.base + from as u64,
            len: self.written.len(),
        }
    }

    /// The device address of byte `offset` of the tables.
    pub fn address(&self, offset: usize) -> u64 {
        self.base + offset as u64
    }

    /// `len` bytes at `offset` of the tables.
    pub fn read(
        &self,
        gpu: &Gpu,
        (offset, len): (usize, usize),
        what: &str,
    ) -> Result<Vec<u8>, Error> {
        gpu.stream()
            .clone_dtoh(&self.buffer.slice(offset..offset + len))
            .map_err(Error::cuda(format!("reading {what}")))
    }
}
