//! Operands of tile operations: rectangles of region arrays, checked once when they are made.
//!
//! 1. A [`Rect`] names `rows × cols` elements of an array, row `r` starting at
//!    `offset + r * ld` (row-major with a leading dimension, as BLAS's row-major convention).
//! 2. A task body turns a view and a rectangle into an operand handle:
//!    [`View::mat`](crate::View::mat) or [`ViewMut::mat`](crate::ViewMut::mat) for a read
//!    operand ([`MatRef`]), [`ViewMut::mat_mut`](crate::ViewMut::mat_mut) for a written one
//!    ([`MatMut`]), and [`ViewMut::operands`](crate::ViewMut::operands) when one array gives
//!    several operands, read and written (a Cholesky update reads two tiles of `a` and writes a
//!    third). The handles borrow the view, so no reference into the array from indexing it can
//!    be alive while an operation writes through a handle.
//! 3. In checked mode the whole rectangle is checked when the handle is made: a read rectangle
//!    against every declared range of the array, a written one against the write ranges. On the
//!    host a miss panics naming the task, the array, the rectangle and the ranges. On the GPU it
//!    is noted in the task's [`Misses`](crate::declared::Misses), as an indexing miss is (the task then
//!    ends with the error), and the handle is marked failed: every operation given a failed
//!    handle does nothing. Inside the operation accesses are unchecked. In both modes a rectangle
//!    that runs past its array's end is refused with a panic.
//! 4. An operation that writes one operand and reads another (all but the in-place ones) refuses,
//!    in checked mode, an output that overlaps an input, with a panic.

use core::marker::PhantomData;
use core::ops::Range;

use crate::declared::Declared;

/// `rows × cols` elements of an array, row `r` starting at `offset + r * ld`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    /// Index of element `(0, 0)` in the array.
    pub offset: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements from one row's start to the next's.
    pub ld: usize,
}

impl Rect {
    /// `rows × cols` at `offset`, rows `ld` apart.
    pub const fn new(offset: usize, rows: usize, cols: usize, ld: usize) -> Self {
        Self {
            offset,
            rows,
            cols,
            ld,
        }
    }

    /// A contiguous, row-major `n × n` tile at `offset` (`ld = n`).
    pub const fn square(offset: usize, n: usize) -> Self {
        Self::new(offset, n, n, n)
    }

    /// The `rows × cols` block at `(row, col)` of this rectangle.
    pub const fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> Self {
        Self::new(self.offset + row * self.ld + col, rows, cols, self.ld)
    }

    /// One past the last element (`offset` when empty).
    pub const fn end(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            self.offset
        } else {
            self.offset + (self.rows - 1) * self.ld + self.cols
        }
    }

    /// `true` when the rectangles share an element (exact, row by row).
    pub fn overlaps(&self, other: &Rect) -> bool {
        if self.rows == 0 || self.cols == 0 || other.rows == 0 || other.cols == 0 {
            return false;
        }
        if self.end() <= other.offset || other.end() <= self.offset {
            return false;
        }
        (0..self.rows).any(|r| {
            let (lo, hi) = (
                self.offset + r * self.ld,
                self.offset + r * self.ld + self.cols,
            );
            // Rows `q` of `other` with `other.offset + q * ld < hi` and
            // `other.offset + q * ld + cols > lo`.
            let ld = other.ld.max(1);
            let first = (lo + 1)
                .saturating_sub(other.offset + other.cols)
                .div_ceil(ld);
            let last = hi.saturating_sub(other.offset).div_ceil(ld).min(other.rows);
            first < last
        })
    }

    /// The first element of the rectangle outside the union of `ranges`, if any.
    pub fn first_uncovered(&self, ranges: &[Range<usize>]) -> Option<usize> {
        if self.rows == 0 || self.cols == 0 {
            return None;
        }
        // The common case: one range holds the whole span.
        if ranges
            .iter()
            .any(|r| r.start <= self.offset && self.end() <= r.end)
        {
            return None;
        }
        (0..self.rows).find_map(|row| {
            let (mut at, end) = (
                self.offset + row * self.ld,
                self.offset + row * self.ld + self.cols,
            );
            while at < end {
                match ranges
                    .iter()
                    .filter(|r| r.start <= at && at < r.end)
                    .map(|r| r.end)
                    .max()
                {
                    Some(next) => at = next,
                    None => return Some(at),
                }
            }
            None
        })
    }
}

/// A read operand: a rectangle of an array, checked against the task's declared ranges.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a, T, const CHECKED: bool = true> {
    pub(crate) array: *const T,
    pub(crate) rect: Rect,
    pub(crate) ok: bool,
    _marker: PhantomData<&'a [T]>,
}

/// A written operand: a rectangle of an array, checked against the task's declared write ranges.
#[derive(Clone, Copy, Debug)]
pub struct MatMut<'a, T, const CHECKED: bool = true> {
    pub(crate) array: *mut T,
    pub(crate) rect: Rect,
    pub(crate) ok: bool,
    _marker: PhantomData<&'a mut [T]>,
}

impl<'a, T, const CHECKED: bool> MatRef<'a, T, CHECKED> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rect.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.rect.cols
    }
    /// The rectangle.
    pub fn rect(&self) -> Rect {
        self.rect
    }
    /// `false` when its check failed on the GPU (operations then do nothing).
    pub fn is_ok(&self) -> bool {
        self.ok
    }
    /// Element `(0, 0)`.
    pub fn ptr(&self) -> *const T {
        self.array.wrapping_add(self.rect.offset)
    }
    /// The `rows × cols` block at `(row, col)` of this operand, which must hold it: checked as
    /// this one was, since it lies inside it.
    #[inline(always)]
    pub fn sub(&self, row: usize, col: usize, rows: usize, cols: usize) -> Self {
        assert!(
            row + rows <= self.rect.rows && col + cols <= self.rect.cols,
            "a sub-block outside its operand"
        );
        Self {
            rect: self.rect.sub(row, col, rows, cols),
            ..*self
        }
    }
}

impl<'a, T, const CHECKED: bool> MatMut<'a, T, CHECKED> {
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rect.rows
    }
    /// Columns.
    pub fn cols(&self) -> usize {
        self.rect.cols
    }
    /// The rectangle.
    pub fn rect(&self) -> Rect {
        self.rect
    }
    /// `false` when its check failed on the GPU (operations then do nothing).
    pub fn is_ok(&self) -> bool {
        self.ok
    }
    /// The same rectangle as a read operand.
    pub fn as_ref(&self) -> MatRef<'_, T, CHECKED> {
        MatRef {
            array: self.array,
            rect: self.rect,
            ok: self.ok,
            _marker: PhantomData,
        }
    }
    /// Element `(0, 0)`.
    pub fn ptr(&self) -> *mut T {
        self.array.wrapping_add(self.rect.offset)
    }
    /// `true` when `other` shares an element with this operand.
    pub fn overlaps<const C: bool>(&self, other: &MatRef<'_, T, C>) -> bool {
        core::ptr::eq(self.array.cast_const(), other.array) && self.rect.overlaps(&other.rect)
    }
    /// The `rows × cols` block at `(row, col)` of this operand, which must hold it: checked as
    /// this one was, since it lies inside it. Taking it consumes the operand, so that two
    /// written blocks of one operand are not live at once.
    #[inline(always)]
    pub fn into_sub(self, row: usize, col: usize, rows: usize, cols: usize) -> Self {
        assert!(
            row + rows <= self.rect.rows && col + cols <= self.rect.cols,
            "a sub-block outside its operand"
        );
        Self {
            rect: self.rect.sub(row, col, rows, cols),
            ..self
        }
    }
}

/// Checks `rect` of an array of `len` elements for a task (see the module docs) and says whether
/// the operation may use it.
///
/// Inline, with the common case first: one declared range holds the operand's whole span, as for
/// every tile of a tile-major matrix. Out of line, every operand paid a call that read the
/// task's declared ranges back through memory, and every task kind of the factorizations ran
/// 1–5 µs longer with checks on (bench/results/checked-cost-h200/); inline, the common case
/// works on the ranges the task has just computed (bench/results/check-inline-h200/). A
/// rectangle that needs the row-by-row walk, or misses, takes the cold path.
#[inline(always)]
pub(crate) fn check<const CHECKED: bool>(
    declared: &Declared<'_>,
    len: usize,
    rect: Rect,
    write: bool,
) -> bool {
    if rect.rows > 0
        && rect.cols > 0
        && (rect.end() > len || (rect.rows > 1 && rect.cols > rect.ld))
    {
        out_of_bounds(declared, len, rect);
    }
    if !CHECKED {
        return true;
    }
    let ranges = if write {
        declared.writes
    } else {
        declared.ranges
    };
    if rect.rows == 0
        || rect.cols == 0
        || ranges
            .iter()
            .any(|r| r.start <= rect.offset && rect.end() <= r.end)
    {
        return true;
    }
    uncovered(declared, rect, ranges, write)
}

/// [`check`] of a rectangle that no single declared range holds: walked row by row.
#[cold]
#[inline(never)]
fn uncovered(declared: &Declared<'_>, rect: Rect, ranges: &[Range<usize>], write: bool) -> bool {
    match rect.first_uncovered(ranges) {
        None => true,
        Some(at) => {
            miss(declared, rect, at, write);
            false
        }
    }
}

#[cold]
#[inline(never)]
fn out_of_bounds(declared: &Declared<'_>, len: usize, rect: Rect) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (declared, len, rect);
        panic!("tile operand runs past its array's end, or has more columns than its `ld`");
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::panic!(
        "task `{}`: tile operand {}x{} at offset {} (ld {}) of array `{}` runs past its end ({len} elements) or has more columns than its `ld`",
        declared.task,
        rect.rows,
        rect.cols,
        rect.offset,
        rect.ld,
        declared.name
    );
}

#[cold]
#[inline(never)]
fn miss(declared: &Declared<'_>, rect: Rect, at: usize, write: bool) {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = rect;
        declared.misses.note(declared.slot, at, write);
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::panic!(
        "task `{}`: tile operand {}x{} at offset {} (ld {}) of array `{}` is outside its declared {} ranges {:?} (element {at} is not covered)",
        declared.task,
        rect.rows,
        rect.cols,
        rect.offset,
        rect.ld,
        declared.name,
        if write { "write" } else { "access" },
        if write {
            declared.writes
        } else {
            declared.ranges
        }
    );
}

/// Makes operand handles from one writable array, read and written alike (see the module docs).
pub struct Operands<'a, T, const CHECKED: bool> {
    ptr: *mut T,
    len: usize,
    declared: Declared<'a>,
    _marker: PhantomData<&'a mut [T]>,
}

impl<'a, T, const CHECKED: bool> Operands<'a, T, CHECKED> {
    /// The operands of `len` elements at `ptr`, as `declared`.
    ///
    /// # Safety
    /// `ptr..ptr + len` is valid for reads and writes for `'a`, and nothing else reaches it.
    pub(crate) unsafe fn new(ptr: *mut T, len: usize, declared: Declared<'a>) -> Self {
        Self {
            ptr,
            len,
            declared,
            _marker: PhantomData,
        }
    }

    /// `rect` as a read operand.
    #[inline(always)]
    pub fn mat(&self, rect: Rect) -> MatRef<'_, T, CHECKED> {
        MatRef {
            array: self.ptr,
            rect,
            ok: check::<CHECKED>(&self.declared, self.len, rect, false),
            _marker: PhantomData,
        }
    }

    /// `rect` as a written operand.
    #[inline(always)]
    pub fn mat_mut(&self, rect: Rect) -> MatMut<'_, T, CHECKED> {
        MatMut {
            array: self.ptr,
            rect,
            ok: check::<CHECKED>(&self.declared, self.len, rect, true),
            _marker: PhantomData,
        }
    }
}

/// A read operand over `ptr` (for [`View`](crate::View) and [`ViewMut`](crate::ViewMut)).
#[inline(always)]
pub(crate) fn mat_ref<'a, T, const CHECKED: bool>(
    ptr: *const T,
    len: usize,
    declared: &Declared<'_>,
    rect: Rect,
) -> MatRef<'a, T, CHECKED> {
    MatRef {
        array: ptr,
        rect,
        ok: check::<CHECKED>(declared, len, rect, false),
        _marker: PhantomData,
    }
}

/// A written operand over `ptr` (for [`ViewMut`](crate::ViewMut)).
#[inline(always)]
pub(crate) fn mat_mut<'a, T, const CHECKED: bool>(
    ptr: *mut T,
    len: usize,
    declared: &Declared<'_>,
    rect: Rect,
) -> MatMut<'a, T, CHECKED> {
    MatMut {
        array: ptr,
        rect,
        ok: check::<CHECKED>(declared, len, rect, true),
        _marker: PhantomData,
    }
}

/// Operands over host slices, checked against the whole slice (tests, host code).
#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    use super::{MatMut, MatRef, PhantomData, Rect};

    /// `rect` of `data` as a read operand. Panics when it runs past the end.
    pub fn mat<T>(data: &[T], rect: Rect) -> MatRef<'_, T, true> {
        assert!(rect.end() <= data.len(), "rectangle past the slice's end");
        MatRef {
            array: data.as_ptr(),
            rect,
            ok: true,
            _marker: PhantomData,
        }
    }

    /// `rect` of the `len` elements at `ptr` as a read operand, made without a reference to them
    /// (see [`mat_mut_raw`]). Panics when it runs past the end.
    ///
    /// # Safety
    /// `ptr..ptr + len` is valid for reads for `'a`, and only tile operations reach it.
    pub unsafe fn mat_raw<'a, T>(ptr: *const T, len: usize, rect: Rect) -> MatRef<'a, T, true> {
        assert!(rect.end() <= len, "rectangle past the array's end");
        MatRef {
            array: ptr,
            rect,
            ok: true,
            _marker: PhantomData,
        }
    }

    /// `rect` of the `len` elements at `ptr` as a written operand, made without a reference to
    /// them, so that the threads of an emulated block can each make one over the same array (the
    /// tests' blocks). Panics when it runs past the end.
    ///
    /// # Safety
    /// `ptr..ptr + len` is valid for reads and writes for `'a`, and only tile operations reach it.
    pub unsafe fn mat_mut_raw<'a, T>(ptr: *mut T, len: usize, rect: Rect) -> MatMut<'a, T, true> {
        assert!(rect.end() <= len, "rectangle past the array's end");
        MatMut {
            array: ptr,
            rect,
            ok: true,
            _marker: PhantomData,
        }
    }

    /// `rect` of `data` as a written operand. Panics when it runs past the end.
    pub fn mat_mut<T>(data: &mut [T], rect: Rect) -> MatMut<'_, T, true> {
        assert!(rect.end() <= data.len(), "rectangle past the slice's end");
        MatMut {
            array: data.as_mut_ptr(),
            rect,
            ok: true,
            _marker: PhantomData,
        }
    }
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
#[allow(
    clippy::single_range_in_vec_init,
    reason = "declared ranges are lists of ranges, often of one"
)]
mod tests {
    use super::Rect;
    use proptest::prelude::*;

    fn elements(r: &Rect) -> std::collections::BTreeSet<usize> {
        (0..r.rows)
            .flat_map(|i| (0..r.cols).map(move |j| r.offset + i * r.ld + j))
            .collect()
    }

    fn rect() -> impl Strategy<Value = Rect> {
        (0usize..40, 0usize..6, 1usize..6, 0usize..4)
            .prop_map(|(offset, rows, cols, extra)| Rect::new(offset, rows, cols, cols + extra))
    }

    proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: if cfg!(miri) { 1 } else { 256 },
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        #[test]
        fn overlap_is_exact(a in rect(), b in rect()) {
            let shared = elements(&a).intersection(&elements(&b)).count() > 0;
            prop_assert_eq!(a.overlaps(&b), shared);
            prop_assert_eq!(b.overlaps(&a), shared);
        }

        #[test]
        fn coverage_finds_the_first_uncovered_element(
            r in rect(),
            ranges in proptest::collection::vec((0usize..60, 0usize..30), 0..4),
        ) {
            let ranges: std::vec::Vec<_> = ranges.into_iter().map(|(s, l)| s..s + l).collect();
            let first = elements(&r)
                .into_iter()
                .find(|e| !ranges.iter().any(|g| g.contains(e)));
            // Rows are scanned in order, so the first miss found is the first in memory order.
            prop_assert_eq!(r.first_uncovered(&ranges), first);
        }
    }

    #[test]
    fn sub_rectangles_and_ends() {
        let t = Rect::square(100, 8);
        assert_eq!(t.end(), 164);
        assert_eq!(t.sub(2, 4, 3, 4), Rect::new(120, 3, 4, 8));
        assert_eq!(Rect::new(5, 0, 3, 3).end(), 5);
    }

    use crate::view::{Declared, Misses};
    use crate::{View, ViewMut};

    fn declared<'a>(
        ranges: &'a [core::ops::Range<usize>],
        writes: &'a [core::ops::Range<usize>],
        misses: &'a Misses,
    ) -> Declared<'a> {
        Declared {
            ranges,
            writes,
            slot: 0,
            name: "a",
            task: "update",
            misses,
        }
    }

    #[test]
    fn operands_inside_their_ranges_are_made_from_views() {
        let mut data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        let (ranges, writes) = ([0..64, 128..192], [128..192]);
        // SAFETY: `data` outlives the view and the ranges lie within it.
        let mut view = unsafe {
            ViewMut::<f64, true>::new(data.as_mut_ptr(), 256, declared(&ranges, &writes, &misses))
        };
        let ops = view.operands();
        let (l, c) = (
            ops.mat(Rect::square(0, 8)),
            ops.mat_mut(Rect::square(128, 8)),
        );
        assert!(l.is_ok() && c.is_ok());
        assert!(!c.overlaps(&l));
        assert!(c.overlaps(&ops.mat(Rect::new(130, 2, 2, 8))));
        // A rectangle made of two declared ranges that touch is covered too.
        assert!(view.mat(Rect::new(0, 1, 64, 64)).is_ok());
    }

    #[test]
    #[should_panic(
        expected = "task `update`: tile operand 8x8 at offset 60 (ld 8) of array `a` is outside its declared access ranges [0..64] (element 64 is not covered)"
    )]
    fn a_read_operand_outside_the_ranges_panics_naming_the_rectangle() {
        let data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        // SAFETY: as above.
        let view =
            unsafe { View::<f64, true>::new(data.as_ptr(), 256, declared(&[0..64], &[], &misses)) };
        let _ = view.mat(Rect::square(60, 8));
    }

    #[test]
    #[should_panic(expected = "outside its declared write ranges [0..8]")]
    fn a_written_operand_is_checked_against_the_write_ranges() {
        let mut data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        // SAFETY: as above.
        let mut view = unsafe {
            ViewMut::<f64, true>::new(data.as_mut_ptr(), 256, declared(&[0..64], &[0..8], &misses))
        };
        let _ = view.mat_mut(Rect::new(0, 2, 4, 8));
    }

    #[test]
    fn a_rectangle_over_touching_ranges_is_walked_and_covered() {
        let data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        // No one range holds the two rows 0..64 and 64..128: the check's cold path walks them.
        let ranges = [0..64, 64..128];
        // SAFETY: as above.
        let view =
            unsafe { View::<f64, true>::new(data.as_ptr(), 256, declared(&ranges, &[], &misses)) };
        assert!(view.mat(Rect::new(0, 2, 64, 64)).is_ok());
    }

    #[test]
    #[should_panic(expected = "(element 64 is not covered)")]
    fn a_gap_between_two_ranges_is_found_by_the_walk() {
        let data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        let ranges = [0..64, 72..136];
        // SAFETY: as above.
        let view =
            unsafe { View::<f64, true>::new(data.as_ptr(), 256, declared(&ranges, &[], &misses)) };
        let _ = view.mat(Rect::new(0, 2, 64, 64));
    }

    #[test]
    fn unchecked_operands_skip_the_ranges() {
        let data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        // SAFETY: as above.
        let view =
            unsafe { View::<f64, false>::new(data.as_ptr(), 256, declared(&[], &[], &misses)) };
        assert!(view.mat(Rect::square(100, 8)).is_ok());
    }

    #[test]
    #[should_panic(expected = "runs past its end (256 elements)")]
    fn an_operand_past_the_array_end_is_refused_even_unchecked() {
        let data = std::vec![0.0f64; 256];
        let misses = Misses::new();
        // SAFETY: as above.
        let view =
            unsafe { View::<f64, false>::new(data.as_ptr(), 256, declared(&[], &[], &misses)) };
        let _ = view.mat(Rect::square(250, 8));
    }
}
