//! The block API: what one task, running on one block of threads, can do.
//!
//! 1. [`Block::par_for`] spreads a range over the block's threads (a block-stride loop) and ends
//!    with a barrier, so results are visible to every thread afterwards.
//! 2. [`Block::sync`] is the block barrier.
//! 3. [`Block::shared`] hands out scratch arrays in the block's shared memory.
//! 4. [`Block::thread`] and [`Block::threads`] are the raw thread index and count for code that
//!    needs them.
//! 5. [`Block::gang`] is the gang of blocks running a wide task (`#[task(blocks = K)]`): this
//!    block's rank and the gang barrier.
//!
//! The same calls run on the CPU backend, where a block is one or more OS threads ("lanes"), so a
//! body written against this API gives the same results on both backends.

use core::cell::Cell;
use core::ops::Range;

use crate::arch;
use crate::atomic::{AtomicU32, Ordering, Scope};
use crate::gang;
use crate::shared::SharedArray;
use crate::words;

/// The block running a task, as seen by one of its threads.
pub struct Block {
    task: u32,
    worker: u32,
    scratch: *mut u8,
    scratch_bytes: usize,
    used: Cell<usize>,
    gang: GangWords,
    /// How many gang barriers this thread has passed in this task.
    rounds: Cell<u32>,
}

/// Where a wide task's gang meets (see [`crate::gang`]); a one-block task's is
/// [`GangWords::ALONE`].
#[derive(Clone, Copy)]
pub struct GangWords {
    /// This block's rank in the gang.
    pub rank: u32,
    /// The gang's ranks: the task's `blocks`.
    pub width: u32,
    /// The gang's arrival count (null when `width` is 1).
    pub arrivals: *const AtomicU32,
    /// The region's abort flag (null when it has none).
    pub abort: *const AtomicU32,
    /// The block's runtime words, where the leader tells the others that the region was aborted
    /// while the gang waited.
    pub words: *const AtomicU32,
}

impl GangWords {
    /// A one-block task's gang: itself.
    pub const ALONE: Self = Self {
        rank: 0,
        width: 1,
        arrivals: core::ptr::null(),
        abort: core::ptr::null(),
        words: core::ptr::null(),
    };
}

/// The gang of blocks running a wide task (`#[task(blocks = K)]`), as seen by one thread of one of
/// them: [`Block::gang`]. Every block of the gang runs the same body on the same arguments; its
/// [`rank`](Gang::rank) tells it which share of the work is its own. A one-block task is a gang
/// of one.
pub struct Gang<'b> {
    block: &'b Block,
}

impl Gang<'_> {
    /// This block's rank in the gang, `0..size()`.
    #[inline(always)]
    pub fn rank(&self) -> u32 {
        self.block.gang.rank
    }

    /// How many blocks the gang has: the task's `blocks`.
    #[inline(always)]
    pub fn size(&self) -> u32 {
        self.block.gang.width
    }

    /// The gang barrier: every thread of every block of the gang must call it, the same number of
    /// times. What any of them wrote before it is visible to all of them after it (on the GPU
    /// through global memory: shared memory is each block's own).
    ///
    /// If the region is aborted while this block waits (another task faulted, or the watchdog
    /// found the run stalled), the block leaves the task: on the GPU its threads exit, on the CPU
    /// the body panics, and the run reports the abort's cause.
    #[inline(always)]
    pub fn sync(&self) {
        self.block.sync();
        let g = self.block.gang;
        if g.width == 1 {
            return;
        }
        let round = self.block.rounds.get() + 1;
        self.block.rounds.set(round);
        // SAFETY: a wide task's block is made by the worker loop (`Block::with_gang`), which
        // points these at the task's gang words, the region's abort flag and the block's runtime
        // words, all live while the body runs.
        unsafe {
            let words = g.words;
            if arch::thread_idx() == 0 {
                let arrivals = &*g.arrivals;
                gang::arrive(arrivals);
                let mut polls = 0u32;
                while !gang::passed(arrivals, g.width, round) {
                    polls += 1;
                    if polls.is_multiple_of(64)
                        && !g.abort.is_null()
                        && (*g.abort).load(Scope::System, Ordering::Relaxed) != 0
                    {
                        (*words.add(words::CURRENT)).store(
                            words::command::ABORT,
                            Scope::Block,
                            Ordering::Relaxed,
                        );
                        break;
                    }
                    if polls > 64 {
                        arch::nanosleep(64);
                    }
                }
            }
            self.block.sync();
            if (*words.add(words::CURRENT)).load(Scope::Block, Ordering::Relaxed)
                == words::command::ABORT
            {
                left_aborted();
            }
        }
    }
}

/// A block whose gang was aborted at its barrier leaves the task: on the GPU its threads exit (the
/// other workers leave on the abort flag; the run reports the abort's cause), on the CPU the body
/// panics, which the backend records if nothing was recorded before.
#[cold]
fn left_aborted() -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        arch::exit_thread()
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::panic!("the region was aborted while this wide task waited at its gang barrier")
    }
}

impl Block {
    /// The block context for task `task` on worker `worker`, with `scratch_bytes` bytes of shared
    /// scratch at `scratch`.
    ///
    /// # Safety
    /// `scratch` must point to `scratch_bytes` bytes, aligned to 16, shared by every thread of the
    /// block and used by nothing else while the task runs. On the GPU it must be the block's shared
    /// memory: [`SharedArray`] reaches it with `ld.shared` / `st.shared`.
    pub unsafe fn new(task: u32, worker: u32, scratch: *mut u8, scratch_bytes: usize) -> Self {
        Self {
            task,
            worker,
            scratch,
            scratch_bytes,
            used: Cell::new(0),
            gang: GangWords::ALONE,
            rounds: Cell::new(0),
        }
    }

    /// This block as one rank of a wide task's gang.
    ///
    /// # Safety
    /// `gang`'s pointers must be live while the task runs: `arrivals` the task's arrival count,
    /// `abort` the region's flag or null, `words` this block's runtime words.
    #[inline(always)]
    pub unsafe fn with_gang(mut self, gang: GangWords) -> Self {
        self.gang = gang;
        self
    }

    /// How many gang barriers this thread passed in the task (the worker loop's end of a gang
    /// counts them).
    #[inline(always)]
    pub fn gang_rounds(&self) -> u32 {
        self.rounds.get()
    }

    /// The gang of blocks running this task: one block, unless the task is wide
    /// (`#[task(blocks = K)]`).
    #[inline(always)]
    pub fn gang(&self) -> Gang<'_> {
        Gang { block: self }
    }

    /// The index of the running task in its region.
    #[inline(always)]
    pub fn task(&self) -> u32 {
        self.task
    }

    /// The worker (persistent block, or CPU worker thread) running the task.
    #[inline(always)]
    pub fn worker(&self) -> u32 {
        self.worker
    }

    /// The SM (GPU) or core (CPU) the worker runs on.
    #[inline(always)]
    pub fn sm(&self) -> u32 {
        arch::sm_id()
    }

    /// The calling thread's index in the block.
    #[inline(always)]
    pub fn thread(&self) -> usize {
        arch::thread_idx() as usize
    }

    /// The number of threads in the block.
    #[inline(always)]
    pub fn threads(&self) -> usize {
        arch::block_dim() as usize
    }

    /// The block barrier: every thread of the block must call it.
    #[inline(always)]
    pub fn sync(&self) {
        arch::sync_threads();
    }

    /// Calls `f(i)` for every `i` in `range`, spread over the block's threads, then waits at the
    /// block barrier. Every thread of the block must call it with the same range.
    ///
    /// The index is a `usize` or, where the range is known to be small (a tile), a `u32`: on the
    /// GPU every `usize` takes two registers and two instructions per add or compare.
    #[inline(always)]
    pub fn par_for<I: LoopIndex>(&self, range: Range<I>, mut f: impl FnMut(I)) {
        let step = I::from_u32(arch::block_dim());
        let mut i = range.start + I::from_u32(arch::thread_idx());
        while i < range.end {
            f(i);
            i += step;
        }
        self.sync();
    }

    /// A fresh `N`-element array of `T` in shared memory, the same one for every thread of the
    /// block. Every thread must make the same sequence of `shared` calls. Its contents start
    /// undefined. Panics when the region's scratch size is too small.
    #[inline(always)]
    pub fn shared<T: Copy, const N: usize>(&self) -> &SharedArray<T, N> {
        let align = core::mem::align_of::<T>().max(1);
        let start = self.used.get().next_multiple_of(align);
        let end = start + core::mem::size_of::<T>() * N;
        assert!(
            end <= self.scratch_bytes,
            "block scratch exhausted: raise the region's `shared_bytes`"
        );
        self.used.set(end);
        // SAFETY: `start..end` lies inside the scratch buffer (checked above), is aligned for `T`
        // (the buffer is 16-aligned and `start` is a multiple of `align_of::<T>()` up to 16), and no
        // earlier `shared` call of this task overlaps it.
        unsafe { &*self.scratch.add(start).cast::<SharedArray<T, N>>() }
    }

    /// The part of the block's shared scratch that [`Block::shared`] has not handed out: its
    /// address (16-byte aligned) and size in bytes. Tile operations stage through it for the
    /// length of one call and leave nothing there, so it stays free for later `shared` calls.
    #[inline(always)]
    pub fn scratch_rest(&self) -> (*mut u8, usize) {
        let start = self.used.get().next_multiple_of(16).min(self.scratch_bytes);
        // SAFETY: `start <= scratch_bytes`, so the pointer stays within (or one past) the buffer.
        (
            unsafe { self.scratch.add(start) },
            self.scratch_bytes - start,
        )
    }
}

/// An index type [`Block::par_for`] strides over: `usize` or `u32`.
pub trait LoopIndex:
    Copy + PartialOrd + core::ops::Add<Output = Self> + core::ops::AddAssign + sealed::Sealed
{
    /// A thread index or count as `Self` (lossless: both types hold any `u32`).
    fn from_u32(value: u32) -> Self;
}

impl LoopIndex for usize {
    #[inline(always)]
    fn from_u32(value: u32) -> Self {
        value as usize
    }
}

impl LoopIndex for u32 {
    #[inline(always)]
    fn from_u32(value: u32) -> Self {
        value
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for usize {}
    impl Sealed for u32 {}
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::Block;

    #[test]
    fn shared_arrays_are_carved_from_the_scratch_in_order_and_aligned() {
        let mut scratch = [0u128; 4];
        // SAFETY: 64 bytes, 16-aligned, used by this block alone.
        let block = unsafe { Block::new(3, 1, scratch.as_mut_ptr().cast(), 64) };
        let bytes = block.shared::<u8, 3>();
        let words = block.shared::<u64, 2>();
        for i in 0..3 {
            bytes.set(i, i as u8 + 1);
        }
        words.set(0, u64::MAX);
        words.set(1, 7);
        assert_eq!((bytes.get(2), words.get(0), words.get(1)), (3, u64::MAX, 7));
        // The `u64`s start at the first multiple of 8 after the 3 bytes.
        assert_eq!(
            (words as *const _ as usize) - (bytes as *const _ as usize),
            8
        );
        assert_eq!((block.task(), block.worker()), (3, 1));
    }

    #[test]
    fn par_for_visits_each_index_once_as_usize_or_u32() {
        let mut scratch = [0u128; 1];
        // SAFETY: 16 bytes, 16-aligned, used by this block alone.
        let block = unsafe { Block::new(0, 0, scratch.as_mut_ptr().cast(), 16) };
        let mut seen = std::vec::Vec::new();
        block.par_for(3usize..7, |i| seen.push(i));
        block.par_for(3u32..7, |i| seen.push(i as usize));
        assert_eq!(seen, [3, 4, 5, 6, 3, 4, 5, 6]);
        let words = block.shared::<u32, 4>();
        // SAFETY: both indices are below 4.
        unsafe {
            words.set_unchecked(3, 9);
            assert_eq!(words.get_unchecked(3), words.get(3));
        }
    }

    #[test]
    #[should_panic(expected = "block scratch exhausted")]
    fn asking_for_more_shared_memory_than_the_scratch_panics() {
        let mut scratch = [0u128; 1];
        // SAFETY: 16 bytes, 16-aligned, used by this block alone.
        let block = unsafe { Block::new(0, 0, scratch.as_mut_ptr().cast(), 16) };
        let _ = block.shared::<u32, 5>();
    }
}
