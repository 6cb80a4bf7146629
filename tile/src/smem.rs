//! Shared-memory tiles and the asynchronous copies that fill them.
//!
//! 1. [`Scratch`] is the part of the block's shared scratch a tile operation stages through
//!    ([`Scratch::of`] takes what [`Block::shared`](taskweave_device::Block::shared) has not handed out). On
//!    the GPU it is a 32-bit address in the `.shared` window, as in [`shared`](taskweave_device::shared):
//!    every access is an `ld.shared` / `st.shared` with 32-bit address arithmetic.
//! 2. [`SharedTile<T, M>`] is a matrix in that memory, in `(mn, k)` coordinates, stored
//!    [`KMajor`] (each `mn` row contiguous along `k`) or [`MnMajor`] (each `k` row contiguous along
//!    `mn`), with a row stride that the tile operations pad so that their fragment loads are free
//!    of bank conflicts (the tests below check each pattern the operations use).
//! 3. [`copy16`], [`commit`] and [`wait`] are `cp.async.cg` 16-byte copies from global memory
//!    with commit and wait groups: a block issues the next stage's copies and computes on the
//!    current one. On the host the copy is immediate and the groups are no-ops.
//!
//! `cp.async.bulk` (sm_90) would move a whole tile row per instruction; it needs PTX ISA 8.0,
//! while the device build emits 7.8, so the tile operations use `cp.async` only.

use core::marker::PhantomData;

use taskweave_device::Block;

/// The tile operations' share of the block's shared memory.
#[derive(Clone, Copy, Debug)]
pub struct Scratch {
    #[cfg(target_arch = "nvptx64")]
    base: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    base: *mut u8,
    bytes: u32,
}

impl Scratch {
    /// The block's scratch that [`Block::shared`] has not handed out (16-byte aligned).
    #[inline(always)]
    pub fn of(block: &Block) -> Self {
        let (ptr, bytes) = block.scratch_rest();
        #[cfg(target_arch = "nvptx64")]
        return Self {
            base: window(ptr),
            bytes: bytes as u32,
        };
        #[cfg(not(target_arch = "nvptx64"))]
        return Self {
            base: ptr,
            bytes: bytes as u32,
        };
    }

    /// Bytes available.
    #[inline(always)]
    pub fn bytes(&self) -> u32 {
        self.bytes
    }

    /// The scratch after the first `bytes` (a multiple of 16), which the caller keeps.
    #[inline(always)]
    pub fn after(&self, bytes: u32) -> Self {
        let bytes = bytes.min(self.bytes);
        Self {
            #[cfg(target_arch = "nvptx64")]
            base: self.base + bytes,
            #[cfg(not(target_arch = "nvptx64"))]
            base: self.base.wrapping_add(bytes as usize),
            bytes: self.bytes - bytes,
        }
    }

    /// Word `i` of the scratch (a small flag area the caller reserved with [`after`](Self::after)).
    ///
    /// # Safety
    /// `4 * (i + 1) <= bytes()`; no thread writes the word concurrently.
    #[inline(always)]
    pub unsafe fn word(&self, i: u32) -> u32 {
        // SAFETY: the caller's promise.
        unsafe { self.tile::<u32, KMajor>(0, 0).get(0, i) }
    }

    /// Sets word `i` (see [`word`](Self::word)).
    ///
    /// # Safety
    /// As for [`word`](Self::word), and no thread reads it concurrently.
    #[inline(always)]
    pub unsafe fn set_word(&self, i: u32, value: u32) {
        // SAFETY: the caller's promise.
        unsafe { self.tile::<u32, KMajor>(0, 0).set(0, i, value) }
    }

    /// A tile starting `offset` bytes in, with rows of `stride` elements.
    ///
    /// # Safety
    /// `offset` is a multiple of 16, and the tile's elements, as its users index them, lie within
    /// [`bytes`](Self::bytes).
    #[inline(always)]
    pub unsafe fn tile<T: Word, M: Major>(&self, offset: u32, stride: u32) -> SharedTile<T, M> {
        debug_assert!(offset % 16 == 0 && offset <= self.bytes);
        SharedTile {
            #[cfg(target_arch = "nvptx64")]
            base: self.base + offset,
            // SAFETY: within the scratch (the caller's promise).
            #[cfg(not(target_arch = "nvptx64"))]
            base: unsafe { self.base.add(offset as usize) }.cast(),
            stride,
            _marker: PhantomData,
        }
    }
}

/// The 32-bit `.shared` address of a generic pointer into shared memory.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub(crate) fn window(generic: *mut u8) -> u32 {
    let address: u32;
    // SAFETY: converts an address; touches no memory.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 t; cvta.to.shared.u64 t, {1}; cvt.u32.u64 {0}, t; }}",
            out(reg32) address, in(reg64) generic as u64,
            options(pure, nomem, nostack, preserves_flags)
        )
    };
    address
}

/// How a [`SharedTile`] lays `(mn, k)` out.
pub trait Major: Copy + 'static {
    /// `true` when consecutive `k` are adjacent.
    const K_CONTIGUOUS: bool;
    /// The element index of `(mn, k)` with rows of `stride` elements.
    fn index(mn: u32, k: u32, stride: u32) -> u32;
}

/// Each `mn` row is contiguous along `k`: element `(mn, k)` at `mn * stride + k`.
#[derive(Clone, Copy, Debug)]
pub struct KMajor;
/// Each `k` row is contiguous along `mn`: element `(mn, k)` at `k * stride + mn`.
#[derive(Clone, Copy, Debug)]
pub struct MnMajor;

impl Major for KMajor {
    const K_CONTIGUOUS: bool = true;
    #[inline(always)]
    fn index(mn: u32, k: u32, stride: u32) -> u32 {
        mn * stride + k
    }
}
impl Major for MnMajor {
    const K_CONTIGUOUS: bool = false;
    #[inline(always)]
    fn index(mn: u32, k: u32, stride: u32) -> u32 {
        k * stride + mn
    }
}

/// An element type shared tiles hold: 4 or 8 bytes, loaded singly or in aligned pairs.
pub trait Word: Copy + Default + 'static {
    /// Bytes per element.
    const BYTES: u32;
    /// Element at a `.shared` address (GPU).
    ///
    /// # Safety
    /// `at` is an aligned shared address the block owns.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn ld(at: u32) -> Self;
    /// Elements at `at` and the next one, in one load (GPU).
    ///
    /// # Safety
    /// As for [`Word::ld`], with `at` aligned to twice the size.
    #[cfg(target_arch = "nvptx64")]
    unsafe fn ld2(at: u32) -> (Self, Self);
    /// Stores an element (GPU).
    ///
    /// # Safety
    /// As for [`Word::ld`].
    #[cfg(target_arch = "nvptx64")]
    unsafe fn st(at: u32, value: Self);
}

macro_rules! word {
    ($ty:ty, $bytes:literal, $cls:ident, $ld:literal, $ld2:literal, $st:literal) => {
        impl Word for $ty {
            const BYTES: u32 = $bytes;
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn ld(at: u32) -> Self {
                let v: $ty;
                // SAFETY: the caller's promise; a read of shared memory.
                unsafe {
                    core::arch::asm!($ld, out($cls) v, in(reg32) at,
                        options(pure, readonly, nostack, preserves_flags))
                };
                v
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn ld2(at: u32) -> (Self, Self) {
                let (x, y): ($ty, $ty);
                // SAFETY: the caller's promise; a read of shared memory.
                unsafe {
                    core::arch::asm!($ld2, out($cls) x, out($cls) y, in(reg32) at,
                        options(pure, readonly, nostack, preserves_flags))
                };
                (x, y)
            }
            #[cfg(target_arch = "nvptx64")]
            #[inline(always)]
            unsafe fn st(at: u32, value: Self) {
                // SAFETY: the caller's promise.
                unsafe {
                    core::arch::asm!($st, in(reg32) at, in($cls) value,
                        options(nostack, preserves_flags))
                };
            }
        }
    };
}

word!(
    f64,
    8,
    reg64,
    "ld.shared.f64 {0}, [{1}];",
    "ld.shared.v2.f64 {{{0}, {1}}}, [{2}];",
    "st.shared.f64 [{0}], {1};"
);
word!(
    f32,
    4,
    reg32,
    "ld.shared.f32 {0}, [{1}];",
    "ld.shared.v2.f32 {{{0}, {1}}}, [{2}];",
    "st.shared.f32 [{0}], {1};"
);
word!(
    u32,
    4,
    reg32,
    "ld.shared.b32 {0}, [{1}];",
    "ld.shared.v2.b32 {{{0}, {1}}}, [{2}];",
    "st.shared.b32 [{0}], {1};"
);

/// A matrix in shared memory, in `(mn, k)` coordinates (see the module docs).
#[derive(Debug)]
pub struct SharedTile<T, M> {
    #[cfg(target_arch = "nvptx64")]
    base: u32,
    #[cfg(not(target_arch = "nvptx64"))]
    base: *mut T,
    stride: u32,
    _marker: PhantomData<(T, M)>,
}

impl<T, M> Clone for SharedTile<T, M> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, M> Copy for SharedTile<T, M> {}

impl<T: Word, M: Major> SharedTile<T, M> {
    /// A tile over host memory (tests).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn host(base: *mut T, stride: u32) -> Self {
        Self {
            base,
            stride,
            _marker: PhantomData,
        }
    }

    /// The row stride in elements.
    #[inline(always)]
    pub fn stride(&self) -> u32 {
        self.stride
    }

    /// The tile `rows` rows further along its storage (`mn` rows for [`KMajor`], `k` rows for
    /// [`MnMajor`]), as the same kind of tile.
    #[inline(always)]
    pub fn offset_rows(&self, rows: u32) -> Self {
        Self {
            #[cfg(target_arch = "nvptx64")]
            base: self.base + rows * self.stride * T::BYTES,
            #[cfg(not(target_arch = "nvptx64"))]
            base: self.base.wrapping_add((rows * self.stride) as usize),
            stride: self.stride,
            _marker: PhantomData,
        }
    }

    /// The `.shared` address of element `(mn, k)` (GPU).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    pub fn address(&self, mn: u32, k: u32) -> u32 {
        self.base + M::index(mn, k, self.stride) * T::BYTES
    }

    /// Where element `(mn, k)` is (host).
    #[cfg(not(target_arch = "nvptx64"))]
    #[inline(always)]
    pub fn address(&self, mn: u32, k: u32) -> *mut T {
        self.base
            .wrapping_add(M::index(mn, k, self.stride) as usize)
    }

    /// Element `(mn, k)`.
    ///
    /// # Safety
    /// The element lies in the tile's memory and no thread writes it concurrently.
    #[inline(always)]
    pub unsafe fn get(&self, mn: u32, k: u32) -> T {
        // SAFETY: the caller's promise.
        #[cfg(target_arch = "nvptx64")]
        return unsafe { T::ld(self.address(mn, k)) };
        // SAFETY: the caller's promise.
        #[cfg(not(target_arch = "nvptx64"))]
        return unsafe { self.address(mn, k).read() };
    }

    /// Element `(mn, k)` and the next one along the contiguous direction, in one load.
    ///
    /// # Safety
    /// As for [`get`](Self::get), for both elements, and the first is aligned to twice the
    /// element size.
    #[inline(always)]
    pub unsafe fn get2(&self, mn: u32, k: u32) -> (T, T) {
        // SAFETY: the caller's promise.
        #[cfg(target_arch = "nvptx64")]
        return unsafe { T::ld2(self.address(mn, k)) };
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let at = self.address(mn, k);
            // SAFETY: the caller's promise.
            unsafe { (at.read(), at.add(1).read()) }
        }
    }

    /// Sets element `(mn, k)`.
    ///
    /// # Safety
    /// The element lies in the tile's memory and no other thread accesses it concurrently.
    #[inline(always)]
    pub unsafe fn set(&self, mn: u32, k: u32, value: T) {
        // SAFETY: the caller's promise.
        #[cfg(target_arch = "nvptx64")]
        unsafe {
            T::st(self.address(mn, k), value)
        };
        // SAFETY: the caller's promise.
        #[cfg(not(target_arch = "nvptx64"))]
        unsafe {
            self.address(mn, k).write(value)
        };
    }

    /// Starts copying 16 bytes from global memory at `src` to the tile at `(mn, k)` (the start of
    /// a 16-byte chunk along the contiguous direction).
    ///
    /// # Safety
    /// `src` is 16-byte aligned, readable global memory; the destination lies in the tile's
    /// memory, is 16-byte aligned, and nothing accesses it until a [`wait`] covers this copy.
    #[inline(always)]
    pub unsafe fn copy16(&self, mn: u32, k: u32, src: *const T) {
        // SAFETY: the caller's promise.
        unsafe { copy16(self.address(mn, k), src.cast()) }
    }
}

/// Starts a 16-byte copy from global `src` to shared `dst` (`cp.async.cg.shared.global`; on the
/// host, an immediate copy).
///
/// # Safety
/// As for [`SharedTile::copy16`].
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
pub unsafe fn copy16(dst: u32, src: *const u8) {
    // SAFETY: the caller's promise; the copy writes shared memory asynchronously, which the
    // later `wait` and barrier order (both are memory clobbers here).
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 g; cvta.to.global.u64 g, {1}; cp.async.cg.shared.global [{0}], [g], 16; }}",
            in(reg32) dst, in(reg64) src as u64, options(nostack, preserves_flags)
        )
    };
}

/// Starts a 16-byte copy from global `src` to shared `dst` (`cp.async.cg.shared.global`; on the
/// host, an immediate copy).
///
/// # Safety
/// As for [`SharedTile::copy16`].
#[cfg(not(target_arch = "nvptx64"))]
#[inline(always)]
pub unsafe fn copy16<T>(dst: *mut T, src: *const u8) {
    // SAFETY: the caller's promise.
    unsafe { core::ptr::copy_nonoverlapping(src, dst.cast::<u8>(), 16) };
}

/// Closes the group of copies started since the last commit (`cp.async.commit_group`).
#[inline(always)]
pub fn commit() {
    // SAFETY: bookkeeping of this thread's own copies.
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!("cp.async.commit_group;", options(nostack, preserves_flags))
    };
}

/// Waits until at most `PENDING` of this thread's committed groups are still in flight
/// (`cp.async.wait_group`). A block barrier after it makes every thread's copies visible.
#[inline(always)]
pub fn wait<const PENDING: u32>() {
    // SAFETY: waits on this thread's own copies; a memory clobber, so no shared load moves above.
    #[cfg(target_arch = "nvptx64")]
    unsafe {
        core::arch::asm!("cp.async.wait_group {n};", n = const PENDING, options(nostack, preserves_flags))
    };
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
pub(crate) mod tests {
    //! A model of shared-memory banks, to check that fragment loads are conflict-free.

    use std::collections::BTreeSet;
    use std::vec::Vec;

    /// Shared-memory wavefronts one warp-wide load takes, from the byte address each lane reads
    /// (`bytes` per lane, 4, 8 or 16): the request is served `128 / bytes` lanes at a time, and
    /// within a phase each of the 32 four-byte banks delivers one distinct word per wavefront
    /// (lanes reading the same word share it).
    pub(crate) fn wavefronts(addresses: &[u32; 32], bytes: u32) -> u32 {
        let per_phase = (128 / bytes) as usize;
        let mut total = 0;
        for phase in addresses.chunks(per_phase) {
            let mut words: Vec<BTreeSet<u32>> = std::vec![BTreeSet::new(); 32];
            for &a in phase {
                for w in 0..bytes / 4 {
                    let word = a / 4 + w;
                    words[(word % 32) as usize].insert(word);
                }
            }
            total += words.iter().map(BTreeSet::len).max().unwrap_or(0).max(1) as u32;
        }
        total
    }

    #[test]
    fn the_bank_model_counts_conflicts() {
        let linear: [u32; 32] = core::array::from_fn(|l| l as u32 * 8);
        assert_eq!(wavefronts(&linear, 8), 2);
        let same_bank: [u32; 32] = core::array::from_fn(|l| l as u32 * 128);
        assert_eq!(wavefronts(&same_bank, 4), 32);
        let broadcast = [64u32; 32];
        assert_eq!(wavefronts(&broadcast, 16), 4);
    }
}
