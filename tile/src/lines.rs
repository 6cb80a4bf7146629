//! The line solve both TRSM's blocked path and the staged factorizations run: `P` values of one
//! line in registers, substituted against a `P × P` triangle. A module of its own, below both
//! (`trsm` and `staged` each use it, and neither the other for it).

use super::numeric::Element;
use super::unroll::{array, hot, unroll};

/// The block size of the blocked triangular algorithms (line solves and panel factorizations).
pub const P: u32 = 16;

/// [`P`], as an array length.
pub(crate) const N: usize = P as usize;

/// `v := t⁻¹·v` for one line `v` of `P` values in registers, `at(r, c)` reading the triangle.
///
/// Right-looking: once `v[q]` is final, the later rows lose its share at once. The diagonal's
/// reciprocals are taken first, all independent of each other and of `v`, so that the dependent
/// chain is one multiply and one multiply-add per row: an f64 division is a Newton sequence of
/// its own, and sixteen of them in a chain made a 16-line substitution take about 7 µs on the
/// H100 (bench/results/panel-h100/latency.txt).
#[inline(always)]
pub(crate) fn substitute<T: Element>(
    v: &mut [T; N],
    at: impl Fn(usize, usize) -> T,
    forward: bool,
    unit: bool,
) {
    let inverse: [T; N] = array(hot!(|q| if unit { T::ONE } else { at(q, q).recip() }));
    // One loop per direction, so that every index into `v` is a constant once unrolled: an index
    // that depends on the runtime `forward` put `v` in local memory (Nsight Compute showed the
    // solve's loads and stores going to `LDL`/`STL`).
    if forward {
        unroll::<N>(hot!(|q| eliminate(v, q, true, unit, &inverse, &at)));
    } else {
        unroll::<N>(hot!(|s| eliminate(
            v,
            N - 1 - s,
            false,
            unit,
            &inverse,
            &at
        )));
    }
}

/// Step `q` of [`substitute`]: `v[q]` becomes final, and the later rows lose its share.
#[inline(always)]
fn eliminate<T: Element>(
    v: &mut [T; N],
    q: usize,
    forward: bool,
    unit: bool,
    inverse: &[T; N],
    at: &impl Fn(usize, usize) -> T,
) {
    if !unit {
        v[q] = v[q] * inverse[q];
    }
    let vq = v[q];
    unroll::<N>(hot!(|k| {
        if (forward && k > q) || (!forward && k < q) {
            v[k] = (-at(k, q)).fma(vq, v[k]);
        }
    }));
}
