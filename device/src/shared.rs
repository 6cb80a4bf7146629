//! Shared (on-chip, per-block) memory.
//!
//! PTX declares shared memory with `.shared` variables. Rust has no address space for them, so the
//! buffers here are declared once each, at module scope with `global_asm!` (hence one allocation
//! per block, whatever the number of uses), or inside an `asm!` block of a function that is never
//! inlined. Both functions return the buffer's generic address.
//!
//! 1. [`dynamic`]: the block's dynamic shared memory, sized at launch (`sharedMemBytes`). Task bodies
//!    reach it through [`Block::shared`](crate::Block::shared).
//! 2. [`runtime_words`]: a small static buffer the scheduler keeps its per-block state in (the
//!    current task, the retrieval buffer).
//!
//! On the host both are ordinary memory that the CPU backend hands to each emulated block.

/// Words of static shared memory the runtime reserves per block.
pub const RUNTIME_WORDS: usize = 256;

// The dynamic shared array must be declared at module scope; PTX rejects `.extern` in a function.
#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(".extern .shared .align 16 .b8 tw_dynamic_smem[];");

/// The block's dynamic shared memory: its address and its size in bytes.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub fn dynamic() -> (*mut u8, usize) {
    let ptr: u64;
    let bytes: u32;
    // SAFETY: reads the address and size of the module's dynamic shared array; no memory is touched.
    unsafe {
        core::arch::asm!(
            "cvta.shared.u64 {0}, tw_dynamic_smem;",
            "mov.u32 {1}, %dynamic_smem_size;",
            out(reg64) ptr, out(reg32) bytes, options(nomem, nostack)
        )
    };
    (ptr as *mut u8, bytes as usize)
}

// The runtime words, at module scope so that the worker loop can name them in its shared-memory
// accesses (`sched::words::Words`).
#[cfg(target_arch = "nvptx64")]
core::arch::global_asm!(
    ".shared .align 16 .b32 tw_runtime_words[{n}];",
    n = const RUNTIME_WORDS
);

/// The runtime's static per-block words (see the module docs).
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
pub fn runtime_words() -> *mut u32 {
    let ptr: u64;
    // SAFETY: reads the address of the block's runtime words; no memory is touched.
    unsafe {
        core::arch::asm!(
            "cvta.shared.u64 {0}, tw_runtime_words;",
            out(reg64) ptr, options(nomem, nostack)
        )
    };
    ptr as *mut u32
}

/// Region arrays whose table a block keeps in shared memory; larger tables stay in global memory.
pub const SHARED_ARRAYS: usize = 16;

/// The block's copy of the region's array table (`SHARED_ARRAYS` entries).
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
pub fn array_table() -> *mut crate::abi::ArrayDesc {
    let ptr: u64;
    // SAFETY: declares one static shared buffer and reads its address; no memory is touched.
    unsafe {
        core::arch::asm!(
            "{{ .shared .align 16 .b8 tw_array_table[{n}]; cvta.shared.u64 {0}, tw_array_table; }}",
            out(reg64) ptr, n = const SHARED_ARRAYS * 16, options(nomem, nostack)
        )
    };
    ptr as *mut crate::abi::ArrayDesc
}

/// A fixed-size array in shared memory, visible to every thread of the block.
///
/// Reads and writes take `&self`: threads coordinate with [`Block::sync`](crate::Block::sync) as in
/// CUDA. Two threads writing one element without a barrier between them is a data race.
///
/// On the GPU an element of 1, 2, 4 or 8 bytes (aligned to its size) is read and written with
/// `ld.shared` / `st.shared` at a 32-bit address in the block's shared window, as CUDA C does.
/// LLVM only sees a generic pointer (the buffer's address comes from `cvta.shared`), so a plain
/// access would be a generic `ld` with 64-bit address arithmetic: slower on the SM, and twice the
/// registers for every index.
#[repr(transparent)]
pub struct SharedArray<T, const N: usize> {
    cells: core::cell::UnsafeCell<[T; N]>,
}

impl<T: Copy, const N: usize> SharedArray<T, N> {
    /// Element `i`. Panics when `i >= N`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        assert!(i < N, "shared index out of bounds");
        // SAFETY: `i < N`.
        unsafe { self.get_unchecked(i) }
    }

    /// Sets element `i`. Panics when `i >= N`.
    #[inline(always)]
    pub fn set(&self, i: usize, value: T) {
        assert!(i < N, "shared index out of bounds");
        // SAFETY: `i < N`.
        unsafe { self.set_unchecked(i, value) }
    }

    /// Element `i`, without the bounds check: for inner loops whose indices are in bounds by
    /// construction.
    ///
    /// # Safety
    /// `i < N`.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, i: usize) -> T {
        debug_assert!(i < N, "shared index out of bounds");
        let at = self.cells.get().cast::<T>();
        // SAFETY: `i < N` (the caller's promise); the block's threads order conflicting accesses
        // with barriers.
        #[cfg(target_arch = "nvptx64")]
        return unsafe { space::load(at, i) };
        // SAFETY: as above.
        #[cfg(not(target_arch = "nvptx64"))]
        return unsafe { at.add(i).read() };
    }

    /// Sets element `i`, without the bounds check (see [`SharedArray::get_unchecked`]).
    ///
    /// # Safety
    /// `i < N`.
    #[inline(always)]
    pub unsafe fn set_unchecked(&self, i: usize, value: T) {
        debug_assert!(i < N, "shared index out of bounds");
        let at = self.cells.get().cast::<T>();
        // SAFETY: as for `get_unchecked`.
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            space::store(at, i, value)
        };
        // SAFETY: as for `get_unchecked`.
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            at.add(i).write(value)
        };
    }

    /// The number of elements, `N`.
    pub const fn len(&self) -> usize {
        N
    }

    /// `true` when `N == 0`.
    pub const fn is_empty(&self) -> bool {
        N == 0
    }
}

#[cfg(target_arch = "nvptx64")]
mod space {
    //! Element access in the `.shared` state space at 32-bit addresses.

    use core::arch::asm;
    use core::mem::{align_of, size_of, transmute_copy};

    /// The 32-bit `.shared` address of a generic pointer into shared memory. Pure, so LLVM hoists
    /// it out of loops: an array's base is converted once.
    #[inline(always)]
    fn window<T>(generic: *const T) -> u32 {
        let address: u32;
        // SAFETY: converts an address; touches no memory.
        unsafe {
            asm!(
                "{{ .reg .u64 t; cvta.to.shared.u64 t, {1}; cvt.u32.u64 {0}, t; }}",
                out(reg32) address, in(reg64) generic as u64,
                options(pure, nomem, nostack, preserves_flags)
            )
        };
        address
    }

    /// `true` when `T` has a matching `ld.shared` / `st.shared` width and is aligned to it.
    const fn native<T>() -> bool {
        matches!(size_of::<T>(), 1 | 2 | 4 | 8) && align_of::<T>() == size_of::<T>()
    }

    /// The address of element `i` of the shared array at `base`: 32-bit arithmetic, since the
    /// shared window is smaller than 4 GiB (`i` is in bounds, so `i * size` does not wrap).
    #[inline(always)]
    fn element<T>(base: *const T, i: usize) -> u32 {
        window(base).wrapping_add((i as u32).wrapping_mul(size_of::<T>() as u32))
    }

    /// Element `i` of the shared array at `base`.
    ///
    /// # Safety
    /// `base` points into shared memory and element `i` is in bounds.
    #[inline(always)]
    pub(super) unsafe fn load<T: Copy>(base: *const T, i: usize) -> T {
        if !native::<T>() {
            // SAFETY: guaranteed by the caller.
            return unsafe { base.add(i).read() };
        }
        let at = element(base, i);
        // Pure and read-only: an ordinary load, which LLVM may merge with an identical one but
        // not move across a store or a barrier (both touch memory).
        // SAFETY: for every arm, guaranteed by the caller; `T` has the loaded width (`native`).
        unsafe {
            match size_of::<T>() {
                1 => {
                    let v: u16;
                    asm!("ld.shared.u8 {0}, [{1}];", out(reg16) v, in(reg32) at, options(pure, readonly, nostack, preserves_flags));
                    transmute_copy(&(v as u8))
                }
                2 => {
                    let v: u16;
                    asm!("ld.shared.b16 {0}, [{1}];", out(reg16) v, in(reg32) at, options(pure, readonly, nostack, preserves_flags));
                    transmute_copy(&v)
                }
                4 => {
                    let v: u32;
                    asm!("ld.shared.b32 {0}, [{1}];", out(reg32) v, in(reg32) at, options(pure, readonly, nostack, preserves_flags));
                    transmute_copy(&v)
                }
                _ => {
                    let v: u64;
                    asm!("ld.shared.b64 {0}, [{1}];", out(reg64) v, in(reg32) at, options(pure, readonly, nostack, preserves_flags));
                    transmute_copy(&v)
                }
            }
        }
    }

    /// Sets element `i` of the shared array at `base`.
    ///
    /// # Safety
    /// As for [`load`].
    #[inline(always)]
    pub(super) unsafe fn store<T: Copy>(base: *mut T, i: usize, value: T) {
        if !native::<T>() {
            // SAFETY: guaranteed by the caller.
            return unsafe { base.add(i).write(value) };
        }
        let at = element(base, i);
        // SAFETY: for every arm, guaranteed by the caller; `T` has the stored width (`native`).
        unsafe {
            match size_of::<T>() {
                1 => {
                    let v = u16::from(transmute_copy::<T, u8>(&value));
                    asm!("st.shared.u8 [{0}], {1};", in(reg32) at, in(reg16) v, options(nostack, preserves_flags));
                }
                2 => {
                    let v: u16 = transmute_copy(&value);
                    asm!("st.shared.b16 [{0}], {1};", in(reg32) at, in(reg16) v, options(nostack, preserves_flags));
                }
                4 => {
                    let v: u32 = transmute_copy(&value);
                    asm!("st.shared.b32 [{0}], {1};", in(reg32) at, in(reg32) v, options(nostack, preserves_flags));
                }
                _ => {
                    let v: u64 = transmute_copy(&value);
                    asm!("st.shared.b64 [{0}], {1};", in(reg32) at, in(reg64) v, options(nostack, preserves_flags));
                }
            }
        }
    }
}
