//! Arrays that stay on the device across regions.
//!
//! 1. [`Runtime::upload`](crate::Runtime::upload) copies host data into a [`DeviceArray`] on the
//!    runtime's device (host memory, on the CPU backend).
//! 2. A region takes it as `&DeviceArray<T>` or `&mut DeviceArray<T>`: nothing is copied in or out
//!    around the run, so a chain of regions keeps its data on the GPU.
//! 3. [`DeviceArray::download`] copies it back when the host needs it.
//!
//! # Arrays shared with cudarc
//! An array already on the GPU as cudarc's [`CudaSlice`] becomes a `DeviceArray` with
//! [`Runtime::adopt`](crate::Runtime::adopt), without a copy; [`DeviceArray::cuda_view`] and
//! [`DeviceArray::cuda_view_mut`] lend it back to cudarc code between regions, and
//! [`DeviceArray::into_cuda`] returns the slice. With a runtime made on the caller's stream
//! ([`Runtime::on_stream`](crate::Runtime::on_stream)), regions and the caller's own kernels run
//! in that stream's order, with no host synchronization between them.
//!
//! A region that fails leaves a resident array as the tasks that ran left it (host arrays are
//! restored; see [`Error`]).
//!
//! # Regions in flight
//! The region borrows the array only while it is built: the binding keeps the memory alive itself,
//! so regions submitted without waiting ([`Region::submit`](crate::Region::submit)) can share an
//! array. What orders them is the array's record of the regions in flight on it: each region
//! registers the element ranges it reads and writes, and waits for the earlier ones whose ranges
//! overlap its own with a write on either side. [`DeviceArray::download`] waits for the writers.

use std::marker::PhantomData;
use std::ops::Range;
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr};

use crate::error::Error;

/// Completion of one region run: set once, waited on by the regions and downloads after it. A run
/// on the GPU also publishes the event that ends its kernel as soon as it is launched, so that a
/// region after it on the GPU can wait for the kernel on the device, with no host round trip.
#[derive(Default)]
pub(crate) struct Done {
    state: Mutex<DoneState>,
    signal: Condvar,
}

#[derive(Default)]
struct DoneState {
    finished: bool,
    /// Recorded after the run's kernel, once it is launched.
    kernel_end: Option<Arc<CudaEvent>>,
}

impl Done {
    fn state(&self) -> std::sync::MutexGuard<'_, DoneState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run has ended (successfully or not).
    pub fn set(&self) {
        self.state().finished = true;
        self.signal.notify_all();
    }

    /// The run's kernel is launched, and `end` completes when it does.
    pub fn launched(&self, end: Arc<CudaEvent>) {
        self.state().kernel_end = Some(end);
        self.signal.notify_all();
    }

    pub fn is_set(&self) -> bool {
        self.state().finished
    }

    /// Waits until the run has ended.
    pub fn wait(&self) {
        let mut state = self.state();
        while !state.finished {
            state = self
                .signal
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Waits until the run has ended or launched its kernel; in the second case returns the event
    /// that completes with the kernel.
    pub fn wait_launched(&self) -> Option<Arc<CudaEvent>> {
        let mut state = self.state();
        loop {
            if state.finished {
                return None;
            }
            if let Some(end) = &state.kernel_end {
                return Some(end.clone());
            }
            state = self
                .signal
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// One region's access to an array, while the region is in flight.
pub(crate) struct InFlight {
    pub done: Arc<Done>,
    pub range: Range<usize>,
    pub write: bool,
}

/// Where an array's elements live.
enum Store {
    /// On the CPU backend: ordinary memory, in `u64` words so that any element type up to 8-byte
    /// alignment fits. Written by the CPU backend's workers through raw pointers, which come from
    /// `Vec::as_ptr` (it creates no reference to the elements, so the writes stay valid).
    Host(Vec<u64>),
    /// On a GPU: raw bytes, copied with the runtime's stream.
    Gpu {
        bytes: CudaSlice<u8>,
        stream: Arc<CudaStream>,
    },
}

/// The memory of a [`DeviceArray`] and the regions in flight on it; shared by the array and the
/// bindings of the regions that use it.
pub(crate) struct Cell {
    store: Store,
    inflight: Mutex<Vec<InFlight>>,
}

// SAFETY: the memory is only reached through raw pointers by region runs, which `inflight` orders
// (no two overlapping accesses with a write run at once), and by `download`, which first waits for
// every writer in flight. `CudaSlice` is `Send + Sync`.
unsafe impl Send for Cell {}
// SAFETY: as above.
unsafe impl Sync for Cell {}

impl Cell {
    /// Registers a run that reads `read` and writes `write` (element ranges) and returns the runs
    /// in flight it must wait for: those with an overlapping range and a write on either side.
    pub fn register(
        &self,
        done: &Arc<Done>,
        read: Option<Range<usize>>,
        write: Option<Range<usize>>,
    ) -> Vec<Arc<Done>> {
        let overlaps = |a: &Range<usize>, b: &Range<usize>| a.start < b.end && b.start < a.end;
        let (read, write) = (
            read.filter(|r| !r.is_empty()),
            write.filter(|w| !w.is_empty()),
        );
        let mut inflight = self.inflight.lock().unwrap_or_else(PoisonError::into_inner);
        inflight.retain(|f| !f.done.is_set());
        let mut after = Vec::new();
        for f in inflight.iter() {
            let conflict = write.as_ref().is_some_and(|w| overlaps(w, &f.range))
                || (f.write && read.as_ref().is_some_and(|r| overlaps(r, &f.range)));
            if conflict && !after.iter().any(|d| Arc::ptr_eq(d, &f.done)) {
                after.push(f.done.clone());
            }
        }
        for (range, write) in [(read, false), (write, true)] {
            if let Some(range) = range {
                inflight.push(InFlight {
                    done: done.clone(),
                    range,
                    write,
                });
            }
        }
        after
    }

    /// Waits until no run that writes the array is in flight, or (`all`) no run at all.
    fn wait_for_runs(&self, all: bool) {
        let runs: Vec<Arc<Done>> = self
            .inflight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|f| all || f.write)
            .map(|f| f.done.clone())
            .collect();
        for done in runs {
            done.wait();
        }
    }
}

/// An array resident where the runtime runs: GPU memory, or host memory for the CPU backend.
pub struct DeviceArray<T: Copy> {
    cell: Arc<Cell>,
    len: usize,
    _marker: PhantomData<T>,
}

impl<T: Copy> std::fmt::Debug for DeviceArray<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = match self.cell.store {
            Store::Host(_) => "host",
            Store::Gpu { .. } => "gpu",
        };
        write!(
            f,
            "DeviceArray<{}>({} elements on the {place})",
            std::any::type_name::<T>(),
            self.len
        )
    }
}

/// The bytes of `data`.
fn bytes_of<T: Copy>(data: &[T]) -> &[u8] {
    // SAFETY: `T: Copy` plain data, viewed as its bytes.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), size_of_val(data)) }
}

impl<T: Copy> DeviceArray<T> {
    fn new(store: Store, len: usize) -> Self {
        Self {
            cell: Arc::new(Cell {
                store,
                inflight: Mutex::new(Vec::new()),
            }),
            len,
            _marker: PhantomData,
        }
    }

    pub(crate) fn host(data: &[T]) -> Self {
        assert!(
            align_of::<T>() <= align_of::<u64>(),
            "resident arrays hold elements aligned to at most 8 bytes"
        );
        let bytes = bytes_of(data);
        let mut words = vec![0u64; bytes.len().div_ceil(8).max(1)];
        // SAFETY: `words` has at least `bytes.len()` bytes; the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                words.as_mut_ptr().cast::<u8>(),
                bytes.len(),
            )
        };
        Self::new(Store::Host(words), data.len())
    }

    pub(crate) fn gpu(data: &[T], stream: &Arc<CudaStream>) -> Result<Self, Error> {
        let bytes = bytes_of(data);
        let padded = [0u8; 8];
        let bytes = if bytes.is_empty() { &padded[..] } else { bytes };
        let bytes = stream.clone_htod(bytes).map_err(Error::alloc(
            stream.context(),
            "uploading a device array",
            bytes.len(),
        ))?;
        // Regions run on other streams too: the copy must be complete before any of them starts.
        stream
            .synchronize()
            .map_err(Error::cuda("uploading a device array"))?;
        Ok(Self::new(
            Store::Gpu {
                bytes,
                stream: stream.clone(),
            },
            data.len(),
        ))
    }

    /// `slice`, a caller's cudarc allocation, as a device array, with no copy. Work queued on the
    /// slice's stream is complete before a region on `runtime_stream` reads it: the same stream
    /// orders it, another one is synchronized here.
    pub(crate) fn adopt(
        slice: CudaSlice<T>,
        runtime_stream: &Arc<CudaStream>,
    ) -> Result<Self, Error> {
        let len = slice.len();
        let stream = slice.stream().clone();
        if !Arc::ptr_eq(&stream, runtime_stream) {
            stream.synchronize().map_err(Error::cuda(
                "waiting for the work queued on an adopted array",
            ))?;
        }
        let ptr = slice.leak();
        // SAFETY: `ptr` is the allocation just leaked, of `len` elements of `T`; the new slice
        // owns it (and frees it on the caller's stream).
        let bytes = unsafe { stream.upgrade_device_ptr::<u8>(ptr, len * size_of::<T>()) };
        Ok(Self::new(Store::Gpu { bytes, stream }, len))
    }

    /// The array as a cudarc view, for cudarc code between regions, once every region in flight
    /// that writes it has ended; `None` for an array in host memory (the CPU backend's).
    pub fn cuda_view(&self) -> Option<CudaView<'_, T>> {
        self.cell.wait_for_runs(false);
        match &self.cell.store {
            // SAFETY: the allocation holds `len` elements of `T`, written from `T` values.
            Store::Gpu { bytes, .. } => unsafe { bytes.transmute::<T>(self.len) },
            Store::Host(_) => None,
        }
    }

    /// The array as a mutable cudarc view, once every region in flight on it has ended; `None`
    /// for an array in host memory, or while a region built but not run yet holds it. What cudarc
    /// code writes through it, the next region reads: queue that code on the runtime's stream, or
    /// synchronize its stream before the region.
    pub fn cuda_view_mut(&mut self) -> Option<CudaViewMut<'_, T>> {
        self.cell.wait_for_runs(true);
        let len = self.len;
        // No region holds the cell mutably: the bindings only read its address.
        let cell = Arc::get_mut(&mut self.cell)?;
        match &mut cell.store {
            // SAFETY: the allocation holds `len` elements of `T`.
            Store::Gpu { bytes, .. } => unsafe { bytes.transmute_mut::<T>(len) },
            Store::Host(_) => None,
        }
    }

    /// The array as the cudarc slice it lives in, once every region in flight on it has ended.
    /// The array comes back unchanged when it is in host memory (the CPU backend's), or when a
    /// region built but not run yet still holds it.
    pub fn into_cuda(self) -> Result<CudaSlice<T>, Self> {
        self.cell.wait_for_runs(true);
        let len = self.len;
        let cell = match Arc::try_unwrap(self.cell) {
            Ok(cell) => cell,
            Err(cell) => {
                return Err(Self {
                    cell,
                    len,
                    _marker: PhantomData,
                });
            }
        };
        match cell.store {
            Store::Gpu { bytes, stream } => {
                let ptr = bytes.leak();
                // SAFETY: `ptr` is the allocation just leaked, holding `len` elements of `T`.
                Ok(unsafe { stream.upgrade_device_ptr::<T>(ptr, len) })
            }
            store @ Store::Host(_) => Err(Self::new(store, len)),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the array lives in GPU memory.
    pub fn on_gpu(&self) -> bool {
        matches!(self.cell.store, Store::Gpu { .. })
    }

    /// A copy of the array in host memory, once every region in flight that writes it has ended.
    pub fn download(&self) -> Result<Vec<T>, Error> {
        self.cell.wait_for_runs(false);
        let mut out = Vec::<T>::with_capacity(self.len);
        let bytes = self.len * size_of::<T>();
        match &self.cell.store {
            Store::Host(words) => {
                // SAFETY: `words` holds at least `len` elements' bytes, written from `T` values;
                // no writer is in flight.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        words.as_ptr().cast::<u8>(),
                        out.as_mut_ptr().cast::<u8>(),
                        bytes,
                    );
                }
            }
            Store::Gpu {
                bytes: slice,
                stream,
            } => {
                let raw = stream
                    .clone_dtoh(slice)
                    .map_err(Error::cuda("downloading a device array"))?;
                // SAFETY: `raw` holds at least `len` elements' bytes, written from `T` values.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        raw.as_ptr(),
                        out.as_mut_ptr().cast::<u8>(),
                        bytes,
                    );
                }
            }
        }
        // SAFETY: the `len` elements were initialised above.
        unsafe { out.set_len(self.len) };
        Ok(out)
    }

    /// Where a region's binding finds the data, and the shared cell that keeps it alive.
    pub(crate) fn location(&self) -> (Place, Arc<Cell>) {
        let place = match &self.cell.store {
            Store::Host(words) => Place::Host(words.as_ptr().cast_mut().cast()),
            Store::Gpu { bytes, stream } => Place::Device(bytes.device_ptr(stream).0),
        };
        (place, self.cell.clone())
    }
}

/// Where a bound array's elements are.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Place {
    /// Host memory.
    Host(*mut u8),
    /// Device memory of the GPU runtime.
    Device(u64),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{DeviceArray, Done};

    #[test]
    fn runs_wait_only_for_overlapping_accesses_with_a_write() {
        let array = DeviceArray::host(&[0u32; 100]);
        let cell = &array.cell;
        let run = || Arc::new(Done::default());
        let (w1, r1, r2, w2, w3) = (run(), run(), run(), run(), run());
        assert!(cell.register(&w1, None, Some(0..50)).is_empty());
        // Reads of what `w1` writes wait for it; reads elsewhere do not.
        let after = cell.register(&r1, Some(10..20), None);
        assert!(after.len() == 1 && Arc::ptr_eq(&after[0], &w1));
        assert!(cell.register(&r2, Some(50..100), None).is_empty());
        // A write waits for the earlier writer and readers it overlaps, each once.
        let after = cell.register(&w2, Some(0..100), Some(15..60));
        assert_eq!(after.len(), 3);
        // Finished runs are forgotten.
        for done in [&w1, &r1, &r2, &w2] {
            done.set();
        }
        assert!(cell.register(&w3, Some(0..100), Some(0..100)).is_empty());
        // Empty ranges touch nothing.
        assert!(cell.register(&run(), Some(5..5), Some(7..7)).is_empty());
    }

    #[test]
    fn an_array_in_host_memory_has_no_cudarc_slice_and_comes_back_whole() {
        let mut array = DeviceArray::host(&[3u16, 1, 4, 1, 5]);
        assert!(array.cuda_view().is_none());
        assert!(array.cuda_view_mut().is_none());
        let array = array.into_cuda().expect_err("host memory is no CUDA slice");
        assert_eq!(array.download().unwrap(), [3, 1, 4, 1, 5]);
    }

    #[test]
    fn an_array_a_region_still_holds_is_not_handed_out() {
        let array = DeviceArray::host(&[1u32; 4]);
        let (_, held) = array.location();
        let array = array.into_cuda().expect_err("a binding holds the cell");
        drop(held);
        assert_eq!(array.len(), 4);
    }
}
