//! One call of a plan: the plan's [`Work`] and the arrays bound for this call ([`Binding`]),
//! which is what a backend executes ([`Call`]).
//!
//! 1. The region builder binds each array of a call ([`Binding::host`], [`Binding::resident`]).
//! 2. Before the run, [`register`] records the call's accesses with the resident arrays it shares
//!    and returns the runs in flight it must follow ([`Order`]).
//! 3. A backend reads the DAG and the options from [`Call::work`], and the arrays from
//!    [`Call::arrays`]; what it keeps between runs of a plan comes beside the call
//!    ([`backend::Kept`](crate::backend::Kept)).

use std::marker::PhantomData;

use cudarc::driver::CudaSlice;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::inspect::{ArrayInfo, Footprint};
use crate::resident::{Cell, Done, Place};
use crate::work::Work;

/// A region array bound for one call: its memory and how to move it.
pub(crate) struct Binding<'a> {
    pub info: ArrayInfo,
    /// Host memory of the array; null for an array resident on the GPU.
    pub ptr: *mut u8,
    pub bytes: usize,
    /// The device address of an array resident on the GPU.
    pub device: Option<u64>,
    /// The memory of a resident array (GPU or host), kept alive and ordered by the binding.
    pub cell: Option<Arc<Cell>>,
    _marker: PhantomData<&'a mut [u8]>,
}

impl<'a> Binding<'a> {
    /// A host array of `len` elements of `T` at `ptr`, borrowed for `'a`.
    pub fn host<T: Copy>(ptr: *mut T, len: usize, name: &'static str, writable: bool) -> Self {
        Self {
            info: ArrayInfo {
                name,
                len,
                writable,
                elem_bytes: size_of::<T>(),
                output: false,
            },
            ptr: ptr.cast(),
            bytes: len * size_of::<T>(),
            device: None,
            cell: None,
            _marker: PhantomData,
        }
    }

    /// A resident array of `len` elements of `T` at `place`, kept alive by `cell`.
    pub fn resident<T: Copy>(
        place: Place,
        cell: Arc<Cell>,
        len: usize,
        name: &'static str,
        writable: bool,
    ) -> Self {
        let mut binding = match place {
            Place::Host(ptr) => Self::host(ptr.cast::<T>(), len, name, writable),
            Place::Device(address) => {
                let mut b = Self::host(std::ptr::null_mut::<T>(), len, name, writable);
                b.device = Some(address);
                b
            }
        };
        binding.cell = Some(cell);
        binding
    }

    /// The same array at another host address (the caller vouches for `'b`).
    pub fn moved<'b>(&self, ptr: *mut u8) -> Binding<'b> {
        Binding {
            info: self.info,
            ptr,
            bytes: self.bytes,
            device: self.device,
            cell: self.cell.clone(),
            _marker: PhantomData,
        }
    }

    /// The array's bytes as the caller left them.
    pub fn bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            // An array resident on the GPU has no host bytes.
            return &[];
        }
        // SAFETY: the binding points at `bytes` bytes of the caller's array, which the region
        // borrows for its lifetime.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// Overwrites the array with `data` (the same length).
    ///
    /// # Safety
    /// The array must be writable (`&mut` in the region) and no task may be running on it.
    pub unsafe fn write(&self, data: &[u8]) {
        assert_eq!(data.len(), self.bytes, "an array is written back whole");
        // SAFETY: the region holds the caller's `&mut` borrow; the caller guarantees no task runs.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr, self.bytes) };
    }
}

/// For a submitted region: the runs in flight it must follow, and its own completion. The
/// persistent GPU backend orders itself after them on the device; the others wait on the host.
pub(crate) struct Order {
    pub after: Vec<Arc<Done>>,
    pub done: Arc<Done>,
}

impl Order {
    /// Waits on the host for the runs in flight this one follows.
    pub fn wait_for_earlier(&self) {
        for earlier in &self.after {
            earlier.wait();
        }
    }
}

/// Registers a call's accesses (`footprints`, per array) with the resident arrays of `arrays`, and
/// returns the runs in flight it must wait for. One lock orders all registrations, so two calls
/// registering at once cannot each wait for the other.
pub(crate) fn register(
    arrays: &[Binding<'_>],
    footprints: &[Footprint],
    done: &Arc<Done>,
) -> Vec<Arc<Done>> {
    static REGISTRATION: Mutex<()> = Mutex::new(());
    let _order = REGISTRATION.lock().unwrap_or_else(PoisonError::into_inner);
    let mut after: Vec<Arc<Done>> = Vec::new();
    for (binding, footprint) in arrays.iter().zip(footprints) {
        if let Some(cell) = &binding.cell {
            for d in cell.register(done, footprint.read.clone(), footprint.write.clone()) {
                if !after.iter().any(|a| Arc::ptr_eq(a, &d)) {
                    after.push(d);
                }
            }
        }
    }
    after
}

/// Device copies of a call's host arrays, uploaded whole while the region was inspected; by
/// slot, `None` for resident arrays. A GPU backend stages from them instead of uploading.
pub(crate) struct Prestaged {
    pub copies: Vec<Option<CudaSlice<u8>>>,
}

/// What a backend executes: a plan's work, with the arrays bound for this call.
pub(crate) struct Call<'p, 'a> {
    /// The DAG and the options.
    pub work: &'p Work,
    /// The arrays, by slot.
    pub arrays: &'p [Binding<'a>],
    /// For a submitted call, the runs it follows; `None` for a call that already waited for them.
    pub order: Option<&'p Order>,
    /// Time this call spent inspecting (zero when it reused the plan's DAG).
    pub inspect_time: Duration,
    /// Of `inspect_time`, what tracking the dependences and building the CSR took.
    pub edges_time: Duration,
    /// Whether the plan runs again after this call (a [`Plan::run`](crate::Plan::run)), so that the backends keep
    /// in it what a later run can reuse; a one-shot run keeps nothing.
    pub reused: bool,
    /// The host arrays already on the device, when they were uploaded during inspection.
    pub prestaged: Option<Prestaged>,
}

impl Call<'_, '_> {
    /// The region's name.
    pub fn name(&self) -> &'static str {
        self.work.meta.name
    }

    /// Waits on the host for the runs in flight this call follows, if any.
    pub fn wait_for_earlier(&self) {
        if let Some(order) = self.order {
            order.wait_for_earlier();
        }
    }
}
