//! Straight-line loops over register arrays.
//!
//! A fragment or a warp tile's accumulators are small arrays that must live in registers. LLVM
//! keeps an array in registers only when every index into it is a constant, which a loop gives
//! only once it is fully unrolled, and it declines to unroll loops with large bodies (a warp
//! tile's epilogue is one): the array then goes to local memory, and every `mma` of the hot loop
//! stores its result there. [`unroll`] makes the unrolling part of the source: `f(0)`, `f(1)`, …
//! as separate calls, each index a constant once inlined.

/// A closure marked `#[inline(always)]` on the GPU: left to the inliner, a large closure called
/// twice stays a call, and the register arrays it reaches go to local memory. The attribute on an
/// expression needs nightly's `stmt_expr_attributes`, which only the device build enables; the
/// host build of this crate stays on stable Rust (and inlines these closures anyway).
#[cfg(target_arch = "nvptx64")]
macro_rules! hot {
    ($e:expr) => {
        #[inline(always)]
        $e
    };
}

/// A closure marked `#[inline(always)]` on the GPU (see the GPU definition); unmarked here.
#[cfg(not(target_arch = "nvptx64"))]
macro_rules! hot {
    ($e:expr) => {
        $e
    };
}

pub(crate) use hot;

/// Calls `f(0)`, …, `f(N - 1)` in order, as straight-line code for `N <= 32`.
#[inline(always)]
pub fn unroll<const N: usize>(mut f: impl FnMut(usize)) {
    macro_rules! upto {
        ($($i:literal)*) => {
            $(if $i < N {
                f($i);
            })*
        };
    }
    upto!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    for i in 32..N {
        f(i);
    }
}

/// `[f(0), …, f(N - 1)]`, built with [`unroll`] (no `MaybeUninit` and no `map`, whose loops
/// LLVM may leave rolled).
#[inline(always)]
pub fn array<T: Copy, const N: usize>(mut f: impl FnMut(usize) -> T) -> [T; N] {
    if N == 0 {
        return core::array::from_fn(|_| unreachable!());
    }
    let mut out = [f(0); N];
    unroll::<N>(|i| {
        if i > 0 {
            out[i] = f(i);
        }
    });
    out
}

#[cfg(all(test, not(target_arch = "nvptx64")))]
mod tests {
    use super::{array, unroll};

    #[test]
    fn every_index_once_in_order() {
        let mut seen = std::vec::Vec::new();
        unroll::<5>(|i| seen.push(i));
        assert_eq!(seen, [0, 1, 2, 3, 4]);
        let mut long = 0;
        unroll::<40>(|i| long += i);
        assert_eq!(long, 40 * 39 / 2);
        assert_eq!(array::<usize, 3>(|i| i * i), [0, 1, 4]);
        unroll::<0>(|_| unreachable!());
    }
}
