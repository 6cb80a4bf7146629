//! Tile-major square matrices, as the linear-algebra examples ([`gemm`](crate::gemm),
//! [`cholesky`](crate::cholesky), [`lu`](crate::lu)) store them.
//!
//! An `n × n` matrix with `n = nb · bs` is `nb × nb` tiles of `bs × bs` elements; tile `(i, j)` is
//! contiguous at offset `(i · nb + j) · bs²` and row-major inside. Each tile is then one range of
//! the array, so a task's declared accesses are exact, and one tile operand:
//! [`rect`] gives the [`Rect`] a tile operation takes.
//!
//! On the host, [`host`] converts to and from row-major, makes test matrices (SPD for Cholesky,
//! LU-friendly for LU without pivoting) and checks results: against a plain sequential reference
//! where `n` is small, and, at any size, by a residual probe whose bound a missing task breaks.

use core::ops::Range;

use taskweave::tile::Rect;

/// The element range of tile `(i, j)`.
pub const fn tile(i: usize, j: usize, nb: usize, bs: usize) -> Range<usize> {
    let start = (i * nb + j) * bs * bs;
    start..start + bs * bs
}

/// Tile `(i, j)` as a tile-operation operand.
pub const fn rect(i: usize, j: usize, nb: usize, bs: usize) -> Rect {
    Rect::square((i * nb + j) * bs * bs, bs)
}

#[cfg(not(target_arch = "nvptx64"))]
pub mod host {
    //! Conversions, generators, references and checks (host only).

    use taskweave::tile::Element;

    /// The index in the tile-major array of row-major element `(r, c)`.
    pub fn index(r: usize, c: usize, nb: usize, bs: usize) -> usize {
        super::tile(r / bs, c / bs, nb, bs).start + (r % bs) * bs + c % bs
    }

    /// The tile-major form of the row-major `n × n` matrix `m` (`n = nb · bs`).
    pub fn to_tiles<T: Copy + Default>(m: &[T], nb: usize, bs: usize) -> Vec<T> {
        let n = nb * bs;
        assert_eq!(m.len(), n * n, "a {n}x{n} matrix");
        let mut out = vec![T::default(); n * n];
        for r in 0..n {
            for c in 0..n {
                out[index(r, c, nb, bs)] = m[r * n + c];
            }
        }
        out
    }

    /// The row-major form of the tile-major matrix `t`, as f64.
    pub fn to_rows<T: Element>(t: &[T], nb: usize, bs: usize) -> Vec<f64> {
        let n = nb * bs;
        let mut out = vec![0.0; n * n];
        for r in 0..n {
            for c in 0..n {
                out[r * n + c] = t[index(r, c, nb, bs)].to_f64();
            }
        }
        out
    }

    /// A deterministic stream of values in `[-1, 1)`.
    pub struct Stream(u64);

    impl Stream {
        /// The stream for `seed`.
        pub fn new(seed: u64) -> Self {
            Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d | 1)
        }
        /// The next value.
        pub fn value(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        }
    }

    /// Rank of the dense part of the generated matrices.
    const RANK: usize = 8;

    /// `n × RANK` values in `[-1, 1)`, row-major.
    fn factor(n: usize, stream: &mut Stream) -> Vec<f64> {
        (0..n * RANK).map(|_| stream.value()).collect()
    }

    /// A random tile-major matrix with entries in `[-1, 1)`.
    pub fn random<T: Element>(nb: usize, bs: usize, seed: u64) -> Vec<T> {
        let mut s = Stream::new(seed);
        (0..nb * bs * nb * bs)
            .map(|_| T::from_f64(s.value()))
            .collect()
    }

    /// A symmetric positive definite tile-major matrix whose every tile matters:
    /// `A = I + U·Uᵀ / RANK` with `U` random `n × 8`. All entries are of order one, the
    /// eigenvalues lie in `[1, 1 + n/24]` roughly, and every trailing update of a Cholesky
    /// factorization changes its tiles by far more than rounding does.
    pub fn spd<T: Element>(nb: usize, bs: usize, seed: u64) -> Vec<T> {
        let n = nb * bs;
        let u = factor(n, &mut Stream::new(seed));
        let mut rows = vec![T::default(); n * n];
        for r in 0..n {
            for c in 0..=r {
                let dot: f64 = (0..RANK).map(|q| u[r * RANK + q] * u[c * RANK + q]).sum();
                let v = dot / RANK as f64 + if r == c { 1.0 } else { 0.0 };
                rows[r * n + c] = T::from_f64(v);
                rows[c * n + r] = T::from_f64(v);
            }
        }
        to_tiles(&rows, nb, bs)
    }

    /// A tile-major matrix that LU without pivoting factors stably, with heavy off-diagonal
    /// weight: `A = I + (U·Uᵀ + W·Zᵀ − Z·Wᵀ) / RANK`, whose symmetric part `I + U·Uᵀ / RANK` is
    /// positive definite (so every leading minor is nonzero) and whose skew part is of the same
    /// size.
    pub fn lu_friendly<T: Element>(nb: usize, bs: usize, seed: u64) -> Vec<T> {
        let n = nb * bs;
        let mut s = Stream::new(seed);
        let (u, w, z) = (factor(n, &mut s), factor(n, &mut s), factor(n, &mut s));
        let mut rows = vec![T::default(); n * n];
        for r in 0..n {
            for c in 0..n {
                let dot = |x: &[f64], y: &[f64]| -> f64 {
                    (0..RANK).map(|q| x[r * RANK + q] * y[c * RANK + q]).sum()
                };
                let v = (dot(&u, &u) + dot(&w, &z) - dot(&z, &w)) / RANK as f64
                    + if r == c { 1.0 } else { 0.0 };
                rows[r * n + c] = T::from_f64(v);
            }
        }
        to_tiles(&rows, nb, bs)
    }

    /// The outcome of a check: the error measured, the bound it had to stay within.
    #[derive(Clone, Copy, Debug)]
    pub struct Check {
        /// The largest error relative to its bound's scale.
        pub error: f64,
        /// The bound.
        pub bound: f64,
    }

    impl Check {
        /// `true` when the error is finite and within the bound.
        pub fn passed(&self) -> bool {
            self.error.is_finite() && self.error <= self.bound
        }
    }

    impl std::fmt::Display for Check {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(
                f,
                "{} (error {:.2e}, bound {:.2e})",
                if self.passed() { "PASS" } else { "FAIL" },
                self.error,
                self.bound
            )
        }
    }

    /// Probe vectors for the residual checks: deterministic, entries in `[-1, 1)`.
    pub const PROBES: usize = 3;

    fn probe(n: usize, k: usize) -> Vec<f64> {
        let mut s = Stream::new(0x5eed + k as u64);
        (0..n).map(|_| s.value()).collect()
    }

    /// `y = op(M)·x` and `|op(M)|·|x|` for the row-major `n × n` `m`, keeping only the triangle
    /// and diagonal `keep(r, c)` allows and reading a unit diagonal where `unit`.
    fn apply(
        m: &[f64],
        n: usize,
        x: &[f64],
        trans: bool,
        keep: impl Fn(usize, usize) -> bool,
        unit: bool,
    ) -> (Vec<f64>, Vec<f64>) {
        let (mut y, mut mag) = (vec![0.0; n], vec![0.0; n]);
        for r in 0..n {
            for (c, xc) in x.iter().enumerate() {
                let (i, j) = if trans { (c, r) } else { (r, c) };
                if !keep(i, j) {
                    continue;
                }
                let v = if unit && i == j { 1.0 } else { m[i * n + j] };
                y[r] += v * xc;
                mag[r] += (v * xc).abs();
            }
        }
        (y, mag)
    }

    /// `max_i |got_i − want_i| / scale_i` over the probe's components.
    fn worst(got: &[f64], want: &[f64], scale: &[f64]) -> f64 {
        got.iter()
            .zip(want)
            .zip(scale)
            .map(|((g, w), s)| (g - w).abs() / s.max(f64::MIN_POSITIVE))
            .fold(0.0, f64::max)
    }

    /// Checks `C₁ = C₀ + A·B` (tile-major, `n = nb · bs`) with [`PROBES`] random vectors: each
    /// component of `(C₁ − C₀)·x − A·(B·x)` must stay within `2(n + 2)ε` times that of
    /// `|C₀|·|x| + |A|·(|B|·|x|)`, the bound of any product of `n`-term sums. A GEMM task left out
    /// leaves its tile short by a whole product of two tiles, far above it.
    pub fn check_gemm<T: Element>(
        c0: &[T],
        c1: &[T],
        a: &[T],
        b: &[T],
        nb: usize,
        bs: usize,
    ) -> Check {
        let n = nb * bs;
        let (c0, c1, a, b) = (
            to_rows(c0, nb, bs),
            to_rows(c1, nb, bs),
            to_rows(a, nb, bs),
            to_rows(b, nb, bs),
        );
        let all = |_, _| true;
        let mut error = 0.0f64;
        for k in 0..PROBES {
            let x = probe(n, k);
            let (y0, m0) = apply(&c0, n, &x, false, all, false);
            let (y1, _) = apply(&c1, n, &x, false, all, false);
            let (bx, bm) = apply(&b, n, &x, false, all, false);
            let (abx, _) = apply(&a, n, &bx, false, all, false);
            let (_, abm) = apply(&a, n, &bm, false, all, false);
            let got: Vec<f64> = y1.iter().zip(&y0).map(|(p, q)| p - q).collect();
            let scale: Vec<f64> = m0.iter().zip(&abm).map(|(p, q)| p + q).collect();
            error = error.max(worst(&got, &abx, &scale));
        }
        Check {
            error,
            bound: 2.0 * (n as f64 + 2.0) * T::EPSILON,
        }
    }

    /// Checks that the lower triangle of `l` (tile-major) is the Cholesky factor of `a`: each
    /// component of `A·x − L·(Lᵀ·x)` must stay within `2(n + 2)ε` times that of
    /// `|L|·(|Lᵀ|·|x|)`, the backward-error bound of Cholesky (`A + ΔA = L·Lᵀ`,
    /// `|ΔA| ≤ γₙ₊₁|L|·|Lᵀ|`), over [`PROBES`] random vectors.
    pub fn check_cholesky<T: Element>(a: &[T], l: &[T], nb: usize, bs: usize) -> Check {
        let n = nb * bs;
        let (a, l) = (to_rows(a, nb, bs), to_rows(l, nb, bs));
        let lower = |r: usize, c: usize| r >= c;
        let mut error = 0.0f64;
        for k in 0..PROBES {
            let x = probe(n, k);
            let (ax, _) = apply(&a, n, &x, false, |_, _| true, false);
            let (ltx, ltm) = apply(&l, n, &x, true, lower, false);
            let (lltx, _) = apply(&l, n, &ltx, false, lower, false);
            let (_, scale) = apply(&l, n, &ltm, false, lower, false);
            error = error.max(worst(&ax, &lltx, &scale));
        }
        Check {
            error,
            bound: 2.0 * (n as f64 + 2.0) * T::EPSILON,
        }
    }

    /// Checks that `lu` (tile-major; unit-lower `L` below the diagonal, `U` on and above) is the
    /// LU factorization of `a`: each component of `A·x − L·(U·x)` within `2(n + 2)ε` times that
    /// of `|L|·(|U|·|x|)`, the backward-error bound of LU, over [`PROBES`] random vectors.
    pub fn check_lu<T: Element>(a: &[T], lu: &[T], nb: usize, bs: usize) -> Check {
        let n = nb * bs;
        let (a, lu) = (to_rows(a, nb, bs), to_rows(lu, nb, bs));
        let lower = |r: usize, c: usize| r >= c;
        let upper = |r: usize, c: usize| r <= c;
        let mut error = 0.0f64;
        for k in 0..PROBES {
            let x = probe(n, k);
            let (ax, _) = apply(&a, n, &x, false, |_, _| true, false);
            let (ux, um) = apply(&lu, n, &x, false, upper, false);
            let (lux, _) = apply(&lu, n, &ux, false, lower, true);
            let (_, scale) = apply(&lu, n, &um, false, lower, true);
            error = error.max(worst(&ax, &lux, &scale));
        }
        Check {
            error,
            bound: 2.0 * (n as f64 + 2.0) * T::EPSILON,
        }
    }

    /// The sequential reference: the Cholesky factor `L` of `a` (lower triangle, row-major, f64),
    /// by the textbook column loop.
    pub fn cholesky<T: Element>(a: &[T], nb: usize, bs: usize) -> Vec<f64> {
        let n = nb * bs;
        let mut l = to_rows(a, nb, bs);
        for j in 0..n {
            let d = (l[j * n + j] - (0..j).map(|q| l[j * n + q].powi(2)).sum::<f64>()).sqrt();
            l[j * n + j] = d;
            for i in j + 1..n {
                let s: f64 = (0..j).map(|q| l[i * n + q] * l[j * n + q]).sum();
                l[i * n + j] = (l[i * n + j] - s) / d;
            }
            for c in j + 1..n {
                l[j * n + c] = 0.0;
            }
        }
        l
    }

    /// The sequential reference: LU without pivoting of `a` (row-major, f64), unit-lower `L`
    /// below the diagonal and `U` on and above.
    pub fn lu<T: Element>(a: &[T], nb: usize, bs: usize) -> Vec<f64> {
        let n = nb * bs;
        let mut m = to_rows(a, nb, bs);
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

    /// `max |got − want| / max |want|` over the elements `keep(r, c)` selects (row-major `want`,
    /// tile-major `got`).
    pub fn relative_difference<T: Element>(
        got: &[T],
        want: &[f64],
        nb: usize,
        bs: usize,
        keep: impl Fn(usize, usize) -> bool,
    ) -> f64 {
        let n = nb * bs;
        let (mut diff, mut scale) = (0.0f64, 0.0f64);
        for r in 0..n {
            for c in 0..n {
                if keep(r, c) {
                    let w = want[r * n + c];
                    diff = diff.max((got[index(r, c, nb, bs)].to_f64() - w).abs());
                    scale = scale.max(w.abs());
                }
            }
        }
        diff / scale
    }
}
