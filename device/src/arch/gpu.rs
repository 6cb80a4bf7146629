//! The `nvptx64` implementation: special registers and single instructions through `asm!`.
//!
//! `core::arch::nvptx` covers thread indices and `bar.sync`; everything else it lacks (`%smid`,
//! `%nsmid`, `%globaltimer`, `nanosleep`, warp votes and shuffles with a full mask) is spelled out
//! here.

use core::arch::asm;

macro_rules! special_register_u32 {
    ($($(#[$doc:meta])* $name:ident => $reg:literal;)*) => {$(
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            let value: u32;
            // SAFETY: reading a special register has no side effects and is valid in any thread.
            unsafe { asm!(concat!("mov.u32 {0}, ", $reg, ";"), out(reg32) value, options(nomem, nostack, pure)) };
            value
        }
    )*};
}

special_register_u32! {
    /// The calling thread's index in its block (`%tid.x`).
    thread_idx => "%tid.x";
    /// The calling block's index in the grid (`%ctaid.x`).
    block_idx => "%ctaid.x";
    /// Threads per block (`%ntid.x`).
    block_dim => "%ntid.x";
    /// Blocks in the grid (`%nctaid.x`).
    grid_dim => "%nctaid.x";
    /// The calling thread's lane in its warp (`%laneid`).
    lane_id => "%laneid";
    /// The SM the calling thread runs on (`%smid`). It is in `0..sm_count()`, but may change between
    /// calls only across a preemption, which taskweave kernels do not request.
    sm_id => "%smid";
    /// Number of SM identifiers (`%nsmid`); `%smid` values are below this, not necessarily dense.
    sm_count => "%nsmid";
}

/// Nanoseconds from the GPU's global timer (`%globaltimer`), comparable across SMs.
#[inline(always)]
pub fn global_timer_ns() -> u64 {
    let value: u64;
    // SAFETY: reading a special register has no side effects; `volatile` (no `pure`) keeps each read.
    unsafe { asm!("mov.u64 {0}, %globaltimer;", out(reg64) value, options(nomem, nostack)) };
    value
}

/// The SM's cycle counter (`%clock64`). Not comparable across SMs.
#[inline(always)]
pub fn clock64() -> u64 {
    let value: u64;
    // SAFETY: as for `global_timer_ns`.
    unsafe { asm!("mov.u64 {0}, %clock64;", out(reg64) value, options(nomem, nostack)) };
    value
}

/// Block barrier (`bar.sync 0`): every non-exited thread of the block must reach it.
#[inline(always)]
pub fn sync_threads() {
    // The intrinsic, not `asm!("bar.sync 0;")`: LLVM knows the intrinsic is convergent and never
    // duplicates it into divergent paths, which it did with the opaque asm (compute-sanitizer's
    // synccheck flagged a barrier reached at two addresses in the INT-HIST tile on the H100).
    // SAFETY: valid in any kernel; callers uphold the convergence rule documented above, exactly as
    // with CUDA's `__syncthreads`. It orders memory like a block-scope fence.
    unsafe { core::arch::nvptx::_syncthreads() };
}

/// Warp barrier (`bar.warp.sync`, full mask): every lane of the warp must reach it. It also
/// orders the shared-memory accesses of the lanes that meet there.
#[inline(always)]
pub fn sync_warp() {
    unsafe extern "C" {
        /// `bar.warp.sync`: LLVM's intrinsic, which it knows to be convergent.
        #[link_name = "llvm.nvvm.bar.warp.sync"]
        fn bar_warp_sync(mask: u32);
    }
    // The intrinsic rather than an opaque `asm!`, for the reason `sync_threads` gives.
    // SAFETY: valid in any kernel; the callers keep the convergence rule above.
    unsafe { bar_warp_sync(u32::MAX) };
}

/// Suspends the thread for about `ns` nanoseconds (`nanosleep.u32`, at most about 1 ms).
#[inline(always)]
pub fn nanosleep(ns: u32) {
    // SAFETY: `nanosleep` only delays the calling thread.
    unsafe { asm!("nanosleep.u32 {0};", in(reg32) ns, options(nomem, nostack)) };
}

/// Bit `i` is set when lane `i` of the warp passes `true` (`vote.sync.ballot.b32`, full mask).
#[inline(always)]
pub fn warp_ballot(predicate: bool) -> u32 {
    let value: u32;
    // SAFETY: all 32 lanes must call it together, like CUDA's `__ballot_sync(0xffffffff, p)`.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {1}, 0; vote.sync.ballot.b32 {0}, p, 0xffffffff; }}",
            out(reg32) value, in(reg32) predicate as u32, options(nomem, nostack)
        )
    };
    value
}

/// `true` when any lane of the warp passes `true`.
#[inline(always)]
pub fn warp_any(predicate: bool) -> bool {
    warp_ballot(predicate) != 0
}

/// `true` when every lane of the warp passes `true`.
#[inline(always)]
pub fn warp_all(predicate: bool) -> bool {
    warp_ballot(predicate) == u32::MAX
}

/// The value `value` held by lane `src` (`shfl.sync.idx.b32`, full mask).
#[inline(always)]
pub fn shfl_idx(value: u32, src: u32) -> u32 {
    let out: u32;
    // SAFETY: all 32 lanes must call it together.
    unsafe {
        asm!("shfl.sync.idx.b32 {0}, {1}, {2}, 0x1f, 0xffffffff;",
            out(reg32) out, in(reg32) value, in(reg32) src, options(nomem, nostack))
    };
    out
}

/// The value held by lane `lane_id() + delta`, or the caller's own past the warp's end
/// (`shfl.sync.down.b32`, full mask).
#[inline(always)]
pub fn shfl_down(value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: all 32 lanes must call it together.
    unsafe {
        asm!("shfl.sync.down.b32 {0}, {1}, {2}, 0x1f, 0xffffffff;",
            out(reg32) out, in(reg32) value, in(reg32) delta, options(nomem, nostack))
    };
    out
}

/// Ends the calling thread (`exit`). Threads that exit count as arrived at later block barriers.
#[inline(always)]
pub fn exit_thread() -> ! {
    // SAFETY: `exit` ends this thread only; control never returns.
    unsafe { asm!("exit;", options(noreturn, nostack)) }
}

/// Aborts the whole kernel (`trap`). The driver reports a launch failure, and the CUDA context is
/// unusable from then on: only the fault checks use it, to show how the runtime reports that.
#[inline(always)]
pub fn trap() -> ! {
    // SAFETY: `trap` ends the kernel; control never returns.
    unsafe { asm!("trap;", options(noreturn, nostack)) }
}
