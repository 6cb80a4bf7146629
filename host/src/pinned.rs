//! Host arrays in page-locked memory, which regions copy to and from the GPU at the link's speed.
//!
//! A region's host arrays are usually pageable (`Vec`s): the GPU cannot reach them by DMA, so the
//! runtime copies them through its pinned staging ring, and the host's memory copies, not the
//! link, bound the transfer. A [`Pinned`] array lives in page-locked memory from the start: the
//! runtime finds that out from the address (see `gpu::transfer`) and the DMA reads and writes it
//! in place. It dereferences to a slice, so a region takes it wherever it takes a `Vec`.
//!
//! ```
//! let rt = taskweave_host::Runtime::cpu();
//! let mut a = rt.pinned(&[1.0f32, 2.0, 3.0]).unwrap();
//! a[0] = 4.0;
//! assert_eq!(&a[..], &[4.0, 2.0, 3.0]);
//! ```

use std::ops::{Deref, DerefMut};

use cudarc::driver::PinnedHostSlice;

use crate::error::Error;
use crate::gpu::Gpu;

/// A host array in page-locked memory ([`Runtime::pinned`](crate::Runtime::pinned)). On the CPU
/// runtime it is an ordinary heap array.
pub struct Pinned<T: Copy> {
    ptr: *mut T,
    len: usize,
    /// The page-locked allocation (freed on drop), or the heap array on the CPU runtime.
    _store: Store<T>,
}

/// What owns the memory: held for its drop, which frees it.
enum Store<T> {
    Locked { _slice: PinnedHostSlice<u8> },
    Heap { _vec: Vec<T> },
}

// SAFETY: a `Pinned<T>` owns its elements like a `Vec<T>`; the pointer is into memory it owns
// alone.
unsafe impl<T: Copy + Send> Send for Pinned<T> {}
// SAFETY: as above; shared access only reads.
unsafe impl<T: Copy + Sync> Sync for Pinned<T> {}

impl<T: Copy> Pinned<T> {
    /// `data` copied into page-locked memory of `gpu`'s context.
    pub(crate) fn locked(gpu: &Gpu, data: &[T]) -> Result<Self, Error> {
        let bytes = size_of_val(data).max(1);
        // SAFETY: every byte is written below before anything reads it. Not write-combined:
        // the host reads what the GPU writes back.
        let mut slice = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(bytes, 0) }
            .map_err(gpu.alloc_error("allocating a pinned host array", bytes))?;
        let ptr = slice
            .as_mut_ptr()
            .map_err(Error::cuda("reaching a pinned host array"))?
            .cast::<T>();
        // SAFETY: the allocation holds `data`'s bytes and is page-aligned, so aligned for `T`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), ptr, data.len()) };
        Ok(Self {
            ptr,
            len: data.len(),
            _store: Store::Locked { _slice: slice },
        })
    }

    /// `data` in an ordinary heap array (the CPU runtime).
    pub(crate) fn heap(data: &[T]) -> Self {
        let mut v = data.to_vec();
        Self {
            ptr: v.as_mut_ptr(),
            len: v.len(),
            _store: Store::Heap { _vec: v },
        }
    }

    /// Whether the memory is page-locked (false on the CPU runtime).
    pub fn is_locked(&self) -> bool {
        matches!(self._store, Store::Locked { .. })
    }
}

impl<T: Copy> Deref for Pinned<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialized elements owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T: Copy> DerefMut for Pinned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, borrowed mutably through `self`.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T: Copy + std::fmt::Debug> std::fmt::Debug for Pinned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pinned")
            .field("len", &self.len)
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}
