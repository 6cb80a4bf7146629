//! Argument checks shared by the tile operations: each a cold panic with a plain message on the
//! GPU (where the panic handler keeps only plain strings) and the details on the host.

use super::engine::Gmat;
use super::flags::Op;
use taskweave_device::operand::{MatMut, MatRef};

/// The sides tile operations take: multiples of 16 from 16 to 256.
pub const SIDES: core::ops::RangeInclusive<usize> = 16..=256;

/// `true` when `n` is a side tile operations take.
#[inline(always)]
pub fn side_ok(n: usize) -> bool {
    SIDES.contains(&n) && n % 16 == 0
}

/// Panics: the operands' shapes do not fit together, or a side is unsupported.
#[cold]
#[inline(never)]
pub(crate) fn bad_shapes(op: &'static str, shapes: &[(usize, usize)]) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = (op, shapes);
        panic!("tile op: operand shapes do not fit, or a side is not a multiple of 16 in 16..=256");
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::panic!(
        "tile::{op}: operand shapes {shapes:?} do not fit together, or a side is not a multiple of 16 in 16..=256"
    );
}

/// Panics: in checked mode, an output overlaps an input of an operation that is not in place.
#[cold]
#[inline(never)]
pub(crate) fn overlap(op: &'static str) -> ! {
    #[cfg(target_arch = "nvptx64")]
    {
        let _ = op;
        panic!("tile op: the output overlaps an input");
    }
    #[cfg(not(target_arch = "nvptx64"))]
    std::panic!("tile::{op}: the output overlaps an input (it must be a separate rectangle)");
}

/// Panics unless every side is supported.
#[inline(always)]
pub(crate) fn sides(op: &'static str, shapes: &[(usize, usize)]) {
    if !shapes.iter().all(|&(r, c)| side_ok(r) && side_ok(c)) {
        bad_shapes(op, shapes);
    }
}

/// In checked mode, panics when `out` overlaps `input`.
#[inline(always)]
pub(crate) fn disjoint<T, const CHECKED: bool>(
    op: &'static str,
    out: &MatMut<'_, T, CHECKED>,
    input: &MatRef<'_, T, CHECKED>,
) {
    if CHECKED && out.overlaps(input) {
        overlap(op);
    }
}

/// op(`m`) as the engine reads it.
#[inline(always)]
pub(crate) fn gmat<T, const CHECKED: bool>(m: &MatRef<'_, T, CHECKED>, op: Op) -> Gmat<T> {
    let r = m.rect();
    let stored = Gmat {
        ptr: m.ptr().cast_mut(),
        rows: r.rows as u32,
        cols: r.cols as u32,
        ld: r.ld as u32,
        trans: false,
    };
    match op {
        Op::N => stored,
        Op::T => stored.t(),
    }
}

/// `m` as the engine writes it.
#[inline(always)]
pub(crate) fn gmat_mut<T, const CHECKED: bool>(m: &MatMut<'_, T, CHECKED>) -> Gmat<T> {
    let r = m.rect();
    Gmat {
        ptr: m.ptr(),
        rows: r.rows as u32,
        cols: r.cols as u32,
        ld: r.ld as u32,
        trans: false,
    }
}
