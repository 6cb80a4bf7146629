//! One 64-tile's POTRF, GETRF, TRSM and GEMM update (f64 and f32) from the tile library (`taskweave-tile`), each timed
//! inside the kernel (see README.md). Every thread of one block calls a kernel; thread 0 writes
//! `[ns, cycles]` of the first call and of the second to `out[0..4]`.
#![no_std]
#![feature(abi_ptx, asm_experimental_arch)]
use taskweave_device::Block;
use taskweave_tile::{Alpha, Beta, Diag, Op, Rect, Side, Uplo};
use taskweave_device::view::{Declared, Misses, ViewMut};

/// `%globaltimer` (ns) and `%clock64` (SM cycles).
#[inline(always)]
fn now() -> (u64, u64) {
    let (t, c): (u64, u64);
    // SAFETY: reads two special registers.
    unsafe {
        core::arch::asm!("mov.u64 {0}, %globaltimer; mov.u64 {1}, %clock64;", out(reg64) t, out(reg64) c)
    };
    (t, c)
}

/// Runs `f` twice on the block's view of `p[..len]`, at element offsets 0 and 8192 (row 128 of a
/// 64-wide array), and times each call between two barriers.
///
/// # Safety
/// `p[..len]` is device memory that only this block uses, `out[..4]` too, and the launch gave the
/// block dynamic shared memory for the operations' scratch.
unsafe fn timed<T: Copy>(
    p: *mut T,
    len: usize,
    out: *mut u64,
    f: impl Fn(&Block, &mut ViewMut<'_, T, false>, usize),
) {
    let (s, bytes) = taskweave_device::shared::dynamic();
    // SAFETY: the block's own dynamic shared memory, used by nothing else.
    let block = unsafe { Block::new(0, 0, s, bytes) };
    let misses = Misses::new();
    let r = [0..len];
    let d = Declared {
        ranges: &r,
        writes: &r,
        slot: 0,
        name: "a",
        task: "t",
        misses: &misses,
    };
    // SAFETY: the caller's promise; the declared range is the whole array.
    let mut v = unsafe { ViewMut::<T, false>::new(p, len, d) };
    for second in [0, 1] {
        block.sync();
        let t0 = now();
        f(&block, &mut v, second * 128 * 64);
        block.sync();
        let t1 = now();
        if block.thread() == 0 {
            // SAFETY: `out[..4]` is this block's (the caller's promise).
            unsafe {
                *out.add(2 * second) = t1.0 - t0.0;
                *out.add(2 * second + 1) = t1.1 - t0.1;
            }
        }
    }
}

/// The probe's kernels for one element type: `potrf`, `getrf`, `gemm` (the trailing update), and
/// the three TRSMs of the factorizations, `trsm` (Cholesky's `X := −X·L⁻ᵀ`), `trsm_row` (LU's row panel, `X := L⁻¹·X`
/// with a unit diagonal) and `trsm_col` (LU's column panel, `X := X·U⁻¹`): the tile at `p` (rows
/// of `ld`), or the triangle there and `X` the 64 rows below it; then the same 128 rows down.
macro_rules! kernels {
    ($t:ty, $potrf:ident, $getrf:ident, $trsm:ident, $row:ident, $col:ident, $gemm:ident) => {
        /// Cholesky's trailing update, `C := C − A·Bᵀ`: `C` the tile at `p`, `A` and `B` the
        /// two tiles below it.
        ///
        /// # Safety
        /// As for `timed`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $gemm(p: *mut $t, len: usize, ld: usize, out: *mut u64) {
            // SAFETY: the caller's promise.
            unsafe {
                timed(p, len, out, |b, v, o| {
                    let ops = v.operands();
                    let c = ops.mat_mut(Rect::new(o, 64, 64, ld));
                    let a = ops.mat(Rect::new(o + 64 * ld, 64, 64, ld));
                    let x = ops.mat(Rect::new(o + 128 * ld, 64, 64, ld));
                    taskweave_tile::gemm(b, c, a, Op::N, x, Op::T, Alpha(-1.0 as $t), Beta(1.0 as $t));
                })
            }
        }
        /// POTRF of the lower triangle.
        ///
        /// # Safety
        /// As for `timed`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $potrf(p: *mut $t, len: usize, ld: usize, out: *mut u64) {
            // SAFETY: the caller's promise.
            unsafe {
                timed(p, len, out, |b, v, o| {
                    let _ = taskweave_tile::potrf(
                        b,
                        v.mat_mut(Rect::new(o, 64, 64, ld)),
                        Uplo::Lower,
                    );
                })
            }
        }
        /// GETRF without pivoting.
        ///
        /// # Safety
        /// As for `timed`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $getrf(p: *mut $t, len: usize, ld: usize, out: *mut u64) {
            // SAFETY: the caller's promise.
            unsafe {
                timed(p, len, out, |b, v, o| {
                    let _ = taskweave_tile::getrf(b, v.mat_mut(Rect::new(o, 64, 64, ld)));
                })
            }
        }
        /// `X := −X·L⁻ᵀ`.
        ///
        /// # Safety
        /// As for `timed`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $trsm(p: *mut $t, len: usize, ld: usize, out: *mut u64) {
            // SAFETY: the caller's promise.
            unsafe {
                solve(
                    p,
                    len,
                    ld,
                    out,
                    (Side::Right, Uplo::Lower, Op::T, Diag::NonUnit),
                    -1.0,
                )
            }
        }
        /// `X := L⁻¹·X`, `L` unit lower.
        ///
        /// # Safety
        /// As for `timed`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $row(p: *mut $t, len: usize, ld: usize, out: *mut u64) {
            // SAFETY: the caller's promise.
            unsafe {
                solve(
                    p,
                    len,
                    ld,
                    out,
                    (Side::Left, Uplo::Lower, Op::N, Diag::Unit),
                    1.0,
                )
            }
        }
        /// `X := X·U⁻¹`.
        ///
        /// # Safety
        /// As for `timed`.
        #[unsafe(no_mangle)]
        pub unsafe extern "ptx-kernel" fn $col(p: *mut $t, len: usize, ld: usize, out: *mut u64) {
            // SAFETY: the caller's promise.
            unsafe {
                solve(
                    p,
                    len,
                    ld,
                    out,
                    (Side::Right, Uplo::Upper, Op::N, Diag::NonUnit),
                    1.0,
                )
            }
        }
    };
}

/// TRSM of the 64 rows below the triangle at `p` against it, timed by `timed`.
///
/// # Safety
/// As for `timed`.
unsafe fn solve<T: taskweave_tile::Tiled>(
    p: *mut T,
    len: usize,
    ld: usize,
    out: *mut u64,
    (side, uplo, op, diag): (Side, Uplo, Op, Diag),
    alpha: f64,
) {
    // SAFETY: the caller's promise.
    unsafe {
        timed(p, len, out, |b, v, o| {
            let ops = v.operands();
            let a = ops.mat(Rect::new(o, 64, 64, ld));
            let x = ops.mat_mut(Rect::new(o + 64 * ld, 64, 64, ld));
            taskweave_tile::trsm(b, x, a, side, uplo, op, diag, Alpha(T::from_f64(alpha)));
        })
    }
}

kernels!(
    f64, potrf64, getrf64, trsm64, trsm_row64, trsm_col64, gemm64
);
kernels!(
    f32, potrf32, getrf32, trsm32, trsm_row32, trsm_col32, gemm32
);
