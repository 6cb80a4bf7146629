//! Plain scalar references for the tile operations, in f64, and the checks the tests make with
//! them (host only).
//!
//! Each reference is the textbook loop nest on the same row-major rectangles, written without
//! the tile library, and sums in f64 whatever the element type. [`assert_close`] compares an
//! operation's result with it element by element, within `γ` times a per-element bound that the
//! reference computes alongside (for a product, `|α|·(|A|·|B|) + |β|·|C|`), and checks that no
//! element outside the operand moved.

use std::vec::Vec;

use super::Rect;
use super::flags::{Diag, Op, Side, Uplo};
use super::numeric::Element;

/// A matrix inside a larger buffer: `rect` of `data`, with padding around it.
#[derive(Clone, Debug)]
pub struct Matrix<T> {
    /// The buffer.
    pub data: Vec<T>,
    /// Where the matrix is in it.
    pub rect: Rect,
    /// The buffer as it was made, to check what lies outside the rectangle.
    pub before: Vec<T>,
}

impl<T: Element> Matrix<T> {
    /// A `rows × cols` matrix of values in `[-1, 1)`, with rows `cols + pad` apart, starting
    /// `3 * pad` elements into its buffer (an odd `pad` misaligns the rows).
    pub fn random(rows: usize, cols: usize, pad: usize, seed: u64) -> Self {
        let rect = Rect::new(3 * pad, rows, cols, cols + pad);
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
        let data: Vec<T> = (0..rect.end() + 2 * pad + 1)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                T::from_f64((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0)
            })
            .collect();
        Self {
            before: data.clone(),
            data,
            rect,
        }
    }

    /// The same shape filled with `f(i, j)`.
    pub fn from_fn(mut self, f: impl Fn(usize, usize) -> f64) -> Self {
        for i in 0..self.rect.rows {
            for j in 0..self.rect.cols {
                let at = self.index(i, j);
                self.data[at] = T::from_f64(f(i, j));
            }
        }
        self.before = self.data.clone();
        self
    }

    /// The same matrix seen transposed: element `(i, j)` is this one's `(j, i)` (a square
    /// matrix's buffer, read through the transposed rectangle).
    pub fn transposed(&self) -> Self {
        assert_eq!(self.rect.rows, self.rect.cols, "a square matrix");
        let n = self.rect.rows;
        let mut t = self.clone();
        for i in 0..n {
            for j in 0..n {
                let (to, from) = (self.index(i, j), self.index(j, i));
                t.data[to] = self.data[from];
                t.before[to] = self.before[from];
            }
        }
        t
    }

    /// Where element `(i, j)` is in the buffer.
    pub fn index(&self, i: usize, j: usize) -> usize {
        self.rect.offset + i * self.rect.ld + j
    }

    /// Element `(i, j)` as f64.
    pub fn get(&self, i: usize, j: usize) -> f64 {
        self.data[self.index(i, j)].to_f64()
    }

    /// Element `(i, j)` as it was made.
    pub fn original(&self, i: usize, j: usize) -> f64 {
        self.before[self.index(i, j)].to_f64()
    }

    /// Element `(i, j)` of op(self), as made.
    fn op(&self, op: Op, i: usize, j: usize) -> f64 {
        match op {
            Op::N => self.original(i, j),
            Op::T => self.original(j, i),
        }
    }

    /// The matrix, as made, as a row-major `Vec<f64>`.
    pub fn dense(&self) -> Vec<f64> {
        (0..self.rect.rows)
            .flat_map(|i| (0..self.rect.cols).map(move |j| (i, j)))
            .map(|(i, j)| self.original(i, j))
            .collect()
    }
}

/// `α·op(A)·op(B) + β·C` (C as made), row-major.
pub fn gemm<T: Element>(
    c: &Matrix<T>,
    a: &Matrix<T>,
    op_a: Op,
    b: &Matrix<T>,
    op_b: Op,
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let (m, n) = (c.rect.rows, c.rect.cols);
    let k = if op_a == Op::N {
        a.rect.cols
    } else {
        a.rect.rows
    };
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let sum: f64 = (0..k).map(|q| a.op(op_a, i, q) * b.op(op_b, q, j)).sum();
            out.push(
                alpha * sum
                    + if beta == 0.0 {
                        0.0
                    } else {
                        beta * c.original(i, j)
                    },
            );
        }
    }
    out
}

/// The per-element bound `|α|·(|op(A)|·|op(B)|) + |β|·|C|` for [`gemm`].
pub fn gemm_bound<T: Element>(
    c: &Matrix<T>,
    a: &Matrix<T>,
    op_a: Op,
    b: &Matrix<T>,
    op_b: Op,
    alpha: f64,
    beta: f64,
) -> Vec<f64> {
    let (m, n) = (c.rect.rows, c.rect.cols);
    let k = if op_a == Op::N {
        a.rect.cols
    } else {
        a.rect.rows
    };
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            let sum: f64 = (0..k)
                .map(|q| (a.op(op_a, i, q) * b.op(op_b, q, j)).abs())
                .sum();
            out.push(alpha.abs() * sum + beta.abs() * c.original(i, j).abs());
        }
    }
    out
}

/// `α·op(A)·op(A)ᵀ + β·C` on the `uplo` triangle of C, C as made elsewhere; and its bound (0
/// off the triangle, where nothing may change).
pub fn syrk<T: Element>(
    uplo: Uplo,
    op: Op,
    c: &Matrix<T>,
    a: &Matrix<T>,
    alpha: f64,
    beta: f64,
) -> (Vec<f64>, Vec<f64>) {
    let t = if op == Op::N { Op::T } else { Op::N };
    let full = gemm(c, a, op, a, t, alpha, beta);
    let bound = gemm_bound(c, a, op, a, t, alpha, beta);
    let n = c.rect.rows;
    let inside = |i: usize, j: usize| if uplo == Uplo::Lower { i >= j } else { i <= j };
    let mut want = Vec::with_capacity(n * n);
    let mut bounds = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let keep = inside(i, j);
            want.push(if keep {
                full[i * n + j]
            } else {
                c.original(i, j)
            });
            bounds.push(if keep { bound[i * n + j] } else { 0.0 });
        }
    }
    (want, bounds)
}

/// Element `(i, j)` of op(A) as the triangular matrix `uplo`, `diag` sees it (zero outside the
/// triangle, one on a unit diagonal), `A` as made.
fn triangular<T: Element>(
    a: &Matrix<T>,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    i: usize,
    j: usize,
) -> f64 {
    let (r, c) = if op == Op::N { (i, j) } else { (j, i) };
    let inside = if uplo == Uplo::Lower { r >= c } else { r <= c };
    if r == c && diag == Diag::Unit {
        1.0
    } else if inside {
        a.original(r, c)
    } else {
        0.0
    }
}

/// The residual of a triangular solve, `op(A)·X − α·B` (left) or `X·op(A) − α·B` (right), with
/// `X` the current contents of `x` and `B` what it was made with, and its scale: the same sums
/// in absolute values. Substitution's backward error bounds the residual by `γₙ` times the scale.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
pub fn trsm_residual<T: Element>(
    side: Side,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    alpha: f64,
    a: &Matrix<T>,
    x: &Matrix<T>,
) -> (Vec<f64>, Vec<f64>) {
    let (m, n) = (x.rect.rows, x.rect.cols);
    let t = |i, j| triangular(a, uplo, op, diag, i, j);
    let (mut residual, mut scale) = (Vec::with_capacity(m * n), Vec::with_capacity(m * n));
    for i in 0..m {
        for j in 0..n {
            let b = alpha * x.original(i, j);
            let (mut r, mut s) = (-b, b.abs());
            let terms = if side == Side::Left { m } else { n };
            for q in 0..terms {
                let p = if side == Side::Left {
                    t(i, q) * x.get(q, j)
                } else {
                    x.get(i, q) * t(q, j)
                };
                r += p;
                s += p.abs();
            }
            residual.push(r);
            scale.push(s);
        }
    }
    (residual, scale)
}

/// The residual `A − L·Lᵀ` of a Cholesky factorization on the lower triangle (`L` the current
/// lower triangle of `a`, `A` as made) and its scale `|L|·|Lᵀ|`, which bounds it times `γₙ₊₁`.
pub fn potrf_residual<T: Element>(a: &Matrix<T>) -> (Vec<f64>, Vec<f64>) {
    let n = a.rect.rows;
    let l = |i: usize, j: usize| if i >= j { a.get(i, j) } else { 0.0 };
    let (mut residual, mut scale) = (Vec::with_capacity(n * n), Vec::with_capacity(n * n));
    for i in 0..n {
        for j in 0..n {
            if j > i {
                residual.push(0.0);
                scale.push(0.0);
                continue;
            }
            let (mut r, mut s) = (a.original(i, j), 0.0);
            for q in 0..=j {
                let p = l(i, q) * l(j, q);
                r -= p;
                s += p.abs();
            }
            residual.push(r);
            scale.push(s);
        }
    }
    (residual, scale)
}

/// The residual `A − L·U` of an LU factorization without pivoting (unit-lower `L` below the
/// diagonal of `a`, `U` on and above, `A` as made) and its scale `|L|·|U|`.
pub fn getrf_residual<T: Element>(a: &Matrix<T>) -> (Vec<f64>, Vec<f64>) {
    let n = a.rect.rows;
    let l = |i: usize, j: usize| match i.cmp(&j) {
        std::cmp::Ordering::Greater => a.get(i, j),
        std::cmp::Ordering::Equal => 1.0,
        std::cmp::Ordering::Less => 0.0,
    };
    let u = |i: usize, j: usize| if i <= j { a.get(i, j) } else { 0.0 };
    let (mut residual, mut scale) = (Vec::with_capacity(n * n), Vec::with_capacity(n * n));
    for i in 0..n {
        for j in 0..n {
            let (mut r, mut s) = (a.original(i, j), 0.0);
            for q in 0..=i.min(j) {
                let p = l(i, q) * u(q, j);
                r -= p;
                s += p.abs();
            }
            residual.push(r);
            scale.push(s);
        }
    }
    (residual, scale)
}

/// Asserts that every residual is within `gamma` times its scale, and that nothing outside
/// `m`'s rectangle moved.
pub fn assert_small<T: Element>(
    m: &Matrix<T>,
    residual: &[f64],
    scale: &[f64],
    gamma: f64,
    what: &str,
) {
    for (e, (r, s)) in residual.iter().zip(scale).enumerate() {
        let allowed = gamma * s + f64::MIN_POSITIVE;
        assert!(
            r.abs() <= allowed,
            "{what}: residual {r:e} at element {e} of the result is above the bound {allowed:e}"
        );
    }
    assert_outside_untouched(m, what);
}

/// Asserts that every element outside `m`'s rectangle is as it was made.
pub fn assert_outside_untouched<T: Element>(m: &Matrix<T>, what: &str) {
    let mut inside = std::vec![false; m.data.len()];
    for i in 0..m.rect.rows {
        for j in 0..m.rect.cols {
            inside[m.index(i, j)] = true;
        }
    }
    for (e, (now, then)) in m.data.iter().zip(&m.before).enumerate() {
        assert!(
            inside[e] || now.to_f64().to_bits() == then.to_f64().to_bits(),
            "{what}: element {e} of the buffer, outside the operand, changed"
        );
    }
}

/// Asserts that `got`'s rectangle is within `gamma · bound` of `want`, element by element, and
/// that every element outside the rectangle is as it was made.
pub fn assert_close<T: Element>(
    got: &Matrix<T>,
    want: &[f64],
    bound: &[f64],
    gamma: f64,
    what: &str,
) {
    let (m, n) = (got.rect.rows, got.rect.cols);
    for i in 0..m {
        for j in 0..n {
            let (g, w) = (got.get(i, j), want[i * n + j]);
            let err = (g - w).abs();
            let allowed = gamma * bound[i * n + j] + f64::MIN_POSITIVE;
            assert!(
                err <= allowed,
                "{what}: element ({i}, {j}) is {g}, the reference {w}: error {err:e} above the bound {allowed:e}"
            );
        }
    }
    assert_outside_untouched(got, what);
}
