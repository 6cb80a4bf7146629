//! The workers' own finish of a kept plan's run: the tables put back as they started and the
//! error record handed to the host, inside the kernel.
//!
//! A plan that runs again needs the tables its workers write (dependence counters, queues,
//! counters, the error record, the abort flag) as they started before its next call, and the host
//! needs the error record and the statistics after each. Done by the host, that is a copy node
//! before the kernel and a read-back node after it: on the H100 the read-back's DMA alone kept
//! the host 4–7 µs past the kernel's end (`bench/results/replay-h100/`). With
//! [`RegionDesc::finish`] set, the workers do both as they leave:
//!
//! 1. Each worker's leader has written its statistics where `stats` points (the host's mapped
//!    pinned memory, on this path). It arrives at the [`Gate`]: one `AcqRel` add.
//! 2. The last to arrive has every other worker's run behind its acquire: it copies the error
//!    record into the host's mapped memory (only its `claimed` and `code` words when no task
//!    claimed it) and opens the gate (a `Release` add).
//! 3. The others wait for the gate to open, or leave at once when the abort flag is up: a task
//!    faulted, or the watchdog gave up. The host then finishes that run itself, as when the
//!    tables are not kept: it finds the done word still 0.
//! 4. Each leader past the gate leaves: an `AcqRel` add. The last to leave sets the gate's two
//!    words back to zero (every worker has passed the gate by then) and writes 1 into the done
//!    word. Then each block copies its [`share`] of the pristine tables over the written ones: no
//!    worker past the gate stops before its copy, and the host reads nothing before the kernel's
//!    end, so the done word may be written before the copies are.
//!
//! The gate's words lie outside the tables the workers reset: the gate must stay open while they
//! copy. The host clears the done word before each launch and reads its mapped memory only after
//! the kernel's end event, which orders every write of the kernel before it, so no system-scope
//! fence is needed.
//!
//! [`RegionDesc::finish`]: crate::abi::RegionDesc::finish

use core::ops::Range;

use crate::atomic::{
    AtomicU32,
    Ordering::{AcqRel, Acquire, Relaxed, Release},
    Scope::Gpu,
};

/// The two words the workers meet on as they finish (see the module docs): how many have arrived
/// (one more once the gate is open), and how many have left.
pub struct Gate<'a> {
    arrived: &'a AtomicU32,
    left: &'a AtomicU32,
    workers: u32,
}

impl<'a> Gate<'a> {
    /// The gate of `workers` workers on `words` (two words, zero before the run).
    pub fn new(words: &'a [AtomicU32; 2], workers: u32) -> Self {
        Self {
            arrived: &words[0],
            left: &words[1],
            workers,
        }
    }

    /// Arrives after the worker's last write of the run; `true` for the last worker, which must
    /// then publish what the host reads and [`Gate::open`] the gate.
    pub fn arrive(&self) -> bool {
        self.arrived.fetch_add(1, Gpu, AcqRel) + 1 == self.workers
    }

    /// Opens the gate (the last worker to arrive only).
    pub fn open(&self) {
        self.arrived.fetch_add(1, Gpu, Release);
    }

    /// Waits until the gate opens (`true`), or until `aborted()` (`false`): a worker that never
    /// arrives must not hold the others forever. `pause` runs between polls.
    pub fn wait(&self, aborted: impl Fn() -> bool, pause: impl Fn()) -> bool {
        loop {
            if self.arrived.load(Gpu, Acquire) > self.workers {
                return true;
            }
            if aborted() {
                return false;
            }
            pause();
        }
    }

    /// Leaves after the worker's share of the reset; `true` for the last worker, which has set
    /// both words back to zero for the next run.
    pub fn leave(&self) -> bool {
        if self.left.fetch_add(1, Gpu, AcqRel) + 1 != self.workers {
            return false;
        }
        // Every worker has passed `wait` before leaving, so nobody reads either word any more.
        self.arrived.store(0, Gpu, Relaxed);
        self.left.store(0, Gpu, Relaxed);
        true
    }
}

/// Worker `worker`'s share of `words` words among `workers`: contiguous, in order, sizes differing
/// by at most one, together exactly `0..words`.
pub fn share(words: usize, workers: u32, worker: u32) -> Range<usize> {
    let (n, w) = (workers.max(1) as usize, worker as usize);
    let (base, extra) = (words / n, words % n);
    let start = w * base + w.min(extra);
    let len = if w < n {
        base + usize::from(w < extra)
    } else {
        0
    };
    start.min(words)..(start + len).min(words)
}

/// The end of a run for one block, after its worker loop: the steps of the module docs when the
/// descriptor asks for them, nothing otherwise. Every thread of the block calls it.
///
/// # Safety
/// `desc` must be the launch's descriptor, with `finish`, `written`, `pristine`, `error`,
/// `error_out`, `done_out` and `abort` valid as [`RegionDesc`](crate::abi::RegionDesc) says when
/// `finish` is set; `worker` this block's worker and `words` its runtime words, after the loop.
/// Every worker of the launch must call it.
#[cfg(target_arch = "nvptx64")]
#[inline(never)]
pub unsafe fn finish_run(desc: &crate::abi::RegionDesc, worker: u32, words: &[AtomicU32]) {
    use crate::arch;
    use crate::atomic::Scope::Block;
    use crate::error::ErrorRecord;
    /// Where the leader hands the gate's answer to the block: free once the loop is over.
    const OPEN: usize = crate::words::FREED;
    if desc.finish == 0 {
        return;
    }
    // SAFETY: the caller vouches for `finish`: two words, only accessed atomically.
    let gate = unsafe { Gate::new(&*(desc.finish as *const [AtomicU32; 2]), desc.n_workers) };
    /// The leader's answers: leave, reset, or copy the record out first (the last to arrive,
    /// when a task claimed the record).
    const LEAVE: u32 = 0;
    const RESET: u32 = 1;
    const COPY: u32 = 2;
    // SAFETY: for `done` here and `error`/`error_out` below, the caller vouches for them.
    let done = || unsafe { (desc.done_out as *mut u32).write_volatile(1) };
    let (from, to) = (desc.error as *const u32, desc.error_out as *mut u32);
    if arch::thread_idx() == 0 {
        // SAFETY: `abort` is the launch's flag, only accessed atomically.
        let abort = unsafe { AtomicU32::from_ptr(desc.abort as *mut u32) };
        let aborted = || abort.load(Gpu, Relaxed) != 0;
        let step = if aborted() {
            LEAVE
        } else if gate.arrive() {
            // Every worker has arrived, so nobody writes the record now. Unclaimed (the common
            // case), only its `claimed` and `code` words go out: the host reads no other.
            // SAFETY: the record's first two words, and the same in the host's mapped memory.
            let claimed = unsafe { from.read_volatile() };
            if claimed == 0 {
                // SAFETY: as above.
                unsafe {
                    to.write_volatile(0);
                    to.add(1).write_volatile(crate::error::CODE_NONE);
                }
                gate.open();
                RESET
            } else {
                COPY
            }
        } else if gate.wait(aborted, || arch::nanosleep(64)) {
            RESET
        } else {
            LEAVE
        };
        // Past the gate, the block resets its share whatever happens: the last to leave can
        // say so before the copies are done (the host reads nothing before the kernel's end).
        if step == RESET && gate.leave() {
            done();
        }
        words[OPEN].store(step, Block, Relaxed);
    }
    arch::sync_threads();
    let step = words[OPEN].load(Block, Relaxed);
    if step == LEAVE {
        return;
    }
    if step == COPY {
        // A claimed record: the whole block copies it, a word per thread (one thread copying it
        // word by word waited for each load in turn, 14 us on the H100).
        let mut i = arch::thread_idx() as usize;
        while i < size_of::<ErrorRecord>() / 4 {
            // SAFETY: the record is the launch's, written by nobody now (every worker has
            // arrived, and the leader's acquire and the barrier order their writes before this);
            // `error_out` has room for one, in mapped host memory.
            unsafe { to.add(i).write_volatile(from.add(i).read_volatile()) };
            i += arch::block_dim() as usize;
        }
        // The loads are done once their stores are issued; the barrier puts them all before the
        // leader's release, so no worker resets the record under them.
        arch::sync_threads();
        if arch::thread_idx() == 0 {
            gate.open();
            if gate.leave() {
                done();
            }
        }
    }
    let mine = share((desc.written_bytes / 8) as usize, desc.n_workers, worker);
    let (to, from) = (desc.written as *mut u64, desc.pristine as *const u64);
    let mut i = mine.start + arch::thread_idx() as usize;
    while i < mine.end {
        // SAFETY: both tables hold `written_bytes` bytes, and every worker has left the loop, so
        // nobody else uses the written ones; the shares are disjoint.
        unsafe { to.add(i).write_volatile(from.add(i).read()) };
        i += arch::block_dim() as usize;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::{Gate, share};
    use crate::atomic::AtomicU32;
    use proptest::prelude::*;

    proptest! {
        // One case under Miri (scripts/miri.sh runs this crate's tests), and no failure files,
        // which Miri's isolation cannot write.
        #![proptest_config(proptest::test_runner::Config {
            cases: if cfg!(miri) { 1 } else { 256 },
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]
        #[test]
        fn the_shares_tile_the_words_in_order(words in 0usize..5000, workers in 1u32..600) {
            let mut next = 0;
            for w in 0..workers {
                let r = share(words, workers, w);
                prop_assert_eq!(r.start, next);
                prop_assert!(r.len() <= words / workers as usize + 1);
                next = r.end;
            }
            prop_assert_eq!(next, words);
            prop_assert!(share(words, workers, workers).is_empty());
        }
    }

    #[test]
    fn the_last_to_arrive_publishes_and_the_last_to_leave_rezeroes() {
        let words = [AtomicU32::new(0), AtomicU32::new(0)];
        let gate = Gate::new(&words, 3);
        assert!(!gate.arrive());
        assert!(!gate.arrive());
        // Not open until the last publishes: an aborted wait leaves.
        assert!(!gate.wait(|| true, || {}));
        assert!(gate.arrive());
        gate.open();
        assert!(gate.wait(|| true, || {}));
        assert!(!gate.leave());
        assert!(!gate.leave());
        assert!(gate.leave());
        let zero = crate::atomic::Ordering::Relaxed;
        let scope = crate::atomic::Scope::Gpu;
        assert_eq!(
            (words[0].load(scope, zero), words[1].load(scope, zero)),
            (0, 0)
        );
    }
}
