//! LU-D: the tiled LU decomposition of `lu.rs`, checked against a sequential `f64` LU factor by
//! factor, each at its own scale.

use taskweave::Region;
use taskweave_kernels::lud;

use super::{Verdict, Workload, within};

/// The error of the factors, each part at its own scale ([`factor_error`]), that single-precision
/// LU stays within against the `f64` reference on these diagonally dominant matrices: measured
/// 6.1e-7 at 480 × 480 (the benchmark size) and 3e-7 at 32 × 32. The bound is tight on purpose:
/// `L` is close to the identity on such a matrix (its entries are about `1/n`), so running a
/// `fwd` before the last `bmod` of its tile, or a `bdiv` before its `lu0`, moves the factors by
/// only 1.3e-5 to 2.8e-5 at 240 × 240 and 480 × 480 (`examples/tests/mutation.rs`).
pub const BOUND: f64 = 4e-6;

/// How far the factors in `lu` are from `reference` (both tile-major, `nb × nb` tiles of `bs`),
/// each of the three parts at its own scale: the largest `|lu − reference|` over the part divided
/// by the largest `|reference|` there, over `L` strictly below the diagonal, `U`'s diagonal and
/// `U` strictly above it; the largest of the three.
///
/// A norm of the whole matrix would not do: on a diagonally dominant matrix `U`'s diagonal (about
/// `n`) carries almost all of it, and `L` (about `1/n`) and `U`'s other entries (about `1/2`)
/// hardly count. A's own upper triangle with zeros below passes a relative Frobenius error of
/// `1e-4` at 480 × 480; here its `L` part alone is wrong by 1 (100%).
pub fn factor_error(lu: &[f32], reference: &[f64], nb: usize, bs: usize) -> f64 {
    let n = nb * bs;
    // Per part (below, diagonal, above): the largest difference and the largest magnitude.
    let mut diff = [0.0f64; 3];
    let mut scale = [0.0f64; 3];
    for r in 0..n {
        for c in 0..n {
            let e = lud::reference::at(r, c, nb, bs);
            let part = match r.cmp(&c) {
                std::cmp::Ordering::Greater => 0,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Less => 2,
            };
            // `max` drops a NaN: count one as an infinite difference.
            let d = (f64::from(lu[e]) - reference[e]).abs();
            diff[part] = diff[part].max(if d.is_nan() { f64::INFINITY } else { d });
            scale[part] = scale[part].max(reference[e].abs());
        }
    }
    (0..3)
        .filter(|&p| scale[p] > 0.0)
        .map(|p| diff[p] / scale[p])
        .fold(0.0, f64::max)
}

/// The size of LU-D.
#[derive(clap::Args, Clone, Debug)]
pub struct LudParams {
    /// Tiles per side: `nb(nb+1)(2nb+1)/6` tasks (15 gives Juggler's 1240).
    #[arg(long, default_value_t = 15)]
    pub nb: usize,
    /// Tile side in elements.
    #[arg(long, default_value_t = 32)]
    pub tile: usize,
}

impl Default for LudParams {
    fn default() -> Self {
        super::defaults()
    }
}

/// LU decomposition without pivoting of an `nb·bs`-square tile-major matrix, in place.
pub struct Lud {
    nb: usize,
    bs: usize,
    input: Option<Vec<f32>>,
    a: Vec<f32>,
    /// The `f64` reference of `input`, computed on the first verification.
    reference: std::cell::OnceCell<Vec<f64>>,
}

impl Lud {
    /// The workload at size `p`, or why that size is invalid.
    pub fn new(p: &LudParams) -> Result<Self, String> {
        if p.nb == 0 || p.tile == 0 {
            return Err("--nb and --tile must be positive".into());
        }
        Ok(Self {
            nb: p.nb,
            bs: p.tile,
            input: None,
            a: Vec::new(),
            reference: std::cell::OnceCell::new(),
        })
    }
}

impl Workload for Lud {
    fn name(&self) -> &'static str {
        "LU-D"
    }

    fn size(&self) -> String {
        let n = self.nb * self.bs;
        format!("{n}x{n} matrix, tiles of {}", self.bs)
    }

    fn tasks(&self) -> usize {
        lud::task_count(self.nb)
    }

    fn fresh(&mut self) -> Region<'_> {
        let (nb, bs) = (self.nb, self.bs);
        let input = self
            .input
            .get_or_insert_with(|| lud::reference::matrix(nb, bs, 42));
        self.a.clone_from(input);
        lud::lu(&mut self.a, nb, bs)
    }

    fn verify(&self) -> Verdict {
        let Some(input) = &self.input else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let reference = self
            .reference
            .get_or_init(|| lud::reference::lu(input, self.nb, self.bs));
        within(factor_error(&self.a, reference, self.nb, self.bs), BOUND)
    }
}
