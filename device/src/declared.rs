//! What a task declared of one array: the ranges it may read and write, and where a thread notes
//! an access outside them. Views (`view`) index through it, and tile operands (`operand`) check
//! whole rectangles against it; it depends on neither.

use core::cell::Cell;
use core::ops::Range;

#[cfg(target_arch = "nvptx64")]
use crate::error::{self, CODE_OUT_OF_RANGE, Fault};

/// The declared ranges of one array for one task, plus the identity used in error reports.
#[derive(Clone, Copy, Debug)]
pub struct Declared<'a> {
    /// The ranges the task declared for this array (all accesses, reads and writes together).
    pub ranges: &'a [Range<usize>],
    /// The subset of `ranges` declared under `writes`.
    pub writes: &'a [Range<usize>],
    /// The array's slot in the region.
    pub slot: u32,
    /// The parameter name, for host panics.
    pub name: &'static str,
    /// The task's name, for host panics.
    pub task: &'static str,
    /// Where the calling thread notes a miss on the GPU.
    pub misses: &'a Misses,
}

/// The first access outside its declared ranges that a thread made during one task, on the GPU.
///
/// A miss in a task body only notes the slot and the index here, a few register moves. The task's
/// wrapper calls [`Misses::report`] after the body returns, which records the error: a call to
/// [`error::raise`](crate::error) from inside the body's loops would keep every value live there
/// in registers across the call, and a kernel's register count (which bounds how many blocks an
/// SM holds) is that of its worst path, checked or not. A body that panics after a miss reports
/// the panic instead.
#[derive(Debug, Default)]
pub struct Misses {
    slot: Cell<Option<u32>>,
    index: Cell<u64>,
    write: Cell<bool>,
}

impl Misses {
    /// No miss yet.
    pub const fn new() -> Self {
        Self {
            slot: Cell::new(None),
            index: Cell::new(0),
            write: Cell::new(false),
        }
    }

    /// Notes a miss at `index` of array `slot`, unless one is noted already.
    #[inline(always)]
    pub fn note(&self, slot: u32, index: usize, write: bool) {
        if self.slot.get().is_none() {
            self.slot.set(Some(slot));
            self.index.set(index as u64);
            self.write.set(write);
        }
    }

    /// Records the noted miss, if any, as the running task's error (see [`crate::error`]).
    #[inline(always)]
    pub fn report(&self) {
        if let Some(slot) = self.slot.get() {
            raise_miss(slot, self.index.get(), self.write.get());
        }
    }
}

/// Records an out-of-range access at `index` of array `slot` for the running task.
#[cold]
#[inline(never)]
fn raise_miss(slot: u32, index: u64, write: bool) {
    #[cfg(target_arch = "nvptx64")]
    error::raise(Fault {
        // The record's `array` slot and `index` say which access; the kind is in the message.
        code: CODE_OUT_OF_RANGE,
        array: slot,
        index,
        location: None,
        message: Some(if write {
            "write outside declared ranges"
        } else {
            "read outside declared ranges"
        }),
    });
    // On the host a miss panics at the access; nothing is ever noted.
    #[cfg(not(target_arch = "nvptx64"))]
    let _ = (slot, index, write);
}

impl Declared<'_> {
    #[inline(always)]
    pub(crate) fn contains(ranges: &[Range<usize>], i: usize) -> bool {
        // On the GPU the bounds are read where they are checked, from the task's range arrays in
        // local memory (L1): kept in registers they would be live across the whole task body, and
        // a kernel's register count, which sets how many blocks fit on an SM, is its worst path's.
        #[cfg(target_arch = "nvptx64")]
        return ranges.iter().any(|r| {
            // SAFETY: `r` is a valid reference; a volatile read only keeps the load in place.
            let (start, end) = unsafe {
                (
                    core::ptr::read_volatile(&r.start),
                    core::ptr::read_volatile(&r.end),
                )
            };
            start <= i && i < end
        });
        #[cfg(not(target_arch = "nvptx64"))]
        return ranges.iter().any(|r| r.start <= i && i < r.end);
    }

    /// Reports an access at `i` outside the declared ranges: a panic on the host, a note in
    /// [`Misses`] on the GPU.
    #[inline(always)]
    pub(crate) fn miss(&self, i: usize, write: bool) {
        #[cfg(not(target_arch = "nvptx64"))]
        self.panic(i, write);
        #[cfg(target_arch = "nvptx64")]
        self.misses.note(self.slot, i, write);
    }

    #[cfg(not(target_arch = "nvptx64"))]
    #[cold]
    #[inline(never)]
    fn panic(&self, i: usize, write: bool) {
        std::panic!(
            "task `{}`: {} index {i} of array `{}` is outside its declared {} ranges {:?}",
            self.task,
            if write { "write at" } else { "read at" },
            self.name,
            if write { "write" } else { "access" },
            if write { self.writes } else { self.ranges }
        );
    }
}
