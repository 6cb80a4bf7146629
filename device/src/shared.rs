//! Shared (on-chip, per-block) memory.
//!
//! PTX declares shared memory with `.shared` variables. Rust has no address space for them, so the
//! static buffer here is declared inside an `asm!` block of a function that is never inlined: one
//! declaration, hence one allocation per block, whatever the number of call sites. The dynamic
//! buffer is declared once at module scope with `global_asm!`. Both functions return the buffer's
//! generic address.
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

/// The runtime's static per-block words (see the module docs).
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
pub fn runtime_words() -> *mut u32 {
    let ptr: u64;
    // SAFETY: declares one static shared buffer and reads its address; no memory is touched.
    unsafe {
        core::arch::asm!(
            "{{ .shared .align 16 .b32 tw_runtime_words[{n}]; cvta.shared.u64 {0}, tw_runtime_words; }}",
            out(reg64) ptr, n = const RUNTIME_WORDS, options(nomem, nostack)
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
#[repr(transparent)]
pub struct SharedArray<T, const N: usize> {
    cells: core::cell::UnsafeCell<[T; N]>,
}

impl<T: Copy, const N: usize> SharedArray<T, N> {
    /// Element `i`. Panics when `i >= N`.
    #[inline(always)]
    pub fn get(&self, i: usize) -> T {
        assert!(i < N, "shared index out of bounds");
        // SAFETY: `i < N`; the block's threads order conflicting accesses with barriers.
        unsafe { self.cells.get().cast::<T>().add(i).read() }
    }

    /// Sets element `i`. Panics when `i >= N`.
    #[inline(always)]
    pub fn set(&self, i: usize, value: T) {
        assert!(i < N, "shared index out of bounds");
        // SAFETY: as for `get`.
        unsafe { self.cells.get().cast::<T>().add(i).write(value) }
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
