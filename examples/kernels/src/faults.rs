//! Tasks that fail on purpose, for the reliability checks (`faults` program and tests): a panic, an
//! access outside the declared ranges, and a task that outlives the watchdog.

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
}

/// Marks `x[i]`; task `victim` misbehaves as `how` says.
#[task(writes = x[i..i + 1])]
pub fn step(b: &Block, x: &mut [u32], i: usize, victim: usize, how: u32, arg: u64) {
    let last = x.len() - 1;
    if i == victim && b.thread() == 0 {
        match how {
            mode::PANIC => panic!("deliberate failure"),
            mode::STRAY_WRITE => x[last] = 7,
            mode::STRAY_READ => x[i] = x[last],
            mode::SLOW => {
                let start = taskweave::__private::device::arch::global_timer_ns();
                while taskweave::__private::device::arch::global_timer_ns() - start < arg {}
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
