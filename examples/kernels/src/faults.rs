//! Tasks that fail on purpose, for the reliability checks (`faults` program and tests): a panic, an
//! access outside the declared ranges, a task that outlives the watchdog or never returns, a trap
//! and an illegal address; a region whose failing task has dependents; and a one-task region over a whole array,
//! for regions too large for the device.

use taskweave::{Block, task, task_region};

/// What the faulty task `victim` does.
pub mod mode {
    /// Panics with a plain message.
    pub const PANIC: u32 = 1;
    /// Writes the array's last element, which it did not declare.
    pub const STRAY_WRITE: u32 = 2;
    /// Reads the array's last element, which it did not declare (and no task writes).
    pub const STRAY_READ: u32 = 3;
    /// Spins for `arg` nanoseconds (`%globaltimer`).
    pub const SLOW: u32 = 4;
    /// Executes `trap` on the GPU (a panic on the host), which loses the CUDA context.
    pub const TRAP: u32 = 5;
    /// Writes to the address `arg` on the GPU (a panic on the host): an illegal address.
    pub const WILD: u32 = 6;
    /// Panics with a plain message when its element is odd: a plan whose calls fail or not
    /// depending on the data.
    pub const PANIC_IF_ODD: u32 = 7;
    /// Never returns, and polls nothing: what no watchdog abort can stop.
    pub const FOREVER: u32 = 8;
}

/// Marks `x[i]`; task `victim` misbehaves as `how` says.
#[task(writes = x[i..i + 1])]
pub fn step(b: &Block, x: &mut [u32], i: usize, victim: usize, how: u32, arg: u64) {
    let last = x.len() - 1;
    if i == victim && b.thread() == 0 {
        match how {
            mode::PANIC => panic!("deliberate failure"),
            mode::PANIC_IF_ODD if x[i] % 2 == 1 => panic!("deliberate failure"),
            mode::STRAY_WRITE => x[last] = 7,
            mode::STRAY_READ => x[i] = x[last],
            mode::SLOW => {
                let start = taskweave::__private::device::arch::global_timer_ns();
                while taskweave::__private::device::arch::global_timer_ns() - start < arg {}
            }
            // `arg` is never reached: the timer runs for centuries first.
            mode::FOREVER => {
                while taskweave::__private::device::arch::global_timer_ns() != u64::MAX - arg {}
            }
            #[cfg(target_arch = "nvptx64")]
            mode::TRAP => taskweave::__private::device::arch::trap(),
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: unsound on purpose: this wild write is the fault under test; the GPU's memory
            // protection stops it and the driver reports it.
            mode::WILD => unsafe {
                core::ptr::write_volatile(
                    core::ptr::with_exposed_provenance_mut::<u32>(arg as usize),
                    1,
                )
            },
            #[cfg(not(target_arch = "nvptx64"))]
            mode::TRAP | mode::WILD => {
                panic!("a trap or an illegal address, as far as the host goes")
            }
            _ => {}
        }
    }
    b.sync();
    if b.thread() == 0 {
        x[i] += 1;
    }
}

task_region! {
    /// `x.len() - 1` independent steps (the last element stays free for stray accesses), of which
    /// `victim` misbehaves.
    pub fn faulty(x: &mut [u32], victim: usize, how: u32, arg: u64) {
        for i in 0..x.len() - 1 {
            spawn!(step(x, i, victim, how, arg));
        }
    }
}

/// `x[i] = x[0] + i`: a dependent of the task that writes `x[0]`.
#[task(reads = x[0..1], writes = x[i..i + 1])]
pub fn after(b: &Block, x: &mut [u32], i: usize) {
    if b.thread() == 0 {
        x[i] = x[0] + i as u32;
    }
}

task_region! {
    /// Task 0 steps `x[0]`, misbehaving as `how` says; every other element waits for it. Under the
    /// static policy the dependents sit in the lists of many workers, waiting on its counter.
    pub fn faulty_fan(x: &mut [u32], how: u32, arg: u64) {
        spawn!(step(x, 0, 0, how, arg));
        for i in 1..x.len() {
            spawn!(after(x, i));
        }
    }
}

/// `x[0] += 1`, declaring nothing: the whole array is inferred as read and written.
#[task]
pub fn touch(b: &Block, x: &mut [u32]) {
    if b.thread() == 0 && !x.is_empty() {
        x[0] += 1;
    }
    b.sync();
}

task_region! {
    /// One task over all of `x`: the smallest region whose device memory is the array's size.
    pub fn touch_all(x: &mut [u32]) {
        spawn!(touch(x));
    }
}
