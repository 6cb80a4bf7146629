//! What a task body sees of an array: a view that carries the ranges its task declared.
//!
//! 1. `#[task(reads = a[lo..hi])]` turns a parameter `a: &[T]` into a [`View<T>`] and
//!    `#[task(writes = b[lo..hi])]` turns `b: &mut [T]` into a [`ViewMut<T>`]. A view has the whole
//!    array's indexing (`a[i]` means element `i` of the region's array), so tile arithmetic reads
//!    the same as on the host.
//! 2. A `View` has no write method: writing an array the task only reads does not compile.
//! 3. In checked mode (`CHECKED = true`, the default) every index is tested against the declared
//!    ranges. A miss records an [`error`](crate::error) naming the task, the array and the index;
//!    on the host that is a panic, on the GPU the access is redirected to a dummy element, the
//!    thread notes the miss in its [`Misses`], and the task's wrapper reports it once the body
//!    returns ([`Misses::report`]); the region then ends with the error. In unchecked mode the test
//!    compiles away.
//!
//! Views are per thread: each thread of a block holds its own copy over the same memory, as each
//! CUDA thread holds its own pointer. Two threads writing one element without a barrier between
//! them is a data race, exactly as in CUDA.

use core::marker::PhantomData;
use core::ops::{Index, IndexMut, Range};

pub use crate::declared::{Declared, Misses};
use crate::operand::{self, MatMut, MatRef, Operands, Rect};

/// Argument word `i` of a task, unchecked in release builds (a failed check on the GPU costs
/// registers at every site).
///
/// # Safety
/// `i < args.len()`: the task's spawn function wrote one word per parameter.
#[inline(always)]
pub unsafe fn word(args: &[u64], i: usize) -> u64 {
    debug_assert!(i < args.len());
    // SAFETY: guaranteed by the caller.
    unsafe { *args.get_unchecked(i) }
}

/// Slot `slot` of the region's array table, unchecked in release builds.
///
/// # Safety
/// `slot < arrays.len()`: array words hold slots the region bound.
#[inline(always)]
pub unsafe fn array(arrays: &[crate::abi::ArrayDesc], slot: usize) -> crate::abi::ArrayDesc {
    debug_assert!(slot < arrays.len());
    // SAFETY: guaranteed by the caller.
    unsafe { *arrays.get_unchecked(slot) }
}

/// A read-only view of a region array.
#[derive(Clone, Copy)]
pub struct View<'a, T, const CHECKED: bool = true> {
    ptr: *const T,
    len: usize,
    declared: Declared<'a>,
    _marker: PhantomData<&'a [T]>,
}

/// A read-write view of a region array.
pub struct ViewMut<'a, T, const CHECKED: bool = true> {
    ptr: *mut T,
    len: usize,
    declared: Declared<'a>,
    _marker: PhantomData<&'a mut [T]>,
}

macro_rules! common {
    ($ty:ident, $ptr:ty) => {
        impl<'a, T, const CHECKED: bool> $ty<'a, T, CHECKED> {
            /// A view of `len` elements at `ptr`.
            ///
            /// # Safety
            /// `ptr..ptr + len` must be valid for the accesses the view allows for `'a`, and every
            /// range in `declared` must lie within `0..len`.
            #[inline(always)]
            pub unsafe fn new(ptr: $ptr, len: usize, declared: Declared<'a>) -> Self {
                Self {
                    ptr,
                    len,
                    declared,
                    _marker: PhantomData,
                }
            }

            /// The length of the whole region array.
            #[inline(always)]
            pub fn len(&self) -> usize {
                self.len
            }

            /// `true` when the region array is empty.
            #[inline(always)]
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// The ranges this task declared for the array.
            pub fn declared(&self) -> &'a [Range<usize>] {
                self.declared.ranges
            }

            /// `Some(i)` when element `i` may be read (always, unchecked).
            #[inline(always)]
            fn readable(&self, i: usize) -> Option<usize> {
                if CHECKED && !Declared::contains(self.declared.ranges, i) {
                    self.declared.miss(i, false);
                    return None;
                }
                Some(i)
            }

            /// Element `i`, by value.
            #[inline(always)]
            pub fn get(&self, i: usize) -> T
            where
                T: Copy,
            {
                self[i]
            }
        }

        impl<T, const CHECKED: bool> Index<usize> for $ty<'_, T, CHECKED> {
            type Output = T;
            #[inline(always)]
            fn index(&self, i: usize) -> &T {
                match self.readable(i) {
                    // SAFETY: in checked mode `i` lies in a declared range, which lies in `0..len`;
                    // in unchecked mode the task's author vouches for it, as the mode's docs say.
                    Some(i) => unsafe { &*self.ptr.add(i) },
                    None => dummy(),
                }
            }
        }
    };
}

common!(View, *const T);
common!(ViewMut, *mut T);

impl<T, const CHECKED: bool> IndexMut<usize> for ViewMut<'_, T, CHECKED> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        if CHECKED && !Declared::contains(self.declared.writes, i) {
            self.declared.miss(i, true);
            return dummy();
        }
        // SAFETY: as in `index` (write ranges lie in `0..len` too); the view was made from a
        // writable array.
        unsafe { &mut *self.ptr.add(i) }
    }
}

impl<T, const CHECKED: bool> View<'_, T, CHECKED> {
    /// `rect` of the array as a tile-operation operand, checked in checked mode against the
    /// task's declared ranges, once (see [`operand`](crate::operand)).
    #[inline(always)]
    pub fn mat(&self, rect: Rect) -> MatRef<'_, T, CHECKED> {
        operand::mat_ref(self.ptr, self.len, &self.declared, rect)
    }
}

impl<'a, T, const CHECKED: bool> ViewMut<'a, T, CHECKED> {
    /// `rect` of the array as a read operand of a tile operation, checked against all the task's
    /// declared ranges (see [`operand`](crate::operand)).
    #[inline(always)]
    pub fn mat(&self, rect: Rect) -> MatRef<'_, T, CHECKED> {
        operand::mat_ref(self.ptr, self.len, &self.declared, rect)
    }

    /// `rect` of the array as a written operand of a tile operation, checked against the task's
    /// declared write ranges.
    #[inline(always)]
    pub fn mat_mut(&mut self, rect: Rect) -> MatMut<'_, T, CHECKED> {
        operand::mat_mut(self.ptr, self.len, &self.declared, rect)
    }

    /// A maker of operands, read and written alike, for an operation that takes several from this
    /// array: `let a = a.operands(); gemm(b, a.mat_mut(c), a.mat(l), …)`. It borrows the view
    /// mutably, so no reference from indexing the view lives alongside the operands.
    #[inline(always)]
    pub fn operands(&mut self) -> Operands<'_, T, CHECKED> {
        // SAFETY: the view's memory is valid for reads and writes while it is borrowed, and the
        // mutable borrow keeps every other access through the view out.
        unsafe { Operands::new(self.ptr, self.len, self.declared) }
    }
}

impl<T, const CHECKED: bool> ViewMut<'_, T, CHECKED> {
    /// Sets element `i`.
    #[inline(always)]
    pub fn set(&mut self, i: usize, value: T) {
        self[i] = value;
    }
}

/// Where a failed access lands on the GPU: a per-thread scratch element, so the task can finish
/// without touching memory it did not declare. Never reached on the host, where a miss panics.
#[cold]
fn dummy<'a, T>() -> &'a mut T {
    #[cfg(target_arch = "nvptx64")]
    {
        // A global buffer big enough and aligned enough for any element type tasks use.
        static mut SINK: [u128; 4] = [0; 4];
        assert!(
            size_of::<T>() <= 64 && align_of::<T>() <= 16,
            "element type too large for the fault sink"
        );
        // SAFETY: SINK is a global scratch area nobody reads; racing writes to it after a fault are
        // harmless because its contents are never observed. The error is already recorded.
        unsafe { &mut *(&raw mut SINK).cast::<T>() }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    unreachable!("a range miss panics on the host before reaching the sink")
}

#[cfg(test)]
#[allow(
    clippy::single_range_in_vec_init,
    reason = "declared ranges are lists of ranges, often of one"
)]
mod tests {
    use super::{Declared, Misses, View, ViewMut};

    fn declared<'a>(
        ranges: &'a [core::ops::Range<usize>],
        writes: &'a [core::ops::Range<usize>],
        misses: &'a Misses,
    ) -> Declared<'a> {
        Declared {
            ranges,
            writes,
            slot: 0,
            name: "x",
            task: "t",
            misses,
        }
    }

    #[test]
    fn views_read_and_write_inside_their_declared_ranges() {
        let mut data = [1u32, 2, 3, 4, 5, 6];
        let misses = Misses::new();
        let (ranges, writes) = ([0..2, 3..6], [3..5]);
        // SAFETY: `data` outlives both views, and every declared range lies within it.
        let read = unsafe {
            View::<u32, true>::new(
                data.as_ptr(),
                data.len(),
                declared(&ranges, &writes, &misses),
            )
        };
        assert_eq!((read[0], read.get(1), read[5], read.len()), (1, 2, 6, 6));
        // SAFETY: as above; the read view is not used while this one writes.
        let mut write = unsafe {
            ViewMut::<u32, true>::new(
                data.as_mut_ptr(),
                data.len(),
                declared(&ranges, &writes, &misses),
            )
        };
        write[3] += 10;
        write.set(4, write[5] * 2);
        assert_eq!(write.declared(), &ranges[..]);
        assert_eq!(data, [1, 2, 3, 14, 12, 6]);
    }

    #[test]
    #[should_panic(expected = "read at index 2 of array `x` is outside its declared access ranges")]
    fn a_checked_read_outside_the_ranges_panics_on_the_host() {
        let data = [1u32, 2, 3];
        let misses = Misses::new();
        // SAFETY: `data` outlives the view; the declared range lies within it.
        let view =
            unsafe { View::<u32, true>::new(data.as_ptr(), 3, declared(&[0..2], &[], &misses)) };
        let _ = view[2];
    }

    #[test]
    #[should_panic(
        expected = "write at index 1 of array `x` is outside its declared write ranges [2..3]"
    )]
    fn a_checked_write_outside_the_write_ranges_panics_on_the_host() {
        let mut data = [1u32, 2, 3];
        let misses = Misses::new();
        // SAFETY: as above.
        let mut view = unsafe {
            ViewMut::<u32, true>::new(data.as_mut_ptr(), 3, declared(&[0..3], &[2..3], &misses))
        };
        view[1] = 0;
    }

    #[test]
    fn unchecked_views_reach_the_whole_array() {
        let mut data = [1u32, 2, 9];
        let misses = Misses::new();
        // SAFETY: the whole array is valid, which is all unchecked mode needs.
        let mut view = unsafe {
            ViewMut::<u32, false>::new(data.as_mut_ptr(), 3, declared(&[], &[], &misses))
        };
        view[2] = view[0] + view[1];
        assert_eq!(data, [1, 2, 3]);
    }
}
