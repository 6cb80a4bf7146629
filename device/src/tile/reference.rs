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
/// triangle, one on a unit diagonal).
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

/// The solution `X` of `op(A)·X = α·B` (left) or `X·op(A) = α·B` (right), by substitution, and
/// the per-element bound `|α|·|B|`-propagated `(|op(A)⁻¹|·|α·B|)` that forward error analysis
/// of a triangular solve scales with the condition of `A`.
#[allow(clippy::too_many_arguments, reason = "BLAS's argument list")]
pub fn trsm<T: Element>(
    side: Side,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    alpha: f64,
    a: &Matrix<T>,
    b: &Matrix<T>,
) -> (Vec<f64>, Vec<f64>) {
    let (m, n) = (b.rect.rows, b.rect.cols);
    let size = if side == Side::Left { m } else { n };
    let t = |i, j| triangular(a, uplo, op, diag, i, j);
    // Solve column by column (left) or row by row (right) in the direction the triangle allows.
    let lower = (uplo == Uplo::Lower) == (op == Op::N);
    let order: Vec<usize> = if lower == (side == Side::Left) {
        (0..size).collect()
    } else {
        (0..size).rev().collect()
    };
    let mut x = std::vec![0.0f64; m * n];
    let mut mag = std::vec![0.0f64; m * n];
    let lines = if side == Side::Left { n } else { m };
    for line in 0..lines {
        for (pos, &i) in order.iter().enumerate() {
            let (row, col) = if side == Side::Left {
                (i, line)
            } else {
                (line, i)
            };
            let mut s = alpha * b.original(row, col);
            let mut sm = (alpha * b.original(row, col)).abs();
            for &q in &order[..pos] {
                let (coef, xr, xc) = if side == Side::Left {
                    (t(i, q), q, line)
                } else {
                    (t(q, i), line, q)
                };
                s -= coef * x[xr * n + xc];
                sm += (coef * x[xr * n + xc]).abs();
            }
            let d = t(i, i);
            x[row * n + col] = s / d;
            mag[row * n + col] = sm / d.abs();
        }
    }
    (x, mag)
}

/// The Cholesky factor `L` (lower, `A = L·Lᵀ`) of the lower triangle of `A`, as made, with the
/// upper triangle as made.
pub fn potrf<T: Element>(a: &Matrix<T>) -> Vec<f64> {
    let n = a.rect.rows;
    let mut l = a.dense();
    for j in 0..n {
        let mut d = l[j * n + j];
        for q in 0..j {
            d -= l[j * n + q] * l[j * n + q];
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = l[i * n + j];
            for q in 0..j {
                s -= l[i * n + q] * l[j * n + q];
            }
            l[i * n + j] = s / d;
        }
    }
    l
}

/// LU without pivoting of `A`, as made: unit-lower `L` below the diagonal, `U` on and above.
pub fn getrf<T: Element>(a: &Matrix<T>) -> Vec<f64> {
    let n = a.rect.rows;
    let mut m = a.dense();
    for p in 0..n {
        for r in p + 1..n {
            m[r * n + p] /= m[p * n + p];
            let l = m[r * n + p];
            for c in p + 1..n {
                m[r * n + c] -= l * m[p * n + c];
            }
        }
    }
    m
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
    let mut worst = (0.0f64, 0, 0);
    for i in 0..m {
        for j in 0..n {
            let (g, w) = (got.get(i, j), want[i * n + j]);
            let err = (g - w).abs();
            let allowed = gamma * bound[i * n + j] + f64::MIN_POSITIVE;
            assert!(
                err <= allowed,
                "{what}: element ({i}, {j}) is {g}, the reference {w}: error {err:e} above the bound {allowed:e}"
            );
            if bound[i * n + j] > 0.0 {
                let ratio = err / (gamma * bound[i * n + j]);
                if ratio > worst.0 {
                    worst = (ratio, i, j);
                }
            }
        }
    }
    let mut inside = std::vec![false; got.data.len()];
    for i in 0..m {
        for j in 0..n {
            inside[got.index(i, j)] = true;
        }
    }
    for (e, (now, then)) in got.data.iter().zip(&got.before).enumerate() {
        assert!(
            inside[e] || now.to_f64().to_bits() == then.to_f64().to_bits(),
            "{what}: element {e} of the buffer, outside the operand, changed"
        );
    }
}
