//! The floating-point grids over time: JACOBI and HEAT-SIM, checked cell by cell against `f64`
//! references.

use taskweave::Region;
use taskweave_kernels::grid::host::{to_row_major, to_tile_major};
use taskweave_kernels::{heat, jacobi};

use super::{Verdict, Workload, tiles, within};

/// The error ([`max_error`]) `f32` sweeps stay within against the `f64` references: each step
/// rounds every cell a few times at relative `6e-8`, and both stencils are averages, so errors do
/// not grow (measured: about 1e-7).
pub const BOUND: f64 = 1e-5;

/// `max |x − reference| / max |reference|`: every cell at the grid's scale. A norm of the whole
/// grid would let one wrong tile of many hide: at 90 × 90 tiles one tile is 1/8100 of the
/// cells, and its error counts for 1/90 of its size in the relative Frobenius norm. A NaN
/// counts as an infinite difference.
pub fn max_error(x: &[f32], reference: &[f64]) -> f64 {
    if x.len() != reference.len() {
        return f64::INFINITY;
    }
    let (mut diff, mut scale) = (0.0f64, 0.0f64);
    for (a, b) in x.iter().zip(reference) {
        let d = (f64::from(*a) - b).abs();
        diff = diff.max(if d.is_nan() { f64::INFINITY } else { d });
        scale = scale.max(b.abs());
    }
    diff / scale
}

/// The size of JACOBI.
#[derive(clap::Args, Clone, Debug)]
pub struct JacobiParams {
    /// Grid side in cells, a multiple of --tile.
    #[arg(long, default_value_t = 1920)]
    pub n: usize,
    /// Tile side in cells (at most 64): 1920 / 64 = 30 tiles per side.
    #[arg(long, default_value_t = 64)]
    pub tile: usize,
    /// Time steps, each a copy and a compute task per tile (2 · 900 · 2 = 3600 tasks).
    #[arg(long, default_value_t = 2)]
    pub steps: usize,
}

impl Default for JacobiParams {
    fn default() -> Self {
        super::defaults()
    }
}

/// Jacobi sweeps of the five-point stencil over an `n × n` grid.
pub struct Jacobi {
    n: usize,
    bs: usize,
    nb: usize,
    steps: usize,
    data: Option<JacobiData>,
    /// The reference sweeps of the input, computed on the first verification.
    reference: std::cell::OnceCell<Vec<f64>>,
}

struct JacobiData {
    input: Vec<f32>,
    u: Vec<f32>,
    old: Vec<f32>,
    cols: Vec<f32>,
}

impl Jacobi {
    /// The workload at size `p`, or why that size is invalid.
    pub fn new(p: &JacobiParams) -> Result<Self, String> {
        Ok(Self {
            n: p.n,
            bs: p.tile,
            nb: tiles(p.n, p.tile, jacobi::MAX_TILE)?,
            steps: p.steps,
            data: None,
            reference: std::cell::OnceCell::new(),
        })
    }
}

impl Workload for Jacobi {
    fn name(&self) -> &'static str {
        "JACOBI"
    }

    fn size(&self) -> String {
        format!(
            "{0}x{0} grid, tiles of {1}, {2} steps",
            self.n, self.bs, self.steps
        )
    }

    fn tasks(&self) -> usize {
        2 * self.nb * self.nb * self.steps
    }

    fn fresh(&mut self) -> Region<'_> {
        let (n, nb, bs) = (self.n, self.nb, self.bs);
        let d = self.data.get_or_insert_with(|| JacobiData {
            input: to_tile_major(&jacobi::reference::grid(n, 21), nb, bs, 1),
            u: vec![0.0; n * n],
            old: vec![0.0; n * n],
            cols: vec![0.0; 2 * nb * n],
        });
        d.u.clone_from(&d.input);
        d.old.fill(f32::NAN);
        d.cols.fill(f32::NAN);
        jacobi::jacobi(&mut d.u, &mut d.old, &mut d.cols, nb, bs, self.steps)
            .shared_bytes(jacobi::SHARED_BYTES)
    }

    fn verify(&self) -> Verdict {
        let Some(d) = &self.data else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let want = self.reference.get_or_init(|| {
            let input = to_row_major(&d.input, self.nb, self.bs, 1);
            jacobi::reference::jacobi(&input, self.n, self.steps)
        });
        let got = to_row_major(&d.u, self.nb, self.bs, 1);
        within(max_error(&got, want), BOUND)
    }
}

/// The relaxation factor of HEAT-SIM's Gauss-Seidel steps.
pub const ALPHA: f32 = 0.2;

/// The size of HEAT-SIM.
#[derive(clap::Args, Clone, Debug)]
pub struct HeatParams {
    /// Plate side in cells, a multiple of --tile.
    #[arg(long, default_value_t = 2880)]
    pub n: usize,
    /// Tile side in cells (at most 64): 2880 / 32 = 90 tiles per side.
    #[arg(long, default_value_t = 32)]
    pub tile: usize,
    /// Time steps, one task per tile each (90² · 1 = 8100 tasks).
    #[arg(long, default_value_t = 1)]
    pub steps: usize,
}

impl Default for HeatParams {
    fn default() -> Self {
        super::defaults()
    }
}

/// Gauss-Seidel heat diffusion over an `n × n` plate.
pub struct Heat {
    n: usize,
    bs: usize,
    nb: usize,
    steps: usize,
    data: Option<HeatData>,
    /// The reference steps of the input, computed on the first verification.
    reference: std::cell::OnceCell<Vec<f64>>,
}

struct HeatData {
    input: Vec<f32>,
    u: Vec<f32>,
    cols: Vec<f32>,
}

impl Heat {
    /// The workload at size `p`, or why that size is invalid.
    pub fn new(p: &HeatParams) -> Result<Self, String> {
        Ok(Self {
            n: p.n,
            bs: p.tile,
            nb: tiles(p.n, p.tile, heat::MAX_TILE)?,
            steps: p.steps,
            data: None,
            reference: std::cell::OnceCell::new(),
        })
    }
}

impl Workload for Heat {
    fn name(&self) -> &'static str {
        "HEAT-SIM"
    }

    fn size(&self) -> String {
        format!(
            "{0}x{0} plate, tiles of {1}, {2} steps",
            self.n, self.bs, self.steps
        )
    }

    fn tasks(&self) -> usize {
        self.nb * self.nb * self.steps
    }

    fn fresh(&mut self) -> Region<'_> {
        let (n, nb, bs) = (self.n, self.nb, self.bs);
        let d = self.data.get_or_insert_with(|| HeatData {
            input: to_tile_major(&heat::reference::plate(n, 31), nb, bs, 1),
            u: vec![0.0; 2 * n * n],
            cols: vec![0.0; 2 * 2 * nb * n],
        });
        d.u.fill(f32::NAN);
        d.cols.fill(f32::NAN);
        d.u[..n * n].copy_from_slice(&d.input);
        heat::reference::edges(&d.input, &mut d.cols, nb, bs);
        heat::heat(&mut d.u, &mut d.cols, nb, bs, self.steps, ALPHA)
            .shared_bytes(heat::SHARED_BYTES)
    }

    fn verify(&self) -> Verdict {
        let Some(d) = &self.data else {
            return Verdict::Mismatch("nothing has run".into());
        };
        let want = self.reference.get_or_init(|| {
            let input = to_row_major(&d.input, self.nb, self.bs, 1);
            heat::reference::heat(&input, self.n, self.steps, ALPHA)
        });
        let n2 = self.n * self.n;
        let out = (self.steps % 2) * n2;
        let got = to_row_major(&d.u[out..out + n2], self.nb, self.bs, 1);
        within(max_error(&got, want), BOUND)
    }
}
