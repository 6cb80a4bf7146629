//! The error record a failing kernel leaves for the host.
//!
//! 1. A task that panics, or indexes outside its declared ranges in checked mode, calls [`raise`].
//! 2. The first caller on the GPU claims its region's record (each launch has its own, bound to the
//!    block by [`bind`] at kernel entry), fills it in (code, task, worker, thread, source location,
//!    message) and raises the region's abort flag, which every worker polls between tasks and while
//!    idle.
//! 3. The panicking thread then exits (`exit`, not `trap`): the kernel ends normally, the CUDA
//!    context stays usable, and the host reads the record and turns it into an error naming the
//!    task.
//!
//! The record and the flag belong to the launch, not to the module: two regions of one module can
//! run at once on different streams, and a fault in one neither stops nor blames the other.
//!
//! On the host, `raise` panics with the same information; the CPU backend catches the panic.

#[cfg(target_arch = "nvptx64")]
use crate::atomic::{AtomicU32, Ordering, Scope};

/// No error.
pub const CODE_NONE: u32 = 0;
/// A task body panicked (including `core`'s own checks, such as slice bounds).
pub const CODE_PANIC: u32 = 1;
/// A checked view was indexed outside every range its task declared.
pub const CODE_OUT_OF_RANGE: u32 = 2;
/// The host's watchdog asked the workers to stop.
pub const CODE_ABORTED: u32 = 3;
/// A worker queue overflowed (a runtime bug: queues are sized for every task).
pub const CODE_QUEUE_OVERFLOW: u32 = 4;

/// Bytes kept of the source file name and of the message.
pub const TEXT_BYTES: usize = 96;

/// What went wrong, where, and in which task. `#[repr(C)]`: the host reads it byte for byte.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ErrorRecord {
    /// Set to 1 by the first thread to claim the record.
    pub claimed: u32,
    /// One of the `CODE_*` constants.
    pub code: u32,
    /// Index of the failing task in the region, or `u32::MAX` outside a task.
    pub task: u32,
    /// The worker (block) that ran it.
    pub worker: u32,
    /// The thread in that block.
    pub thread: u32,
    /// For [`CODE_OUT_OF_RANGE`]: the array's slot in the region.
    pub array: u32,
    /// For [`CODE_OUT_OF_RANGE`]: the offending index.
    pub index: u64,
    /// Source line of the panic.
    pub line: u32,
    /// Source column of the panic.
    pub column: u32,
    /// Source file, NUL-padded.
    pub file: [u8; TEXT_BYTES],
    /// Panic message when it was a plain string, NUL-padded.
    pub message: [u8; TEXT_BYTES],
}

impl ErrorRecord {
    /// An empty record.
    pub const EMPTY: Self = Self {
        claimed: 0,
        code: CODE_NONE,
        task: u32::MAX,
        worker: 0,
        thread: 0,
        array: u32::MAX,
        index: 0,
        line: 0,
        column: 0,
        file: [0; TEXT_BYTES],
        message: [0; TEXT_BYTES],
    };

    /// `text` as stored: the bytes up to the first NUL.
    pub fn text(bytes: &[u8; TEXT_BYTES]) -> &str {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(TEXT_BYTES);
        match core::str::from_utf8(&bytes[..end]) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

/// Copies `text` into a NUL-padded buffer, cut at a character boundary.
pub fn store_text(buf: &mut [u8; TEXT_BYTES], text: &str) {
    let mut end = text.len().min(TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    // Element by element, not `buf[..end].copy_from_slice(..)`: the slice bounds checks would make
    // core's integer formatting reachable from every kernel's panic path, and ptxas sizes a
    // kernel's registers for everything it can call (54 registers for `Display for u64`).
    for (dst, &src) in buf.iter_mut().zip(text.as_bytes()).take(end) {
        *dst = src;
    }
}

/// Binds the calling block to its launch's error record and abort flag, which [`raise`] uses.
/// Every thread of the block calls it at kernel entry, before any task runs; it ends with a block
/// barrier.
///
/// # Safety
/// `record` must point to an [`ErrorRecord`] and `abort` to a `u32`, both in device memory, live
/// for the whole launch and written only atomically (`claimed`, `code`, the flag) or by the thread
/// that claimed the record.
#[cfg(target_arch = "nvptx64")]
pub unsafe fn bind(record: *mut ErrorRecord, abort: *mut u32) {
    if crate::arch::thread_idx() == 0 {
        let words = crate::shared::runtime_words();
        // SAFETY: the runtime words are this block's shared memory, `RUNTIME_WORDS` long and
        // 16-aligned; `ERROR` and `ABORT` are even, so each pair holds an aligned `u64`.
        unsafe {
            words
                .add(crate::words::ERROR)
                .cast::<u64>()
                .write(record as u64);
            words
                .add(crate::words::ABORT)
                .cast::<u64>()
                .write(abort as u64);
        }
    }
    crate::arch::sync_threads();
}

/// The record and flag [`bind`] installed for the calling block.
#[cfg(target_arch = "nvptx64")]
fn bound() -> (*mut ErrorRecord, *mut u32) {
    let words = crate::shared::runtime_words();
    // SAFETY: written by `bind` before any task ran, never changed afterwards.
    unsafe {
        (
            words.add(crate::words::ERROR).cast::<u64>().read() as *mut ErrorRecord,
            words.add(crate::words::ABORT).cast::<u64>().read() as *mut u32,
        )
    }
}

/// What [`raise`] reports.
#[derive(Clone, Copy, Debug)]
pub struct Fault<'a> {
    /// One of the `CODE_*` constants.
    pub code: u32,
    /// The array slot, for out-of-range accesses.
    pub array: u32,
    /// The offending index, for out-of-range accesses.
    pub index: u64,
    /// Source location, when known.
    pub location: Option<&'a core::panic::Location<'a>>,
    /// A plain message, when there is one.
    pub message: Option<&'a str>,
}

/// Records `fault` for the task the calling block is running, and asks all workers to stop.
///
/// On the GPU this returns: the caller decides whether to exit the thread. On the host it panics.
#[cfg(target_arch = "nvptx64")]
pub fn raise(fault: Fault<'_>) {
    let task = crate::words::current_task();
    let (record, abort) = bound();
    if record.is_null() || abort.is_null() {
        // A kernel that never called `bind` has nowhere to report: trapping at least surfaces
        // the fault as a lost context rather than a silent wrong result.
        crate::arch::trap();
    }
    // SAFETY: `bind`'s contract: `record` is this launch's record; `claimed` is only accessed
    // atomically, and the thread that wins the claim is the only writer of the other fields. The
    // host reads them after the kernel ends.
    unsafe {
        let claimed = AtomicU32::from_ptr(&raw mut (*record).claimed);
        if claimed.swap(1, Scope::Gpu, Ordering::Relaxed) == 0 {
            (*record).task = task;
            (*record).worker = crate::arch::block_idx();
            (*record).thread = crate::arch::thread_idx();
            (*record).array = fault.array;
            (*record).index = fault.index;
            if let Some(loc) = fault.location {
                (*record).line = loc.line();
                (*record).column = loc.column();
                store_text(&mut (*record).file, loc.file());
            }
            if let Some(msg) = fault.message {
                store_text(&mut (*record).message, msg);
            }
            AtomicU32::from_ptr(&raw mut (*record).code).store(
                fault.code,
                Scope::Gpu,
                Ordering::Release,
            );
        }
    }
    // Publishes the abort to every worker; they poll it with relaxed loads.
    // SAFETY: `bind`'s contract: a live `u32` of this launch, written only atomically.
    unsafe { AtomicU32::from_ptr(abort) }.store(1, Scope::Gpu, Ordering::Release);
}

/// On the host a fault is a panic, caught by the CPU backend and turned into an error.
#[cfg(not(target_arch = "nvptx64"))]
pub fn raise(fault: Fault<'_>) {
    match (fault.code, fault.message) {
        (CODE_OUT_OF_RANGE, _) => {
            std::panic!(
                "index {} of array slot {} is outside the task's declared ranges",
                fault.index,
                fault.array
            )
        }
        (_, Some(msg)) => std::panic!("{msg}"),
        (code, None) => std::panic!("task fault (code {code})"),
    }
}

/// The GPU panic handler: records the panic, raises the abort flag and ends the thread.
///
/// Before the thread exits it also tells its own block to stop (the block's current-task word
/// becomes `ABORT`): if the panicking thread was the block's leader, nobody else would ever hand
/// the other threads a new task, and they would run the same one again and again.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(info: &core::panic::PanicInfo<'_>) -> ! {
    raise(Fault {
        code: CODE_PANIC,
        array: u32::MAX,
        index: 0,
        location: info.location(),
        message: info.message().as_str(),
    });
    // SAFETY: the runtime words are this block's shared memory; the word is only accessed
    // atomically.
    let current =
        unsafe { AtomicU32::from_ptr(crate::shared::runtime_words().add(crate::words::CURRENT)) };
    current.store(
        crate::words::command::ABORT,
        Scope::Block,
        Ordering::Relaxed,
    );
    crate::arch::exit_thread()
}
