//! LU-D: the tiled LU decomposition of `lu.rs`, checked against a sequential `f64` LU.

use taskweave::Region;
use taskweave_kernels::lu;

use super::{Verdict, Workload, within};

/// The relative error (Frobenius norm) single-precision LU stays within against the `f64`
/// reference on these diagonally dominant matrices.
pub const BOUND: f64 = 1e-4;

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
        lu::task_count(self.nb)
    }

    fn fresh(&mut self) -> Region<'_> {
        let (nb, bs) = (self.nb, self.bs);
        let input = self
            .input
            .get_or_insert_with(|| lu::reference::matrix(nb, bs, 42));
        self.a.clone_from(input);
        lu::lu(&mut self.a, nb, bs)
    }

    fn verify(&self) -> Verdict {
        let Some(input) = &self.input else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let reference = lu::reference::lu(input, self.nb, self.bs);
        within(lu::reference::relative_error(&self.a, &reference), BOUND)
    }
}
