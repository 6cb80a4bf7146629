//! Atomics and fences with an explicit scope and ordering.
//!
//! CUDA's memory model adds a *scope* to every atomic: a block-scope release is cheap, a GPU-scope
//! one reaches every SM, a system-scope one reaches the host. `core::sync::atomic` has no scopes,
//! and its `SeqCst` fence lowers to `fence.sc.sys`, far slower than the `fence.acq_rel.gpu` a
//! scheduler needs. This module spells each operation out:
//!
//! | call | PTX |
//! | --- | --- |
//! | `load(Scope::Gpu, Ordering::Acquire)` | `ld.acquire.gpu.u32` |
//! | `store(v, Scope::Gpu, Ordering::Release)` | `st.release.gpu.u32` |
//! | `fetch_add(v, Scope::Gpu, Ordering::AcqRel)` | `atom.acq_rel.gpu.add.u32` |
//! | `fence(Scope::Gpu)` | `fence.acq_rel.gpu` |
//!
//! On the host the scope is ignored and the ordering maps to `core`'s (under `cfg(loom)`, to loom's,
//! so the scheduler protocol is model-checked with exactly the orderings it uses on the GPU).
//! [`AtomicU32`] is `#[repr(transparent)]` over `u32` on the GPU and on the plain host build, so a
//! `u32` buffer the host allocates is a valid `[AtomicU32]` on the device.

/// How far an atomic operation's effects must reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The threads of one block (`.cta`).
    Block,
    /// Every thread on the GPU (`.gpu`).
    Gpu,
    /// The GPU and the host (`.sys`).
    System,
}

/// The memory-ordering semantics of an atomic operation. There is no `SeqCst`: the scheduler never
/// needs it, and on the GPU it costs a full system fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ordering {
    /// No ordering beyond the atomicity of the access itself.
    Relaxed,
    /// Later accesses of this thread stay after it (loads and read-modify-writes).
    Acquire,
    /// Earlier accesses of this thread stay before it (stores and read-modify-writes).
    Release,
    /// Both (read-modify-writes only).
    AcqRel,
}

#[cfg(not(target_arch = "nvptx64"))]
mod host {
    use super::Ordering;
    use core::sync::atomic::Ordering as Core;
    #[cfg(not(loom))]
    pub use core::sync::atomic::{AtomicU32 as Inner, fence as core_fence};
    #[cfg(loom)]
    pub use loom::sync::atomic::{AtomicU32 as Inner, fence as core_fence};

    pub fn load(o: Ordering) -> Core {
        match o {
            Ordering::Relaxed => Core::Relaxed,
            _ => Core::Acquire,
        }
    }
    pub fn store(o: Ordering) -> Core {
        match o {
            Ordering::Relaxed => Core::Relaxed,
            _ => Core::Release,
        }
    }
    pub fn rmw(o: Ordering) -> Core {
        match o {
            Ordering::Relaxed => Core::Relaxed,
            Ordering::Acquire => Core::Acquire,
            Ordering::Release => Core::Release,
            Ordering::AcqRel => Core::AcqRel,
        }
    }
}

/// A 32-bit atomic word whose every access names its scope and ordering.
#[cfg_attr(any(target_arch = "nvptx64", not(loom)), repr(transparent))]
#[derive(Debug)]
pub struct AtomicU32 {
    #[cfg(target_arch = "nvptx64")]
    value: core::cell::UnsafeCell<u32>,
    #[cfg(not(target_arch = "nvptx64"))]
    value: host::Inner,
}

// SAFETY: every access to the cell goes through an atomic instruction.
#[cfg(target_arch = "nvptx64")]
unsafe impl Sync for AtomicU32 {}

#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_rmw {
    ($self:ident, $op:literal, $v:expr, $scope:expr, $order:expr) => {
        ptx_rmw!($self, $op, "u32", $v, $scope, $order)
    };
    ($self:ident, $op:literal, $ty:literal, $v:expr, $scope:expr, $order:expr) => {{
        let ptr = $self.value.get();
        let v: u32 = $v;
        let old: u32;
        macro_rules! go {
            ($text:literal) => {
                // SAFETY: `ptr` points at a live, aligned word that is only ever accessed atomically.
                unsafe {
                    core::arch::asm!(concat!("atom.", $text, ".", $op, ".", $ty, " {0}, [{1}], {2};"),
                        out(reg32) old, in(reg64) ptr, in(reg32) v, options(nostack))
                }
            };
        }
        match ($order, $scope) {
            (Ordering::Relaxed, Scope::Block) => go!("relaxed.cta"),
            (Ordering::Relaxed, Scope::Gpu) => go!("relaxed.gpu"),
            (Ordering::Relaxed, Scope::System) => go!("relaxed.sys"),
            (Ordering::Acquire, Scope::Block) => go!("acquire.cta"),
            (Ordering::Acquire, Scope::Gpu) => go!("acquire.gpu"),
            (Ordering::Acquire, Scope::System) => go!("acquire.sys"),
            (Ordering::Release, Scope::Block) => go!("release.cta"),
            (Ordering::Release, Scope::Gpu) => go!("release.gpu"),
            (Ordering::Release, Scope::System) => go!("release.sys"),
            (Ordering::AcqRel, Scope::Block) => go!("acq_rel.cta"),
            (Ordering::AcqRel, Scope::Gpu) => go!("acq_rel.gpu"),
            (Ordering::AcqRel, Scope::System) => go!("acq_rel.sys"),
        }
        old
    }};
}

impl AtomicU32 {
    /// A new word holding `value`.
    #[cfg(not(loom))]
    pub const fn new(value: u32) -> Self {
        #[cfg(target_arch = "nvptx64")]
        return Self {
            value: core::cell::UnsafeCell::new(value),
        };
        #[cfg(not(target_arch = "nvptx64"))]
        return Self {
            value: host::Inner::new(value),
        };
    }

    /// A new word holding `value` (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new(value: u32) -> Self {
        Self {
            value: host::Inner::new(value),
        }
    }

    /// Views `ptr` as an atomic word.
    ///
    /// # Safety
    /// `ptr` must be aligned, valid for `'a`, and accessed only atomically while the view lives.
    #[cfg(any(target_arch = "nvptx64", not(loom)))]
    pub unsafe fn from_ptr<'a>(ptr: *mut u32) -> &'a Self {
        // SAFETY: `AtomicU32` is `repr(transparent)` over `u32`; the caller upholds the rest.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Loads the word. `order` must be `Relaxed` or `Acquire`.
    #[inline(always)]
    pub fn load(&self, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let ptr = self.value.get();
            let v: u32;
            macro_rules! go {
                ($text:literal) => {
                    // SAFETY: `ptr` points at a live, aligned word accessed only atomically.
                    unsafe {
                        core::arch::asm!(concat!("ld.", $text, ".u32 {0}, [{1}];"),
                            out(reg32) v, in(reg64) ptr, options(nostack, readonly))
                    }
                };
            }
            match (order, scope) {
                (Ordering::Relaxed, Scope::Block) => go!("relaxed.cta"),
                (Ordering::Relaxed, Scope::Gpu) => go!("relaxed.gpu"),
                (Ordering::Relaxed, Scope::System) => go!("relaxed.sys"),
                (_, Scope::Block) => go!("acquire.cta"),
                (_, Scope::Gpu) => go!("acquire.gpu"),
                (_, Scope::System) => go!("acquire.sys"),
            }
            v
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.load(host::load(order))
        }
    }

    /// Stores `v`. `order` must be `Relaxed` or `Release`.
    #[inline(always)]
    pub fn store(&self, v: u32, scope: Scope, order: Ordering) {
        #[cfg(target_arch = "nvptx64")]
        {
            let ptr = self.value.get();
            macro_rules! go {
                ($text:literal) => {
                    // SAFETY: `ptr` points at a live, aligned word accessed only atomically.
                    unsafe {
                        core::arch::asm!(concat!("st.", $text, ".u32 [{0}], {1};"),
                            in(reg64) ptr, in(reg32) v, options(nostack))
                    }
                };
            }
            match (order, scope) {
                (Ordering::Relaxed, Scope::Block) => go!("relaxed.cta"),
                (Ordering::Relaxed, Scope::Gpu) => go!("relaxed.gpu"),
                (Ordering::Relaxed, Scope::System) => go!("relaxed.sys"),
                (_, Scope::Block) => go!("release.cta"),
                (_, Scope::Gpu) => go!("release.gpu"),
                (_, Scope::System) => go!("release.sys"),
            }
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.store(v, host::store(order))
        }
    }

    /// Adds `v` (wrapping) and returns the previous value.
    #[inline(always)]
    pub fn fetch_add(&self, v: u32, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        return ptx_rmw!(self, "add", v, scope, order);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.fetch_add(v, host::rmw(order))
        }
    }

    /// Subtracts `v` (wrapping) and returns the previous value.
    #[inline(always)]
    pub fn fetch_sub(&self, v: u32, scope: Scope, order: Ordering) -> u32 {
        self.fetch_add(v.wrapping_neg(), scope, order)
    }

    /// Subtracts 1 from each of two words, either of which may be absent, with relaxed GPU-scope
    /// RMWs, and returns their values before (0 for an absent one).
    ///
    /// On the GPU both RMWs are issued by one `asm!` block, predicated rather than branched around:
    /// written as two `fetch_sub`s, the compiler tests the first result before it issues the second,
    /// and the two round trips to L2 add up instead of overlapping.
    #[inline(always)]
    pub fn decrement_pair(a: Option<&Self>, b: Option<&Self>) -> (u32, u32) {
        #[cfg(target_arch = "nvptx64")]
        {
            let ptr = |w: Option<&Self>| w.map_or(core::ptr::null_mut(), |w| w.value.get());
            let (pa, pb) = (ptr(a), ptr(b));
            let (mut ra, mut rb) = (0u32, 0u32);
            // SAFETY: a non-null pointer is a live, aligned word that is only accessed atomically;
            // a null one is never dereferenced (its RMW is predicated off).
            unsafe {
                core::arch::asm!(
                    "{{",
                    ".reg .pred %pa, %pb;",
                    "setp.ne.u64 %pa, {pa}, 0;",
                    "setp.ne.u64 %pb, {pb}, 0;",
                    "@%pa atom.relaxed.gpu.add.u32 {ra}, [{pa}], -1;",
                    "@%pb atom.relaxed.gpu.add.u32 {rb}, [{pb}], -1;",
                    "}}",
                    pa = in(reg64) pa,
                    pb = in(reg64) pb,
                    ra = inout(reg32) ra,
                    rb = inout(reg32) rb,
                    options(nostack),
                );
            }
            (ra, rb)
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let dec =
                |w: Option<&Self>| w.map_or(0, |w| w.fetch_sub(1, Scope::Gpu, Ordering::Relaxed));
            (dec(a), dec(b))
        }
    }

    /// Sets the bits of `v`; returns the previous value.
    #[inline(always)]
    pub fn fetch_or(&self, v: u32, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        return ptx_rmw!(self, "or", "b32", v, scope, order);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.fetch_or(v, host::rmw(order))
        }
    }

    /// Keeps only the bits of `v`; returns the previous value.
    #[inline(always)]
    pub fn fetch_and(&self, v: u32, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        return ptx_rmw!(self, "and", "b32", v, scope, order);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.fetch_and(v, host::rmw(order))
        }
    }

    /// Stores the maximum of the word and `v`; returns the previous value.
    #[inline(always)]
    pub fn fetch_max(&self, v: u32, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        return ptx_rmw!(self, "max", v, scope, order);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.fetch_max(v, host::rmw(order))
        }
    }

    /// Stores `v` and returns the previous value.
    #[inline(always)]
    pub fn swap(&self, v: u32, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        return ptx_rmw!(self, "exch", "b32", v, scope, order);
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            self.value.swap(v, host::rmw(order))
        }
    }

    /// Stores `new` if the word holds `current`; returns the value it held either way.
    #[inline(always)]
    pub fn compare_swap(&self, current: u32, new: u32, scope: Scope, order: Ordering) -> u32 {
        #[cfg(target_arch = "nvptx64")]
        {
            let ptr = self.value.get();
            let old: u32;
            macro_rules! go {
                ($text:literal) => {
                    // SAFETY: `ptr` points at a live, aligned word accessed only atomically.
                    unsafe {
                        core::arch::asm!(concat!("atom.", $text, ".cas.b32 {0}, [{1}], {2}, {3};"),
                            out(reg32) old, in(reg64) ptr, in(reg32) current, in(reg32) new,
                            options(nostack))
                    }
                };
            }
            match (order, scope) {
                (Ordering::Relaxed, Scope::Block) => go!("relaxed.cta"),
                (Ordering::Relaxed, Scope::Gpu) => go!("relaxed.gpu"),
                (Ordering::Relaxed, Scope::System) => go!("relaxed.sys"),
                (Ordering::Acquire, Scope::Block) => go!("acquire.cta"),
                (Ordering::Acquire, Scope::Gpu) => go!("acquire.gpu"),
                (Ordering::Acquire, Scope::System) => go!("acquire.sys"),
                (Ordering::Release, Scope::Block) => go!("release.cta"),
                (Ordering::Release, Scope::Gpu) => go!("release.gpu"),
                (Ordering::Release, Scope::System) => go!("release.sys"),
                (Ordering::AcqRel, Scope::Block) => go!("acq_rel.cta"),
                (Ordering::AcqRel, Scope::Gpu) => go!("acq_rel.gpu"),
                (Ordering::AcqRel, Scope::System) => go!("acq_rel.sys"),
            }
            old
        }
        #[cfg(not(target_arch = "nvptx64"))]
        {
            let _ = scope;
            let ok = host::rmw(order);
            let fail = host::load(match order {
                Ordering::Release => Ordering::Relaxed,
                other => other,
            });
            match self.value.compare_exchange(current, new, ok, fail) {
                Ok(v) | Err(v) => v,
            }
        }
    }
}

/// A fence with acquire-release semantics at `scope` (`fence.acq_rel.{cta,gpu,sys}`).
#[inline(always)]
pub fn fence(scope: Scope) {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: a fence only orders this thread's memory accesses.
        unsafe {
            match scope {
                Scope::Block => core::arch::asm!("fence.acq_rel.cta;", options(nostack)),
                Scope::Gpu => core::arch::asm!("fence.acq_rel.gpu;", options(nostack)),
                Scope::System => core::arch::asm!("fence.acq_rel.sys;", options(nostack)),
            }
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = scope;
        host::core_fence(core::sync::atomic::Ordering::AcqRel);
    }
}
