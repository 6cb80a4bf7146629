//! The memory of a streamed call's host tables.
//!
//! A call's tables are sized to a capacity (65,536 tasks at the least, about 20 MB), of which a
//! call writes what its tasks need. A large table therefore gets pages of its own from the system
//! (an anonymous map, [`memmap2`]): zero until written, only the pages written cost anything, and
//! they go back when the table is dropped.
//!
//! From the allocator, the same tables cost a process's later calls 7-12 ms where its first paid
//! 0.3-0.8 (H200 host, `bench/results/stream-setup-h200/`); in pages of their own, 0.3-0.8 on
//! every call. Once a block that large is freed, glibc serves the next ones from its heap, which
//! it must clear whole, and whose pages it has often given back. Small tables, and every table
//! under Miri (where no test needs pages of their own), come from the allocator.

use std::ops::Deref;

use taskweave_device::abi::TaskRecord;
use taskweave_device::atomic::{AtomicU32, Ordering::Relaxed, Scope::Gpu};

/// Tables of at least this many bytes get pages of their own.
const PAGES_FROM: usize = 64 << 10;

/// Entry types whose all-zero bytes are a value: a table starts as zeros.
///
/// # Safety
///
/// Every byte of the type is part of a field for which zero is a valid value.
pub(super) unsafe trait Zero {}
// SAFETY: plain integers.
unsafe impl Zero for u32 {}
// SAFETY: plain integers.
unsafe impl Zero for u64 {}
// SAFETY: two `u32` fields, `repr(C)`, no padding.
unsafe impl Zero for TaskRecord {}
// SAFETY: the size and bit validity of `u32` (`repr(transparent)` over the host's atomic).
unsafe impl Zero for AtomicU32 {}

/// A table the host writes while the workers read it: each entry written once, before the
/// workers can reach it, and never after (see the module docs of
/// [`stream`](taskweave_device::sched::stream)). Held as a raw allocation, so that the host's
/// writes go through no reference that the workers' reads would alias.
pub(super) struct Table<T> {
    pub(super) ptr: *mut T,
    pub(super) len: usize,
    /// The table's own pages, or `None` for the allocator's memory (which `Drop` frees).
    pages: Option<memmap2::MmapMut>,
}

impl<T: Zero> Table<T> {
    /// `len` entries, zero.
    pub(super) fn zeroed(len: usize) -> Self {
        let layout = std::alloc::Layout::array::<T>(len).expect("a table fits the address space");
        if layout.size() >= PAGES_FROM
            && !cfg!(miri)
            && let Ok(mut pages) = memmap2::MmapOptions::new().len(layout.size()).map_anon()
        {
            return Self {
                ptr: pages.as_mut_ptr().cast(),
                len,
                pages: Some(pages),
            };
        }
        let ptr = match layout.size() {
            0 => std::ptr::NonNull::<T>::dangling().as_ptr(),
            // SAFETY: the layout's size is not zero.
            _ => unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>(),
        };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // `len` zero entries (valid: `T: Zero`), which `Drop` frees with the same layout.
        Self {
            ptr,
            len,
            pages: None,
        }
    }

    /// Writes entry `i`, which no worker reads until it is published.
    pub(super) fn set(&self, i: usize, value: T) {
        assert!(i < self.len, "stream table index {i} out of {}", self.len);
        // SAFETY: in bounds; the protocol keeps workers off an entry until it is published.
        unsafe { self.ptr.add(i).write(value) };
    }
}

impl<T> Table<T> {
    pub(super) fn addr(&self) -> u64 {
        self.ptr as u64
    }
}

impl Table<AtomicU32> {
    /// `len` atomics, each `value` (a zero table's pages are touched only where it is written).
    pub(super) fn atomics(len: usize, value: u32) -> Self {
        let table = Self::zeroed(len);
        if value != 0 {
            for word in table.iter() {
                word.store(value, Gpu, Relaxed);
            }
        }
        table
    }
}

/// The atomics, shared with whatever reads them.
impl Deref for Table<AtomicU32> {
    type Target = [AtomicU32];

    fn deref(&self) -> &[AtomicU32] {
        // SAFETY: `len` live atomics, which are only ever reached through shared references.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> Drop for Table<T> {
    fn drop(&mut self) {
        if self.pages.is_none() && size_of::<T>() * self.len != 0 {
            // SAFETY: allocated in `zeroed` with this layout, and not freed since.
            unsafe {
                std::alloc::dealloc(
                    self.ptr.cast(),
                    std::alloc::Layout::array::<T>(self.len).expect("allocated with this layout"),
                )
            };
        }
    }
}

// SAFETY: the tables are written by the feeding thread and read by the workers only as the
// protocol orders them.
unsafe impl<T: Send> Send for Table<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: Sync> Sync for Table<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_zero_or_its_value_in_pages_of_its_own_or_not() {
        // Under Miri every table is the allocator's, and a large one only costs time there.
        let lens: &[usize] = match cfg!(miri) {
            true => &[0, 3],
            false => &[0, 3, PAGES_FROM / 4 + 1],
        };
        for &len in lens {
            let words = Table::atomics(len, 7);
            assert_eq!(words.len(), len);
            assert!(words.iter().all(|w| w.load(Gpu, Relaxed) == 7));
            let zeros = Table::<u64>::zeroed(len);
            if len > 0 {
                zeros.set(len - 1, 9);
            }
            // SAFETY: `len` live entries, no other reference to them.
            let all = unsafe { std::slice::from_raw_parts(zeros.ptr, len) };
            assert!(all.iter().rev().skip(1).all(|&z| z == 0));
            assert!(all.last().is_none_or(|&z| z == 9));
            let big = len * 8 >= PAGES_FROM && !cfg!(miri);
            assert_eq!(zeros.pages.is_some(), big, "{len} entries");
        }
    }
}
