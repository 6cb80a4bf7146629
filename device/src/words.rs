//! The block's runtime words: where a worker's threads hand each other the task of the round, its
//! record and its freed children, and where the leader keeps its counts (shared memory on the GPU,
//! one array per worker on the CPU). Indices are the constants below; [`Words`] reaches them.
//!
//! The scheduler (`sched`) writes them; the error path (`error`) reads the running task and the
//! launch's error record and abort flag from them, and stops its block through [`command`]. Both
//! depend on this module, which depends on neither.

/// Sentinel task values the leader hands its block through shared memory.
pub mod command {
    /// Every task is done: exit.
    pub const DONE: u32 = u32::MAX;
    /// The region was aborted: exit.
    pub const ABORT: u32 = u32::MAX - 1;
    /// No task (nothing running yet).
    pub const NONE: u32 = u32::MAX - 2;
}

/// The task the calling block is running, for the GPU panic handler.
#[cfg(target_arch = "nvptx64")]
pub fn current_task() -> u32 {
    // SAFETY: the runtime words are shared memory of this block, valid for the kernel's lifetime.
    let word =
        unsafe { crate::atomic::AtomicU32::from_ptr(crate::shared::runtime_words().add(CURRENT)) };
    match word.load(
        crate::atomic::Scope::Block,
        crate::atomic::Ordering::Relaxed,
    ) {
        t if t >= command::NONE => u32::MAX,
        t => t,
    }
}

/// The task the block runs now, or a [`command`].
pub const CURRENT: usize = 0;
/// How many children the last task freed.
pub const FREED: usize = 1;
/// Which freed child the leader keeps as its continuation (an index into the list), or `NONE`.
pub const KEEP: usize = 2;
/// First target worker for the pushes of this round.
pub const BASE: usize = 3;
/// Two words: the launch's error record (see [`error::bind`](crate::error::bind)).
pub const ERROR: usize = 4;
/// Two words: the launch's abort flag.
pub const ABORT: usize = 6;
/// The current task's kind, read by the leader from the task table.
pub const KIND: usize = 8;
/// The current task's argument words: `ARGS..ARGS_END` of the argument table.
pub const ARGS: usize = 9;
/// See [`ARGS`].
pub const ARGS_END: usize = 10;
/// The current task's CSR row: `ROW..ROW_END` of the children table.
pub const ROW: usize = 11;
/// See [`ROW`].
pub const ROW_END: usize = 12;
/// The leader's completed tasks not yet added to the global count.
pub const DONE: usize = 13;
/// The leader's round-robin cursor (LRR).
pub const LRR: usize = 14;
/// The leader's victim generator (work stealing).
pub const RNG: usize = 15;
/// Eight words: the leader's statistics so far (the first six words of a
/// [`WorkerStats`](crate::abi::WorkerStats), in its layout), then the clock when the running body
/// started; the eighth is unused.
pub const STATS: usize = 16;
/// The first two entries of the running task's CSR row and, under the static policy, the link
/// after it, which the leader reads into these words during the body (see [`Words::prefetch`]).
pub const ROW0: usize = 24;
/// See [`ROW0`].
pub const ROW1: usize = 25;
/// See [`ROW0`].
pub const AHEAD: usize = 26;
/// The worker this block is.
pub const WORKER: usize = 27;
/// In a region with wide tasks: the block's rank in the running task's gang, or
/// [`command::NONE`] for a one-block task.
pub const GANG: usize = 28;
/// In a region with wide tasks: a queue link the leader takes before anything else (a task it
/// put aside to join a forming gang), or [`command::NONE`].
pub const PARKED: usize = 29;
/// In a region with wide tasks: whether this block's arrival ended the running gang (1), so that
/// it releases the task's children.
pub const GANG_LAST: usize = 30;
/// Start of the freed-children list.
pub const LIST: usize = 32;
/// Capacity of the freed-children list; further children are pushed by the thread that freed
/// them.
pub const LIST_CAP: usize = crate::shared::RUNTIME_WORDS - LIST;

/// The block's runtime words as the worker loop reaches them. Every access is block-scope and
/// relaxed: the loop orders them with block barriers (see `README.md` beside this file).
///
/// On the GPU each access names the words' shared-memory symbol (`ld.shared` at a 32-bit address
/// in the block's shared window), so the loop holds no pointer to them in a register; on the host
/// they are a slice.
#[cfg(not(loom))]
#[derive(Clone, Copy)]
pub struct Words<'w> {
    #[cfg(not(target_arch = "nvptx64"))]
    words: &'w [crate::atomic::AtomicU32],
    #[cfg(target_arch = "nvptx64")]
    words: core::marker::PhantomData<&'w [crate::atomic::AtomicU32]>,
}

#[cfg(not(loom))]
impl<'w> Words<'w> {
    /// Reaches `words`, `RUNTIME_WORDS` of them.
    ///
    /// # Safety
    /// On the GPU `words` must be the block's runtime words
    /// (`shared::runtime_words`), which are then reached by
    /// their address in the block's shared window.
    #[inline(always)]
    pub unsafe fn new(words: &'w [crate::atomic::AtomicU32]) -> Self {
        debug_assert_eq!(words.len(), crate::shared::RUNTIME_WORDS);
        #[cfg(not(target_arch = "nvptx64"))]
        return Self { words };
        #[cfg(target_arch = "nvptx64")]
        return Self {
            words: core::marker::PhantomData,
        };
    }

    /// The address of word 0, for code that reaches the words without a `Words` (a wide task's
    /// gang barrier, see [`crate::block::Gang::sync`]).
    #[inline(always)]
    pub fn base(self) -> *const crate::atomic::AtomicU32 {
        #[cfg(not(target_arch = "nvptx64"))]
        return self.words.as_ptr();
        #[cfg(target_arch = "nvptx64")]
        return crate::shared::runtime_words() as *const crate::atomic::AtomicU32;
    }

    /// Word `i`.
    #[inline(always)]
    pub fn load(self, i: usize) -> u32 {
        #[cfg(not(target_arch = "nvptx64"))]
        return self.words[i].load(
            crate::atomic::Scope::Block,
            crate::atomic::Ordering::Relaxed,
        );
        #[cfg(target_arch = "nvptx64")]
        {
            debug_assert!(i < crate::shared::RUNTIME_WORDS);
            let v: u32;
            // SAFETY: `i` indexes the block's runtime words, only ever accessed atomically.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u32 %twa; mov.u32 %twa, tw_runtime_words; add.u32 %twa, %twa, {o}; \
                     ld.relaxed.cta.shared.u32 {v}, [%twa]; }}",
                    o = in(reg32) (i * 4) as u32, v = out(reg32) v, options(nostack, readonly)
                )
            };
            v
        }
    }

    /// Sets word `i`.
    #[inline(always)]
    pub fn store(self, i: usize, v: u32) {
        #[cfg(not(target_arch = "nvptx64"))]
        self.words[i].store(
            v,
            crate::atomic::Scope::Block,
            crate::atomic::Ordering::Relaxed,
        );
        #[cfg(target_arch = "nvptx64")]
        {
            debug_assert!(i < crate::shared::RUNTIME_WORDS);
            // SAFETY: as in `load`.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u32 %twa; mov.u32 %twa, tw_runtime_words; add.u32 %twa, %twa, {o}; \
                     st.relaxed.cta.shared.u32 [%twa], {v}; }}",
                    o = in(reg32) (i * 4) as u32, v = in(reg32) v, options(nostack)
                )
            };
        }
    }

    /// Starts copying `*src` into word `i`, in the background: on the GPU a `cp.async`, which holds
    /// no register while it runs; on the host a plain copy. The word holds the value once the
    /// same thread has called [`settle`](Self::settle); until then only that thread may touch
    /// it. For tables that nobody writes while the workers run (a weak load).
    ///
    /// # Safety
    /// `src` must point to a live, aligned `u32` in device (global) memory on the GPU, which nobody
    /// writes until the copy is settled.
    #[inline(always)]
    pub unsafe fn prefetch(self, i: usize, src: *const u32) {
        #[cfg(not(target_arch = "nvptx64"))]
        // SAFETY: guaranteed by the caller.
        self.store(i, unsafe { src.read() });
        #[cfg(target_arch = "nvptx64")]
        {
            debug_assert!(i < crate::shared::RUNTIME_WORDS);
            // SAFETY: guaranteed by the caller; the destination is word `i` of this block's words.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u32 %twa; .reg .u64 %tws; mov.u32 %twa, tw_runtime_words; \
                     add.u32 %twa, %twa, {o}; cvta.to.global.u64 %tws, {src}; \
                     cp.async.ca.shared.global [%twa], [%tws], 4; }}",
                    o = in(reg32) (i * 4) as u32, src = in(reg64) src, options(nostack)
                )
            };
        }
    }

    /// Waits until this thread's [`prefetch`](Self::prefetch)es have landed in their words.
    #[inline(always)]
    pub fn settle(self) {
        #[cfg(target_arch = "nvptx64")]
        // SAFETY: waits for this thread's asynchronous copies; touches nothing else.
        unsafe {
            core::arch::asm!("cp.async.wait_all;", options(nostack))
        };
    }

    /// Adds `v` to word `i` (wrapping), atomically among the block's threads, and returns the
    /// previous value.
    #[inline(always)]
    pub fn fetch_add(self, i: usize, v: u32) -> u32 {
        #[cfg(not(target_arch = "nvptx64"))]
        return self.words[i].fetch_add(
            v,
            crate::atomic::Scope::Block,
            crate::atomic::Ordering::Relaxed,
        );
        #[cfg(target_arch = "nvptx64")]
        {
            debug_assert!(i < crate::shared::RUNTIME_WORDS);
            let old: u32;
            // SAFETY: as in `load`.
            unsafe {
                core::arch::asm!(
                    "{{ .reg .u32 %twa; mov.u32 %twa, tw_runtime_words; add.u32 %twa, %twa, {o}; \
                     atom.relaxed.cta.shared.add.u32 {old}, [%twa], {v}; }}",
                    o = in(reg32) (i * 4) as u32, v = in(reg32) v, old = out(reg32) old,
                    options(nostack)
                )
            };
            old
        }
    }
}
