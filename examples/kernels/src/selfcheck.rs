//! Kernels of the GPU self-check (`cargo run --bin selfcheck`): each exercises one group of calls of
//! the device layer and writes what it saw for the host to assert.
//!
//! Layouts of the output buffers are given per kernel; the host side is `examples/src/bin/selfcheck.rs`.

#[cfg(target_arch = "nvptx64")]
mod kernels {
    use taskweave::__private::device::arch;
    use taskweave::__private::device::atomic::{AtomicU32, Ordering::*, Scope::*, fence};
    use taskweave::__private::device::shared;

    /// Words of payload the producer writes before each flag.
    const PAYLOAD: usize = 32;

    /// Message passing between block 0 (producer) and block 1 (consumer), `rounds` times.
    ///
    /// `data`: `PAYLOAD` words; `flags`: [flag, ack]; `errors`: [mismatches, rounds seen].
    /// Each round the producer writes the round number into every payload word with plain stores,
    /// publishes it with a GPU-scope release store of the flag, and waits for the ack. The consumer
    /// acquires the flag and counts payload words that are not the round number.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn selfcheck_message_passing(
        data: *mut u32,
        flags: *mut u32,
        errors: *mut u32,
        rounds: u32,
    ) {
        // SAFETY: the host passes buffers of the documented sizes.
        let (flag, ack, bad, seen) = unsafe {
            (
                AtomicU32::from_ptr(flags),
                AtomicU32::from_ptr(flags.add(1)),
                AtomicU32::from_ptr(errors),
                AtomicU32::from_ptr(errors.add(1)),
            )
        };
        let tid = arch::thread_idx() as usize;
        for round in 1..=rounds {
            if arch::block_idx() == 0 {
                if tid < PAYLOAD {
                    // SAFETY: `tid < PAYLOAD`; only this block writes `data`, between acks.
                    unsafe { data.add(tid).write_volatile(round) };
                }
                arch::sync_threads();
                if tid == 0 {
                    flag.store(round, Gpu, Release);
                    while ack.load(Gpu, Acquire) != round {}
                }
                arch::sync_threads();
            } else {
                if tid == 0 {
                    while flag.load(Gpu, Acquire) != round {}
                }
                arch::sync_threads();
                if tid < PAYLOAD {
                    // SAFETY: as above; the producer does not write until our ack.
                    if unsafe { data.add(tid).read_volatile() } != round {
                        bad.fetch_add(1, Gpu, Relaxed);
                    }
                }
                arch::sync_threads();
                if tid == 0 {
                    seen.fetch_add(1, Gpu, Relaxed);
                    ack.store(round, Gpu, Release);
                }
            }
        }
    }

    /// Identity and timers, per block: `out[8 * block ..]` =
    /// [smid, nsmid, block_idx, grid_dim, block_dim, timer_monotonic, clock_monotonic, slept_ns].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn selfcheck_identity(out: *mut u64, sleep_ns: u32) {
        if arch::thread_idx() != 0 {
            return;
        }
        let mut monotonic = 1u64;
        let mut clock_monotonic = 1u64;
        let mut last = arch::global_timer_ns();
        let mut last_clock = arch::clock64();
        for _ in 0..1000 {
            let now = arch::global_timer_ns();
            let clock = arch::clock64();
            monotonic &= u64::from(now >= last);
            clock_monotonic &= u64::from(clock >= last_clock);
            last = now;
            last_clock = clock;
        }
        let before = arch::global_timer_ns();
        arch::nanosleep(sleep_ns);
        let slept = arch::global_timer_ns() - before;
        let values = [
            u64::from(arch::sm_id()),
            u64::from(arch::sm_count()),
            u64::from(arch::block_idx()),
            u64::from(arch::grid_dim()),
            u64::from(arch::block_dim()),
            monotonic,
            clock_monotonic,
            slept,
        ];
        for (i, v) in values.into_iter().enumerate() {
            // SAFETY: the host allocates 8 words per block.
            unsafe { out.add(8 * arch::block_idx() as usize + i).write(v) };
        }
    }

    /// Shared memory and warp operations, one block. Per thread `t`, `out[6 * t ..]` =
    /// [static shared of thread t+1, dynamic shared of thread t-1, ballot of even threads,
    ///  lane 0's value by shuffle, thread t+1's value by shuffle-down, the block-wide atomic sum].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn selfcheck_shared(out: *mut u32) {
        let tid = arch::thread_idx();
        let n = arch::block_dim();
        let words = shared::runtime_words();
        let (dynamic, bytes) = shared::dynamic();
        let dynamic = dynamic.cast::<u32>();
        let sum = if tid == 0 { 0 } else { 1 };
        let _ = sum;
        // SAFETY: the static buffer has RUNTIME_WORDS >= 256 >= n words; the host launches with
        // 4 * n bytes of dynamic shared memory.
        unsafe {
            assert!(bytes >= 4 * n as usize);
            words.add(tid as usize).write_volatile(tid * 3);
            dynamic.add(tid as usize).write_volatile(tid * 5);
            if tid == 0 {
                words.add(n as usize).write_volatile(0);
            }
        }
        arch::sync_threads();
        // SAFETY: word `n` of the static buffer is the block-wide counter.
        let counter = unsafe { AtomicU32::from_ptr(words.add(n as usize)) };
        counter.fetch_add(tid, Block, Relaxed);
        fence(Block);
        let ballot = arch::warp_ballot(tid % 2 == 0);
        let broadcast = arch::shfl_idx(tid, 0);
        let down = arch::shfl_down(tid, 1);
        arch::sync_threads();
        // SAFETY: indices below `n`; `out` has 6 words per thread.
        unsafe {
            let right = words.add(((tid + 1) % n) as usize).read_volatile();
            let left = dynamic.add(((tid + n - 1) % n) as usize).read_volatile();
            let total = counter.load(Block, Relaxed);
            for (i, v) in [right, left, ballot, broadcast, down, total]
                .into_iter()
                .enumerate()
            {
                out.add(6 * tid as usize + i).write(v);
            }
        }
    }

    /// Atomics at each scope, from every thread of every block: `out` = [add, max, exchanges, cas].
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn selfcheck_atomics(out: *mut u32) {
        let global = arch::block_idx() * arch::block_dim() + arch::thread_idx();
        // SAFETY: the host allocates 4 zeroed words.
        let (add, max, xchg, cas) = unsafe {
            (
                AtomicU32::from_ptr(out),
                AtomicU32::from_ptr(out.add(1)),
                AtomicU32::from_ptr(out.add(2)),
                AtomicU32::from_ptr(out.add(3)),
            )
        };
        add.fetch_add(1, Gpu, Relaxed);
        add.fetch_add(1, System, AcqRel);
        max.fetch_max(global, Gpu, Release);
        xchg.swap(1, Gpu, Acquire);
        // Each thread increments `cas` once with a compare-and-swap loop.
        let mut current = cas.load(Gpu, Relaxed);
        loop {
            let seen = cas.compare_swap(current, current + 1, Gpu, AcqRel);
            if seen == current {
                break;
            }
            current = seen;
        }
        fence(Gpu);
        fence(System);
    }

    /// Thread 5 of block 0 panics when `trigger == 7`; every thread then meets at a barrier, which
    /// must not hang although thread 5 has exited. `out[block] = 1` proves each block finished.
    /// The panic lands in `record` and raises `abort`.
    #[unsafe(no_mangle)]
    pub unsafe extern "ptx-kernel" fn selfcheck_panic(
        trigger: u32,
        out: *mut u32,
        record: *mut taskweave::__private::device::error::ErrorRecord,
        abort: *mut u32,
    ) {
        // SAFETY: the host passes a zeroed record and flag that live for the launch.
        unsafe { taskweave::__private::device::error::bind(record, abort) };
        if arch::block_idx() == 0 && arch::thread_idx() == 5 && trigger == 7 {
            panic!("selfcheck panic");
        }
        arch::sync_threads();
        if arch::thread_idx() == 0 {
            // SAFETY: one word per block.
            unsafe { out.add(arch::block_idx() as usize).write(1) };
        }
    }
}
