//! Copies between the caller's host memory (pageable) and the device at the link's speed.
//!
//! 1. The copy is cut into chunks of at most [`CHUNK`] bytes, which go through a ring of
//!    [`SLOTS`] pinned staging buffers ([`Staging`], checked out of the device's pool and
//!    returned after the copy). A ring's buffers are as large as the copy needs, up to a chunk
//!    ([`slot_for`]): pinning is what a region's first call paid most for.
//! 2. Up: the host copies chunk `k` into its slot, split over several threads, while the DMA of
//!    the chunks before it runs; the slot's event says when its last DMA is done, and so when it
//!    may be filled again.
//! 3. Down: the DMAs of the first [`SLOTS`] chunks are queued at once; as each completes, the
//!    threads copy it out of its slot and the slot takes the next chunk's DMA.
//! 4. Small copies (under [`DIRECT`] bytes in all) go straight from pageable memory, where the
//!    staging would cost more than it saves.
//! 5. Host memory that is already page-locked (a [`Pinned`](crate::Pinned) buffer, a cudarc
//!    pinned slice, or memory the caller registered with CUDA) skips the ring: the DMA reads and
//!    writes it in place, at the link's speed, with no host copy at all.
//!
//! Everything is queued on the region stream, after what is queued there already (a download
//! follows the kernel). A ring goes back to the pool once its DMAs are done, so that the next copy,
//! on whichever stream, finds its slots free.

use std::sync::{Mutex, PoisonError};

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, PinnedHostSlice, result, sys};

use super::Gpu;
use crate::error::Error;

/// The most bytes of one chunk: 16 MiB moved 1 GiB up and back 1.24x faster than 4 MiB (median
/// of three interleaved rounds, `bench/results/transfer-chunk-ab-h100.txt`), since each chunk
/// paid two thread barriers (before the pipeline dropped them).
pub(crate) const CHUNK: usize = 16 << 20;
/// Pinned staging buffers in the ring.
pub(crate) const SLOTS: usize = 4;
/// Below this many bytes in all, a copy goes straight from pageable memory.
pub(crate) const DIRECT: usize = 256 << 10;
/// The most threads that copy into and out of the staging buffers (and at most the cores). On
/// the H100 machine's host one thread copies pageable memory at 6-10 GB/s, and 8 threads reached
/// 29-38 GB/s where 16 reached 38-41 (`bench/results/copy-threads-h100/`): the host's copies, not
/// the link (54 GB/s pinned), bound the ring.
const THREADS: usize = 16;

/// One contiguous range to copy: host bytes at `host`, device bytes at `device`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Piece {
    /// The host address (a pointer, as an integer so that the pieces cross threads).
    pub host: usize,
    /// The device address.
    pub device: u64,
    /// Bytes.
    pub len: usize,
}

/// A ring of pinned staging buffers and the events that say when each is free again.
pub(crate) struct Staging {
    /// The pinned memory, freed when the ring is dropped.
    _buffer: PinnedHostSlice<u8>,
    /// The buffer's address.
    base: usize,
    /// The bytes of each of its [`SLOTS`] buffers: the chunk size of the copies through it.
    slot: usize,
    events: Vec<CudaEvent>,
}

/// The slot size of a ring for a copy of `total` bytes: the copy in [`SLOTS`] chunks, rounded up
/// to a power of two, at most [`CHUNK`]. Pinning memory costs about as much as copying it many
/// times over (a ring of four 16 MiB slots took 26-51 ms on the H200 machine's host, the most of a
/// region's first call, `bench/results/first-call-h200/`), so a copy of a few megabytes pins only
/// what it uses; a larger copy later replaces the ring with a larger one.
fn slot_for(total: usize) -> usize {
    total
        .div_ceil(SLOTS)
        .next_power_of_two()
        .clamp(DIRECT.div_ceil(SLOTS), CHUNK)
}

// SAFETY: the pinned buffer is only reached through `base` by the one copy that checked the
// staging out; `PinnedHostSlice` and `CudaEvent` are `Send`.
unsafe impl Send for Staging {}

/// The device's pool of staging rings: one per copy in flight at once.
#[derive(Default)]
pub(crate) struct StagingPool {
    free: Mutex<Vec<Staging>>,
}

impl Gpu {
    /// A staging ring of the pool whose slots hold [`slot_for`]`(total)` bytes, or a new one;
    /// the smaller rings of the pool are freed then, the new one taking their place.
    fn check_out(&self, total: usize) -> Result<Staging, Error> {
        let slot = slot_for(total);
        {
            let mut free = self
                .staging
                .free
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(at) = free.iter().position(|s| s.slot >= slot) {
                return Ok(free.swap_remove(at));
            }
            free.clear();
        }
        let bytes = SLOTS * slot;
        // SAFETY: every byte of a slot is written (by the host or a DMA) before it is read.
        let mut buffer = unsafe { self.context().alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(self.alloc_error("allocating pinned staging memory", bytes))?;
        let base = buffer
            .as_mut_ptr()
            .map_err(Error::cuda("reaching pinned staging memory"))? as usize;
        let events = (0..SLOTS)
            .map(|_| {
                self.context()
                    .new_event(Some(CUevent_flags::CU_EVENT_DISABLE_TIMING))
                    .map_err(Error::cuda("creating an event"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Staging {
            _buffer: buffer,
            base,
            slot,
            events,
        })
    }

    /// Returns a staging ring to the pool once its copies are done.
    fn check_in(&self, staging: Staging) {
        for event in &staging.events {
            // A failed wait leaves the ring out of the pool: its buffer may still be in use.
            if event.synchronize().is_err() {
                std::mem::forget(staging);
                return;
            }
        }
        self.staging
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(staging);
    }

    /// Copies every piece's host bytes to its device bytes, on the region stream, after the work
    /// queued there; done when it returns (small copies: queued, and read from the host before it
    /// returns).
    ///
    /// # Safety
    /// Each piece's host range must be valid for reads of `len` bytes, and its device range
    /// memory of this context that no running kernel uses.
    pub(crate) unsafe fn upload(&self, pieces: &[Piece]) -> Result<(), Error> {
        if pieces.is_empty() {
            return Ok(());
        }
        // The raw copies need the context current, and this may be a new thread.
        self.bind()?;
        let (locked, pageable) = page_locked(pieces);
        let queued = locked.iter().try_for_each(|p| {
            // SAFETY: the caller vouches for both ranges.
            let host = unsafe { std::slice::from_raw_parts(p.host as *const u8, p.len) };
            // SAFETY: as above; the host range is page-locked, so the DMA reads it in place, and
            // the wait below ends it before the caller may touch it again.
            unsafe { result::memcpy_htod_async(p.device, host, self.stream().cu_stream()) }
                .map_err(Error::cuda("uploading an array"))
        });
        // SAFETY: the caller's promises, for the pageable pieces.
        let outcome = queued.and_then(|()| unsafe { self.upload_pageable(&pageable) });
        self.after_locked(&locked, outcome, "uploading an array")
    }

    /// The DMAs of page-locked ranges read and write the caller's memory until they are done: when
    /// there were any, waits for them, whatever `outcome` the rest of the copy had.
    fn after_locked(
        &self,
        locked: &[Piece],
        outcome: Result<(), Error>,
        what: &str,
    ) -> Result<(), Error> {
        if locked.is_empty() {
            return outcome;
        }
        let synced = self
            .stream()
            .synchronize()
            .map_err(Error::cuda(what.to_owned()));
        outcome.and(synced)
    }

    /// [`Gpu::upload`] of pageable pieces: straight when small, else through the staging ring.
    ///
    /// # Safety
    /// As for [`Gpu::upload`].
    unsafe fn upload_pageable(&self, pieces: &[Piece]) -> Result<(), Error> {
        let total: usize = pieces.iter().map(|p| p.len).sum();
        if total == 0 {
            return Ok(());
        }
        if total < DIRECT {
            for p in pieces {
                // SAFETY: the caller vouches for both ranges.
                let host = unsafe { std::slice::from_raw_parts(p.host as *const u8, p.len) };
                // SAFETY: as above; a pageable source is copied before the call returns.
                unsafe { result::memcpy_htod_async(p.device, host, self.stream().cu_stream()) }
                    .map_err(Error::cuda("uploading an array"))?;
            }
            return Ok(());
        }
        let staging = self.check_out(total)?;
        let chunks = split(pieces, staging.slot);
        let outcome = pipeline(chunks.len(), copy_threads(total), |k, stage| {
            let chunk = chunks[k];
            let slot = staging.base + (k % SLOTS) * staging.slot;
            match stage {
                // The slot's last DMA must be done before the host fills it again.
                Stage::Before => staging.events[k % SLOTS]
                    .synchronize()
                    .map_err(Error::cuda("waiting for a staging buffer")),
                Stage::Copy(part, parts) => {
                    let (from, len) = share(chunk.len, part, parts);
                    // SAFETY: the host range is the caller's, the slot range is this copy's alone
                    // (its last DMA is done), and the parts of one chunk do not overlap.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            (chunk.host + from) as *const u8,
                            (slot + from) as *mut u8,
                            len,
                        )
                    };
                    Ok(())
                }
                Stage::After => {
                    // SAFETY: the slot holds the chunk and stays untouched until the event.
                    let bytes = unsafe { std::slice::from_raw_parts(slot as *const u8, chunk.len) };
                    // SAFETY: the device range is the caller's.
                    unsafe {
                        result::memcpy_htod_async(chunk.device, bytes, self.stream().cu_stream())
                    }
                    .map_err(Error::cuda("uploading an array"))?;
                    staging.events[k % SLOTS]
                        .record(self.stream())
                        .map_err(Error::cuda("recording an event"))
                }
            }
        });
        self.check_in(staging);
        outcome
    }

    /// Copies every piece's device bytes to its host bytes, after the work queued on the region
    /// stream; done when it returns.
    ///
    /// # Safety
    /// Each piece's host range must be valid for writes of `len` bytes and not read by anyone
    /// meanwhile, and its device range memory of this context.
    pub(crate) unsafe fn download(&self, pieces: &[Piece]) -> Result<(), Error> {
        if pieces.is_empty() {
            return Ok(());
        }
        self.bind()?;
        // Page-locked ranges first, straight into the caller's memory: the pageable copies below
        // overlap their DMA.
        let (locked, pageable) = page_locked(pieces);
        let queued = locked.iter().try_for_each(|p| {
            // SAFETY: the caller vouches for both ranges.
            let host = unsafe { std::slice::from_raw_parts_mut(p.host as *mut u8, p.len) };
            // SAFETY: as above; the host range is page-locked and nobody reads it until the wait
            // below.
            unsafe { result::memcpy_dtoh_async(host, p.device, self.stream().cu_stream()) }
                .map_err(Error::cuda("downloading an array"))
        });
        // SAFETY: the caller's promises, for the pageable pieces.
        let outcome = queued.and_then(|()| unsafe { self.download_pageable(&pageable) });
        self.after_locked(&locked, outcome, "downloading an array")
    }

    /// [`Gpu::download`] of pageable pieces: straight when small, else through the staging ring.
    ///
    /// # Safety
    /// As for [`Gpu::download`].
    unsafe fn download_pageable(&self, pieces: &[Piece]) -> Result<(), Error> {
        let total: usize = pieces.iter().map(|p| p.len).sum();
        if total == 0 {
            return Ok(());
        }
        if total < DIRECT {
            for p in pieces {
                // SAFETY: the caller vouches for both ranges.
                let host = unsafe { std::slice::from_raw_parts_mut(p.host as *mut u8, p.len) };
                // SAFETY: as above; the synchronization below ends the copy.
                unsafe { result::memcpy_dtoh_async(host, p.device, self.stream().cu_stream()) }
                    .map_err(Error::cuda("downloading an array"))?;
            }
            return self
                .stream()
                .synchronize()
                .map_err(Error::cuda("downloading an array"));
        }
        let staging = self.check_out(total)?;
        let chunks = split(pieces, staging.slot);
        let queue = |k: usize| -> Result<(), Error> {
            let chunk = chunks[k];
            let slot = staging.base + (k % SLOTS) * staging.slot;
            // SAFETY: the slot is this copy's alone until its event, which follows the DMA.
            let bytes = unsafe { std::slice::from_raw_parts_mut(slot as *mut u8, chunk.len) };
            // SAFETY: the device range is the caller's.
            unsafe { result::memcpy_dtoh_async(bytes, chunk.device, self.stream().cu_stream()) }
                .map_err(Error::cuda("downloading an array"))?;
            staging.events[k % SLOTS]
                .record(self.stream())
                .map_err(Error::cuda("recording an event"))
        };
        let mut outcome = (0..SLOTS.min(chunks.len())).try_for_each(queue);
        if outcome.is_ok() {
            outcome = pipeline(chunks.len(), copy_threads(total), |k, stage| {
                let chunk = chunks[k];
                let slot = staging.base + (k % SLOTS) * staging.slot;
                match stage {
                    Stage::Before => staging.events[k % SLOTS]
                        .synchronize()
                        .map_err(Error::cuda("downloading an array")),
                    Stage::Copy(part, parts) => {
                        let (from, len) = share(chunk.len, part, parts);
                        // SAFETY: the slot holds the chunk (its DMA is done); the host range is
                        // the caller's, and the parts of one chunk do not overlap.
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                (slot + from) as *const u8,
                                (chunk.host + from) as *mut u8,
                                len,
                            )
                        };
                        Ok(())
                    }
                    Stage::After if k + SLOTS < chunks.len() => queue(k + SLOTS),
                    Stage::After => Ok(()),
                }
            });
        }
        self.check_in(staging);
        outcome
    }
}

/// The pieces whose host memory is page-locked, and the others (in their order).
///
/// A range is page-locked when CUDA knows both its ends as host memory (`cuMemHostAlloc`,
/// `cuMemHostRegister`): a slice lies in one allocation, so its two ends settle it. Pageable
/// memory is not known to CUDA. (`cuPointerGetAttributes`, not the singular call: for an address
/// CUDA does not know, that one fails with an API error, which `compute-sanitizer` reports as one
/// of the program's errors; this one answers a memory type of 0.)
fn page_locked(pieces: &[Piece]) -> (Vec<Piece>, Vec<Piece>) {
    let host = |at: usize| {
        let mut kind = 0u32;
        let mut attribute = sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE;
        let mut data: [*mut std::ffi::c_void; 1] = [(&raw mut kind).cast()];
        // SAFETY: the query only reads the pointer's value; `data` holds one destination for the
        // one attribute, the 4-byte `CUmemorytype` it returns.
        let asked = unsafe {
            sys::cuPointerGetAttributes(
                1,
                &raw mut attribute,
                data.as_mut_ptr(),
                at as sys::CUdeviceptr,
            )
        };
        asked == sys::CUresult::CUDA_SUCCESS && kind == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
    };
    pieces
        .iter()
        .filter(|p| p.len > 0)
        .partition(|p| host(p.host) && host(p.host + p.len - 1))
}

/// The pieces cut into chunks of at most `chunk` bytes.
fn split(pieces: &[Piece], chunk: usize) -> Vec<Piece> {
    pieces
        .iter()
        .flat_map(|p| {
            (0..p.len).step_by(chunk).map(move |at| Piece {
                host: p.host + at,
                device: p.device + at as u64,
                len: chunk.min(p.len - at),
            })
        })
        .collect()
}

/// Part `part` of `parts` of `len` bytes: its offset and length.
fn share(len: usize, part: usize, parts: usize) -> (usize, usize) {
    let (from, to) = (len * part / parts, len * (part + 1) / parts);
    (from, to - from)
}

/// A step of [`pipeline`] for one chunk.
#[derive(Clone, Copy, Debug)]
enum Stage {
    /// On the calling thread, before the chunk's host copy.
    Before,
    /// Piece `.0` of `.1` of the host copy, on whichever thread claims it.
    Copy(usize, usize),
    /// On the calling thread, after the host copy.
    After,
}

/// The environment variable that sets the most threads copying through the ring (a positive
/// number; [`THREADS`] without it). Read once per process.
pub const COPY_THREADS_VAR: &str = "TASKWEAVE_COPY_THREADS";

/// How many threads copy `total` bytes through the ring: one per [`PER_THREAD`] bytes, at most
/// [`COPY_THREADS_VAR`] (or [`THREADS`]) and the machine's cores.
fn copy_threads(total: usize) -> usize {
    static MOST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let most = *MOST.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cap = std::env::var(COPY_THREADS_VAR)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(THREADS);
        cap.min(cores)
    });
    total.div_ceil(PER_THREAD).clamp(1, most)
}

/// The fewest bytes worth a thread of their own (spawning one costs tens of microseconds).
const PER_THREAD: usize = 2 << 20;

/// Pieces of each chunk's host copy per copying thread (see [`pipeline`]).
const PIECES_PER_THREAD: usize = 4;

/// Runs `step` for chunks `0..chunks` in order on `threads` threads (the calling thread and
/// `threads - 1` helpers): `Before` on the calling thread, then the host copy in
/// [`PIECES_PER_THREAD`] pieces per thread, which the threads claim, then `After` on the calling
/// thread. The first error stops the work and is returned.
///
/// The threads meet through counters rather than barriers: the helpers copy pieces of chunk `k`
/// as soon as its `Before` is done (they do not wait for chunk `k - 1`'s `After`), and the
/// calling thread runs `After` once every piece is in. A barrier wakes its sleepers through the
/// kernel, twice per chunk; here a waiting thread polls, yielding its core. The pieces are
/// claimed, not dealt: a thread the OS has not scheduled yet holds no piece, where a part of its
/// own would hold up the chunk until it runs (with as many threads as cores, that was one copy in
/// several, ten times slower than the rest).
fn pipeline(
    chunks: usize,
    threads: usize,
    step: impl Fn(usize, Stage) -> Result<(), Error> + Sync,
) -> Result<(), Error> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let threads = threads.max(1);
    if threads == 1 {
        for k in 0..chunks {
            step(k, Stage::Before)?;
            step(k, Stage::Copy(0, 1))?;
            step(k, Stage::After)?;
        }
        return Ok(());
    }
    // `ready`: the chunks whose `Before` is done; `claimed[k]`: the pieces of chunk `k` taken;
    // `copied[k]`: those done (a failed piece counts, so that nobody waits for it).
    let pieces = threads * PIECES_PER_THREAD;
    let ready = AtomicUsize::new(0);
    let claimed: Vec<AtomicUsize> = (0..chunks).map(|_| AtomicUsize::new(0)).collect();
    let copied: Vec<AtomicUsize> = (0..chunks).map(|_| AtomicUsize::new(0)).collect();
    let failed = AtomicBool::new(false);
    let first: Mutex<Option<Error>> = Mutex::new(None);
    let fail = |e: Error| {
        failed.store(true, Ordering::Release);
        first
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(e);
    };
    let alive = || !failed.load(Ordering::Acquire);
    // Polls `done` until it holds or the work failed; whether it holds.
    let wait = |done: &dyn Fn() -> bool| {
        let mut spins = 0u32;
        loop {
            if done() {
                return true;
            }
            if !alive() {
                return false;
            }
            if spins < 64 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    };
    // Copies pieces of chunk `k` until none is left to claim.
    let copy_pieces = |k: usize| loop {
        let piece = claimed[k].fetch_add(1, Ordering::Relaxed);
        if piece >= pieces {
            return;
        }
        if alive() {
            step(k, Stage::Copy(piece, pieces)).unwrap_or_else(fail);
        }
        // Release: the piece's bytes are written before `After` sees the count.
        copied[k].fetch_add(1, Ordering::Release);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            let (ready, wait, copy_pieces) = (&ready, &wait, &copy_pieces);
            scope.spawn(move || {
                for k in 0..chunks {
                    if !wait(&|| ready.load(Ordering::Acquire) > k) {
                        return;
                    }
                    copy_pieces(k);
                }
            });
        }
        for (k, parts_in) in copied.iter().enumerate() {
            if !alive() {
                break;
            }
            if let Err(e) = step(k, Stage::Before) {
                fail(e);
                break;
            }
            ready.store(k + 1, Ordering::Release);
            copy_pieces(k);
            if !wait(&|| parts_in.load(Ordering::Acquire) == pieces) || !alive() {
                break;
            }
            if let Err(e) = step(k, Stage::After) {
                fail(e);
                break;
            }
        }
        // On success every helper has passed every chunk; after a failure the helpers waiting
        // for a chunk that will not come see it and return.
    });
    match first.into_inner().unwrap_or_else(PoisonError::into_inner) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_into_chunks_that_cover_them_exactly() {
        let pieces = [
            Piece {
                host: 0x1000,
                device: 0x9000_0000,
                len: 2 * CHUNK + 5,
            },
            Piece {
                host: 0x10_0000_0000,
                device: 0xa000_0000,
                len: 3,
            },
            Piece {
                host: 0x20_0000_0000,
                device: 0xb000_0000,
                len: 0,
            },
        ];
        let chunks = split(&pieces, CHUNK);
        assert_eq!(chunks.len(), 4);
        assert_eq!(
            chunks.iter().map(|c| c.len).collect::<Vec<_>>(),
            [CHUNK, CHUNK, 5, 3]
        );
        assert_eq!(
            (chunks[1].host, chunks[1].device),
            (0x1000 + CHUNK, 0x9000_0000 + CHUNK as u64)
        );
        assert_eq!(chunks[3].device, 0xa000_0000);
        assert_eq!(split(&pieces, 1 << 20).len(), 2 * 16 + 1 + 1);
    }

    #[test]
    fn a_ring_pins_what_its_copy_uses_up_to_four_full_chunks() {
        // Tables of a few megabytes: four slots of a megabyte, not 64 MiB.
        assert_eq!(slot_for(3 << 20), 1 << 20);
        assert_eq!(slot_for(DIRECT), DIRECT / SLOTS);
        assert_eq!(slot_for(4 * CHUNK), CHUNK);
        assert_eq!(slot_for(1 << 40), CHUNK);
        // Every slot holds its share of the copy.
        for total in [DIRECT, 3 << 20, 5 * CHUNK + 7] {
            assert!(
                SLOTS * slot_for(total) >= total.min(SLOTS * CHUNK),
                "{total}"
            );
        }
    }

    #[test]
    fn small_copies_stay_on_the_calling_thread_and_big_ones_spread() {
        assert_eq!(copy_threads(1), 1);
        assert_eq!(copy_threads(PER_THREAD), 1);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            copy_threads(CHUNK),
            (CHUNK / PER_THREAD).min(THREADS).min(cores)
        );
        assert!(copy_threads(1 << 30) <= THREADS);
    }

    #[test]
    fn the_shares_of_a_chunk_cover_it_without_overlap() {
        for (len, parts) in [(10, 3), (CHUNK, 8), (1, 4), (0, 2)] {
            let mut next = 0;
            for part in 0..parts {
                let (from, n) = share(len, part, parts);
                assert_eq!(from, next);
                next += n;
            }
            assert_eq!(next, len);
        }
    }

    #[test]
    fn every_piece_of_every_chunk_is_copied_once_whichever_thread_claims_it() {
        let (chunks, threads) = (7, 5);
        let seen = Mutex::new(Vec::new());
        pipeline(chunks, threads, |k, stage| {
            if let Stage::Copy(piece, pieces) = stage {
                assert_eq!(pieces, threads * PIECES_PER_THREAD);
                seen.lock().unwrap().push((k, piece));
            }
            Ok(())
        })
        .unwrap();
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        let all: Vec<(usize, usize)> = (0..chunks)
            .flat_map(|k| (0..threads * PIECES_PER_THREAD).map(move |p| (k, p)))
            .collect();
        assert_eq!(seen, all);
    }

    #[test]
    fn the_pipeline_runs_every_stage_of_every_chunk_in_order_and_stops_at_the_first_error() {
        let seen = Mutex::new(Vec::new());
        pipeline(5, 4, |k, stage| {
            seen.lock().unwrap().push((k, format!("{stage:?}")));
            Ok(())
        })
        .unwrap();
        let seen = seen.into_inner().unwrap();
        for k in 0..5 {
            let of_k: Vec<&String> = seen.iter().filter(|s| s.0 == k).map(|s| &s.1).collect();
            assert_eq!(of_k.first().map(|s| s.as_str()), Some("Before"));
            assert_eq!(of_k.last().map(|s| s.as_str()), Some("After"));
            assert!(of_k.iter().any(|s| s.starts_with("Copy(0,")));
        }
        let afters: Vec<usize> = seen
            .iter()
            .filter(|s| s.1 == "After")
            .map(|s| s.0)
            .collect();
        assert_eq!(afters, [0, 1, 2, 3, 4]);

        let after_error = Mutex::new(0);
        let error = pipeline(6, 3, |k, stage| {
            if k == 2 && matches!(stage, Stage::After) {
                return Err(Error::NotRun {
                    region: "t",
                    reason: "failed".to_owned(),
                });
            }
            if k > 2 {
                *after_error.lock().unwrap() += 1;
            }
            Ok(())
        });
        assert!(matches!(error, Err(Error::NotRun { .. })));

        // A helper's failed part stops the work too, and nobody waits for it forever.
        let error = pipeline(40, 8, |k, stage| match stage {
            Stage::Copy(3, _) if k == 7 => Err(Error::NotRun {
                region: "t",
                reason: "copy failed".to_owned(),
            }),
            _ => Ok(()),
        });
        assert!(matches!(error, Err(Error::NotRun { reason, .. }) if reason == "copy failed"));
        assert_eq!(
            *after_error.lock().unwrap(),
            0,
            "nothing runs after the error"
        );
    }
}
